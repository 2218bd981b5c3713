//! Watched folders: a folder's PDFs indexed recursively and kept in step with the
//! disk. A sync ([`Engine::sync_folders`]) lists each folder (one `stat` a file),
//! compares it with the index ([`super::folder_diff`]), applies the moves, stamps and
//! removals at once, queues new and changed files in the indexing queue and drains it:
//! the queue's guarantees (a kill loses nothing; the next start finishes it) hold for
//! a sync, and a sync run again after a kill finds only what is left. A folder whose
//! root is gone (an unmounted disk) is marked unavailable and its documents are kept
//! (still listed, marked, and still searched: the index holds their text); a file
//! deleted inside a folder that is there leaves the index. A folder may be tied to a
//! collection, which then holds the folder's documents as they come.
//!
//! The watcher that runs a sync when the disk changes is `folder_watch.rs`; the shells
//! call [`super::spawn_resume`] at start, which syncs the folders too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::folder_diff::{diff, Action, OnDisk};
use super::{lock, Cancel, Engine, IndexEvent};
use crate::ingest::pipeline::content_hash;
use crate::store::folders::{mtime_ns, FolderRow};
use crate::store::{now_ms, KnownFile};
use crate::{Error, Result};

/// How a folder is added.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderOptions {
    /// Tie the folder to this collection (created when there is none of that name):
    /// it holds the folder's documents as they come and go.
    #[serde(default)]
    pub collection: Option<String>,
}

/// A watched folder as the shells show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderView {
    pub id: i64,
    pub path: String,
    /// Its collection, by id and name.
    pub collection: Option<i64>,
    pub collection_name: Option<String>,
    /// False while the folder is missing (unmounted, renamed away): its documents
    /// are kept and shown unavailable.
    pub available: bool,
    /// Documents under it in the index.
    pub documents: usize,
    /// Milliseconds since the epoch of the last sync.
    pub synced_at: Option<i64>,
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncReport {
    /// Folders synced (available) and missing.
    pub folders: usize,
    /// New files queued.
    pub added: usize,
    /// Files whose bytes changed, queued again.
    pub changed: usize,
    /// Documents whose file was renamed or moved (not indexed again).
    pub renamed: usize,
    /// Documents whose file was deleted.
    pub removed: usize,
    /// Files found as they were indexed.
    pub unchanged: usize,
    /// Files with the same bytes as a document of another path (kept once, under
    /// that path).
    pub copies: usize,
    /// Documents of folders that are missing, kept.
    pub unavailable: usize,
    /// Files read to hash them (those whose size or time changed).
    pub hashed: usize,
    /// Files the indexing queue then indexed, and those that failed.
    pub indexed: usize,
    pub failed: Vec<(String, String)>,
    /// Seconds for the scan (listing, hashing, applying) and for the whole sync.
    pub scan_secs: f64,
    pub secs: f64,
}

/// A folder's PDFs (`*.pdf`, any case; symlinked folders not followed), and the
/// folders under it that could not be listed.
fn list_pdfs(root: &Path) -> (Vec<OnDisk>, Vec<String>) {
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            unreadable.push(dir.display().to_string());
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(ty) = e.file_type() else { continue };
            if ty.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pdf")) {
                // A symlinked file counts as the file it names.
                let Ok(m) = std::fs::metadata(&p) else {
                    continue;
                };
                if m.is_file() {
                    files.push(OnDisk {
                        path: p.display().to_string(),
                        bytes: m.len(),
                        mtime: mtime_ns(&m).unwrap_or(0),
                    });
                }
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    (files, unreadable)
}

/// The device a folder is on (Unix), to tell an unmounted disk's empty mount point.
fn device(meta: &std::fs::Metadata) -> Option<i64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        i64::try_from(meta.dev()).ok()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Whether `path` lies inside `dir` (or is it).
fn within(path: &str, dir: &str) -> bool {
    path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/') || dir.ends_with('/'))
}

impl Engine {
    /// The watched folders, by path.
    pub fn folders(&self) -> Result<Vec<FolderView>> {
        let store = self.store();
        let collections = store.collections()?;
        store
            .folders()?
            .into_iter()
            .map(|f| {
                Ok(FolderView {
                    documents: store.files_under(&f.path)?.len(),
                    collection_name: f.collection.and_then(|c| {
                        collections
                            .iter()
                            .find(|x| x.id == c)
                            .map(|x| x.name.clone())
                    }),
                    id: f.id,
                    path: f.path,
                    collection: f.collection,
                    available: f.available,
                    synced_at: f.synced_at,
                })
            })
            .collect()
    }

