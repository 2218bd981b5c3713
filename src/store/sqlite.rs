//! The SQLite index: one file in the data directory, no set-up (the default).
//!
//! The schema version is SQLite's `user_version`; migrations run at open. The journal
//! is WAL, so readers (a question) and the writer (indexing) do not block each other,
//! and a document is written in one transaction. Full-text search (FTS5) is kept for
//! `search_text`; the retrievers are the in-memory indexes of [`crate::retrieve`].

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::{
    collections, conversations, file_name, now_ms, queue, Backend, Collection, Conversation,
    ConversationInfo, DocumentRow, NewDocument, NewMessage, QueueRow, StoredChunk,
};
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
    fn bump(tx: &Transaction<'_>) -> Result<()> {
        tx.execute(
            "UPDATE meta SET value = value + 1 WHERE key = 'generation'",
            [],
        )?;
        Ok(())
    }

    fn load_chunks_where<P: rusqlite::Params>(
        &self,
        filter: &str,
        params: P,
    ) -> Result<Vec<StoredChunk>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT c.id, c.doc_id, d.file_name, c.page_start, c.page_end, c.text, e.vector
             FROM chunks c
             JOIN documents d ON d.id = c.doc_id AND d.status = 'done'
             JOIN embeddings e ON e.chunk_id = c.id
             WHERE {filter}
             ORDER BY c.id"
        ))?;
        let rows = st.query_map(params, |r| {
            let blob: Vec<u8> = r.get(6)?;
            Ok(StoredChunk {
                id: r.get(0)?,
                doc_id: r.get(1)?,
                file: r.get(2)?,
                page_start: r.get(3)?,
                page_end: r.get(4)?,
                text: r.get(5)?,
                embedding: blob_vector(&blob),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Chunk ids matching a full-text query (FTS5 syntax), best first (bm25).
    pub fn search_text(&self, query: &str, limit: usize) -> Result<Vec<(i64, f64)>> {
        let mut st = self.conn.prepare(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?1
             ORDER BY bm25(chunks_fts) LIMIT ?2",
        )?;
        let rows = st.query_map(params![query, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl Backend for Sqlite {
    /// The schema version.
    fn version(&self) -> Result<i64> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    /// A counter bumped by every change to the documents: when it moves, in-memory
    /// indexes built from [`Store::load_chunks`] are stale.
    fn generation(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
                r.get(0)
            })?)
    }

    /// All documents, by id.
    fn documents(&self) -> Result<Vec<DocumentRow>> {
        let mut st = self.conn.prepare(
            "SELECT d.id, d.path, d.file_name, d.hash, d.title, d.pages, d.status, d.error,
                    (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
             FROM documents d ORDER BY d.id",
        )?;
        let rows = st.query_map([], |r| {
            Ok(DocumentRow {
                id: r.get(0)?,
                path: r.get(1)?,
                file_name: r.get(2)?,
                hash: r.get(3)?,
                title: r.get(4)?,
                pages: r.get(5)?,
                status: r.get(6)?,
                error: r.get(7)?,
                chunks: r.get::<_, i64>(8)? as usize,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The document at `path`, if any.
    fn document_by_path(&self, path: &str) -> Result<Option<DocumentRow>> {
        Ok(self.documents()?.into_iter().find(|d| d.path == path))
    }

    /// A document indexed (status done) with this content hash, if any.
    fn done_with_hash(&self, hash: &str) -> Result<Option<(i64, String, usize)>> {
        Ok(self
            .conn
            .query_row(
                "SELECT d.id, d.path, (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
                 FROM documents d WHERE d.hash = ?1 AND d.status = 'done'
                 ORDER BY d.id LIMIT 1",
                [hash],
                |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as usize)),
            )
            .optional()?)
    }

    /// Write a document with its pages, chunks and embeddings in one transaction,
    /// replacing whatever was indexed at the same path. Returns its id.
    fn insert_document(&mut self, doc: &NewDocument<'_>) -> Result<i64> {
        if doc.embeddings.len() != doc.chunks.len() {
            return Err(crate::Error::Invalid(format!(
                "{} embeddings for {} chunks",
                doc.embeddings.len(),
                doc.chunks.len()
            )));
        }
        let tx = self.conn.transaction()?;
        // A document indexed again stays in its collections.
        let old: Option<i64> = tx
            .query_row(
                "SELECT id FROM documents WHERE path = ?1",
                [doc.path],
                |r| r.get(0),
            )
            .optional()?;
        let in_collections = match old {
            Some(old) => collections::of_document(&tx, old)?,
            None => Vec::new(),
        };
        tx.execute("DELETE FROM documents WHERE path = ?1", [doc.path])?;
        tx.execute(
            "INSERT INTO documents (path, file_name, hash, title, pages, status, bytes, indexed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 'done', ?6, ?7)",
            params![
                doc.path,
                file_name(doc.path),
                doc.hash,
                doc.title,
                doc.pages.len() as i64,
                doc.bytes as i64,
                now_ms()
            ],
        )?;
        let id = tx.last_insert_rowid();
        collections::restore(&tx, id, &in_collections)?;
        {
            let mut page = tx
                .prepare("INSERT INTO pages (doc_id, number, text, ocr) VALUES (?1, ?2, ?3, ?4)")?;
            for p in doc.pages {
                page.execute(params![id, p.number, p.text, p.ocr])?;
            }
            let mut chunk = tx.prepare(
                "INSERT INTO chunks (doc_id, seq, page_start, page_end, char_start, char_end, tokens, text)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let mut emb =
                tx.prepare("INSERT INTO embeddings (chunk_id, model, vector) VALUES (?1, ?2, ?3)")?;
            for (seq, (c, v)) in doc.chunks.iter().zip(doc.embeddings).enumerate() {
                chunk.execute(params![
                    id,
                    seq as i64,
                    c.page_start,
                    c.page_end,
                    c.char_start as i64,
                    c.char_end as i64,
                    c.tokens as i64,
                    c.text
                ])?;
                emb.execute(params![tx.last_insert_rowid(), doc.model, vector_blob(v)])?;
            }
        }
        Self::bump(&tx)?;
        tx.commit()?;
        Ok(id)
    }

    /// The numbers of the pages of a document whose text came from OCR.
    fn ocr_pages(&self, doc_id: i64) -> Result<Vec<u32>> {
        let mut st = self.conn.prepare_cached(
            "SELECT number FROM pages WHERE doc_id = ?1 AND ocr != 0 ORDER BY number",
        )?;
        let rows = st.query_map([doc_id], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Record that the file at `path` could not be indexed (replacing what was there).
    fn insert_failed(&mut self, path: &str, hash: &str, bytes: u64, error: &str) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let old: Option<i64> = tx
            .query_row("SELECT id FROM documents WHERE path = ?1", [path], |r| {
                r.get(0)
            })
            .optional()?;
        let in_collections = match old {
            Some(old) => collections::of_document(&tx, old)?,
            None => Vec::new(),
        };
        tx.execute("DELETE FROM documents WHERE path = ?1", [path])?;
        tx.execute(
            "INSERT INTO documents (path, file_name, hash, status, error, bytes, indexed_at)
             VALUES (?1, ?2, ?3, 'failed', ?4, ?5, ?6)",
            params![path, file_name(path), hash, error, bytes as i64, now_ms()],
        )?;
        let id = tx.last_insert_rowid();
        collections::restore(&tx, id, &in_collections)?;
        Self::bump(&tx)?;
        tx.commit()?;
        Ok(id)
    }

    /// Remove a document with its pages, chunks and embeddings. Returns whether it
    /// existed.
    fn remove_document(&mut self, id: i64) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let n = tx.execute("DELETE FROM documents WHERE id = ?1", [id])?;
        if n > 0 {
            Self::bump(&tx)?;
        }
        tx.commit()?;
        Ok(n > 0)
    }

    /// The text of one page of a document.
    fn page_text(&self, doc_id: i64, number: u32) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT text FROM pages WHERE doc_id = ?1 AND number = ?2",
                params![doc_id, number],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Every chunk of the documents indexed (status done), with its embedding, in
    /// chunk id order.
    fn load_chunks(&self) -> Result<Vec<StoredChunk>> {
        self.load_chunks_where("1", [])
    }

    /// [`Store::load_chunks`] for the chunks of the documents `docs` only (in chunk
    /// id order).
    fn load_chunks_of(&self, docs: &[i64]) -> Result<Vec<StoredChunk>> {
        let mut out = Vec::new();
        for &d in docs {
            out.extend(self.load_chunks_where("c.doc_id = ?1", [d])?);
        }
        out.sort_by_key(|c| c.id);
        Ok(out)
    }

    /// The documents [`Store::load_chunks`] returns chunks of.
    fn searchable_documents(&self) -> Result<std::collections::HashSet<i64>> {
        let mut st = self.conn.prepare(
            "SELECT DISTINCT c.doc_id FROM chunks c
             JOIN documents d ON d.id = c.doc_id AND d.status = 'done'
             JOIN embeddings e ON e.chunk_id = c.id",
        )?;
        let rows = st.query_map([], |r| r.get::<_, i64>(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Which embedding models made the vectors of the index, with how many chunks
    /// each, most chunks first. One entry (or none, when nothing is indexed) is the
    /// normal case; more means a re-embedding was stopped half way.
    fn embedding_models(&self) -> Result<Vec<(String, usize)>> {
        let mut st = self.conn.prepare(
            "SELECT model, count(*) FROM embeddings GROUP BY model ORDER BY count(*) DESC, model",
        )?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as usize)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Up to `limit` chunks whose vectors were not made by `model`, as (chunk id,
    /// text), in chunk id order.
    fn chunks_not_embedded_by(&self, model: &str, limit: usize) -> Result<Vec<(i64, String)>> {
        let mut st = self.conn.prepare(
            "SELECT c.id, c.text FROM chunks c JOIN embeddings e ON e.chunk_id = c.id
             WHERE e.model != ?1 ORDER BY c.id LIMIT ?2",
        )?;
        let rows = st.query_map(params![model, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Replace the vectors of these chunks with ones `model` made, in one
    /// transaction. Chunks removed meanwhile are skipped.
    fn replace_embeddings(&mut self, model: &str, rows: &[(i64, Vec<f32>)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut up =
                tx.prepare("UPDATE embeddings SET model = ?1, vector = ?2 WHERE chunk_id = ?3")?;
            for (id, v) in rows {
                up.execute(params![model, vector_blob(v), id])?;
            }
        }
        Self::bump(&tx)?;
        tx.commit()?;
        Ok(())
    }

    /// Problems that would make the index inconsistent: chunks without an embedding,
    /// rows without their document, full-text rows out of step. Empty when all is
    /// well.
    fn check(&self) -> Result<Vec<String>> {
        let mut problems = Vec::new();
        let count = |sql: &str| -> Result<i64> { Ok(self.conn.query_row(sql, [], |r| r.get(0))?) };
        for (what, sql) in super::CHECKS {
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

    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn location(&self) -> String {
        self.conn
            .path()
            .map_or_else(|| ":memory:".into(), str::to_string)
    }

    fn enqueue(&mut self, files: &[(String, u64)]) -> Result<Vec<i64>> {
        queue::enqueue(&mut self.conn, files)
    }
    fn claim(&self) -> Result<Option<QueueRow>> {
        queue::claim(&self.conn)
    }
    fn waiting(&self) -> Result<usize> {
        queue::waiting(&self.conn)
    }
    fn queue_row(&self, id: i64) -> Result<Option<QueueRow>> {
        queue::get(&self.conn, id)
    }
    fn queue(&self) -> Result<Vec<QueueRow>> {
        queue::list(&self.conn)
    }
    fn progress(&self, id: i64, fraction: f64, eta_secs: Option<f64>) -> Result<()> {
        queue::progress(&self.conn, id, fraction, eta_secs)
    }
    fn finish(&self, id: i64, doc_id: Option<i64>, error: Option<&str>) -> Result<()> {
        queue::finish(&self.conn, id, doc_id, error)
    }
    fn requeue(&self, id: i64) -> Result<()> {
        queue::requeue(&self.conn, id)
    }
    fn requeue_interrupted(&self) -> Result<usize> {
        queue::requeue_interrupted(&self.conn)
    }
    fn cancel(&self, id: Option<i64>) -> Result<Vec<i64>> {
        queue::cancel(&self.conn, id)
    }
    fn wanted(&self, id: i64) -> Result<bool> {
        queue::wanted(&self.conn, id)
    }

    fn collections(&self) -> Result<Vec<Collection>> {
        collections::list(&self.conn)
    }
    fn collection_by_name(&self, name: &str) -> Result<Option<Collection>> {
        collections::by_name(&self.conn, name)
    }
    fn create_collection(&self, name: &str) -> Result<i64> {
        collections::create(&self.conn, name)
    }
    fn rename_collection(&self, id: i64, name: &str) -> Result<bool> {
        collections::rename(&self.conn, id, name)
    }
    fn set_collection_documents(&mut self, id: i64, docs: &[i64]) -> Result<bool> {
        collections::set_documents(&mut self.conn, id, docs)
    }
    fn remove_collection(&self, id: i64) -> Result<bool> {
        collections::remove(&self.conn, id)
    }

    fn create_conversation(&self, first_question: &str) -> Result<i64> {
        conversations::create(&self.conn, first_question)
    }
    fn add_message(&self, message: &NewMessage<'_>) -> Result<i64> {
        conversations::add_message(&self.conn, message)
    }
    fn conversations(&self) -> Result<Vec<ConversationInfo>> {
        conversations::list(&self.conn)
    }
    fn conversation(&self, id: i64) -> Result<Option<Conversation>> {
        conversations::get(&self.conn, id)
    }
    fn remove_messages(&self, conversation: i64, ids: &[i64]) -> Result<usize> {
        conversations::remove_messages(&self.conn, conversation, ids)
    }
    fn remove_conversation(&self, id: i64) -> Result<bool> {
        conversations::remove(&self.conn, id)
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

fn vector_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn blob_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ingest::split::Chunk;
    use crate::ingest::ExtractedPage;

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
