//! The index: documents, their pages, chunks and embeddings, the indexing queue,
//! collections and conversations, behind one trait ([`Backend`]) with two
//! implementations:
//!
//! - [`sqlite::Sqlite`], the default: one file (`index.sqlite` in the data
//!   directory), no set-up. Retrieval runs over in-memory indexes built from
//!   [`Backend::load_chunks`] and updated document by document.
//! - [`postgres::Postgres`] (`--store postgres://…`): a PostgreSQL database with the
//!   pgvector extension, which several `quire serve` processes can share. Retrieval runs
//!   in the database ([`Backend::in_database`]): an HNSW index over the vectors and
//!   BM25 over a postings table Quire's own analyzer fills.
//!
//! Both write a document in one transaction, so a crash or a kill leaves either all of
//! it or none of it, and both number documents and chunks without reusing ids.

pub mod collections;
pub mod conversations;
mod pg_search;
pub mod postgres;
pub mod queue;
pub mod sqlite;
mod states;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crate::ingest::split::Chunk;
use crate::ingest::ExtractedPage;
use crate::retrieve::Corpus;
use crate::Result;

pub use collections::Collection;
pub use conversations::{Conversation, ConversationInfo, Message};
pub use queue::QueueRow;
pub use states::{DocStatus, QueueState, Role};

/// A document as listed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DocumentRow {
    pub id: i64,
    pub path: String,
    pub file_name: String,
    /// sha256 of the file's bytes, hex.
    pub hash: String,
    pub title: Option<String>,
    pub pages: u32,
    pub chunks: usize,
    pub status: DocStatus,
    pub error: Option<String>,
}

/// A chunk with its embedding, as the in-memory retrievers load them.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredChunk {
    pub id: i64,
    pub doc_id: i64,
    /// The document's file name.
    pub file: String,
    pub page_start: u32,
    pub page_end: u32,
    pub text: String,
    pub embedding: Vec<f32>,
}

/// A document ready to be written: what extraction, splitting and embedding made.
#[derive(Debug, Clone)]
pub struct NewDocument<'a> {
    pub path: &'a str,
    pub hash: &'a str,
    pub bytes: u64,
    pub title: Option<&'a str>,
    pub pages: &'a [ExtractedPage],
    pub chunks: &'a [Chunk],
    /// One per chunk, same order.
    pub embeddings: &'a [Vec<f32>],
    /// Which model made the embeddings.
    pub model: &'a str,
}

/// A message to append to a conversation.
#[derive(Debug, Clone, Copy)]
pub struct NewMessage<'a> {
    pub conversation: i64,
    pub role: Role,
    pub content: &'a str,
    /// The response mode that answered (answers only).
    pub mode: Option<&'a str>,
    /// The question as it was searched for (answers only).
    pub query: Option<&'a str>,
    /// What else the engine keeps with it (an answer's sources, quotes, support,
    /// stats, …: `engine`'s answer record), as a JSON object.
    pub extra: &'a serde_json::Map<String, serde_json::Value>,
}

/// What the engine keeps in an index, whichever database holds it.
pub trait Backend: Send {
    /// `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
    /// Where it is, for messages: the file, or the server and database (no password).
    fn location(&self) -> String;
    /// Whether other processes may be using the same index at once (a shared
    /// server): the queue rows they run are theirs.
    fn shared(&self) -> bool {
        false
    }
    /// The schema version.
    fn version(&self) -> Result<i64>;
    /// A counter bumped by every change to the documents: when it moves, in-memory
    /// indexes built from [`Backend::load_chunks`] are stale.
    fn generation(&self) -> Result<i64>;

    // Documents.