    /// Watch the folder at `path`: its PDFs are indexed by the next sync
    /// ([`Engine::sync_folders`]) and kept in step after. A folder inside or around
    /// one watched already is refused (its files would be two folders'), as is a
    /// path that is not a folder.
    pub fn add_folder(&self, path: &Path, opts: &FolderOptions) -> Result<FolderView> {
        let meta = std::fs::metadata(path)
            .map_err(|e| Error::Invalid(format!("cannot watch {}: {e}", path.display())))?;
        if !meta.is_dir() {
            return Err(Error::Invalid(format!(
                "{} is not a folder (add single PDFs with `quire index`)",
                path.display()
            )));
        }
        let root = std::fs::canonicalize(path)
            .map_err(|e| Error::io(path, e))?
            .display()
            .to_string();
        let id = {
            let store = self.store();
            for f in store.folders()? {
                if within(&root, &f.path) || within(&f.path, &root) {
                    return Err(Error::Invalid(format!(
                        "{root} overlaps the watched folder {}: remove that one first",
                        f.path
                    )));
                }
            }
            let collection = match opts.collection.as_deref() {
                Some(name) => Some(match store.collection_by_name(name)? {
                    Some(c) => c.id,
                    None => store.create_collection(name)?,
                }),
                None => None,
            };
            let id = store.add_folder(&root, collection)?;
            store.set_folder_state(id, true, device(&meta), None)?;
            id
        };
        self.folders()?
            .into_iter()
            .find(|f| f.id == id)
            .ok_or_else(|| Error::NotFound(format!("folder {id}")))
    }

    /// The id of a watched folder given by id or by path.
    pub fn find_folder(&self, id_or_path: &str) -> Result<i64> {
        let folders = self.store().folders()?;
        if let Ok(id) = id_or_path.parse::<i64>() {
            if folders.iter().any(|f| f.id == id) {
                return Ok(id);
            }
        }
        let p = Path::new(id_or_path);
        let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let trimmed = id_or_path.trim_end_matches('/');
        folders
            .iter()
            .find(|f| Path::new(&f.path) == abs || f.path == trimmed)
            .map(|f| f.id)
            .ok_or_else(|| Error::NotFound(format!("watched folder {id_or_path}")))
    }

    /// Stop watching a folder. Its documents leave the index too, unless
    /// `keep_documents`; its files waiting in the queue are cancelled then. Returns how
    /// many documents were removed.
    pub fn remove_folder(&self, id: i64, keep_documents: bool) -> Result<usize> {
        // Not in the middle of a scan, which could queue the folder's files again.
        let _one = lock(&self.folder_sync);
        let mut store = self.store();
        let folder = store
            .folders()?
            .into_iter()
            .find(|f| f.id == id)
            .ok_or_else(|| Error::NotFound(format!("folder {id}")))?;
        let mut removed = 0;
        if !keep_documents {
            for row in store.queue()? {
                if row.state.pending() && within(&row.path, &folder.path) {
                    store.cancel(Some(row.id))?;
                }
            }
            for k in store.files_under(&folder.path)? {
                if store.remove_document(k.id)? {
                    self.verified.forget(k.id);
                    removed += 1;
                }
            }
        }
        store.remove_folder(id)?;
        Ok(removed)
    }

    /// Whether any folder is watched.
    pub fn watching_folders(&self) -> Result<bool> {
        Ok(!self.store().folders()?.is_empty())
    }

    /// Sync every watched folder now: list it, apply what changed (renames in place,
    /// deletions), queue new and changed files and index them (progress through `on`,
    /// as [`Engine::index`]'s), fill the folders' collections. One scan runs at a
    /// time (another, or a folder's removal, waits for it); the indexing that follows
    /// drains the queue as [`Engine::index`] does, beside any other.
    pub fn sync_folders(
        &self,
        cancel: &Cancel,
        on: &mut dyn FnMut(IndexEvent) -> bool,
    ) -> Result<SyncReport> {
        let start = Instant::now();
        let _reg = self.register(cancel);
        let mut report = {
            let _one = lock(&self.folder_sync);
            self.scan_folders_now(cancel)?
        };
        if self.queued()? > 0 {
            let s = self.index_summary(&[], cancel, on)?;
            report.indexed = s.indexed;
            report.failed = s.failed;
        }
        {
            let _one = lock(&self.folder_sync);
            self.fill_folder_collections()?;
        }
        report.secs = start.elapsed().as_secs_f64();
        Ok(report)
    }

    /// The scan of [`Engine::sync_folders`] alone: the index brought in step with the
    /// disk, new and changed files queued but not indexed (the next drain, or
    /// [`Engine::index`] without paths, does it).
    pub fn scan_folders(&self, cancel: &Cancel) -> Result<SyncReport> {
        let _reg = self.register(cancel);
        let _one = lock(&self.folder_sync);
        self.scan_folders_now(cancel)
    }

