//! The watcher a shell runs while it is open ([`watch_folders`]): file-system events
//! (the `notify` crate: inotify, FSEvents, ReadDirectoryChangesW) under the watched
//! folders, debounced (a sync once the events have been quiet for [`QUIET`], or
//! [`MAX_WAIT`] after the first), each burst ending in one [`Engine::sync_folders`].
//! Every [`RECHECK`] it reads the folders again: a folder added or removed is watched
//! or let go (a folder newly watched is synced: what changed before its watch was set
//! sent no event), and a folder whose root went or came back (a disk unmounted,
//! mounted: no event says so) is synced. Dropping the handle stops it, and the sync it runs.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecursiveMode, Watcher};

use super::{Cancel, Engine};

/// A burst of events ends after this much quiet.
const QUIET: Duration = Duration::from_millis(800);
/// A sync waits at most this long after the first event of a burst.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// The folders and their roots are read again this often.
const RECHECK: Duration = Duration::from_secs(3);

/// The running watcher; dropping it stops the thread.
pub struct FolderWatcher {
    stop: Arc<AtomicBool>,
    cancel: Cancel,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FolderWatcher {
    /// Stop and wait for the thread.
    pub fn stop(mut self) {
        self.halt();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn halt(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cancel.cancel();
    }
}

impl Drop for FolderWatcher {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Whether an event can change what a sync finds: a PDF's, a folder's or a vanished
/// path's creation, change, rename or removal (not another kind of file's), outside
/// the data directory (whose database changes at every sync).
fn relevant(ev: &Event, data_dir: &Path) -> bool {
    if let EventKind::Access(a) = ev.kind {
        if a != AccessKind::Close(AccessMode::Write) {
            return false;
        }
    }
    ev.paths.iter().any(|p| {
        !p.starts_with(data_dir)
            && (!p.is_file() || p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pdf")))
    })
}

/// Watch the folders of `engine` on a thread of its own until the handle is dropped.
/// The start-up rescan is [`super::spawn_resume`]'s; this one acts on what changes
/// after.
pub fn watch_folders(engine: Arc<Engine>) -> FolderWatcher {
    let stop = Arc::new(AtomicBool::new(false));
    let cancel = Cancel::new();
    let (s, c) = (stop.clone(), cancel.clone());
    let thread = std::thread::spawn(move || run(&engine, &s, &c));
    FolderWatcher {
        stop,
        cancel,
        thread: Some(thread),
    }
}

fn run(engine: &Engine, stop: &AtomicBool, cancel: &Cancel) {
    let (tx, rx) = mpsc::channel::<notify::Result<Event>>();
    let mut watcher = match notify::recommended_watcher(move |ev| {
        let _ = tx.send(ev);
    }) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("quire: watching folders is not possible here: {e}");
            return;
        }
    };
    let data_dir = std::fs::canonicalize(engine.data_dir())
        .unwrap_or_else(|_| engine.data_dir().to_path_buf());
    let mut watched: HashSet<PathBuf> = HashSet::new();
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    let mut checked: Option<Instant> = None;
    while !stop.load(Ordering::SeqCst) {
        if checked.is_none_or(|t| t.elapsed() >= RECHECK) {
            checked = Some(Instant::now());
            let roots = engine.folder_roots().unwrap_or_default();
            let here: HashSet<PathBuf> = roots
                .iter()
                .filter(|(p, _)| p.is_dir())
                .map(|(p, _)| p.clone())
                .collect();
            for gone in watched.difference(&here).cloned().collect::<Vec<_>>() {
                let _ = watcher.unwatch(&gone);
                watched.remove(&gone);
            }
            for new in here.difference(&watched).cloned().collect::<Vec<_>>() {
                match watcher.watch(&new, RecursiveMode::Recursive) {
                    Ok(()) => {
                        watched.insert(new);
                        // What changed before the watch was set has no event: a sync
                        // (a stat a file) finds it.
                        first.get_or_insert_with(Instant::now);
                    }
                    Err(e) => eprintln!("quire: cannot watch {}: {e}", new.display()),
                }
            }
            // A root that went or came back: no event need say so.
            if roots.iter().any(|(p, available)| p.is_dir() != *available) {
                first.get_or_insert_with(Instant::now);
            }
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Ok(ev)) if relevant(&ev, &data_dir) => {
                last = Instant::now();
                first.get_or_insert(last);
            }
            Ok(Err(e)) => {
                // Events were lost (an overflowing queue): a sync finds what changed.
                eprintln!("quire: watching folders: {e}");
                last = Instant::now();
                first.get_or_insert(last);
            }
            Ok(Ok(_)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        let due = first.is_some_and(|f| last.elapsed() >= QUIET || f.elapsed() >= MAX_WAIT);
        if due && !stop.load(Ordering::SeqCst) {
            first = None;
            let r = engine.sync_folders(cancel, &mut |_| !stop.load(Ordering::SeqCst));
            match r {
                Ok(_) | Err(crate::Error::Cancelled) => {}
                Err(e) => eprintln!("quire: syncing the watched folders: {e}"),
            }
            // The roots may have changed meanwhile.
            checked = None;
        }
    }
}