    /// All documents, by id.
    fn documents(&self) -> Result<Vec<DocumentRow>>;
    /// The document at `path`, if any.
    fn document_by_path(&self, path: &str) -> Result<Option<DocumentRow>> {
        Ok(self.documents()?.into_iter().find(|d| d.path == path))
    }
    /// A document indexed (status done) with this content hash, if any: (id, path,
    /// chunks).
    fn done_with_hash(&self, hash: &str) -> Result<Option<(i64, String, usize)>>;
    /// Write a document with its pages, chunks and embeddings in one transaction,
    /// replacing whatever was indexed at the same path (it stays in its
    /// collections). Returns its id.
    fn insert_document(&mut self, doc: &NewDocument<'_>) -> Result<i64>;
    /// Record that the file at `path` could not be indexed (replacing what was there).
    fn insert_failed(&mut self, path: &str, hash: &str, bytes: u64, error: &str) -> Result<i64>;
    /// Remove a document with its pages, chunks and embeddings. Returns whether it
    /// existed.
    fn remove_document(&mut self, id: i64) -> Result<bool>;
    /// The numbers of the pages of a document whose text came from OCR.
    fn ocr_pages(&self, doc_id: i64) -> Result<Vec<u32>>;
    /// The text of one page of a document.
    fn page_text(&self, doc_id: i64, number: u32) -> Result<Option<String>>;
    /// Every chunk of the documents indexed (status done), with its embedding, in
    /// chunk id order.
    fn load_chunks(&self) -> Result<Vec<StoredChunk>>;
    /// [`Backend::load_chunks`] for the chunks of the documents `docs` only.
    fn load_chunks_of(&self, docs: &[i64]) -> Result<Vec<StoredChunk>>;
    /// The documents [`Backend::load_chunks`] returns chunks of.
    fn searchable_documents(&self) -> Result<HashSet<i64>>;
    /// Which embedding models made the vectors of the index, with how many chunks
    /// each, most chunks first.
    fn embedding_models(&self) -> Result<Vec<(String, usize)>>;
    /// Up to `limit` chunks whose vectors were not made by `model`, as (chunk id,
    /// text), in chunk id order.
    fn chunks_not_embedded_by(&self, model: &str, limit: usize) -> Result<Vec<(i64, String)>>;
    /// Replace the vectors of these chunks with ones `model` made, in one
    /// transaction. Chunks removed meanwhile are skipped.
    fn replace_embeddings(&mut self, model: &str, rows: &[(i64, Vec<f32>)]) -> Result<()>;
    /// Problems that would make the index inconsistent; empty when all is well.
    fn check(&self) -> Result<Vec<String>>;

    // The indexing queue (see [`queue`]).

    /// Add `files` (path, size); a path already waiting or running is not added
    /// twice. Returns the rows' ids, in order.
    fn enqueue(&mut self, files: &[(String, u64)]) -> Result<Vec<i64>>;
    /// Take the oldest waiting row: it becomes `running`.
    fn claim(&self) -> Result<Option<QueueRow>>;
    /// Rows waiting (`queued`), not counting running ones.
    fn waiting(&self) -> Result<usize>;
    /// One row.
    fn queue_row(&self, id: i64) -> Result<Option<QueueRow>>;
    /// The whole queue, oldest first.
    fn queue(&self) -> Result<Vec<QueueRow>>;
    /// Progress of a running row.
    fn progress(&self, id: i64, fraction: f64, eta_secs: Option<f64>) -> Result<()>;
    /// A row is finished: `done` (with its document) or `failed` (with the reason);
    /// a row cancelled meanwhile stays cancelled.
    fn finish(&self, id: i64, doc_id: Option<i64>, error: Option<&str>) -> Result<()>;
    /// A running row whose work was interrupted (not by the user) waits again.
    fn requeue(&self, id: i64) -> Result<()>;
    /// Rows left `running` by a process that is gone wait again. Returns how many.
    fn requeue_interrupted(&self) -> Result<usize>;
    /// Cancel one row or every waiting and running one; returns the ids cancelled.
    fn cancel(&self, id: Option<i64>) -> Result<Vec<i64>>;
    /// Whether the row is still wanted (not cancelled, not gone).
    fn wanted(&self, id: i64) -> Result<bool>;

    // Collections (see [`collections`]).

    /// All collections, by name.
    fn collections(&self) -> Result<Vec<Collection>>;
    /// One collection.
    fn collection(&self, id: i64) -> Result<Option<Collection>> {
        Ok(self.collections()?.into_iter().find(|c| c.id == id))
    }
    /// The collection named `name` (case-insensitive).
    fn collection_by_name(&self, name: &str) -> Result<Option<Collection>>;
    /// Create a collection; refused when the name is taken.
    fn create_collection(&self, name: &str) -> Result<i64>;
    /// Rename a collection. Returns whether it existed.
    fn rename_collection(&self, id: i64, name: &str) -> Result<bool>;
    /// Make `docs` the documents of collection `id`, in one transaction. Returns
    /// whether the collection existed; an unknown document is refused.
    fn set_collection_documents(&mut self, id: i64, docs: &[i64]) -> Result<bool>;
    /// Delete a collection (its documents stay). Returns whether it existed.
    fn remove_collection(&self, id: i64) -> Result<bool>;

    // Conversations (see [`conversations`]).

    /// Start a conversation titled after its first question.
    fn create_conversation(&self, first_question: &str) -> Result<i64>;
    /// Append a message.
    fn add_message(&self, message: &NewMessage<'_>) -> Result<i64>;
    /// All conversations, most recently updated first.
    fn conversations(&self) -> Result<Vec<ConversationInfo>>;
    /// One conversation with its messages.
    fn conversation(&self, id: i64) -> Result<Option<Conversation>>;
    /// Delete messages `ids` of a conversation. Returns how many there were.
    fn remove_messages(&self, conversation: i64, ids: &[i64]) -> Result<usize>;
    /// Delete a conversation and its messages. Returns whether it existed.
    fn remove_conversation(&self, id: i64) -> Result<bool>;

    /// Retrieval that runs in the database, when this backend has it; `None` means
    /// the engine builds in-memory indexes from [`Backend::load_chunks`].
    fn in_database(&self) -> Option<Arc<dyn Corpus>> {
        None
    }
}

/// Where the index is: `postgres://…` / `postgresql://…` names a PostgreSQL
/// database, anything else the SQLite file in the data directory.
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// An open index.
pub struct Store(Box<dyn Backend>);

impl Store {
    /// Open (creating if needed) the SQLite index at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self(Box::new(sqlite::Sqlite::open(path)?)))
    }

    /// An SQLite index in memory (tests).
    pub fn open_in_memory() -> Result<Self> {
        Ok(Self(Box::new(sqlite::Sqlite::open_in_memory()?)))
    }

    /// Connect to the PostgreSQL index at `url` (migrating it), as the process
    /// whose queue rows are `origin`'s (its host and data directory).
    pub fn connect(url: &str, origin: &str) -> Result<Self> {
        Ok(Self(Box::new(postgres::Postgres::connect(url, origin)?)))
    }

    /// The index `store` names (a `postgres://` URL), else the SQLite file in
    /// `data_dir`.
    pub fn open_for(store: Option<&str>, data_dir: &Path) -> Result<Self> {
        match store.filter(|s| !s.trim().is_empty()) {
            Some(url) if is_postgres_url(url) => {
                let host = std::fs::read_to_string("/etc/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_default();
                Self::connect(url, &format!("{host}:{}", data_dir.display()))
            }
            Some(other) => Err(crate::Error::Invalid(format!(
                "--store {other:?}: give a postgres://user@host:port/database URL (or leave \
                 it out for the SQLite index in the data directory)"
            ))),
            None => Self::open(&data_dir.join("index.sqlite")),
        }
    }
}

impl std::ops::Deref for Store {
    type Target = dyn Backend;
    fn deref(&self) -> &Self::Target {
        self.0.as_ref()
    }
}

impl std::ops::DerefMut for Store {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0.as_mut()
    }
}

/// The consistency checks both backends run ([`Backend::check`]): what a row counts
/// when something is wrong, and the SQL that counts them (the same in both dialects).
pub(crate) const CHECKS: &[(&str, &str)] = &[
    (
        "chunks without an embedding",
        "SELECT count(*) FROM chunks c LEFT JOIN embeddings e ON e.chunk_id = c.id
             WHERE e.chunk_id IS NULL",
    ),
    (
        "embeddings without a chunk",
        "SELECT count(*) FROM embeddings e LEFT JOIN chunks c ON c.id = e.chunk_id
             WHERE c.id IS NULL",
    ),
    (
        "chunks without a document",
        "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.doc_id
             WHERE d.id IS NULL",
    ),
    (
        "pages without a document",
        "SELECT count(*) FROM pages p LEFT JOIN documents d ON d.id = p.doc_id
             WHERE d.id IS NULL",
    ),
    (
        "done documents without pages",
        "SELECT count(*) FROM documents d WHERE d.status = 'done'
             AND d.pages != (SELECT count(*) FROM pages p WHERE p.doc_id = d.id)",
    ),
    (
        "failed documents with chunks",
        "SELECT count(*) FROM documents d WHERE d.status = 'failed'
             AND EXISTS (SELECT 1 FROM chunks c WHERE c.doc_id = d.id)",
    ),
];

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub(crate) fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

/// A conversation's title: its first question, cut at 60 characters.
pub(crate) fn conversation_title(first_question: &str) -> String {
    let mut title: String = first_question.trim().chars().take(60).collect();
    if first_question.trim().chars().count() > 60 {
        title.push('…');
    }
    title
}
