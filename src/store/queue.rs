//! The indexing queue: every file a batch will index, persisted before the work
//! starts, so that a kill, a crash or a restart loses nothing. A row is `queued`, then
//! `running` while a pipeline works on it, then `done`, `failed` or `cancelled`.
//! Rows left `running` by a process that died go back to `queued` when the index is
//! opened again ([`Queue::requeue_interrupted`]); finished rows are kept until the
//! next batch starts, for the UI's list.

use crate::Result;

use super::QueueState;

/// One file in the queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueueRow {
    pub id: i64,
    pub path: String,
    pub bytes: u64,
    pub state: QueueState,
    /// Fraction of the file done, 0 to 1.
    pub progress: f64,
    /// Estimated seconds left for this file, once known.
    pub eta_secs: Option<f64>,
    pub error: Option<String>,
    pub doc_id: Option<i64>,
    /// Milliseconds since the epoch the file was running, when it started and ended.
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// The indexing queue.
pub trait Queue {
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
}
