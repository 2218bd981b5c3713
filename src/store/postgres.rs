//! The PostgreSQL index (`--store postgres://user@host:port/database`), for a team
//! that shares one library: several `quire serve` processes, on one machine or many,
//! use one database at once.
//!
//! - **Schema.** The same tables as the SQLite index (documents, pages, chunks,
//!   embeddings, the queue, collections, conversations), with ids from sequences
//!   (never reused) and migrations numbered in `quire_schema`, run under an advisory
//!   lock so that two processes starting together do not both migrate.
//! - **Vectors** are pgvector `vector` values with their dimension beside them, and an
//!   HNSW index (cosine) per dimension, made when the first vector of that dimension
//!   is written; a re-embedding with another model keeps working.
//! - **BM25** is Quire's own ranking (the one of [`crate::retrieve::bm25`]: Lucene's
//!   Okapi BM25, k1 = 1.2, b = 0.75) computed in SQL over a `postings` table (term,
//!   chunk, term frequency) that Quire's analyzer fills when a document is written:
//!   the same words, stems, and CJK character unigrams and bigrams as the in-memory
//!   index, so both stores rank alike (Postgres's `tsvector` parsers do not split
//!   Chinese, and `ts_rank` is not BM25). The collection statistics (chunks, terms)
//!   are kept in `meta`, updated in the transaction that writes or removes a document.
//! - **Several processes.** A document is written in one transaction under an
//!   advisory lock on its path. The queue is per process (`origin`: host and data
//!   directory, since a queued path names a file on that machine); a row taken is
//!   marked with the taking session's backend pid, so a process opening the database
//!   requeues only rows whose session is gone, never a live process's work, and
//!   `FOR UPDATE SKIP LOCKED` keeps two indexers from taking one row.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use postgres::{Client, NoTls, Transaction};

use super::pg_search::PgSearch;
use super::{
    collections::clean_name, conversation_title, file_name, now_ms, Backend, Collection,
    Conversation, ConversationInfo, DocumentRow, Message, NewDocument, NewMessage, QueueRow,
    QueueState, StoredChunk,
};
use crate::text::analyzer as text;
use crate::{Error, Result};

/// The schema, one entry per version.
const MIGRATIONS: &[&str] = &["CREATE EXTENSION IF NOT EXISTS vector;
     CREATE TABLE documents (
         id         BIGSERIAL PRIMARY KEY,
         path       TEXT NOT NULL UNIQUE,
         file_name  TEXT NOT NULL,
         hash       TEXT NOT NULL,
         title      TEXT,
         pages      BIGINT NOT NULL DEFAULT 0,
         status     TEXT NOT NULL CHECK (status IN ('done', 'failed')),
         error      TEXT,
         bytes      BIGINT NOT NULL DEFAULT 0,
         indexed_at BIGINT NOT NULL
     );
     CREATE INDEX documents_by_hash ON documents(hash);
     CREATE TABLE pages (
         doc_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
         number BIGINT NOT NULL,
         text   TEXT NOT NULL,
         ocr    BOOLEAN NOT NULL DEFAULT false,
         PRIMARY KEY (doc_id, number)
     );
     CREATE TABLE chunks (
         id         BIGSERIAL PRIMARY KEY,
         doc_id     BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
         seq        BIGINT NOT NULL,
         page_start BIGINT NOT NULL,
         page_end   BIGINT NOT NULL,
         char_start BIGINT NOT NULL,
         char_end   BIGINT NOT NULL,
         tokens     BIGINT NOT NULL,
         terms      BIGINT NOT NULL,
         text       TEXT NOT NULL
     );
     CREATE INDEX chunks_by_doc ON chunks(doc_id, seq);
     CREATE TABLE embeddings (
         chunk_id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
         model    TEXT NOT NULL,
         dims     INTEGER NOT NULL,
         vector   vector NOT NULL
     );
     CREATE TABLE postings (
         term     TEXT NOT NULL,
         chunk_id BIGINT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
         tf       INTEGER NOT NULL,
         PRIMARY KEY (term, chunk_id)
     );
     CREATE INDEX postings_by_chunk ON postings(chunk_id);
     CREATE TABLE meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
     INSERT INTO meta (key, value) VALUES ('generation', 0), ('chunks', 0), ('terms', 0);
     CREATE TABLE queue (
         id          BIGSERIAL PRIMARY KEY,
         origin      TEXT NOT NULL,
         path        TEXT NOT NULL,
         bytes       BIGINT NOT NULL DEFAULT 0,
         state       TEXT NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
         progress    DOUBLE PRECISION NOT NULL DEFAULT 0,
         eta_secs    DOUBLE PRECISION,
         error       TEXT,
         doc_id      BIGINT,
         owner       INTEGER,
         added_at    BIGINT NOT NULL,
         started_at  BIGINT,
         finished_at BIGINT
     );
     CREATE INDEX queue_by_state ON queue(origin, state, id);
     CREATE TABLE collections (
         id         BIGSERIAL PRIMARY KEY,
         name       TEXT NOT NULL,
         created_at BIGINT NOT NULL
     );
     CREATE UNIQUE INDEX collections_by_name ON collections (lower(name));
     CREATE TABLE collection_documents (
         collection_id BIGINT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
         doc_id        BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
         PRIMARY KEY (collection_id, doc_id)
     );
     CREATE INDEX collection_documents_by_doc ON collection_documents(doc_id);
     CREATE TABLE conversations (
         id         BIGSERIAL PRIMARY KEY,
         title      TEXT NOT NULL,
         created_at BIGINT NOT NULL,
         updated_at BIGINT NOT NULL
     );
     CREATE TABLE messages (
         id              BIGSERIAL PRIMARY KEY,
         conversation_id BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
         role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
         content         TEXT NOT NULL,
         mode            TEXT,
         query           TEXT,
         extra           TEXT,
         created_at      BIGINT NOT NULL
     );
     CREATE INDEX messages_by_conversation ON messages(conversation_id, id);"];

/// The advisory lock key the migrations run under ("quire" in ASCII).
const MIGRATION_LOCK: i64 = 0x71_7569_7265;

/// The PostgreSQL index.
pub struct Postgres {
    client: Mutex<Conn>,
    url: String,
    /// This process's queue rows: its host and data directory.
    origin: String,
    /// Dimensions that have their HNSW index.
    hnsw: Mutex<HashSet<i32>>,
    search: Arc<PgSearch>,
}

/// `url` without its password, for messages.
pub(super) fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let cred = &url[s + 3..at];
            match cred.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &cred[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Run `f`, on a thread of its own when called from inside an async runtime (an HTTP
/// handler): the blocking postgres client drives a runtime of its own, which cannot
/// start inside another.
pub(super) fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| {
        s.spawn(f)
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// A connection that is closed off any async runtime when dropped (closing blocks
/// on the client's own runtime too): an engine may be dropped by an HTTP server's
/// worker.
pub(super) struct Conn(Option<Client>);

impl Conn {
    pub(super) fn new(c: Client) -> Self {
        Self(Some(c))
    }
}

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("taken only when dropped"))
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        self.0
            .as_mut()
            .unwrap_or_else(|| unreachable!("taken only when dropped"))
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            off_runtime(move || drop(c));
        }
    }
}

