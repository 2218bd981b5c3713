//! The one facade the shells use: open a data directory and models, index PDFs, ask
//! questions, keep conversations and settings. Blocking and push-style (events go to a
//! callback); [`spawn_ask`] and [`spawn_index`] adapt it to async shells.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use crate::ingest::pipeline::{self, Extractor};
use crate::store::Store;
use crate::{Error, Result};

mod ask;
mod auto_model;
mod exchanges;
mod files;
mod folder_diff;
mod folder_watch;
mod folders;
mod index_cache;
mod indexing;
mod library;
mod llm_cache;
mod models;
mod modes;
mod record;
pub mod route;
mod scope;
mod support;
mod types;
mod uploads;
mod whole;

/// What the support check says of an answer, as the shells show it.
pub use crate::support::{SentenceSupport, Span, Support, Verdict, WrongCitation};
pub use ask::synth_nodes;
pub use auto_model::CalibrationStatus;
pub use exchanges::to_markdown;
pub use folder_watch::{watch_folders, FolderWatcher};
pub use folders::{spawn_sync, FolderOptions, FolderView, SyncReport};
pub use indexing::{spawn_resume, QueueItem, QueuePage, QueueView};
pub use library::{
    LibraryFilter, LibraryItem, LibraryPage, LibraryQuery, LibrarySort, LibrarySummary,
};
pub use modes::{ModeInfo, ModeKind};
pub use record::{AnswerRecord, AnswerStatus};
pub use scope::ResolvedScope;
pub use types::*;

/// The engine. Cheap to share behind an `Arc`; one generation runs at a time and
/// other asks wait their turn.
pub struct Engine {
    config: EngineConfig,
    db: Mutex<Store>,
    /// Loaded on first use, then kept until the settings name another.
    embedder: Mutex<models::EmbedderSlot>,
    extractor: Extractor,
    /// The files being indexed, by queue id, with their own cancel flags.
    indexing: Mutex<std::collections::HashMap<i64, Cancel>>,
    settings: Mutex<Settings>,
    /// Held for the whole of a generation: asks queue here.
    generation: Mutex<()>,
    /// Asks come first: indexing pauses between embedding batches while one runs.
    priority: Arc<crate::cpu::priority::Priority>,
    /// The background calibration of the models `auto` chooses among.
    calibrating: auto_model::Calibrating,
    next_ask: std::sync::atomic::AtomicU64,
    /// Running (or queued) work, so a shell can cancel it by id or all at once.
    running: Mutex<std::collections::HashMap<u64, Cancel>>,
    /// The loaded LLM, kept between asks.
    llm_cache: llm_cache::LlmCache,
    /// The in-memory retrieval index, kept between asks.
    index_cache: index_cache::IndexCache,
    /// Documents' files checked to hold the indexed bytes, for a viewer's requests.
    verified: files::Verified,
    /// Synthesizers a program registered as response modes.
    synthesizers: Vec<modes::Registered>,
    /// Held for the whole of a watched folders' sync: one at a time.
    folder_sync: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in another thread must not make the engine unusable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Engine {
    /// Open (creating if needed) the data directory.
    pub fn open(config: EngineConfig) -> Result<Self> {
        std::fs::create_dir_all(&config.data_dir).map_err(|e| Error::io(&config.data_dir, e))?;
        let settings = Settings::load(&config.data_dir.join("settings.json"))?;
        let store = Store::open_for(
            config.store.as_deref().or(Some(settings.store.as_str())),
            &config.data_dir,
        )?;
        // What a killed or crashed run was indexing waits again (see `spawn_resume`);
        // the rows of a process indexing here now are its own (each store knows
        // which rows' processes are gone).
        store.requeue_interrupted()?;
        let engine = Self {
            config,
            db: Mutex::new(store),
            embedder: Mutex::new(None),
            extractor: pipeline::default_extractor(),
            indexing: Mutex::new(Default::default()),
            settings: Mutex::new(settings),
            generation: Mutex::new(()),
            priority: Default::default(),
            calibrating: Default::default(),
            next_ask: std::sync::atomic::AtomicU64::new(1),
            running: Mutex::new(std::collections::HashMap::new()),
            llm_cache: Default::default(),
            index_cache: Default::default(),
            verified: Default::default(),
            synthesizers: Vec::new(),
            folder_sync: Mutex::new(()),
        };
        // `auto` with models not yet calibrated: calibrate them in the background.
        if engine.settings().model.trim() == crate::models::AUTO {
            if let Ok(choice) = engine.model_choice() {
                engine.calibrate_in_background(&choice);
            }
        }
        Ok(engine)
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.config.data_dir
    }

    /// Current settings.
    pub fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    /// Validate, save and apply new settings. A new model choice must be usable (the
    /// folder a BERT model, the file a GGUF Quire runs); a new embedding model leaves
    /// the index to re-embed ([`Engine::reembed`]) before it is searched again.
    pub fn set_settings(&self, s: Settings) -> Result<Settings> {
        s.validate_with(&self.library_modes())?;
        self.check_model_choices(&s)?;
        // A new shared index must be reachable (it is opened when Quire starts).
        let store = s.store.trim();
        if !store.is_empty() && store != self.settings().store.trim() {
            Store::connect(store, "settings-check")?;
        }
        s.write(&self.config.data_dir.join("settings.json"))?;
        *lock(&self.settings) = s.clone();
        if s.model.trim() == crate::models::AUTO {
            if let Ok(choice) = self.model_choice() {
                self.calibrate_in_background(&choice);
            }
        }
        Ok(s)
    }

    /// Conversations, most recent first.
    pub fn conversations(&self) -> Result<Vec<ConversationInfo>> {
        lock(&self.db).conversations()
    }

    /// One conversation with its messages.
    pub fn conversation(&self, id: i64) -> Result<Conversation> {
        lock(&self.db)
            .conversation(id)?
            .ok_or_else(|| Error::NotFound(format!("conversation {id}")))
    }

    /// Delete a conversation.
    pub fn remove_conversation(&self, id: i64) -> Result<()> {
        if lock(&self.db).remove_conversation(id)? {
            Ok(())
        } else {
            Err(Error::NotFound(format!("conversation {id}")))
        }
    }

    /// Register `cancel` under a fresh id; the guard unregisters it.
    fn register(&self, cancel: &Cancel) -> Registered<'_> {
        let id = self
            .next_ask
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.running).insert(id, cancel.clone());
        Registered { engine: self, id }
    }

    /// Cancel the ask with this id; false if it is not running.
    pub fn cancel(&self, ask_id: u64) -> bool {
        match lock(&self.running).get(&ask_id) {
            Some(c) => {
                c.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancel everything running (the window is closing).
    pub fn cancel_all(&self) {
        for c in lock(&self.running).values() {
            c.cancel();
        }
    }
}

/// Keeps running work listed while it runs.
struct Registered<'a> {
    engine: &'a Engine,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        lock(&self.engine.running).remove(&self.id);
    }
}

