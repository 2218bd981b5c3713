//! Watched folders: the folders whose PDFs the index keeps in step with the disk
//! ([`FolderRow`]), and what a sync compares the disk with: each document's path,
//! content hash, size and modification time ([`KnownFile`]). The [`Folders`] trait
//! both databases implement; only SQLite keeps watched folders (a shared PostgreSQL
//! index's paths name files on whichever machine queued them).

use serde::{Deserialize, Serialize};

use crate::Result;

/// A watched folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderRow {
    pub id: i64,
    /// Absolute and canonical, without a trailing separator.
    pub path: String,
    /// The collection that holds the folder's documents as they come and go.
    pub collection: Option<i64>,
    /// False while the folder itself is missing (an unmounted disk): its documents
    /// are kept, marked unavailable.
    pub available: bool,
    /// The device the folder was on when last found (Unix `st_dev`): an unmounted
    /// disk's mount point is an empty folder on another device, not a folder whose
    /// files were all deleted.
    pub device: Option<i64>,
    /// Milliseconds since the epoch it was added, and last synced.
    pub added_at: i64,
    pub synced_at: Option<i64>,
}

/// A document as a sync sees it: where its file is and what the file was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownFile {
    pub id: i64,
    pub path: String,
    /// sha256 of the file's bytes, hex.
    pub hash: String,
    pub bytes: u64,
    /// The file's modification time (nanoseconds since the epoch) when it was
    /// indexed or last found unchanged; `None` until then.
    pub mtime: Option<i64>,
}

/// The message of every change a store without watched folders refuses.
pub const SQLITE_ONLY: &str = "watched folders need the SQLite store";

/// Watched folders, and the file facts of documents a sync compares.
pub trait Folders {
    /// All watched folders, by path.
    fn folders(&self) -> Result<Vec<FolderRow>>;
    /// Watch `path` (canonical); refused when it is watched already. Returns its id.
    fn add_folder(&self, path: &str, collection: Option<i64>) -> Result<i64>;
    /// Stop watching a folder (its documents stay). Returns whether it existed.
    fn remove_folder(&self, id: i64) -> Result<bool>;
    /// Mark a folder available or not, with the device it is on (`None`: unchanged)
    /// and when it was synced (`None`: unchanged).
    fn set_folder_state(
        &self,
        id: i64,
        available: bool,
        device: Option<i64>,
        synced_at: Option<i64>,
    ) -> Result<()>;
    /// The documents whose paths lie under the folder `root` (recursively).
    fn files_under(&self, root: &str) -> Result<Vec<KnownFile>>;
    /// Record the size and modification time of a document's file, found to hold
    /// the indexed bytes.
    fn stamp_document(&self, id: i64, bytes: u64, mtime: i64) -> Result<()>;
    /// A document's file was renamed or moved to `path` with the same bytes: its path
    /// and file name change in place (chunks, embeddings, collections and the
    /// conversations' references kept). Refused when another document has `path`.
    fn move_document(&mut self, id: i64, path: &str, mtime: i64) -> Result<()>;
}

/// The paths under `root` fall between `root/` and `root0` (`'0'` follows `'/'`).
pub(crate) fn under_bounds(root: &str) -> (String, String) {
    let root = root.trim_end_matches('/');
    (format!("{root}/"), format!("{root}0"))
}

/// A file's modification time as [`KnownFile::mtime`] keeps it: nanoseconds since the
/// epoch (`None` where the platform has none).
pub fn mtime_ns(meta: &std::fs::Metadata) -> Option<i64> {
    let t = meta.modified().ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_nanos()).ok()
}