/// A new connection to `url`, with a clear error when the server is not there.
pub(super) fn connect(url: &str) -> Result<Client> {
    off_runtime(|| Client::connect(url, NoTls)).map_err(|e| {
        let why = match e.as_db_error() {
            Some(db) => db.message().to_string(),
            None => {
                let s = e.to_string();
                match std::error::Error::source(&e) {
                    Some(src) => format!("{s}: {src}"),
                    None => s,
                }
            }
        };
        Error::Postgres(format!("cannot connect to {}: {why}", shown(url)))
    })
}

pub(super) fn vector_text(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 12 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        // Rust prints the shortest decimal that reads back as the same f32, and
        // pgvector reads it with strtof: the same bits.
        s.push_str(&format!("{x:?}"));
    }
    s.push(']');
    s
}

pub(super) fn text_vector(s: &str) -> Vec<f32> {
    s.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

/// A chunk's BM25 terms: each distinct term with its frequency (saturated at 255, as
/// the in-memory index keeps it), and how many terms it has in all.
pub(super) fn chunk_terms(text_: &str) -> (Vec<(String, i32)>, i64) {
    let mut tf: HashMap<String, i32> = HashMap::new();
    let mut len = 0i64;
    text::analyze(text_, |t| {
        len += 1;
        *tf.entry(t.to_string()).or_insert(0) += 1;
    });
    let mut terms: Vec<(String, i32)> = tf.into_iter().map(|(t, n)| (t, n.min(255))).collect();
    terms.sort();
    (terms, len)
}

impl Postgres {
    /// Connect to `url`, bring the schema up to date, and requeue nothing yet (the
    /// engine does, [`Backend::requeue_interrupted`]).
    pub fn connect(url: &str, origin: &str) -> Result<Self> {
        let mut client = Conn::new(connect(url)?);
        off_runtime(|| migrate(&mut client))
            .map_err(|e| Error::Postgres(format!("{}: {e}", shown(url))))?;
        Ok(Self {
            client: Mutex::new(client),
            url: url.to_string(),
            origin: origin.to_string(),
            hnsw: Mutex::new(HashSet::new()),
            search: Arc::new(PgSearch::new(url)),
        })
    }

    fn client(&self) -> MutexGuard<'_, Conn> {
        self.client.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The HNSW index over vectors of `dims` dimensions, made if missing.
    fn ensure_hnsw(&self, dims: i32) -> Result<()> {
        if self
            .hnsw
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&dims)
        {
            return Ok(());
        }
        let mut c = self.client();
        let mut tx = c.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&(MIGRATION_LOCK + 1)])?;
        tx.batch_execute(&format!(
            "CREATE INDEX IF NOT EXISTS embeddings_hnsw_{dims} ON embeddings
             USING hnsw ((vector::vector({dims})) vector_cosine_ops) WHERE dims = {dims}"
        ))?;
        tx.commit()?;
        self.hnsw
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dims);
        Ok(())
    }

    /// Remove the document at `path` (in `tx`, under its advisory lock), returning
    /// the collections it was in.
    fn replace_path(tx: &mut Transaction<'_>, path: &str) -> Result<Vec<i64>> {
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&path],
        )?;
        let old = tx.query_opt("SELECT id FROM documents WHERE path = $1", &[&path])?;
        let Some(old) = old else {
            return Ok(Vec::new());
        };
        let old: i64 = old.get(0);
        let cols = tx
            .query(
                "SELECT collection_id FROM collection_documents WHERE doc_id = $1",
                &[&old],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        Self::delete_document(tx, old)?;
        Ok(cols)
    }

    /// Delete document `id` and take its chunks out of the BM25 statistics.
    fn delete_document(tx: &mut Transaction<'_>, id: i64) -> Result<bool> {
        let r = tx.query_one(
            "SELECT count(*), coalesce(sum(terms), 0)::bigint FROM chunks WHERE doc_id = $1",
            &[&id],
        )?;
        let (chunks, terms): (i64, i64) = (r.get(0), r.get(1));
        let n = tx.execute("DELETE FROM documents WHERE id = $1", &[&id])?;
        if n > 0 {
            Self::count(tx, -chunks, -terms)?;
        }
        Ok(n > 0)
    }

    fn count(tx: &mut Transaction<'_>, chunks: i64, terms: i64) -> Result<()> {
        tx.execute(
            "UPDATE meta SET value = value + CASE key WHEN 'chunks' THEN $1::bigint
                 WHEN 'terms' THEN $2::bigint ELSE 1 END
             WHERE key IN ('generation', 'chunks', 'terms')",
            &[&chunks, &terms],
        )?;
        Ok(())
    }

    fn restore_collections(tx: &mut Transaction<'_>, doc: i64, cols: &[i64]) -> Result<()> {
        for c in cols {
            tx.execute(
                "INSERT INTO collection_documents (collection_id, doc_id) VALUES ($1, $2)
                 ON CONFLICT DO NOTHING",
                &[c, &doc],
            )?;
        }
        Ok(())
    }

    fn chunks_where(&self, filter: &str, docs: &[i64]) -> Result<Vec<StoredChunk>> {
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> = if filter.contains("$1") {
            vec![&docs]
        } else {
            Vec::new()
        };
        let rows = self.client().query(
            &format!(
                "SELECT c.id, c.doc_id, d.file_name, c.page_start, c.page_end, c.text,
                        e.vector::text
                 FROM chunks c
                 JOIN documents d ON d.id = c.doc_id AND d.status = 'done'
                 JOIN embeddings e ON e.chunk_id = c.id
                 WHERE {filter}
                 ORDER BY c.id"
            ),
            &params,
        )?;
        Ok(rows
            .iter()
            .map(|r| StoredChunk {
                id: r.get(0),
                doc_id: r.get(1),
                file: r.get(2),
                page_start: r.get::<_, i64>(3) as u32,
                page_end: r.get::<_, i64>(4) as u32,
                text: r.get(5),
                embedding: text_vector(r.get(6)),
            })
            .collect())
    }
}

