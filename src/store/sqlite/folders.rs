//! Watched folders in SQLite (see [`crate::store::folders`]): the `folders` table and
//! the documents' modification times.

use rusqlite::{params, Connection, OptionalExtension};

use super::Sqlite;
use crate::store::folders::{under_bounds, FolderRow, Folders, KnownFile};
use crate::store::{file_name, now_ms};
use crate::{Error, Result};

/// Migration 3: watched folders, and each document's file modification time (so an
/// unchanged file is not read again).
pub(super) const SCHEMA: &str = "CREATE TABLE folders (
         id            INTEGER PRIMARY KEY AUTOINCREMENT,
         path          TEXT NOT NULL UNIQUE,
         collection_id INTEGER REFERENCES collections(id) ON DELETE SET NULL,
         available     INTEGER NOT NULL DEFAULT 1,
         device        INTEGER,
         added_at      INTEGER NOT NULL,
         synced_at     INTEGER
     );
     ALTER TABLE documents ADD COLUMN mtime INTEGER;";

fn list(conn: &Connection) -> Result<Vec<FolderRow>> {
    let mut st = conn.prepare(
        "SELECT id, path, collection_id, available, device, added_at, synced_at FROM folders
         ORDER BY path",
    )?;
    let rows = st.query_map([], |r| {
        Ok(FolderRow {
            id: r.get(0)?,
            path: r.get(1)?,
            collection: r.get(2)?,
            available: r.get::<_, i64>(3)? != 0,
            device: r.get(4)?,
            added_at: r.get(5)?,
            synced_at: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn add(conn: &Connection, path: &str, collection: Option<i64>) -> Result<i64> {
    let here: Option<i64> = conn
        .query_row("SELECT id FROM folders WHERE path = ?1", [path], |r| {
            r.get(0)
        })
        .optional()?;
    if here.is_some() {
        return Err(Error::Invalid(format!("{path} is watched already")));
    }
    conn.execute(
        "INSERT INTO folders (path, collection_id, added_at) VALUES (?1, ?2, ?3)",
        params![path, collection, now_ms()],
    )?;
    Ok(conn.last_insert_rowid())
}

fn files_under(conn: &Connection, root: &str) -> Result<Vec<KnownFile>> {
    let (lo, hi) = under_bounds(root);
    let mut st = conn.prepare_cached(
        "SELECT id, path, hash, bytes, mtime FROM documents
         WHERE path >= ?1 AND path < ?2 ORDER BY path",
    )?;
    let rows = st.query_map(params![lo, hi], |r| {
        Ok(KnownFile {
            id: r.get(0)?,
            path: r.get(1)?,
            hash: r.get(2)?,
            bytes: r.get::<_, i64>(3)?.max(0) as u64,
            mtime: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

impl Folders for Sqlite {
    fn folders(&self) -> Result<Vec<FolderRow>> {
        list(&self.conn)
    }

    fn add_folder(&self, path: &str, collection: Option<i64>) -> Result<i64> {
        add(&self.conn, path, collection)
    }

    fn remove_folder(&self, id: i64) -> Result<bool> {
        Ok(self
            .conn
            .execute("DELETE FROM folders WHERE id = ?1", [id])?
            > 0)
    }

    fn set_folder_state(
        &self,
        id: i64,
        available: bool,
        device: Option<i64>,
        synced_at: Option<i64>,
    ) -> Result<()> {
        self.conn.execute(
            "UPDATE folders SET available = ?2, device = coalesce(?3, device),
                                synced_at = coalesce(?4, synced_at)
             WHERE id = ?1",
            params![id, i64::from(available), device, synced_at],
        )?;
        Ok(())
    }

    fn files_under(&self, root: &str) -> Result<Vec<KnownFile>> {
        files_under(&self.conn, root)
    }

    fn stamp_document(&self, id: i64, bytes: u64, mtime: i64) -> Result<()> {
        self.conn.execute(
            "UPDATE documents SET bytes = ?2, mtime = ?3 WHERE id = ?1",
            params![id, bytes as i64, mtime],
        )?;
        Ok(())
    }

    fn move_document(&mut self, id: i64, path: &str, mtime: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        let taken: Option<i64> = tx
            .query_row(
                "SELECT id FROM documents WHERE path = ?1 AND id != ?2",
                params![path, id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(other) = taken {
            return Err(Error::Conflict(format!(
                "{path} is document {other} already"
            )));
        }
        tx.execute(
            "UPDATE documents SET path = ?2, file_name = ?3, mtime = ?4 WHERE id = ?1",
            params![id, path, file_name(path), mtime],
        )?;
        // The in-memory indexes hold each chunk's file name.
        tx.execute(
            "UPDATE meta SET value = value + 1 WHERE key = 'generation'",
            [],
        )?;
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::store::sqlite::Sqlite;
    use crate::store::{Documents, Folders};

    #[test]
    fn folders_files_under_stamp_and_move() {
        let mut s = Sqlite::open_in_memory().unwrap();
        let f = s.add_folder("/lib", None).unwrap();
        assert!(s.add_folder("/lib", None).is_err(), "watched twice");
        let a = s.insert_failed("/lib/a.pdf", "h1", 3, "x").unwrap();
        s.insert_failed("/lib/sub/b.pdf", "h2", 4, "x").unwrap();
        s.insert_failed("/library/c.pdf", "h3", 5, "x").unwrap();
        s.insert_failed("/lib0.pdf", "h4", 5, "x").unwrap();
        let under: Vec<String> = s
            .files_under("/lib")
            .unwrap()
            .into_iter()
            .map(|k| k.path)
            .collect();
        assert_eq!(under, ["/lib/a.pdf", "/lib/sub/b.pdf"]);
        assert_eq!(s.files_under("/lib").unwrap()[0].mtime, None);
        s.stamp_document(a, 30, 77).unwrap();
        let k = &s.files_under("/lib").unwrap()[0];
        assert_eq!((k.bytes, k.mtime), (30, Some(77)));
        let g = s.generation().unwrap();
        s.move_document(a, "/lib/z.pdf", 78).unwrap();
        assert!(s.generation().unwrap() > g);
        let d = s.document_by_path("/lib/z.pdf").unwrap().unwrap();
        assert_eq!((d.id, d.file_name.as_str()), (a, "z.pdf"));
        assert!(s.move_document(a, "/lib/sub/b.pdf", 1).is_err(), "taken");
        s.set_folder_state(f, false, Some(9), Some(5)).unwrap();
        s.set_folder_state(f, false, None, None).unwrap();
        let row = &s.folders().unwrap()[0];
        assert_eq!(
            (row.available, row.device, row.synced_at),
            (false, Some(9), Some(5))
        );
        assert!(s.remove_folder(f).unwrap());
        assert!(s.folders().unwrap().is_empty());
    }
}
