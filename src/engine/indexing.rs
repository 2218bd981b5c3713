//! Indexing as the shells see it: a batch is queued in the index and drained by the
//! ingestion pipeline ([`Engine::index_summary`]); what a kill, a crash or a restart
//! left queued is finished when a shell starts ([`spawn_resume`]); the queue is listed
//! with progress and ETA ([`Engine::queue`]) and each file, or all, can be cancelled
//! ([`Engine::cancel_queued`]).

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{lock, Cancel, Engine, IndexEvent};
use crate::embed::Embedder;
use crate::ingest::ocr::Ocr;
use crate::ingest::pipeline::{Pipeline, Summary};
use crate::ingest::split::SplitConfig;
use crate::store::{queue, QueueState};
use crate::Result;

/// One file of the indexing queue.
pub type QueueItem = queue::QueueRow;

/// The indexing queue as the UI shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueView {
    /// Oldest first: those of the current batch, finished ones included.
    pub items: Vec<QueueItem>,
    /// Files waiting or running.
    pub pending: usize,
    /// Estimated seconds until the whole queue is done, once there is a measure.
    pub eta_secs: Option<f64>,
    /// Indexing waits while a question is answered (questions first).
    pub paused_for_question: bool,
}

/// A page of the files waiting or running, as the UI's virtual list reads them, with
/// what the whole queue's view says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuePage {
    /// Files waiting or running, in all.
    pub total: usize,
    pub offset: usize,
    /// Those of the page, in queue order.
    pub items: Vec<QueueItem>,
    /// Estimated seconds until the whole queue is done, once there is a measure.
    pub eta_secs: Option<f64>,
    /// Indexing waits while a question is answered (questions first).
    pub paused_for_question: bool,
}

impl Engine {
    /// Queue `paths` (files or folders, recursively) and index everything queued,
    /// returning how it went. See [`Engine::index`].
    pub fn index_summary(
        &self,
        paths: &[PathBuf],
        cancel: &Cancel,
        on: &mut dyn FnMut(IndexEvent) -> bool,
    ) -> Result<Summary> {
        let _reg = self.register(cancel);
        self.check_index_embedder()?;
        let embedder = self.embedder()?;
        let model = self.embedder_name();
        let ocr = Ocr::detect(self.settings().ocr);
        let p = Pipeline {
            store: &self.db,
            embedder: embedder.as_ref() as &dyn Embedder,
            model: &model,
            extract: &self.extractor,
            split: SplitConfig::default(),
            ocr: &ocr,
            running: &self.indexing,
            priority: Some(&*self.priority),
        };
        if paths.is_empty() {
            p.drain(cancel, on)
        } else {
            p.run(paths, cancel, on)
        }
    }

    /// Files waiting in the queue (a batch a kill or a restart interrupted).
    pub fn queued(&self) -> Result<usize> {
        self.store().waiting()
    }

