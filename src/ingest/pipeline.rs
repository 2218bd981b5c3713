//! The ingestion pipeline: for each PDF, hash, extract, split, embed, and write it to
//! the index in one transaction, reporting progress as it goes.
//!
//! The slow parts (extraction, embedding) run without holding the store, which is
//! locked only for the short lookups and the final write: a question asked while a
//! batch is being indexed does not wait for the batch. A file that fails is recorded
//! with its reason and the batch goes on; cancellation (between files and between
//! embedding batches) leaves the index as it was before the current file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::split::{split, SplitConfig};
use super::ExtractedDoc;
use super::IndexEvent;
use crate::embed::Embedder;
use crate::llm::Cancel;
use crate::store::{NewDocument, Store};
use crate::{Error, Result};

/// Reads the text of a PDF, page by page.
pub type Extractor = Arc<dyn Fn(&Path) -> Result<ExtractedDoc> + Send + Sync>;

/// The extractor the engine uses unless told otherwise.
pub fn default_extractor() -> Extractor {
    Arc::new(|p: &Path| super::pdf::extract(p))
}

/// Chunks embedded at once (and the granularity of progress and cancellation).
const EMBED_BATCH: usize = 32;

/// How a batch went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Files now in the index (newly indexed or already there).
    pub indexed: usize,
    /// Of which were already there with the same content.
    pub skipped: usize,
    /// Files that failed, with their reasons.
    pub failed: Vec<(String, String)>,
    pub secs: f64,
}

/// The PDFs named by `paths`: files as given, folders searched recursively for
/// `*.pdf`; absolute, in order, without duplicates. Paths that cannot be read come
/// back in the second list with the reason.
pub fn collect_pdfs(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let mut files = Vec::new();
    let mut bad = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk(p, &mut files, &mut bad),
            Ok(_) => files.push(p.clone()),
            Err(e) => bad.push((p.clone(), e.to_string())),
        }
    }
    let mut seen = std::collections::HashSet::new();
    let files = files
        .into_iter()
        .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
        .filter(|f| seen.insert(f.clone()))
        .collect();
    (files, bad)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, bad: &mut Vec<(PathBuf, String)>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            bad.push((dir.to_path_buf(), e.to_string()));
            return;
        }
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        // Symlinked folders are not followed: they can loop.
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if m.is_dir() {
            walk(&p, files, bad);
        } else if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
            files.push(p);
        }
    }
}

/// sha256 of `bytes`, hex.
pub fn content_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Everything the pipeline works with.
pub struct Pipeline<'a> {
    pub store: &'a Mutex<Store>,
    pub embedder: &'a dyn Embedder,
    /// Recorded with each embedding.
    pub model: &'a str,
    pub extract: &'a Extractor,
    pub split: SplitConfig,
}

fn lock(m: &Mutex<Store>) -> MutexGuard<'_, Store> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Progress through the batch, for the ETA.
struct Clock {
    start: Instant,
    total_bytes: u64,
    done_bytes: u64,
}

impl Clock {
    /// Seconds left, given that `fraction` of a file of `bytes` is done.
    fn eta(&self, bytes: u64, fraction: f64) -> Option<f64> {
        let done = self.done_bytes as f64 + bytes as f64 * fraction;
        let total = self.total_bytes as f64;
        let secs = self.start.elapsed().as_secs_f64();
        (done > 0.0 && total >= done).then(|| secs * (total - done) / done)
    }
}

/// Why one file failed, or that the whole batch must stop.
enum Stop {
    File(String),
    Cancelled,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        match e {
            Error::Cancelled => Stop::Cancelled,
            e => Stop::File(e.to_string()),
        }
    }
}

