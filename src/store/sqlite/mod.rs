//! The SQLite index: one file in the data directory, no set-up (the default).
//!
//! The schema version is SQLite's `user_version`; migrations run at open. The journal
//! is WAL, so readers (a question) and the writer (indexing) do not block each other,
//! and a document is written in one transaction. Full-text search (FTS5) is kept for
//! `search_text`; the retrievers are the in-memory indexes of [`crate::retrieve`].
//!
//! `mod.rs` opens the file and runs the migrations; the other files implement the
//! store's traits, one concern each, over the one connection.

mod collections;
mod conversations;
mod documents;
mod folders;
mod library;
mod queue;
mod summaries;

use std::path::Path;

use rusqlite::Connection;

use crate::store::{Backend, CHECKS};
use crate::Result;

/// The schema, one entry per version: entry `i` moves the database from version `i`
/// to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: documents, pages, chunks, embeddings, full-text index, generation counter.
    // Ids are never reused (AUTOINCREMENT): a removed document's id or chunk ids held
    // by a UI or an in-memory index must not come to mean another one.
    "CREATE TABLE documents (
         id         INTEGER PRIMARY KEY AUTOINCREMENT,
         path       TEXT NOT NULL UNIQUE,
         file_name  TEXT NOT NULL,
         hash       TEXT NOT NULL,
         title      TEXT,
         pages      INTEGER NOT NULL DEFAULT 0,
         status     TEXT NOT NULL CHECK (status IN ('done', 'failed')),
         error      TEXT,
         bytes      INTEGER NOT NULL DEFAULT 0,
         indexed_at INTEGER NOT NULL
     );
     CREATE INDEX documents_by_hash ON documents(hash);
     CREATE TABLE pages (
         doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
         number INTEGER NOT NULL,
         text   TEXT NOT NULL,
         PRIMARY KEY (doc_id, number)
     ) WITHOUT ROWID;
     CREATE TABLE chunks (
         id         INTEGER PRIMARY KEY AUTOINCREMENT,
         doc_id     INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
         seq        INTEGER NOT NULL,
         page_start INTEGER NOT NULL,
         page_end   INTEGER NOT NULL,
         char_start INTEGER NOT NULL,
         char_end   INTEGER NOT NULL,
         tokens     INTEGER NOT NULL,
         text       TEXT NOT NULL
     );
     CREATE INDEX chunks_by_doc ON chunks(doc_id, seq);
     CREATE TABLE embeddings (
         chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
         model    TEXT NOT NULL,
         vector   BLOB NOT NULL
     );
     CREATE VIRTUAL TABLE chunks_fts USING fts5(
         text, content = 'chunks', content_rowid = 'id',
         tokenize = 'unicode61 remove_diacritics 2'
     );
     CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
         INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
     END;
     CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
         INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
     END;
     CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
     INSERT INTO meta (key, value) VALUES ('generation', 0);",
    // 2: the indexing queue (see `queue`), and which pages' text came from OCR.
    queue::SCHEMA,
    // 3: watched folders, and each document's file modification time.
    folders::SCHEMA,
    // 4: failed documents ignored; names and dates indexed for paging.
    library::SCHEMA,
    // 5: each document's summary tree (the whole-document route's cache).
    summaries::SCHEMA,
    // 6: the process that took each running queue row.
    queue::OWNER,
];

/// The SQLite index.
pub struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    /// Open (creating if needed) the database at `path` and bring its schema up to date.
    pub fn open(path: &Path) -> Result<Self> {
        Self::init(Connection::open(path)?)
    }

    /// A database in memory (tests).
    pub fn open_in_memory() -> Result<Self> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<Self> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // NORMAL is durable across application crashes in WAL mode; only a power
        // loss may lose the last commits, never consistency.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Another process (a second `quire index`) may hold the write lock briefly.
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        migrate(&mut conn)?;
        conversations::migrate(&conn)?;
        collections::migrate(&conn)?;
        Ok(Self { conn })
    }

    /// The connection, for the other tables of the database (conversations).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The connection, for a transaction over the other tables (collections).
    pub fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