/// A running ask: its events, and the flag that stops it. Dropping it cancels.
pub struct AskHandle {
    pub events: mpsc::Receiver<AskEvent>,
    pub cancel: Cancel,
}

impl Drop for AskHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Run `ask` on a blocking thread; events arrive on a bounded channel, and the ask is
/// cancelled when the handle (or its receiver) is dropped.
pub fn spawn_ask(engine: Arc<Engine>, req: AskRequest) -> AskHandle {
    let (tx, rx) = mpsc::channel(256);
    let cancel = Cancel::new();
    let c = cancel.clone();
    tokio::task::spawn_blocking(move || {
        let mut send = |ev: AskEvent| tx.blocking_send(ev).is_ok();
        if let Err(e) = engine.ask(req, &c, &mut send) {
            let ev = match e {
                Error::Cancelled => AskEvent::Cancelled,
                e => AskEvent::Error {
                    message: e.to_string(),
                },
            };
            let _ = tx.blocking_send(ev);
        }
    });
    AskHandle { events: rx, cancel }
}

/// Running indexing work; dropping the handle cancels it between files.
pub struct IndexHandle {
    pub events: mpsc::Receiver<IndexEvent>,
    pub cancel: Cancel,
}

impl Drop for IndexHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Run `index` on a blocking thread, with progress on a bounded channel.
pub fn spawn_index(engine: Arc<Engine>, paths: Vec<PathBuf>) -> IndexHandle {
    let (tx, rx) = mpsc::channel(256);
    let cancel = Cancel::new();
    let c = cancel.clone();
    tokio::task::spawn_blocking(move || {
        let mut send = |ev: IndexEvent| tx.blocking_send(ev).is_ok();
        match engine.index(&paths, &c, &mut send) {
            Ok(()) | Err(Error::Cancelled) => {}
            Err(e) => {
                let _ = tx.blocking_send(IndexEvent::FileFailed {
                    path: String::new(),
                    reason: e.to_string(),
                });
            }
        }
    });
    IndexHandle { events: rx, cancel }
}

