//! Collections in SQLite (see [`crate::store::collections`]): the collections table
//! and which documents are in each.

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::Sqlite;
use crate::store::collections::clean_name;
use crate::store::{Collection, Collections};
use crate::{Error, Result};

/// Create the tables if they are not there (idempotent; part of the schema).
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS collections (
             id         INTEGER PRIMARY KEY AUTOINCREMENT,
             name       TEXT NOT NULL UNIQUE COLLATE NOCASE,
             created_at INTEGER NOT NULL
         );
         CREATE TABLE IF NOT EXISTS collection_documents (
             collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
             doc_id        INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
             PRIMARY KEY (collection_id, doc_id)
         ) WITHOUT ROWID;
         CREATE INDEX IF NOT EXISTS collection_documents_by_doc ON collection_documents(doc_id);",
    )?;
    Ok(())
}

/// All collections, by name.
fn list(conn: &Connection) -> Result<Vec<Collection>> {
    let mut st =
        conn.prepare("SELECT id, name FROM collections ORDER BY name COLLATE NOCASE, id")?;
    let heads = st
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut members = conn.prepare(
        "SELECT doc_id FROM collection_documents WHERE collection_id = ?1 ORDER BY doc_id",
    )?;
    let mut out = Vec::with_capacity(heads.len());
    for (id, name) in heads {
        let documents = members
            .query_map([id], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        out.push(Collection {
            id,
            name,
            documents,
        });
    }
    Ok(out)
}

/// One collection, or `None`.
fn get(conn: &Connection, id: i64) -> Result<Option<Collection>> {
    Ok(list(conn)?.into_iter().find(|c| c.id == id))
}

/// The collection named `name` (case-insensitive), or `None`.
fn by_name(conn: &Connection, name: &str) -> Result<Option<Collection>> {
    let id: Option<i64> = conn
        .query_row(
            "SELECT id FROM collections WHERE name = ?1 COLLATE NOCASE",
            [name.trim()],
            |r| r.get(0),
        )
        .optional()?;
    match id {
        Some(id) => get(conn, id),
        None => Ok(None),
    }
}

/// Create a collection; refused when the name is taken.
fn create(conn: &Connection, name: &str) -> Result<i64> {
    let name = clean_name(name)?;
    if by_name(conn, &name)?.is_some() {
        return Err(Error::Invalid(format!(
            "there is already a collection named \"{name}\""
        )));
    }
    conn.execute(
        "INSERT INTO collections (name, created_at) VALUES (?1, ?2)",
        params![name, now()],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Rename a collection. Returns whether it existed.
fn rename(conn: &Connection, id: i64, name: &str) -> Result<bool> {
    let name = clean_name(name)?;
    if let Some(other) = by_name(conn, &name)? {
        if other.id != id {
            return Err(Error::Invalid(format!(
                "there is already a collection named \"{name}\""
            )));
        }
    }
    Ok(conn.execute(
        "UPDATE collections SET name = ?2 WHERE id = ?1",
        params![id, name],
    )? > 0)
}

/// Make `docs` the documents of collection `id`, in one transaction. Returns whether
/// the collection existed; a document id that is not in the index is refused.
fn set_documents(conn: &mut Connection, id: i64, docs: &[i64]) -> Result<bool> {
    let tx = conn.transaction()?;
    let exists = tx
        .query_row("SELECT 1 FROM collections WHERE id = ?1", [id], |_| Ok(()))
        .optional()?
        .is_some();
    if !exists {
        return Ok(false);
    }
    tx.execute(
        "DELETE FROM collection_documents WHERE collection_id = ?1",
        [id],
    )?;
    for &doc in docs {
        let known = tx
            .query_row("SELECT 1 FROM documents WHERE id = ?1", [doc], |_| Ok(()))
            .optional()?
            .is_some();
        if !known {
            return Err(Error::NotFound(format!("document {doc}")));
        }
        tx.execute(
            "INSERT OR IGNORE INTO collection_documents (collection_id, doc_id) VALUES (?1, ?2)",
            params![id, doc],
        )?;
    }
    tx.commit()?;
    Ok(true)
}

/// Delete a collection (its documents stay indexed). Returns whether it existed.
fn remove(conn: &Connection, id: i64) -> Result<bool> {
    Ok(conn.execute("DELETE FROM collections WHERE id = ?1", [id])? > 0)
}

/// The collections document `doc` is in (read before it is replaced).
pub(super) fn of_document(tx: &Transaction<'_>, doc: i64) -> Result<Vec<i64>> {
    let mut st = tx.prepare("SELECT collection_id FROM collection_documents WHERE doc_id = ?1")?;
    let ids = st
        .query_map([doc], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}

/// Put document `doc` back into `collections` (after it was indexed again under a new
/// id).
pub(super) fn restore(tx: &Transaction<'_>, doc: i64, collections: &[i64]) -> Result<()> {
    for c in collections {
        tx.execute(
            "INSERT OR IGNORE INTO collection_documents (collection_id, doc_id) VALUES (?1, ?2)",
            params![c, doc],
        )?;
    }
    Ok(())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Collections for Sqlite {
    fn collections(&self) -> Result<Vec<Collection>> {
        list(&self.conn)
    }
    fn collection_by_name(&self, name: &str) -> Result<Option<Collection>> {
        by_name(&self.conn, name)
    }
    fn create_collection(&self, name: &str) -> Result<i64> {
        create(&self.conn, name)
    }
    fn rename_collection(&self, id: i64, name: &str) -> Result<bool> {
        rename(&self.conn, id, name)
    }
    fn set_collection_documents(&mut self, id: i64, docs: &[i64]) -> Result<bool> {
        set_documents(&mut self.conn, id, docs)
    }
    fn remove_collection(&self, id: i64) -> Result<bool> {
        remove(&self.conn, id)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::sqlite::Sqlite as Store;
    use crate::store::Documents;

    fn doc(store: &Store, path: &str) -> i64 {
        store
            .conn()
            .execute(
                "INSERT INTO documents (path, file_name, hash, status, indexed_at)
                 VALUES (?1, ?1, 'h', 'done', 0)",
                [path],
            )
            .unwrap();
        store.conn().last_insert_rowid()
    }

    #[test]
    fn collections_hold_documents_until_either_goes() {
        let mut store = Store::open_in_memory().unwrap();
        let a = doc(&store, "/a.pdf");
        let b = doc(&store, "/b.pdf");
        let id = create(store.conn(), " Manuals ").unwrap();
        assert!(
            create(store.conn(), "manuals").is_err(),
            "names are unique, any case"
        );
        assert!(create(store.conn(), "  ").is_err());
        assert!(set_documents(store.conn_mut(), id, &[a, b]).unwrap());
        assert!(matches!(
            set_documents(store.conn_mut(), id, &[a, 999]),
            Err(Error::NotFound(_))
        ));
        // The failed set changed nothing.
        let c = by_name(store.conn(), "MANUALS").unwrap().unwrap();
        assert_eq!(
            (c.name.as_str(), c.documents.clone()),
            ("Manuals", vec![a, b])
        );
        assert!(store.remove_document(a).unwrap());
        assert_eq!(get(store.conn(), id).unwrap().unwrap().documents, vec![b]);
        assert!(rename(store.conn(), id, "Guides").unwrap());
        assert_eq!(list(store.conn()).unwrap()[0].name, "Guides");
        assert!(remove(store.conn(), id).unwrap());
        assert!(!remove(store.conn(), id).unwrap());
        assert!(!set_documents(store.conn_mut(), id, &[b]).unwrap());
        assert_eq!(
            store.documents().unwrap().len(),
            1,
            "documents stay indexed"
        );
    }
}