impl Backend for Sqlite {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn location(&self) -> String {
        self.conn
            .path()
            .map_or_else(|| ":memory:".into(), str::to_string)
    }

    /// The schema version.
    fn version(&self) -> Result<i64> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    /// Problems that would make the index inconsistent: chunks without an embedding,
    /// rows without their document, full-text rows out of step. Empty when all is
    /// well.
    fn check(&self) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        let count = |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |r| r.get(0))?) };
        for (what, sql) in CHECKS {
            let n = count(sql)?;
            if n > 0 {
                problems.push(format!("{n} {what}"));
            }
        }
        let chunks = count("SELECT count(*) FROM chunks")?;
        let fts = count("SELECT count(*) FROM chunks_fts")?;
        if chunks != fts {
            problems.push(format!("{chunks} chunks but {fts} full-text rows"));
        }
        let ok: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        if ok != "ok" {
            problems.push(format!("integrity_check: {ok}"));
        }
        Ok(problems)
    }
}

/// Bring the schema up to the latest version, one transaction per step.
fn migrate(conn: &mut Connection) -> Result<()> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", v as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::{Chunk, Documents, NewDocument};
    use quire_pdf::ExtractedPage;

    fn chunk(page: u32, text: &str) -> Chunk {
        Chunk {
            text: text.into(),
            page_start: page,
            page_end: page,
            char_start: 0,
            char_end: text.chars().count(),
            tokens: 3,
        }
    }

    fn doc<'a>(
        path: &'a str,
        hash: &'a str,
        pages: &'a [ExtractedPage],
        chunks: &'a [Chunk],
        embs: &'a [Vec<f32>],
    ) -> NewDocument<'a> {
        NewDocument {
            path,
            hash,
            bytes: 10,
            title: Some("T"),
            pages,
            chunks,
            embeddings: embs,
            model: "m",
        }
    }

    /// Streaming the chunks gives what loading them all does, in the same order and
    /// stopping at the first error; texts and vectors read by id are those chunks'.
    #[test]
    fn chunks_stream_and_are_read_by_id() {
        let mut s = Sqlite::open_in_memory().unwrap();
        let pages: [ExtractedPage; 0] = [];
        let a = [chunk(1, "alpha"), chunk(2, "beta")];
        let b = [chunk(1, "gamma")];
        let embs = [vec![1.0, 0.5], vec![-2.0, 0.25]];
        s.insert_document(&doc("/x/a.pdf", "h1", &pages, &a, &embs))
            .unwrap();
        s.insert_document(&doc("/x/b.pdf", "h2", &pages, &b, &embs[1..]))
            .unwrap();
        s.insert_failed("/x/c.pdf", "h3", 3, "broken").unwrap();
        let all = s.load_chunks().unwrap();
        let mut streamed = Vec::new();
        s.for_each_chunk(&mut |c| {
            streamed.push(c);
            Ok(())
        })
        .unwrap();
        assert_eq!(streamed, all);
        assert_eq!(all.len(), 3);
        // An error from the callback stops the stream and comes back.
        let mut seen = 0;
        let r = s.for_each_chunk(&mut |_| {
            seen += 1;
            Err(crate::Error::Invalid("stop".into()))
        });
        assert!(r.is_err() && seen == 1);
        let ids = [all[2].id, 999_999, all[0].id];
        let mut texts = s.chunk_texts(&ids).unwrap();
        texts.sort();
        assert_eq!(
            texts,
            vec![
                (all[0].id, "alpha".to_string()),
                (all[2].id, "gamma".into())
            ]
        );
        let mut vectors = s.chunk_vectors(&ids).unwrap();
        vectors.sort_by_key(|v| v.0);
        assert_eq!(
            vectors,
            vec![(all[0].id, vec![1.0, 0.5]), (all[2].id, vec![-2.0, 0.25])]
        );
        assert!(s.chunk_texts(&[]).unwrap().is_empty());
        // The next chunk is the same document's next one, and none after its last.
        assert_eq!(
            s.next_chunk(all[0].id).unwrap(),
            Some((all[1].id, "beta".to_string()))
        );
        assert_eq!(s.next_chunk(all[1].id).unwrap(), None);
        assert_eq!(s.next_chunk(999_999).unwrap(), None);
    }

    #[test]
    fn insert_load_replace_remove() {
        let mut s = Sqlite::open_in_memory().unwrap();
        assert_eq!(s.version().unwrap(), MIGRATIONS.len() as i64);
        let g0 = s.generation().unwrap();
        let pages = [ExtractedPage {
            number: 1,
            text: "alpha beta. gamma".into(),
            ocr: false,
            has_images: false,
            tables: Vec::new(),
        }];
        let chunks = [chunk(1, "alpha beta."), chunk(1, "gamma")];
        let embs = [vec![1.0, 0.0], vec![0.0, -1.5]];
        let id = s
            .insert_document(&doc("/x/a.pdf", "h1", &pages, &chunks, &embs))
            .unwrap();
        assert!(s.generation().unwrap() > g0);
        let loaded = s.load_chunks().unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded[1].embedding, vec![0.0, -1.5]);
        assert_eq!(loaded[0].file, "a.pdf");
        assert_eq!(loaded[0].doc_id, id);
        assert_eq!(s.search_text("gamma", 5).unwrap()[0].0, loaded[1].id);
        assert_eq!(s.done_with_hash("h1").unwrap().unwrap().0, id);

        // Same path again: replaced, not added.
        let chunks2 = [chunk(1, "delta")];
        let id2 = s
            .insert_document(&doc("/x/a.pdf", "h2", &pages, &chunks2, &embs[..1]))
            .unwrap();
        assert_ne!(id, id2);
        assert_eq!(s.documents().unwrap().len(), 1);
        assert_eq!(s.load_chunks().unwrap().len(), 1);
        assert!(s.search_text("gamma", 5).unwrap().is_empty());
        assert!(s.check().unwrap().is_empty());

        // A failure replaces it too, and failed documents give no chunks.
        s.insert_failed("/x/a.pdf", "h3", 3, "broken").unwrap();
        assert!(s.load_chunks().unwrap().is_empty());
        let d = &s.documents().unwrap()[0];
        assert_eq!(
            (d.status.as_str(), d.error.as_deref()),
            ("failed", Some("broken"))
        );

        let g = s.generation().unwrap();
        assert!(s.remove_document(d.id).unwrap());
        assert!(!s.remove_document(d.id).unwrap());
        assert!(s.generation().unwrap() > g);
        assert!(s.documents().unwrap().is_empty());
        assert!(s.check().unwrap().is_empty());
    }

    #[test]
    fn mismatched_embeddings_are_refused() {
        let mut s = Sqlite::open_in_memory().unwrap();
        let chunks = [chunk(1, "a")];
        assert!(s
            .insert_document(&doc("/a.pdf", "h", &[], &chunks, &[]))
            .is_err());
        assert!(s.documents().unwrap().is_empty());
    }

    #[test]
    fn reopening_keeps_data_and_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        {
            let mut s = Sqlite::open(&path).unwrap();
            s.insert_failed("/b.pdf", "h", 1, "bad").unwrap();
            conversations::create(s.conn(), "hello?").unwrap();
        }
        let s = Sqlite::open(&path).unwrap();
        assert_eq!(s.version().unwrap(), MIGRATIONS.len() as i64);
        assert_eq!(s.documents().unwrap().len(), 1);
        assert_eq!(conversations::list(s.conn()).unwrap().len(), 1);
    }
}
