//! The index: documents, their pages, chunks and embeddings, the indexing queue,
//! collections and conversations, behind one trait ([`Backend`], made of one trait per
//! concern: [`Documents`], [`Queue`], [`Collections`], [`Conversations`], [`Folders`]) with two
//! implementations:
//!
//! - [`sqlite::Sqlite`], the default: one file (`index.sqlite` in the data
//!   directory), no set-up. Retrieval runs over in-memory indexes built from
//!   [`Documents::load_chunks`] and updated document by document.
//! - [`postgres::Postgres`] (`--store postgres://…`): a PostgreSQL database with the
//!   pgvector extension, which several `quire serve` processes can share. Retrieval runs
//!   in the database ([`Backend::in_database`]): an HNSW index over the vectors and
//!   BM25 over postings lists (a row per term and document) Quire's own analyzer fills.
//!
//! Both write a document in one transaction, so a crash or a kill leaves either all of
//! it or none of it, and both number documents and chunks without reusing ids.
//!
//! The files of this folder are the neutral part, what either database keeps: a
//! concern's trait and row types in a file of its own (`documents.rs`, `queue.rs`,
//! `collections.rs`, `conversations.rs`, `folders.rs`), the states kept as text (`states.rs`);
//! `sqlite/` and `postgres/` implement them, file by file.

pub mod collections;
pub mod conversations;
pub mod documents;
pub mod folders;
pub mod library;
pub mod postgres;
mod process;
pub mod queue;
pub mod sqlite;
mod states;
pub mod summaries;

use std::path::Path;
use std::sync::Arc;

use crate::retrieve::Corpus;
use crate::Result;

pub use collections::{Collection, Collections};
pub use conversations::{Conversation, ConversationInfo, Conversations, Message, NewMessage};
pub use documents::{Chunk, DocumentRow, Documents, NewDocument, StoredChunk};
pub use folders::{FolderRow, Folders, KnownFile};
pub use library::{
    Library, LibraryFilter, LibraryItem, LibraryPage, LibraryQuery, LibrarySort, LibrarySummary,
};
pub use queue::{Queue, QueueRow};
pub use states::{DocStatus, QueueState, Role};
pub use summaries::{Summaries, SummaryLeaf, SummaryTree};

/// What the engine keeps in an index, whichever database holds it: its documents,
/// queue, collections and conversations, and what the index is.
pub trait Backend:
    Documents + Queue + Collections + Conversations + Folders + Library + Summaries + Send
{
    /// `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
    /// Where it is, for messages: the file, or the server and database (no password).
    fn location(&self) -> String;
    /// The schema version.
    fn version(&self) -> Result<i64>;
    /// Problems that would make the index inconsistent; empty when all is well.
    fn check(&self) -> Result<Vec<String>>;

    /// Retrieval that runs in the database, when this backend has it; `None` means
    /// the engine builds in-memory indexes from [`Documents::load_chunks`].
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
