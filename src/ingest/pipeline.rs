//! The ingestion pipeline: for each PDF, hash, extract (in a child process), recognize
//! the text of pages without any (OCR), split, embed, and write it to the index in one
//! transaction, reporting progress as it goes.
//!
//! The batch is the persistent queue of the index (`store::queue`): files are queued
//! before any work starts, and a pipeline drains the queue, so what a kill or a crash
//! interrupted is finished by the next drain. Extraction runs ahead of embedding on
//! [`EXTRACT_WORKERS`] threads, each with at most one child process, handing documents
//! over a channel of one: the next files are read and split into chunks (tokenized)
//! while this one is embedded.
//!
//! The slow parts (extraction, embedding) run without holding the store, which is
//! locked only for the short lookups and the final write: a question asked while a
//! batch is being indexed does not wait for the batch. A file that fails is recorded
//! with its reason and the batch goes on; cancellation (between files and between
//! embedding batches) leaves the index as it was before the current file, and the
//! files not done waiting in the queue (unless the person cancelled them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::ocr::Ocr;
use super::split::{split, Chunk, SplitConfig};
use super::ExtractedDoc;
use super::IndexEvent;
use crate::cpu::priority::Priority;
use crate::cpu::Cancel;
use crate::embed::Embedder;
use crate::store::folders::mtime_ns;
use crate::store::queue::QueueRow;
use crate::store::{DocStatus, NewDocument, QueueState, Store};
use crate::{Error, Result};

/// Reads the text of a PDF, page by page; stops early (with [`Error::Cancelled`]) when
/// the control's `stop` says so, and holds still while its `hold` does.
pub type Extractor = Arc<dyn Fn(&Path, &Control<'_>) -> Result<ExtractedDoc> + Send + Sync>;

/// What an extraction is asked while it runs.
pub struct Control<'a> {
    /// Give up (the file or the batch was cancelled).
    pub stop: &'a dyn Fn() -> bool,
    /// Hold still for now (a question is being answered): a child process is
    /// stopped (SIGSTOP) until this turns false, and its time limit waits too.
    pub hold: &'a dyn Fn() -> bool,
}

/// The extractor the engine uses unless told otherwise: in a child process of the
/// binary that serves them (see `pdf::serve_child`), with the default limits; in this
/// process only when no such binary can be found (a library host without `quire`).
pub fn default_extractor() -> Extractor {
    match super::pdf::Extractor::from_env() {
        Ok(ex) => isolated_extractor(ex),
        Err(_) => in_process_extractor(),
    }
}