    fn scan_folders_now(&self, cancel: &Cancel) -> Result<SyncReport> {
        let start = Instant::now();
        let mut report = SyncReport::default();
        let folders = self.store().folders()?;
        let mut disk = Vec::new();
        let mut known: Vec<KnownFile> = Vec::new();
        let mut protected = Vec::new();
        let mut seen = BTreeSet::new();
        let mut listed: Vec<(FolderRow, Option<i64>)> = Vec::new();
        for f in folders {
            cancel.check()?;
            report.folders += 1;
            let under = self.store().files_under(&f.path)?;
            let meta = std::fs::metadata(&f.path).ok().filter(|m| m.is_dir());
            let Some(meta) = meta else {
                report.unavailable += under.len();
                self.store().set_folder_state(f.id, false, None, None)?;
                continue;
            };
            let (files, unreadable) = list_pdfs(Path::new(&f.path));
            let dev = device(&meta);
            // An empty folder on another device than before, where documents were:
            // a disk's mount point without the disk.
            if files.is_empty() && !under.is_empty() && f.device.is_some() && dev != f.device {
                report.unavailable += under.len();
                self.store().set_folder_state(f.id, false, None, None)?;
                continue;
            }
            disk.extend(files);
            protected.extend(unreadable);
            known.extend(under.into_iter().filter(|k| seen.insert(k.id)));
            listed.push((f, dev));
        }
        let mut read = |path: &str| -> Result<Option<String>> {
            cancel.check()?;
            Ok(std::fs::read(path).ok().map(|b| content_hash(&b)))
        };
        let d = diff(&disk, &known, &protected, &mut read)?;
        report.unchanged = d.unchanged;
        report.hashed = d.hashed;
        report.copies = d.copies;
        let mut queue = Vec::new();
        {
            let mut store = self.store();
            for a in d.actions {
                match a {
                    Action::Remove { id } => {
                        if store.remove_document(id)? {
                            self.verified.forget(id);
                            report.removed += 1;
                        }
                    }
                    Action::Move { id, path, mtime } => {
                        store.move_document(id, &path, mtime)?;
                        self.verified.forget(id);
                        report.renamed += 1;
                    }
                    Action::Stamp { id, bytes, mtime } => store.stamp_document(id, bytes, mtime)?,
                    Action::Index { path, bytes } => {
                        report.added += 1;
                        queue.push((path, bytes));
                    }
                    Action::Reindex { path, bytes } => {
                        report.changed += 1;
                        queue.push((path, bytes));
                    }
                }
            }
            if !queue.is_empty() {
                store.enqueue(&queue)?;
            }
            let now = now_ms();
            for (f, dev) in &listed {
                store.set_folder_state(f.id, true, *dev, Some(now))?;
            }
        }
        report.scan_secs = start.elapsed().as_secs_f64();
        report.secs = report.scan_secs;
        Ok(report)
    }

    /// Each folder's collection holds the folder's documents (those removed have
    /// left it already; documents added by hand stay).
    fn fill_folder_collections(&self) -> Result<()> {
        let mut store = self.store();
        for f in store.folders()? {
            let Some(cid) = f.collection else { continue };
            let Some(c) = store.collection(cid)? else {
                continue;
            };
            let mut docs: BTreeSet<i64> = c.documents.iter().copied().collect();
            let before = docs.len();
            docs.extend(store.files_under(&f.path)?.iter().map(|k| k.id));
            if docs.len() != before {
                store.set_collection_documents(cid, &docs.into_iter().collect::<Vec<_>>())?;
            }
        }
        Ok(())
    }

    /// The roots of the folders that are missing now, for the documents' marks.
    pub(super) fn unavailable_roots(&self) -> Vec<String> {
        self.store()
            .folders()
            .map(|fs| {
                fs.into_iter()
                    .filter(|f| !f.available)
                    .map(|f| f.path)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The roots of the watched folders that are there, for the watcher, with
    /// whether each is marked available.
    pub(super) fn folder_roots(&self) -> Result<Vec<(PathBuf, bool)>> {
        Ok(self
            .store()
            .folders()?
            .into_iter()
            .map(|f| (PathBuf::from(f.path), f.available))
            .collect())
    }
}

/// Whether a document at `path` lies in one of the folders `roots`.
pub(super) fn in_any(path: &str, roots: &[String]) -> bool {
    roots.iter().any(|r| within(path, r))
}

/// Sync the watched folders on a thread of its own (a shell's "add folder" or
/// "rescan"): its progress shows in the queue ([`Engine::queue`]); errors are printed.
pub fn spawn_sync(engine: std::sync::Arc<Engine>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        if let Err(e) = engine.sync_folders(&Cancel::new(), &mut |_| true) {
            if !matches!(e, Error::Cancelled) {
                eprintln!("quire: syncing the watched folders: {e}");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::within;

    #[test]
    fn within_is_by_path_components() {
        assert!(within("/a/b/c.pdf", "/a/b"));
        assert!(within("/a/b", "/a/b"));
        assert!(!within("/a/bc/c.pdf", "/a/b"));
        assert!(within("/x.pdf", "/"));
    }
}