impl Pipeline<'_> {
    /// Index `paths` (files or folders). `on` gets the progress; returning false from
    /// it cancels. Returns `Err(Cancelled)` when cancelled; files finished before stay
    /// indexed.
    pub fn run(
        &self,
        paths: &[PathBuf],
        cancel: &Cancel,
        on: &mut dyn FnMut(IndexEvent) -> bool,
    ) -> Result<Summary> {
        let start = Instant::now();
        let mut summary = Summary::default();
        let mut emit = |ev: IndexEvent| {
            if !on(ev) {
                cancel.cancel();
            }
        };
        let (files, bad) = collect_pdfs(paths);
        for (p, reason) in bad {
            let path = p.display().to_string();
            emit(IndexEvent::FileFailed {
                path: path.clone(),
                reason: reason.clone(),
            });
            summary.failed.push((path, reason));
        }
        let mut clock = Clock {
            start,
            total_bytes: files
                .iter()
                .filter_map(|f| std::fs::metadata(f).ok())
                .map(|m| m.len())
                .sum(),
            done_bytes: 0,
        };
        let total = files.len();
        for (i, file) in files.iter().enumerate() {
            cancel.check()?;
            let path = file.display().to_string();
            emit(IndexEvent::File {
                index: i + 1,
                total,
                path: path.clone(),
            });
            match self.one(file, &path, &mut clock, cancel, &mut emit) {
                Ok((doc_id, chunks, skipped)) => {
                    summary.indexed += 1;
                    summary.skipped += usize::from(skipped);
                    emit(IndexEvent::FileDone {
                        path,
                        doc_id,
                        chunks,
                        skipped,
                    });
                }
                Err(Stop::Cancelled) => return Err(Error::Cancelled),
                Err(Stop::File(reason)) => {
                    emit(IndexEvent::FileFailed {
                        path: path.clone(),
                        reason: reason.clone(),
                    });
                    summary.failed.push((path, reason));
                }
            }
        }
        summary.secs = start.elapsed().as_secs_f64();
        emit(IndexEvent::Finished {
            indexed: summary.indexed,
            failed: summary.failed.len(),
            secs: summary.secs,
        });
        Ok(summary)
    }

    /// Index one file: (document id, chunks, whether it was already there).
    fn one(
        &self,
        file: &Path,
        path: &str,
        clock: &mut Clock,
        cancel: &Cancel,
        emit: &mut dyn FnMut(IndexEvent),
    ) -> Result<(i64, usize, bool), Stop> {
        let bytes = std::fs::read(file).map_err(|e| Stop::File(e.to_string()))?;
        let size = bytes.len() as u64;
        let hash = content_hash(&bytes);
        drop(bytes);
        {
            let store = lock(self.store);
            let here = store.document_by_path(path)?;
            if let Some(d) = &here {
                if d.hash == hash && d.status == "done" {
                    clock.total_bytes = clock.total_bytes.saturating_sub(size);
                    return Ok((d.id, d.chunks, true));
                }
            }
            // The same content under another name is not indexed twice.
            if let Some((id, _, chunks)) = store.done_with_hash(&hash)? {
                clock.total_bytes = clock.total_bytes.saturating_sub(size);
                return Ok((id, chunks, true));
            }
        }
        match self.build(file, path, size, &hash, clock, cancel, emit) {
            Ok(done) => {
                clock.done_bytes += size;
                Ok(done)
            }
            Err(Stop::File(reason)) => {
                clock.done_bytes += size;
                lock(self.store).insert_failed(path, &hash, size, &reason)?;
                Err(Stop::File(reason))
            }
            Err(Stop::Cancelled) => Err(Stop::Cancelled),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        &self,
        file: &Path,
        path: &str,
        size: u64,
        hash: &str,
        clock: &Clock,
        cancel: &Cancel,
        emit: &mut dyn FnMut(IndexEvent),
    ) -> Result<(i64, usize, bool), Stop> {
        let doc = (self.extract)(file)?;
        cancel.check()?;
        let pages = doc.pages.len() as u32;
        if doc.pages.iter().all(|p| p.text.trim().is_empty()) {
            return Err(Stop::File(format!(
                "no text on any of its {pages} pages (a scan? text recognition is not supported)"
            )));
        }
        let chunks = split(&doc.pages, self.embedder, &self.split)?;
        let mut embeddings = Vec::with_capacity(chunks.len());
        for batch in chunks.chunks(EMBED_BATCH) {
            cancel.check()?;
            let texts: Vec<&str> = batch.iter().map(|c| c.text.as_str()).collect();
            embeddings.extend(self.embedder.embed(&texts)?);
            let done = embeddings.len();
            emit(IndexEvent::Page {
                path: path.to_string(),
                page: batch.last().map_or(pages, |c| c.page_end),
                pages,
            });
            emit(IndexEvent::Embedded {
                path: path.to_string(),
                chunks: done,
                total: chunks.len(),
                eta_secs: clock.eta(size, done as f64 / chunks.len() as f64),
            });
        }
        cancel.check()?;
        let id = lock(self.store).insert_document(&NewDocument {
            path,
            hash,
            bytes: size,
            title: doc.title.as_deref(),
            pages: &doc.pages,
            chunks: &chunks,
            embeddings: &embeddings,
            model: self.model,
        })?;
        Ok((id, chunks.len(), false))
    }
}