/// Extraction in child processes run by `ex`.
pub fn isolated_extractor(ex: super::pdf::Extractor) -> Extractor {
    Arc::new(move |p: &Path, c: &Control<'_>| Ok(ex.extract_until(p, c.stop, c.hold)?))
}

/// Extraction in this process (trusted files only: a hostile PDF can crash it; it
/// cannot hold still for a question).
pub fn in_process_extractor() -> Extractor {
    Arc::new(|p: &Path, _: &Control<'_>| Ok(super::pdf::extract(p)?))
}

/// Extraction threads, each running at most one child process at a time.
pub const EXTRACT_WORKERS: usize = 2;

/// Chunks embedded at once: the granularity of progress, cancellation and of a pause
/// for a question (questions first). 16 ~200-word chunks take about 0.08 s on two
/// cores, the longest a question waits for the batch in flight; the embedder takes a
/// batch sequence by sequence, one worker each, and with 8 the workers often waited
/// for the last sequence of a batch.
const EMBED_BATCH: usize = 16;

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
    /// Text recognition for pages without text.
    pub ocr: &'a Ocr,
    /// The running files' own cancel flags, by queue id (so one can be cancelled).
    pub running: &'a Mutex<HashMap<i64, Cancel>>,
    /// Questions first: embedding and extraction pause while an answer is generated.
    pub priority: Option<&'a Priority>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Progress through the batch, for the ETA.
struct Clock {
    start: Instant,
    total_bytes: u64,
    done_bytes: u64,
    /// Time spent paused for questions (left out of the rate).
    paused: Duration,
}

impl Clock {
    /// Seconds left, given that `fraction` of a file of `bytes` is done.
    fn eta(&self, bytes: u64, fraction: f64) -> Option<f64> {
        let done = self.done_bytes as f64 + bytes as f64 * fraction;
        let total = self.total_bytes as f64;
        let secs = self
            .start
            .elapsed()
            .saturating_sub(self.paused)
            .as_secs_f64();
        (done > 0.0 && total >= done).then(|| secs * (total - done) / done)
    }
}

/// Why one file failed, or that the whole batch must stop.
enum Stop {
    File(String),
    Cancelled,
}

/// What an extraction thread hands over for one queued file.
struct Prepared {
    row: QueueRow,
    /// This file's own cancel flag.
    cancel: Cancel,
    hash: String,
    /// The file's size and modification time, read before its bytes (so a change
    /// made while it is read shows at the next sync of a watched folder).
    stat: Option<(u64, i64)>,
    /// The extracted document with its chunks, or (document id, chunks) when it is
    /// already indexed.
    doc: Result<Result<Split, (i64, usize)>, Stop>,
}

/// An extracted document and its chunks.
struct Split {
    doc: ExtractedDoc,
    chunks: Vec<Chunk>,
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
    /// Queue `paths` (files or folders), then index everything queued ([`Pipeline::drain`]).
    /// `on` gets the progress; returning false from it cancels. Returns
    /// `Err(Cancelled)` when cancelled; files finished before stay indexed, the others
    /// stay queued.
    pub fn run(
        &self,
        paths: &[PathBuf],
        cancel: &Cancel,
        on: &mut dyn FnMut(IndexEvent) -> bool,
    ) -> Result<Summary> {
        let (files, bad) = collect_pdfs(paths);
        let mut failed = Vec::new();
        for (p, reason) in bad {
            let path = p.display().to_string();
            if !on(IndexEvent::FileFailed {
                path: path.clone(),
                reason: reason.clone(),
            }) {
                cancel.cancel();
            }
            failed.push((path, reason));
        }
        let files: Vec<(String, u64)> = files
            .iter()
            .map(|f| {
                let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
                (f.display().to_string(), size)
            })
            .collect();
        lock(self.store).enqueue(&files)?;
        let mut summary = self.drain(cancel, on)?;
        failed.append(&mut summary.failed);
        summary.failed = failed;
        Ok(summary)
    }

    /// Index every file waiting in the queue, those queued while this runs included.
    pub fn drain(
        &self,
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
        let waiting: Vec<QueueRow> = lock(self.store)
            .queue()?
            .into_iter()
            .filter(|r| r.state == QueueState::Queued)
            .collect();
        let mut clock = Clock {
            start,
            total_bytes: waiting.iter().map(|r| r.bytes).sum(),
            done_bytes: 0,
            paused: Duration::ZERO,
        };
        let mut index = 0;
        let result = std::thread::scope(|s| -> Result<()> {
            let (tx, rx) = mpsc::sync_channel::<Prepared>(1);
            for _ in 0..EXTRACT_WORKERS {
                let tx = tx.clone();
                s.spawn(move || self.extract_worker(&tx, cancel));
            }
            drop(tx);
            while let Ok(p) = rx.recv() {
                if cancel.is_cancelled() {
                    self.requeue(&p.row);
                    continue;
                }
                index += 1;
                let total = index + lock(self.store).waiting().unwrap_or(0);
                let path = p.row.path.clone();
                emit(IndexEvent::File {
                    index,
                    total,
                    path: path.clone(),
                });
                let (row, file_cancel) = (p.row.clone(), p.cancel.clone());
                let r = self.finish(p, &mut clock, cancel, &mut emit);
                lock(self.running).remove(&row.id);
                match r {
                    Ok((doc_id, chunks, skipped)) => {
                        lock(self.store).finish(row.id, Some(doc_id), None)?;
                        summary.indexed += 1;
                        summary.skipped += usize::from(skipped);
                        emit(IndexEvent::FileDone {
                            path,
                            doc_id,
                            chunks,
                            skipped,
                        });
                    }
                    Err(Stop::Cancelled)
                        if file_cancel.is_cancelled() && !cancel.is_cancelled() =>
                    {
                        // The person cancelled this file: the others go on.
                        emit(IndexEvent::FileFailed {
                            path,
                            reason: "cancelled".into(),
                        });
                    }
                    Err(Stop::Cancelled) => {
                        self.requeue(&row);
                        cancel.cancel();
                    }
                    Err(Stop::File(reason)) => {
                        lock(self.store).finish(row.id, None, Some(&reason))?;
                        emit(IndexEvent::FileFailed {
                            path: path.clone(),
                            reason: reason.clone(),
                        });
                        summary.failed.push((path, reason));
                    }
                }
            }
            Ok(())
        });
        result?;
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        summary.secs = start.elapsed().as_secs_f64();
        emit(IndexEvent::Finished {
            indexed: summary.indexed,
            failed: summary.failed.len(),
            secs: summary.secs,
        });
        Ok(summary)
    }

    /// A row whose work was interrupted waits again, unless the person cancelled it.
    fn requeue(&self, row: &QueueRow) {
        lock(self.running).remove(&row.id);
        let _ = lock(self.store).requeue(row.id);
    }

    /// An extraction thread: claim queued files one at a time, read them (in a child
    /// process), and hand them over, until the queue is empty or the batch stops.
    fn extract_worker(&self, tx: &mpsc::SyncSender<Prepared>, cancel: &Cancel) {
        while !cancel.is_cancelled() {
            // Questions first: the next file waits for the answer.
            if let Some(p) = self.priority {
                p.wait_background(|| cancel.is_cancelled());
            }
            let row = match lock(self.store).claim() {
                Ok(Some(row)) => row,
                _ => return,
            };
            let file_cancel = Cancel::new();
            lock(self.running).insert(row.id, file_cancel.clone());
            // Polled while the file is extracted (and OCR'd): a cancel here, or from
            // another process (`quire queue cancel`, seen in the queue's row).
            let stop = || {
                if !file_cancel.is_cancelled() && !lock(self.store).wanted(row.id).unwrap_or(true) {
                    file_cancel.cancel();
                }
                cancel.is_cancelled() || file_cancel.is_cancelled()
            };
            let stat = std::fs::metadata(&row.path)
                .ok()
                .and_then(|m| Some((m.len(), mtime_ns(&m)?)));
            let (hash, doc) = self.prepare(Path::new(&row.path), &stop);
            let p = Prepared {
                row,
                cancel: file_cancel,
                hash,
                stat,
                doc,
            };
            if let Err(mpsc::SendError(p)) = tx.send(p) {
                self.requeue(&p.row);
                return;
            }
        }
    }

    /// Hash, extract and split one file, unless it is already indexed: on the
    /// extraction thread, so that the next file is split (tokenized) while this one is
    /// embedded.
    #[allow(clippy::type_complexity)]
    fn prepare(
        &self,
        file: &Path,
        stop: &dyn Fn() -> bool,
    ) -> (String, Result<Result<Split, (i64, usize)>, Stop>) {
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => return (String::new(), Err(Stop::File(e.to_string()))),
        };
        let hash = content_hash(&bytes);
        drop(bytes);
        let path = file.display().to_string();
        let here = {
            let store = lock(self.store);
            let by_path = store.document_by_path(&path).map(|d| {
                d.filter(|d| d.hash == hash && d.status == DocStatus::Done)
                    .map(|d| (d.id, d.chunks))
            });
            // The same content under another name is not indexed twice.
            match by_path {
                Ok(None) => store
                    .done_with_hash(&hash)
                    .map(|d| d.map(|(id, _, chunks)| (id, chunks))),
                r => r,
            }
        };
        match here {
            Ok(Some(done)) => return (hash, Ok(Err(done))),
            Ok(None) => {}
            Err(e) => return (hash, Err(e.into())),
        }
        let hold = || self.priority.is_some_and(Priority::busy);
        let control = Control { stop, hold: &hold };
        let doc = (self.extract)(file, &control).and_then(|mut doc| {
            self.ocr.fill(file, &mut doc, stop)?;
            let chunks = split(&doc.pages, self.embedder, &self.split)?;
            Ok(Split { doc, chunks })
        });
        (hash, doc.map(Ok).map_err(Stop::from))
    }

    /// Embed and write one prepared file: (document id, chunks, whether it was already
    /// there).
    fn finish(
        &self,
        p: Prepared,
        clock: &mut Clock,
        cancel: &Cancel,
        emit: &mut dyn FnMut(IndexEvent),
    ) -> Result<(i64, usize, bool), Stop> {
        let size = p.row.bytes;
        let doc = match p.doc {
            Ok(Ok(split)) => split,
            Ok(Err((id, chunks))) => {
                clock.total_bytes = clock.total_bytes.saturating_sub(size);
                return Ok((id, chunks, true));
            }
            Err(e) => {
                clock.done_bytes += size;
                if let Stop::File(reason) = &e {
                    self.record_failed(&p.row, &p.hash, reason)?;
                }
                return Err(e);
            }
        };
        match self.build(&p.row, &p.cancel, doc, &p.hash, clock, cancel, emit) {
            Ok(done) => {
                clock.done_bytes += size;
                // What a watched folder's next sync compares (without it, as after a
                // kill just before this, that sync reads the file once more: no harm).
                if let Some((bytes, mtime)) = p.stat {
                    let _ = lock(self.store).stamp_document(done.0, bytes, mtime);
                }
                Ok(done)
            }
            Err(Stop::File(reason)) => {
                clock.done_bytes += size;
                self.record_failed(&p.row, &p.hash, &reason)?;
                Err(Stop::File(reason))
            }
            Err(Stop::Cancelled) => Err(Stop::Cancelled),
        }
    }

    fn record_failed(&self, row: &QueueRow, hash: &str, reason: &str) -> Result<(), Stop> {
        lock(self.store).insert_failed(&row.path, hash, row.bytes, reason)?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        &self,
        row: &QueueRow,
        file_cancel: &Cancel,
        Split { doc, chunks }: Split,
        hash: &str,
        clock: &mut Clock,
        cancel: &Cancel,
        emit: &mut dyn FnMut(IndexEvent),
    ) -> Result<(i64, usize, bool), Stop> {
        let check = || -> Result<(), Stop> {
            cancel.check()?;
            file_cancel.check()?;
            Ok(())
        };
        if !lock(self.store).wanted(row.id).unwrap_or(true) {
            file_cancel.cancel();
        }
        check()?;
        let path = row.path.as_str();
        let size = row.bytes;
        let pages = doc.pages.len() as u32;
        if doc.pages.iter().all(|p| p.text.trim().is_empty()) {
            let images = doc.pages.iter().any(|p| p.has_images);
            return Err(Stop::File(self.ocr.no_text_reason(doc.pages.len(), images)));
        }
        let started = Instant::now();
        let mut paused = Duration::ZERO;
        let mut embeddings = Vec::with_capacity(chunks.len());
        for batch in chunks.chunks(EMBED_BATCH) {
            check()?;
            // Questions first: wait for the answer between batches; the ETAs leave
            // the pause out.
            if let Some(p) = self.priority.filter(|p| p.busy()) {
                emit(IndexEvent::Paused {
                    path: path.to_string(),
                });
                let waited = p.wait_background(|| check().is_err());
                paused += waited;
                clock.paused += waited;
                check()?;
            }
            let texts: Vec<&str> = batch.iter().map(|c| c.text.as_str()).collect();
            embeddings.extend(self.embedder.embed(&texts)?);
            let done = embeddings.len();
            let fraction = done as f64 / chunks.len() as f64;
            let secs = started.elapsed().saturating_sub(paused).as_secs_f64();
            let file_eta = (fraction > 0.0).then(|| secs * (1.0 - fraction) / fraction);
            {
                let store = lock(self.store);
                let _ = store.progress(row.id, fraction, file_eta);
                // Cancelled from another process (`quire queue cancel`): the same as a
                // cancel of this file here.
                if !store.wanted(row.id).unwrap_or(true) {
                    file_cancel.cancel();
                }
            }
            emit(IndexEvent::Page {
                path: path.to_string(),
                page: batch.last().map_or(pages, |c| c.page_end),
                pages,
            });
            emit(IndexEvent::Embedded {
                path: path.to_string(),
                chunks: done,
                total: chunks.len(),
                eta_secs: clock.eta(size, fraction),
            });
        }
        check()?;
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