/// Bring the schema up to date, one transaction per step, under an advisory lock.
fn migrate(client: &mut Client) -> Result<()> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS quire_schema (version BIGINT NOT NULL)")?;
    let version: i64 = match tx.query_opt("SELECT version FROM quire_schema", &[])? {
        Some(r) => r.get(0),
        None => {
            tx.execute("INSERT INTO quire_schema (version) VALUES (0)", &[])?;
            0
        }
    };
    if version as usize > MIGRATIONS.len() {
        return Err(Error::Invalid(format!(
            "the database's schema is version {version}, newer than this Quire knows ({}): \
             update Quire",
            MIGRATIONS.len()
        )));
    }
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        tx.batch_execute(sql)?;
        tx.execute("UPDATE quire_schema SET version = $1", &[&(v as i64 + 1)])?;
    }
    tx.commit()?;
    Ok(())
}

const QUEUE_SELECT: &str = "SELECT id, path, bytes, state, progress, eta_secs, error, doc_id,
                                   started_at, finished_at FROM queue";

fn queue_row(r: &postgres::Row) -> QueueRow {
    QueueRow {
        id: r.get(0),
        path: r.get(1),
        bytes: r.get::<_, i64>(2).max(0) as u64,
        state: r.get(3),
        progress: r.get(4),
        eta_secs: r.get(5),
        error: r.get(6),
        doc_id: r.get(7),
        started_at: r.get(8),
        finished_at: r.get(9),
    }
}

// The trait's methods run off any async runtime (the postgres client blocks on a
// runtime of its own, which cannot start inside another): see [`off_runtime`].
impl Postgres {
    fn version_(&self) -> Result<i64> {
        Ok(self
            .client()
            .query_one("SELECT version FROM quire_schema", &[])?
            .get(0))
    }

    fn generation_(&self) -> Result<i64> {
        Ok(self
            .client()
            .query_one("SELECT value FROM meta WHERE key = 'generation'", &[])?
            .get(0))
    }