    /// The indexing queue with each file's progress and the ETA of the whole.
    pub fn queue(&self) -> Result<QueueView> {
        let items = self.store().queue()?;
        let pending = items.iter().filter(|r| r.state.pending()).count();
        // Seconds per byte, from the files of this queue already done: the wall time
        // from the first one's start to the last one's end. (A file starts when an
        // extraction worker claims it, while up to two others are ahead of it, so
        // the files' own spans overlap: summed, they counted the same seconds two
        // or three times, and the ETA came out 2–3× too long: `quire bench library`.)
        let done = || items.iter().filter(|r| r.state == QueueState::Done);
        let first = done().filter_map(|r| r.started_at).min();
        let last = done().filter_map(|r| r.finished_at).max();
        let secs = match (first, last) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e3,
            _ => 0.0,
        };
        let bytes: u64 = done().map(|r| r.bytes).sum();
        let rate = (bytes > 0 && secs > 0.0).then(|| secs / bytes as f64);
        let mut eta = 0.0;
        let mut known = pending == 0;
        for r in &items {
            match r.state {
                QueueState::Running => {
                    if let Some(e) = r.eta_secs.or_else(|| rate.map(|k| k * r.bytes as f64)) {
                        eta += e;
                        known = true;
                    }
                }
                QueueState::Queued => {
                    if let Some(k) = rate {
                        eta += k * r.bytes as f64;
                        known = true;
                    }
                }
                _ => {}
            }
        }
        Ok(QueueView {
            items,
            pending,
            eta_secs: (known && pending > 0).then_some(eta),
            paused_for_question: pending > 0 && self.priority.busy(),
        })
    }

    /// Up to `limit` (at most 500) of the files waiting or running from `offset`,
    /// with the queue's ETA: what the window's queue list draws.
    pub fn queue_page(&self, offset: usize, limit: usize) -> Result<QueuePage> {
        let view = self.queue()?;
        let live: Vec<QueueItem> = view
            .items
            .into_iter()
            .filter(|r| r.state.pending())
            .collect();
        let total = live.len();
        let items = live
            .into_iter()
            .skip(offset)
            .take(limit.clamp(1, crate::store::library::MAX_PAGE))
            .collect();
        Ok(QueuePage {
            total,
            offset,
            items,
            eta_secs: view.eta_secs,
            paused_for_question: view.paused_for_question,
        })
    }

    /// Whether an answer is being generated (or waits for its turn) now: indexing
    /// pauses at its next embedding batch until none is.
    pub fn answering(&self) -> bool {
        self.priority.busy()
    }

    /// Mark the sources whose pages' text came from OCR.
    pub(super) fn mark_ocr(&self, sources: &mut [super::Source]) {
        let store = self.store();
        for s in sources {
            if let Ok(pages) = store.ocr_pages(s.doc_id) {
                s.ocr = pages
                    .iter()
                    .any(|p| (s.page_start..=s.page_end).contains(p));
            }
        }
    }

    /// The queue id of `path`'s newest waiting or running file (the path as given,
    /// or made absolute as the queue keeps it).
    pub fn queued_id_of(&self, path: &str) -> Result<Option<i64>> {
        let full = std::fs::canonicalize(path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.to_string());
        Ok(self
            .store()
            .queue()?
            .into_iter()
            .rev()
            .find(|r| (r.path == path || r.path == full) && r.state.pending())
            .map(|r| r.id))
    }

    /// Cancel one queued or running file (`Some(id)`), or the whole queue (`None`):
    /// a waiting file is not indexed, a running one stops and leaves the index as it
    /// was. Returns how many files were cancelled.
    pub fn cancel_queued(&self, id: Option<i64>) -> Result<usize> {
        let ids = self.store().cancel(id)?;
        let running = lock(&self.indexing);
        for id in &ids {
            if let Some(c) = running.get(id) {
                c.cancel();
            }
        }
        Ok(ids.len())
    }
}

/// When files wait in the queue (a batch a kill, a crash or a restart interrupted),
/// or folders are watched, index them on a thread of their own, without being asked;
/// the shells call this at start. A watched folder is synced first
/// ([`Engine::sync_folders`]): what changed while Quire was closed is found. Returns
/// the thread when there was something to do. Its progress shows in
/// [`Engine::queue`]; cancelling all work ([`Engine::cancel_all`]) stops it and leaves
/// the rest queued for the next start.
pub fn spawn_resume(engine: Arc<Engine>) -> Option<std::thread::JoinHandle<()>> {
    let folders = engine.watching_folders().unwrap_or(false);
    if !folders && engine.queued().ok()? == 0 {
        return None;
    }
    Some(std::thread::spawn(move || {
        let cancel = Cancel::new();
        let r = if folders {
            engine.sync_folders(&cancel, &mut |_| true).map(|_| ())
        } else {
            engine
                .index_summary(&[], &cancel, &mut |_| true)
                .map(|_| ())
        };
        if let Err(e) = r {
            if !matches!(e, crate::Error::Cancelled) {
                eprintln!("quire: resuming the indexing queue: {e}");
            }
        }
    }))
}
