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
//!   Okapi BM25, k1 = 1.2, b = 0.75) over a `term_docs` table (a row per term and
//!   document: its chunks' postings, each chunk with the term's frequency and the
//!   chunk's length, in one list) that Quire's analyzer fills when a document is
//!   written:
//!   the same words, stems, and CJK character unigrams and bigrams as the in-memory
//!   index, so both stores rank alike (Postgres's `tsvector` parsers do not split
//!   Chinese, and `ts_rank` is not BM25). The collection statistics (chunks, terms)
//!   are kept in `meta` and each term's document frequency in `term_stats`, updated
//!   in the transaction that writes or removes a document. A question reads the
//!   lists merged by block of documents (`term_blocks`, [`blocks`]): a few rows a
//!   term where a common term had a row in every document.
//! - **Several processes.** A document is written in one transaction under an
//!   advisory lock on its path. The queue is per process (`origin`: host and data
//!   directory, since a queued path names a file on that machine); a row taken is
//!   marked with the taking session's backend pid, so a process opening the database
//!   requeues only rows whose session is gone, never a live process's work, and
//!   `FOR UPDATE SKIP LOCKED` keeps two indexers from taking one row.
//!
//! `mod.rs` connects and migrates, and runs every call on the store's connection
//! through one door, `Postgres::run`, which takes it off any async runtime; the
//! other files implement the store's traits, one concern each, as SQLite's do, with
//! `connection.rs` (connections, the hop off the runtime, the retrievers' pool) and
//! `search.rs` (retrieval in the database) beside them.

mod blocks;
mod bm25;
mod collections;
mod connection;
mod conversations;
mod documents;
mod folders;
mod library;
mod list_cache;
mod maxscore;
mod queue;
mod search;
mod summaries;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use postgres::Client;

use self::connection::{connect, off_runtime, shown, Conn};
pub use self::maxscore::Reads;
pub use self::search::PgSearch;
use crate::retrieve::Corpus;
use crate::store::{Backend, CHECKS};
use crate::{Error, Result};

/// The schema, one entry per version.
const MIGRATIONS: &[&str] = &[
    "CREATE EXTENSION IF NOT EXISTS vector;
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
     CREATE INDEX messages_by_conversation ON messages(conversation_id, id);",
    // 2: failed documents ignored; names and dates indexed for paging.
    library::SCHEMA,
    // 3: each document's summary tree (the whole-document route's cache).
    summaries::SCHEMA,
    // 4: BM25 reads a term's postings alone, from the index: each posting carries its
    // chunk's length and document, and the primary key covers every column read.
    search::POSTINGS_COVERED,
    // 5: BM25's postings a list per term and document, read a few rows a term.
    search::TERM_LISTS,
    // 6: each term's document frequency, kept beside its lists (MaxScore's weights).
    search::TERM_STATS,
    // 7: the lists merged by block of documents, read a few rows a term.
    blocks::SCHEMA,
];

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

impl Postgres {
    /// Connect to `url`, bring the schema up to date, and requeue nothing yet (the
    /// engine does, [`crate::store::Queue::requeue_interrupted`]).
    pub fn connect(url: &str, origin: &str) -> Result<Self> {
        let mut client = Conn::new(connect(url)?);
        off_runtime(|| {
            migrate(&mut client)?;
            blocks::merge_quietly(&mut client);
            Ok::<_, Error>(())
        })
        .map_err(|e| Error::Postgres(format!("{}: {e}", shown(url))))?;
        Ok(Self {
            client: Mutex::new(client),
            url: url.to_string(),
            origin: origin.to_string(),
            hnsw: Mutex::new(HashSet::new()),
            search: Arc::new(PgSearch::new(url)),
        })
    }

    /// Run `f` on the store's connection, off any async runtime ([`off_runtime`]: the
    /// blocking client drives a runtime of its own, which cannot start inside
    /// another). The one door to the connection: every trait method that reaches the
    /// database is a `self.run(|c| …)`, its transaction (if any) inside `f`. The
    /// connection is held while `f` runs, so `f` does not call another method that
    /// runs (the helpers it shares take the `Client` instead).
    fn run<T: Send>(&self, f: impl FnOnce(&mut Client) -> Result<T> + Send) -> Result<T> {
        off_runtime(|| f(&mut self.client.lock().unwrap_or_else(|e| e.into_inner())))
    }
}

impl Backend for Postgres {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn location(&self) -> String {
        shown(&self.url)
    }

    fn in_database(&self) -> Option<Arc<dyn Corpus>> {
        Some(self.search.clone())
    }

    fn version(&self) -> Result<i64> {
        self.run(|c| Ok(c.query_one("SELECT version FROM quire_schema", &[])?.get(0)))
    }

    fn check(&self) -> Result<Vec<String>> {
        self.run(|c| {
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
                    "terms whose document frequency is off",
                    "SELECT count(*) FROM (SELECT term, sum(octet_length(postings) / 16) AS df
                                           FROM term_docs GROUP BY term) d
                     FULL JOIN term_stats s USING (term)
                     WHERE coalesce(d.df, 0) != coalesce(s.df, 0)",
                ),
                (
                    "BM25 block lists that differ from their documents' lists",
                    blocks::CHECK,
                ),
                (
                    "vectors whose dimension is misrecorded",
                    "SELECT count(*) FROM embeddings WHERE vector_dims(vector) != dims",
                ),
            ];
            for (what, sql) in CHECKS.iter().chain(&own) {
                let n: i64 = c.query_one(*sql, &[])?.get(0);
                if n > 0 {
                    problems.push(format!("{n} {what}"));
                }
            }
            Ok(problems)
        })
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