/// Run [`Engine::reembed`] on a blocking thread, with progress on a bounded channel
/// (the same events as indexing).
pub fn spawn_reembed(engine: Arc<Engine>) -> IndexHandle {
    let (tx, rx) = mpsc::channel(256);
    let cancel = Cancel::new();
    let c = cancel.clone();
    tokio::task::spawn_blocking(move || {
        let mut send = |ev: IndexEvent| tx.blocking_send(ev).is_ok();
        match engine.reembed(&c, &mut send) {
            Ok(_) | Err(Error::Cancelled) => {}
            Err(e) => {
                let _ = tx.blocking_send(IndexEvent::FileFailed {
                    path: String::new(),
                    reason: format!("re-embedding failed: {e}"),
                });
            }
        }
    });
    IndexHandle { events: rx, cancel }
}

impl Engine {
    /// Models present or missing.
    pub fn status(&self) -> Status {
        let mut problems = Vec::new();
        let settings = self.settings();
        let model = settings.model.clone();
        let remote = self.remote_llm();
        let llm = match (&remote, self.model_path()) {
            // Not connected to here: the status stays instant; asking (or saving the
            // settings) says what is wrong with the server.
            (Some(r), _) => Some(format!("{} (OpenAI-compatible model server)", r.url)),
            (None, Ok(p)) => Some(p.display().to_string()),
            (None, Err(e)) => {
                problems.push(format!(
                    "The language model is missing ({e}). Answers need it; sources still work."
                ));
                None
            }
        };
        let embedder = match crate::models::find(&self.settings().embedder) {
            Ok(p) => Some(p.display().to_string()),
            Err(e) => {
                problems.push(format!(
                    "The embedding model is missing ({e}). Indexing and search need it."
                ));
                None
            }
        };
        if let Err(e) = self.check_index_embedder() {
            problems.push(format!("{e}."));
        }
        let device = match self.device() {
            Ok(d) => d.describe(),
            Err(e) => {
                problems.push(format!("The models cannot load on the chosen device: {e}"));
                format!("unavailable ({e})")
            }
        };
        Status {
            device,
            data_dir: self.config.data_dir.display().to_string(),
            llm,
            embedder,
            problems,
            model_dirs: crate::models::search_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            llm_name: match &remote {
                Some(r) if !r.model.is_empty() => r.model.clone(),
                Some(r) => format!("the model served at {}", r.url),
                None => self.model_name(&model),
            },
            embedder_name: models::setting_name(&self.settings().embedder),
        }
    }
}

impl Engine {
    /// Use `extract` to read PDFs instead of the default extractor.
    pub fn with_extractor(mut self, extract: Extractor) -> Self {
        self.extractor = extract;
        self
    }

    /// The index database. Hold it briefly: indexing waits for it to write.
    pub fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.db)
    }

    /// Documents in the index, failed ones included, by id; those of a watched folder
    /// that is missing are marked unavailable.
    pub fn documents(&self) -> Result<Vec<DocumentView>> {
        let missing = self.unavailable_roots();
        Ok(self
            .store()
            .documents()?
            .into_iter()
            .map(|d| DocumentView {
                unavailable: folders::in_any(&d.path, &missing),
                id: d.id,
                path: d.path,
                file_name: d.file_name,
                title: d.title,
                pages: d.pages,
                chunks: d.chunks,
                status: d.status,
                error: d.error,
            })
            .collect())
    }

    /// The id of a document given by id or by path.
    pub fn find_document(&self, id_or_path: &str) -> Result<i64> {
        let store = self.store();
        if let Ok(id) = id_or_path.parse::<i64>() {
            if store.document(id)?.is_some() {
                return Ok(id);
            }
        }
        let p = Path::new(id_or_path);
        let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let found = match store.document_by_path(&abs.display().to_string())? {
            Some(d) => Some(d),
            None => store.document_by_path(id_or_path)?,
        };
        found
            .map(|d| d.id)
            .ok_or_else(|| Error::NotFound(format!("document {id_or_path}")))
    }

    /// Remove a document from the index (and its file, when it is an upload Quire
    /// keeps in its data directory).
    pub fn remove_document(&self, id: i64) -> Result<()> {
        let path = self
            .store()
            .document(id)?
            .map(|d| PathBuf::from(d.path))
            .ok_or_else(|| Error::NotFound(format!("document {id}")))?;
        if !self.store().remove_document(id)? {
            return Err(Error::NotFound(format!("document {id}")));
        }
        self.verified.forget(id);
        if self.is_upload(&path) {
            let _ = std::fs::remove_file(&path);
        }
        Ok(())
    }

    /// Index PDFs (files or folders, recursively), with progress through `on`
    /// (returning false cancels). A file that fails is reported and recorded; the
    /// others go on.
    pub fn index(
        &self,
        paths: &[PathBuf],
        cancel: &Cancel,
        on: &mut dyn FnMut(IndexEvent) -> bool,
    ) -> Result<()> {
        self.index_summary(paths, cancel, on).map(|_| ())
    }
}