    fn documents_(&self) -> Result<Vec<DocumentRow>> {
        let rows = self.client().query(
            "SELECT d.id, d.path, d.file_name, d.hash, d.title, d.pages, d.status, d.error,
                    (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
             FROM documents d ORDER BY d.id",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| DocumentRow {
                id: r.get(0),
                path: r.get(1),
                file_name: r.get(2),
                hash: r.get(3),
                title: r.get(4),
                pages: r.get::<_, i64>(5) as u32,
                status: r.get(6),
                error: r.get(7),
                chunks: r.get::<_, i64>(8) as usize,
            })
            .collect())
    }

    fn done_with_hash_(&self, hash: &str) -> Result<Option<(i64, String, usize)>> {
        Ok(self
            .client()
            .query_opt(
                "SELECT d.id, d.path, (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id)
                 FROM documents d WHERE d.hash = $1 AND d.status = 'done'
                 ORDER BY d.id LIMIT 1",
                &[&hash],
            )?
            .map(|r| (r.get(0), r.get(1), r.get::<_, i64>(2) as usize)))
    }

    fn insert_document_(&mut self, doc: &NewDocument<'_>) -> Result<i64> {
        if doc.embeddings.len() != doc.chunks.len() {
            return Err(Error::Invalid(format!(
                "{} embeddings for {} chunks",
                doc.embeddings.len(),
                doc.chunks.len()
            )));
        }
        let mut dims: Vec<i32> = doc.embeddings.iter().map(|v| v.len() as i32).collect();
        dims.dedup();
        for d in &dims {
            self.ensure_hnsw(*d)?;
        }
        // The analysis runs before the transaction: it holds no lock meanwhile.
        let terms: Vec<(Vec<(String, i32)>, i64)> =
            doc.chunks.iter().map(|c| chunk_terms(&c.text)).collect();
        let mut c = self.client();
        let mut tx = c.transaction()?;
        let cols = Self::replace_path(&mut tx, doc.path)?;
        let id: i64 = tx
            .query_one(
                "INSERT INTO documents (path, file_name, hash, title, pages, status, bytes, indexed_at)
                 VALUES ($1, $2, $3, $4, $5, 'done', $6, $7) RETURNING id",
                &[
                    &doc.path,
                    &file_name(doc.path),
                    &doc.hash,
                    &doc.title,
                    &(doc.pages.len() as i64),
                    &(doc.bytes as i64),
                    &now_ms(),
                ],
            )?
            .get(0);
        Self::restore_collections(&mut tx, id, &cols)?;
        let page =
            tx.prepare("INSERT INTO pages (doc_id, number, text, ocr) VALUES ($1, $2, $3, $4)")?;
        for p in doc.pages {
            tx.execute(&page, &[&id, &i64::from(p.number), &p.text, &p.ocr])?;
        }
        let chunk = tx.prepare(
            "INSERT INTO chunks (doc_id, seq, page_start, page_end, char_start, char_end, tokens,
                                 terms, text)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )?;
        let emb = tx.prepare(
            "INSERT INTO embeddings (chunk_id, model, dims, vector)
             VALUES ($1, $2, $3, $4::text::vector)",
        )?;
        let post = tx.prepare(
            "INSERT INTO postings (term, chunk_id, tf)
             SELECT t, $2, f FROM unnest($1::text[], $3::int[]) AS u(t, f)",
        )?;
        let mut total_terms = 0i64;
        for (seq, ((ch, v), (tf, len))) in doc
            .chunks
            .iter()
            .zip(doc.embeddings)
            .zip(&terms)
            .enumerate()
        {
            let cid: i64 = tx
                .query_one(
                    &chunk,
                    &[
                        &id,
                        &(seq as i64),
                        &i64::from(ch.page_start),
                        &i64::from(ch.page_end),
                        &(ch.char_start as i64),
                        &(ch.char_end as i64),
                        &(ch.tokens as i64),
                        len,
                        &ch.text,
                    ],
                )?
                .get(0);
            tx.execute(
                &emb,
                &[&cid, &doc.model, &(v.len() as i32), &vector_text(v)],
            )?;
            let names: Vec<&str> = tf.iter().map(|(t, _)| t.as_str()).collect();
            let counts: Vec<i32> = tf.iter().map(|(_, n)| *n).collect();
            tx.execute(&post, &[&names, &cid, &counts])?;
            total_terms += len;
        }
        Self::count(&mut tx, doc.chunks.len() as i64, total_terms)?;
        tx.commit()?;
        Ok(id)
    }

    fn insert_failed_(&mut self, path: &str, hash: &str, bytes: u64, error: &str) -> Result<i64> {
        let mut c = self.client();
        let mut tx = c.transaction()?;
        let cols = Self::replace_path(&mut tx, path)?;
        let id: i64 = tx
            .query_one(
                "INSERT INTO documents (path, file_name, hash, status, error, bytes, indexed_at)
                 VALUES ($1, $2, $3, 'failed', $4, $5, $6) RETURNING id",
                &[
                    &path,
                    &file_name(path),
                    &hash,
                    &error,
                    &(bytes as i64),
                    &now_ms(),
                ],
            )?
            .get(0);
        Self::restore_collections(&mut tx, id, &cols)?;
        Self::count(&mut tx, 0, 0)?;
        tx.commit()?;
        Ok(id)
    }

    fn remove_document_(&mut self, id: i64) -> Result<bool> {
        let mut c = self.client();
        let mut tx = c.transaction()?;
        let path = tx.query_opt("SELECT path FROM documents WHERE id = $1", &[&id])?;
        let Some(path) = path else { return Ok(false) };
        let path: String = path.get(0);
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&path],
        )?;
        let gone = Self::delete_document(&mut tx, id)?;
        tx.commit()?;
        Ok(gone)
    }

    fn ocr_pages_(&self, doc_id: i64) -> Result<Vec<u32>> {
        Ok(self
            .client()
            .query(
                "SELECT number FROM pages WHERE doc_id = $1 AND ocr ORDER BY number",
                &[&doc_id],
            )?
            .iter()
            .map(|r| r.get::<_, i64>(0) as u32)
            .collect())
    }

    fn page_text_(&self, doc_id: i64, number: u32) -> Result<Option<String>> {
        Ok(self
            .client()
            .query_opt(
                "SELECT text FROM pages WHERE doc_id = $1 AND number = $2",
                &[&doc_id, &i64::from(number)],
            )?
            .map(|r| r.get(0)))
    }

    fn load_chunks_(&self) -> Result<Vec<StoredChunk>> {
        self.chunks_where("true", &[])
    }

    fn load_chunks_of_(&self, docs: &[i64]) -> Result<Vec<StoredChunk>> {
        self.chunks_where("c.doc_id = ANY($1)", docs)
    }

    fn searchable_documents_(&self) -> Result<HashSet<i64>> {
        Ok(self
            .client()
            .query(
                "SELECT DISTINCT c.doc_id FROM chunks c
                 JOIN documents d ON d.id = c.doc_id AND d.status = 'done'
                 JOIN embeddings e ON e.chunk_id = c.id",
                &[],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn embedding_models_(&self) -> Result<Vec<(String, usize)>> {
        Ok(self
            .client()
            .query(
                "SELECT model, count(*) FROM embeddings GROUP BY model
                 ORDER BY count(*) DESC, model",
                &[],
            )?
            .iter()
            .map(|r| (r.get(0), r.get::<_, i64>(1) as usize))
            .collect())
    }

    fn chunks_not_embedded_by_(&self, model: &str, limit: usize) -> Result<Vec<(i64, String)>> {
        Ok(self
            .client()
            .query(
                "SELECT c.id, c.text FROM chunks c JOIN embeddings e ON e.chunk_id = c.id
                 WHERE e.model != $1 ORDER BY c.id LIMIT $2",
                &[&model, &(limit as i64)],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }

    fn replace_embeddings_(&mut self, model: &str, rows: &[(i64, Vec<f32>)]) -> Result<()> {
        let mut dims: Vec<i32> = rows.iter().map(|(_, v)| v.len() as i32).collect();
        dims.sort_unstable();
        dims.dedup();
        for d in &dims {
            self.ensure_hnsw(*d)?;
        }
        let mut c = self.client();
        let mut tx = c.transaction()?;
        let up = tx.prepare(
            "UPDATE embeddings SET model = $1, dims = $2, vector = $3::text::vector
             WHERE chunk_id = $4",
        )?;
        for (id, v) in rows {
            tx.execute(&up, &[&model, &(v.len() as i32), &vector_text(v), id])?;
        }
        Self::count(&mut tx, 0, 0)?;
        tx.commit()?;
        Ok(())
    }

    fn check_(&self) -> Result<Vec<String>> {
        let mut c = self.client();
        let mut problems = Vec::new();
        let own = [
            (
                "chunks whose BM25 statistics are off",
                "SELECT abs((SELECT count(*) FROM chunks)
                            - (SELECT value FROM meta WHERE key = 'chunks'))
                      + abs((SELECT coalesce(sum(terms), 0)::bigint FROM chunks)
                            - (SELECT value FROM meta WHERE key = 'terms'))",
            ),
            (
                "vectors whose dimension is misrecorded",
                "SELECT count(*) FROM embeddings WHERE vector_dims(vector) != dims",
            ),
        ];
        for (what, sql) in super::CHECKS.iter().chain(&own) {
            let n: i64 = c.query_one(*sql, &[])?.get(0);
            if n > 0 {
                problems.push(format!("{n} {what}"));
            }
        }
        Ok(problems)
    }

    fn enqueue_(&mut self, files: &[(String, u64)]) -> Result<Vec<i64>> {
        let origin = self.origin.clone();
        let mut c = self.client();
        let mut tx = c.transaction()?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 1))",
            &[&origin],
        )?;
        let waiting: i64 = tx
            .query_one(
                "SELECT count(*) FROM queue WHERE origin = $1 AND state IN ('queued', 'running')",
                &[&origin],
            )?
            .get(0);
        if waiting == 0 {
            tx.execute("DELETE FROM queue WHERE origin = $1", &[&origin])?;
        }
        let mut ids = Vec::with_capacity(files.len());
        for (path, bytes) in files {
            let here = tx.query_opt(
                "SELECT id FROM queue WHERE origin = $1 AND path = $2
                 AND state IN ('queued', 'running')",
                &[&origin, path],
            )?;
            let id: i64 = match here {
                Some(r) => r.get(0),
                None => tx
                    .query_one(
                        "INSERT INTO queue (origin, path, bytes, added_at) VALUES ($1, $2, $3, $4)
                         RETURNING id",
                        &[&origin, path, &(*bytes as i64), &now_ms()],
                    )?
                    .get(0),
            };
            ids.push(id);
        }
        tx.commit()?;
        Ok(ids)
    }

    fn claim_(&self) -> Result<Option<QueueRow>> {
        let row = self.client().query_opt(
            &format!(
                "WITH next AS (
                     SELECT id FROM queue WHERE origin = $1 AND state = 'queued'
                     ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                 UPDATE queue q SET state = 'running', progress = 0, eta_secs = NULL,
                                    started_at = $2, owner = pg_backend_pid()
                 FROM next WHERE q.id = next.id
                 RETURNING {}",
                QUEUE_SELECT
                    .trim_start_matches("SELECT ")
                    .trim_end_matches(" FROM queue")
                    .split(',')
                    .map(|c| format!("q.{}", c.trim()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &[&self.origin, &now_ms()],
        )?;
        Ok(row.as_ref().map(queue_row))
    }

    fn waiting_(&self) -> Result<usize> {
        let n: i64 = self
            .client()
            .query_one(
                "SELECT count(*) FROM queue WHERE origin = $1 AND state = 'queued'",
                &[&self.origin],
            )?
            .get(0);
        Ok(n as usize)
    }

    fn queue_row_(&self, id: i64) -> Result<Option<QueueRow>> {
        Ok(self
            .client()
            .query_opt(&format!("{QUEUE_SELECT} WHERE id = $1"), &[&id])?
            .as_ref()
            .map(queue_row))
    }

    fn queue_(&self) -> Result<Vec<QueueRow>> {
        Ok(self
            .client()
            .query(
                &format!("{QUEUE_SELECT} WHERE origin = $1 ORDER BY id"),
                &[&self.origin],
            )?
            .iter()
            .map(queue_row)
            .collect())
    }

    fn progress_(&self, id: i64, fraction: f64, eta_secs: Option<f64>) -> Result<()> {
        self.client().execute(
            "UPDATE queue SET progress = $2, eta_secs = $3 WHERE id = $1 AND state = 'running'",
            &[&id, &fraction.clamp(0.0, 1.0), &eta_secs],
        )?;
        Ok(())
    }

    fn finish_(&self, id: i64, doc_id: Option<i64>, error: Option<&str>) -> Result<()> {
        let state = if error.is_some() {
            QueueState::Failed
        } else {
            QueueState::Done
        };
        self.client().execute(
            "UPDATE queue SET state = $2, doc_id = $3, error = $4, progress = 1, eta_secs = NULL,
                              finished_at = $5
             WHERE id = $1 AND state != 'cancelled'",
            &[&id, &state, &doc_id, &error, &now_ms()],
        )?;
        Ok(())
    }

    fn requeue_(&self, id: i64) -> Result<()> {
        self.client().execute(
            "UPDATE queue SET state = 'queued', progress = 0, eta_secs = NULL, started_at = NULL,
                              owner = NULL
             WHERE id = $1 AND state = 'running'",
            &[&id],
        )?;
        Ok(())
    }

    fn requeue_interrupted_(&self) -> Result<usize> {
        // Only rows whose taking session is gone: another live process's are its own.
        Ok(self.client().execute(
            "UPDATE queue SET state = 'queued', progress = 0, eta_secs = NULL, started_at = NULL,
                              owner = NULL
             WHERE origin = $1 AND state = 'running'
               AND (owner IS NULL OR owner NOT IN (SELECT pid FROM pg_stat_activity
                                                   WHERE pid IS NOT NULL))",
            &[&self.origin],
        )? as usize)
    }

    fn cancel_(&self, id: Option<i64>) -> Result<Vec<i64>> {
        Ok(self
            .client()
            .query(
                "UPDATE queue SET state = 'cancelled', eta_secs = NULL, finished_at = $2
                 WHERE ($1::bigint IS NULL AND origin = $3 OR id = $1)
                   AND state IN ('queued', 'running') RETURNING id",
                &[&id, &now_ms(), &self.origin],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn wanted_(&self, id: i64) -> Result<bool> {
        let state: Option<String> = self
            .client()
            .query_opt("SELECT state FROM queue WHERE id = $1", &[&id])?
            .map(|r| r.get(0));
        Ok(state.is_some_and(|s| s != "cancelled"))
    }

    fn collections_(&self) -> Result<Vec<Collection>> {
        let mut c = self.client();
        let heads = c.query(
            "SELECT id, name FROM collections ORDER BY lower(name), id",
            &[],
        )?;
        let members = c.query(
            "SELECT collection_id, doc_id FROM collection_documents ORDER BY doc_id",
            &[],
        )?;
        let mut docs: HashMap<i64, Vec<i64>> = HashMap::new();
        for m in &members {
            docs.entry(m.get(0)).or_default().push(m.get(1));
        }
        Ok(heads
            .iter()
            .map(|h| {
                let id: i64 = h.get(0);
                Collection {
                    id,
                    name: h.get(1),
                    documents: docs.remove(&id).unwrap_or_default(),
                }
            })
            .collect())
    }

    fn collection_by_name_(&self, name: &str) -> Result<Option<Collection>> {
        let id: Option<i64> = self
            .client()
            .query_opt(
                "SELECT id FROM collections WHERE lower(name) = lower($1)",
                &[&name.trim()],
            )?
            .map(|r| r.get(0));
        match id {
            Some(id) => self.collection(id),
            None => Ok(None),
        }
    }

    fn create_collection_(&self, name: &str) -> Result<i64> {
        let name = clean_name(name)?;
        let id = self.client().query_opt(
            "INSERT INTO collections (name, created_at) VALUES ($1, $2)
             ON CONFLICT DO NOTHING RETURNING id",
            &[&name, &now_ms()],
        )?;
        match id {
            Some(r) => Ok(r.get(0)),
            None => Err(Error::Invalid(format!(
                "there is already a collection named \"{name}\""
            ))),
        }
    }

    fn rename_collection_(&self, id: i64, name: &str) -> Result<bool> {
        let name = clean_name(name)?;
        if let Some(other) = self.collection_by_name(&name)? {
            if other.id != id {
                return Err(Error::Invalid(format!(
                    "there is already a collection named \"{name}\""
                )));
            }
        }
        Ok(self.client().execute(
            "UPDATE collections SET name = $2 WHERE id = $1",
            &[&id, &name],
        )? > 0)
    }

    fn set_collection_documents_(&mut self, id: i64, docs: &[i64]) -> Result<bool> {
        let mut c = self.client();
        let mut tx = c.transaction()?;
        if tx
            .query_opt("SELECT 1 FROM collections WHERE id = $1 FOR UPDATE", &[&id])?
            .is_none()
        {
            return Ok(false);
        }
        tx.execute(
            "DELETE FROM collection_documents WHERE collection_id = $1",
            &[&id],
        )?;
        for doc in docs {
            if tx
                .query_opt("SELECT 1 FROM documents WHERE id = $1", &[doc])?
                .is_none()
            {
                return Err(Error::NotFound(format!("document {doc}")));
            }
            tx.execute(
                "INSERT INTO collection_documents (collection_id, doc_id) VALUES ($1, $2)
                 ON CONFLICT DO NOTHING",
                &[&id, doc],
            )?;
        }
        tx.commit()?;
        Ok(true)
    }

    fn remove_collection_(&self, id: i64) -> Result<bool> {
        Ok(self
            .client()
            .execute("DELETE FROM collections WHERE id = $1", &[&id])?
            > 0)
    }

    fn create_conversation_(&self, first_question: &str) -> Result<i64> {
        let t = now_ms();
        Ok(self
            .client()
            .query_one(
                "INSERT INTO conversations (title, created_at, updated_at) VALUES ($1, $2, $2)
                 RETURNING id",
                &[&conversation_title(first_question), &t],
            )?
            .get(0))
    }

    fn add_message_(&self, m: &NewMessage<'_>) -> Result<i64> {
        let NewMessage {
            conversation,
            role,
            content,
            mode,
            query,
            extra,
        } = *m;
        let t = now_ms();
        let extra = serde_json::Value::Object(extra.clone()).to_string();
        let mut c = self.client();
        let mut tx = c.transaction()?;
        let id: i64 = tx
            .query_one(
                "INSERT INTO messages (conversation_id, role, content, mode, query, extra, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                &[&conversation, &role, &content, &mode, &query, &extra, &t],
            )?
            .get(0);
        tx.execute(
            "UPDATE conversations SET updated_at = $2 WHERE id = $1",
            &[&conversation, &t],
        )?;
        tx.commit()?;
        Ok(id)
    }

    fn conversations_(&self) -> Result<Vec<ConversationInfo>> {
        Ok(self
            .client()
            .query(
                "SELECT id, title, created_at, updated_at FROM conversations
                 ORDER BY updated_at DESC, id DESC",
                &[],
            )?
            .iter()
            .map(|r| ConversationInfo {
                id: r.get(0),
                title: r.get(1),
                created_at: r.get(2),
                updated_at: r.get(3),
            })
            .collect())
    }

    fn conversation_(&self, id: i64) -> Result<Option<Conversation>> {
        let mut c = self.client();
        let Some(r) = c.query_opt(
            "SELECT id, title, created_at, updated_at FROM conversations WHERE id = $1",
            &[&id],
        )?
        else {
            return Ok(None);
        };
        let info = ConversationInfo {
            id: r.get(0),
            title: r.get(1),
            created_at: r.get(2),
            updated_at: r.get(3),
        };
        let messages = c
            .query(
                "SELECT id, role, content, mode, query, extra, created_at FROM messages
                 WHERE conversation_id = $1 ORDER BY id",
                &[&id],
            )?
            .iter()
            .map(|r| {
                let extra: Option<String> = r.get(5);
                Message {
                    id: r.get(0),
                    role: r.get(1),
                    content: r.get(2),
                    mode: r.get(3),
                    query: r.get(4),
                    extra: super::conversations::extra_of(extra),
                    created_at: r.get(6),
                }
            })
            .collect();
        Ok(Some(Conversation { info, messages }))
    }

    fn remove_messages_(&self, conversation: i64, ids: &[i64]) -> Result<usize> {
        let mut c = self.client();
        let n = c.execute(
            "DELETE FROM messages WHERE conversation_id = $1 AND id = ANY($2)",
            &[&conversation, &ids],
        )?;
        if n > 0 {
            c.execute(
                "UPDATE conversations SET updated_at = $2 WHERE id = $1",
                &[&conversation, &now_ms()],
            )?;
        }
        Ok(n as usize)
    }

    fn remove_conversation_(&self, id: i64) -> Result<bool> {
        Ok(self
            .client()
            .execute("DELETE FROM conversations WHERE id = $1", &[&id])?
            > 0)
    }
}

impl Backend for Postgres {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn location(&self) -> String {
        shown(&self.url)
    }

    fn shared(&self) -> bool {
        true
    }

    fn in_database(&self) -> Option<Arc<dyn crate::retrieve::Corpus>> {
        Some(self.search.clone())
    }

    fn version(&self) -> Result<i64> {
        off_runtime(|| self.version_())
    }

    fn generation(&self) -> Result<i64> {
        off_runtime(|| self.generation_())
    }

    fn documents(&self) -> Result<Vec<DocumentRow>> {
        off_runtime(|| self.documents_())
    }

    fn done_with_hash(&self, hash: &str) -> Result<Option<(i64, String, usize)>> {
        off_runtime(|| self.done_with_hash_(hash))
    }

    fn insert_document(&mut self, doc: &NewDocument<'_>) -> Result<i64> {
        let this = &mut *self;
        off_runtime(move || this.insert_document_(doc))
    }

    fn insert_failed(&mut self, path: &str, hash: &str, bytes: u64, error: &str) -> Result<i64> {
        let this = &mut *self;
        off_runtime(move || this.insert_failed_(path, hash, bytes, error))
    }

    fn remove_document(&mut self, id: i64) -> Result<bool> {
        let this = &mut *self;
        off_runtime(move || this.remove_document_(id))
    }

    fn ocr_pages(&self, doc_id: i64) -> Result<Vec<u32>> {
        off_runtime(|| self.ocr_pages_(doc_id))
    }

    fn page_text(&self, doc_id: i64, number: u32) -> Result<Option<String>> {
        off_runtime(|| self.page_text_(doc_id, number))
    }

    fn load_chunks(&self) -> Result<Vec<StoredChunk>> {
        off_runtime(|| self.load_chunks_())
    }

    fn load_chunks_of(&self, docs: &[i64]) -> Result<Vec<StoredChunk>> {
        off_runtime(|| self.load_chunks_of_(docs))
    }

    fn searchable_documents(&self) -> Result<HashSet<i64>> {
        off_runtime(|| self.searchable_documents_())
    }

    fn embedding_models(&self) -> Result<Vec<(String, usize)>> {
        off_runtime(|| self.embedding_models_())
    }

    fn chunks_not_embedded_by(&self, model: &str, limit: usize) -> Result<Vec<(i64, String)>> {
        off_runtime(|| self.chunks_not_embedded_by_(model, limit))
    }

    fn replace_embeddings(&mut self, model: &str, rows: &[(i64, Vec<f32>)]) -> Result<()> {
        let this = &mut *self;
        off_runtime(move || this.replace_embeddings_(model, rows))
    }

    fn check(&self) -> Result<Vec<String>> {
        off_runtime(|| self.check_())
    }

    fn enqueue(&mut self, files: &[(String, u64)]) -> Result<Vec<i64>> {
        let this = &mut *self;
        off_runtime(move || this.enqueue_(files))
    }

    fn claim(&self) -> Result<Option<QueueRow>> {
        off_runtime(|| self.claim_())
    }

    fn waiting(&self) -> Result<usize> {
        off_runtime(|| self.waiting_())
    }

    fn queue_row(&self, id: i64) -> Result<Option<QueueRow>> {
        off_runtime(|| self.queue_row_(id))
    }

    fn queue(&self) -> Result<Vec<QueueRow>> {
        off_runtime(|| self.queue_())
    }

    fn progress(&self, id: i64, fraction: f64, eta_secs: Option<f64>) -> Result<()> {
        off_runtime(|| self.progress_(id, fraction, eta_secs))
    }

    fn finish(&self, id: i64, doc_id: Option<i64>, error: Option<&str>) -> Result<()> {
        off_runtime(|| self.finish_(id, doc_id, error))
    }

    fn requeue(&self, id: i64) -> Result<()> {
        off_runtime(|| self.requeue_(id))
    }

    fn requeue_interrupted(&self) -> Result<usize> {
        off_runtime(|| self.requeue_interrupted_())
    }

    fn cancel(&self, id: Option<i64>) -> Result<Vec<i64>> {
        off_runtime(|| self.cancel_(id))
    }

    fn wanted(&self, id: i64) -> Result<bool> {
        off_runtime(|| self.wanted_(id))
    }

    fn collections(&self) -> Result<Vec<Collection>> {
        off_runtime(|| self.collections_())
    }

    fn collection_by_name(&self, name: &str) -> Result<Option<Collection>> {
        off_runtime(|| self.collection_by_name_(name))
    }

    fn create_collection(&self, name: &str) -> Result<i64> {
        off_runtime(|| self.create_collection_(name))
    }

    fn rename_collection(&self, id: i64, name: &str) -> Result<bool> {
        off_runtime(|| self.rename_collection_(id, name))
    }

    fn set_collection_documents(&mut self, id: i64, docs: &[i64]) -> Result<bool> {
        let this = &mut *self;
        off_runtime(move || this.set_collection_documents_(id, docs))
    }

    fn remove_collection(&self, id: i64) -> Result<bool> {
        off_runtime(|| self.remove_collection_(id))
    }

    fn create_conversation(&self, first_question: &str) -> Result<i64> {
        off_runtime(|| self.create_conversation_(first_question))
    }

    fn add_message(&self, message: &NewMessage<'_>) -> Result<i64> {
        off_runtime(|| self.add_message_(message))
    }

    fn conversations(&self) -> Result<Vec<ConversationInfo>> {
        off_runtime(|| self.conversations_())
    }

    fn conversation(&self, id: i64) -> Result<Option<Conversation>> {
        off_runtime(|| self.conversation_(id))
    }

    fn remove_messages(&self, conversation: i64, ids: &[i64]) -> Result<usize> {
        off_runtime(|| self.remove_messages_(conversation, ids))
    }

    fn remove_conversation(&self, id: i64) -> Result<bool> {
        off_runtime(|| self.remove_conversation_(id))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn vectors_go_to_pgvector_text_and_back_bit_for_bit() {
        let v = vec![0.1f32, -1.5e-7, 3.0, f32::MIN_POSITIVE, 0.333_333_34];
        assert_eq!(text_vector(&vector_text(&v)), v);
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            shown("postgres://quire:secret@db:5432/quire"),
            "postgres://quire:***@db:5432/quire"
        );
        assert_eq!(shown("postgres://quire@db/q"), "postgres://quire@db/q");
    }

    #[test]
    fn chunk_terms_count_as_the_in_memory_index_does() {
        let (terms, len) = chunk_terms("Upgrading the upgrades: upgrade 宏包");
        assert!(
            terms.iter().any(|(t, n)| t == "upgrad" && *n == 3),
            "{terms:?}"
        );
        assert_eq!(len, terms.iter().map(|(_, n)| i64::from(*n)).sum::<i64>());
    }
}
