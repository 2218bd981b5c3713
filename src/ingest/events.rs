//! Indexing progress, as the ingestion pipeline reports it and the shells show it.

use serde::{Deserialize, Serialize};

/// Indexing progress as the UI shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum IndexEvent {
    /// File `index` (1-based) of `total` starts.
    File {
        index: usize,
        total: usize,
        path: String,
    },
    Page {
        path: String,
        page: u32,
        pages: u32,
    },
    /// `chunks` of the file's `total` are embedded.
    Embedded {
        path: String,
        chunks: usize,
        total: usize,
        /// Estimated seconds left for the whole batch.
        eta_secs: Option<f64>,
    },
    /// Embedding waits for a question's answer (questions first); the next
    /// `embedded` event says it goes on.
    Paused {
        path: String,
    },
    FileDone {
        path: String,
        doc_id: i64,
        chunks: usize,
        /// Already in the index with the same content.
        skipped: bool,
    },
    FileFailed {
        path: String,
        reason: String,
    },
    /// Re-embedding the index with `model`: `done` of `total` chunks.
    Reembedded {
        model: String,
        done: usize,
        total: usize,
        /// Estimated seconds left.
        eta_secs: Option<f64>,
    },
    Finished {
        indexed: usize,
        failed: usize,
        secs: f64,
    },
}
