//! Quire's desktop shell: a Tauri window showing `ui/`, with commands that forward to
//! the core [`Engine`] and nothing more. Heavy work runs on blocking threads (the
//! engine's own adapters), never on the main thread.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::path::PathBuf;
use std::sync::Arc;

use quire::engine::{
    self, AskEvent, AskRequest, Conversation, ConversationInfo, Engine, EngineConfig, IndexEvent,
    Settings,
};
use tauri::ipc::Channel;
use tauri::{Manager, State, WindowEvent};

/// A command error the page can show.
#[derive(Debug, serde::Serialize)]
struct CommandError {
    message: String,
}

impl From<quire::Error> for CommandError {
    fn from(e: quire::Error) -> Self {
        Self {
            message: e.to_string(),
        }
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

type CmdResult<T> = Result<T, CommandError>;
type Eng<'a> = State<'a, Arc<Engine>>;

/// Run blocking engine work off the main thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> quire::Result<T> + Send + 'static,
) -> CmdResult<T> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| CommandError {
            message: e.to_string(),
        })?
        .map_err(Into::into)
}

#[tauri::command]
async fn status(engine: Eng<'_>) -> CmdResult<engine::Status> {
    let e = engine.inner().clone();
    blocking(move || Ok(e.status())).await
}

/// One page of the library (see `quire::engine::Engine::library`).
#[tauri::command]
async fn library(engine: Eng<'_>, query: engine::LibraryQuery) -> CmdResult<engine::LibraryPage> {
    let e = engine.inner().clone();
    blocking(move || e.library(&query)).await
}

#[tauri::command]
async fn library_summary(engine: Eng<'_>) -> CmdResult<engine::LibrarySummary> {
    let e = engine.inner().clone();
    blocking(move || e.library_summary()).await
}

#[tauri::command]
async fn retry_failed(engine: Eng<'_>, id: i64) -> CmdResult<i64> {
    let e = engine.inner().clone();
    blocking(move || e.retry_failed(id)).await
}

#[tauri::command]
async fn ignore_failed(engine: Eng<'_>, id: i64) -> CmdResult<()> {
    let e = engine.inner().clone();
    blocking(move || e.ignore_failed(id)).await
}

#[tauri::command]
async fn remove_document(engine: Eng<'_>, id: i64) -> CmdResult<()> {
    let e = engine.inner().clone();
    blocking(move || e.remove_document(id)).await
}

/// A document's own PDF for the viewer, as raw bytes (not JSON): the engine finds it
/// by id and checks that it is the file that was indexed.
#[tauri::command]
async fn document_file(engine: Eng<'_>, id: i64) -> CmdResult<tauri::ipc::Response> {
    let e = engine.inner().clone();
    let (_, bytes) = blocking(move || e.read_document_file(id)).await?;
    Ok(tauri::ipc::Response::new(bytes))
}

#[tauri::command]
fn modes(engine: Eng<'_>) -> Vec<engine::ModeInfo> {
    engine.modes()
}

#[tauri::command]
fn settings(engine: Eng<'_>) -> engine::SettingsView {
    engine.settings_view()
}

#[tauri::command]
async fn save_settings(engine: Eng<'_>, settings: Settings) -> CmdResult<engine::SettingsView> {
    let e = engine.inner().clone();
    blocking(move || e.set_settings(settings).map(|_| e.settings_view())).await
}

#[tauri::command]
async fn collections(engine: Eng<'_>) -> CmdResult<Vec<engine::Collection>> {
    let e = engine.inner().clone();
    blocking(move || e.collections()).await
}

#[tauri::command]
async fn create_collection(
    engine: Eng<'_>,
    name: String,
    documents: Vec<i64>,
) -> CmdResult<engine::Collection> {
    let e = engine.inner().clone();
    blocking(move || e.create_collection(&name, &documents)).await
}

#[tauri::command]
async fn folders(engine: Eng<'_>) -> CmdResult<Vec<engine::FolderView>> {
    let e = engine.inner().clone();
    blocking(move || e.folders()).await
}

/// Watch a folder, then sync in the background (the queue shows the progress).
#[tauri::command]
async fn add_folder(
    engine: Eng<'_>,
    path: PathBuf,
    collection: Option<String>,
) -> CmdResult<engine::FolderView> {
    let e = engine.inner().clone();
    let opts = engine::FolderOptions {
        collection: collection.filter(|c| !c.trim().is_empty()),
    };
    let f = blocking(move || e.add_folder(&path, &opts)).await?;
    engine::spawn_sync(engine.inner().clone());
    Ok(f)
}

#[tauri::command]
async fn remove_folder(engine: Eng<'_>, id: i64, keep_documents: bool) -> CmdResult<usize> {
    let e = engine.inner().clone();
    blocking(move || e.remove_folder(id, keep_documents)).await
}

/// Sync every watched folder now, in the background.
#[tauri::command]
async fn rescan_folders(engine: Eng<'_>) -> CmdResult<()> {
    engine::spawn_sync(engine.inner().clone());
    Ok(())
}

#[tauri::command]
async fn update_collection(
    engine: Eng<'_>,
    id: i64,
    name: Option<String>,
    documents: Option<Vec<i64>>,
) -> CmdResult<engine::Collection> {
    let e = engine.inner().clone();
    blocking(move || e.update_collection(id, name.as_deref(), documents.as_deref())).await
}

#[tauri::command]
async fn remove_collection(engine: Eng<'_>, id: i64) -> CmdResult<()> {
    let e = engine.inner().clone();
    blocking(move || e.remove_collection(id)).await
}

#[tauri::command]
async fn conversations(engine: Eng<'_>) -> CmdResult<Vec<ConversationInfo>> {
    let e = engine.inner().clone();
    blocking(move || e.conversations()).await
}

#[tauri::command]
async fn conversation(engine: Eng<'_>, id: i64) -> CmdResult<Conversation> {
    let e = engine.inner().clone();
    blocking(move || e.conversation(id)).await
}

#[tauri::command]
async fn remove_conversation(engine: Eng<'_>, id: i64) -> CmdResult<()> {
    let e = engine.inner().clone();
    blocking(move || e.remove_conversation(id)).await
}

#[tauri::command]
async fn delete_message(engine: Eng<'_>, conversation_id: i64, message_id: i64) -> CmdResult<()> {
    let e = engine.inner().clone();
    blocking(move || e.delete_message(conversation_id, message_id)).await
}

/// Export a conversation as Markdown to a file the person chooses in the native save
/// dialog; the path written, or none when the dialog was cancelled.
#[tauri::command]
async fn export_conversation(
    app: tauri::AppHandle,
    engine: Eng<'_>,
    id: i64,
) -> CmdResult<Option<PathBuf>> {
    use tauri_plugin_dialog::DialogExt;
    let e = engine.inner().clone();
    let md = blocking(move || e.export_conversation(id)).await?;
    let (tx, mut rx) = tauri::async_runtime::channel(1);
    app.dialog()
        .file()
        .add_filter("Markdown", &["md"])
        .set_file_name(format!("quire-conversation-{id}.md"))
        .save_file(move |path| {
            let _ = tx.try_send(path.and_then(|p| p.into_path().ok()));
        });
    let Some(path) = rx.recv().await.flatten() else {
        return Ok(None);
    };
    let to = path.clone();
    blocking(move || std::fs::write(&to, md).map_err(|e| quire::Error::io(&to, e))).await?;
    Ok(Some(path))
}

/// Ask; events go to `channel` as they come.
#[tauri::command]
async fn ask(engine: Eng<'_>, request: AskRequest, channel: Channel<AskEvent>) -> CmdResult<()> {
    let mut handle = engine::spawn_ask(engine.inner().clone(), request);
    while let Some(ev) = handle.events.recv().await {
        if channel.send(ev).is_err() {
            break; // the page went away: dropping the handle cancels
        }
    }
    Ok(())
}

#[tauri::command]
fn cancel(engine: Eng<'_>, ask_id: u64) -> bool {
    engine.cancel(ask_id)
}

/// Index dropped or picked paths (files or folders); progress goes to `channel`.
#[tauri::command]
async fn index_paths(
    engine: Eng<'_>,
    paths: Vec<PathBuf>,
    channel: Channel<IndexEvent>,
) -> CmdResult<()> {
    let mut handle = engine::spawn_index(engine.inner().clone(), paths);
    while let Some(ev) = handle.events.recv().await {
        if channel.send(ev).is_err() {
            break;
        }
    }
    Ok(())
}

/// The indexing queue with each file's progress and the ETA of the whole.
#[tauri::command]
async fn queue(engine: Eng<'_>) -> CmdResult<engine::QueueView> {
    let e = engine.inner().clone();
    blocking(move || e.queue()).await
}

/// A page of the files waiting or running, with the queue's ETA.
#[tauri::command]
async fn queue_page(engine: Eng<'_>, offset: usize, limit: usize) -> CmdResult<engine::QueuePage> {
    let e = engine.inner().clone();
    blocking(move || e.queue_page(offset, limit)).await
}

/// Cancel one queued or running file, or (without an id) the whole queue.
#[tauri::command]
async fn cancel_queued(engine: Eng<'_>, id: Option<i64>) -> CmdResult<usize> {
    let e = engine.inner().clone();
    blocking(move || e.cancel_queued(id)).await
}

/// Re-embed the index with the embedding model the settings choose; progress goes
/// to `channel`.
#[tauri::command]
async fn reembed(engine: Eng<'_>, channel: Channel<IndexEvent>) -> CmdResult<()> {
    let mut handle = engine::spawn_reembed(engine.inner().clone());
    while let Some(ev) = handle.events.recv().await {
        if channel.send(ev).is_err() {
            break;
        }
    }
    Ok(())
}

/// The native folder picker, for "Add folder" (`None`: cancelled).
#[tauri::command]
async fn pick_folder(app: tauri::AppHandle) -> Option<PathBuf> {
    use tauri_plugin_dialog::DialogExt;
    let (tx, mut rx) = tauri::async_runtime::channel(1);
    app.dialog().file().pick_folder(move |folder| {
        let _ = tx.try_send(folder.and_then(|f| f.into_path().ok()));
    });
    rx.recv().await.flatten()
}

/// The native file picker, for PDFs.
#[tauri::command]
async fn pick_files(app: tauri::AppHandle) -> Vec<PathBuf> {
    use tauri_plugin_dialog::DialogExt;
    let (tx, mut rx) = tauri::async_runtime::channel(1);
    app.dialog()
        .file()
        .add_filter("PDF", &["pdf", "PDF"])
        .pick_files(move |files| {
            let paths = files
                .unwrap_or_default()
                .into_iter()
                .filter_map(|f| f.into_path().ok())
                .collect();
            let _ = tx.try_send(paths);
        });
    rx.recv().await.unwrap_or_default()
}

fn main() {
    // PDFs are extracted in child processes of this same binary
    // (`quire-desktop __extract FILE`): a hostile file crashes a child, not the window.
    // Serving the child here rather than shipping the `quire` CLI as a sidecar keeps
    // one executable to install and sign, always the same version as the window, and
    // without the HTTP server's code.
    quire::ingest::pdf::serve_child();
    // QUIRE_DATA_DIR lets tests run the app on a temporary index.
    let data_dir = std::env::var_os("QUIRE_DATA_DIR").map(PathBuf::from);
    let engine = match EngineConfig::new(data_dir).and_then(Engine::open) {
        Ok(e) => Arc::new(e),
        Err(e) => {
            eprintln!("quire-desktop: cannot open the index: {e}");
            std::process::exit(1);
        }
    };
    // Finish what a killed or crashed run left queued, and sync the watched folders,
    // without being asked; then keep them in step while the window is open.
    engine::spawn_resume(engine.clone());
    let watcher = engine::watch_folders(engine.clone());
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(engine)
        .invoke_handler(tauri::generate_handler![
            status,
            library,
            library_summary,
            retry_failed,
            ignore_failed,
            remove_document,
            document_file,
            settings,
            save_settings,
            modes,
            collections,
            create_collection,
            update_collection,
            remove_collection,
            conversations,
            conversation,
            remove_conversation,
            delete_message,
            export_conversation,
            ask,
            cancel,
            index_paths,
            queue,
            queue_page,
            cancel_queued,
            reembed,
            pick_files,
            folders,
            add_folder,
            remove_folder,
            rescan_folders,
            pick_folder
        ])
        .on_window_event(|window, event| {
            if let WindowEvent::CloseRequested { .. } = event {
                // Stop any generation and indexing; the database closes when the
                // engine is dropped at exit.
                window.state::<Arc<Engine>>().cancel_all();
            }
        })
        .run(tauri::generate_context!());
    drop(watcher);
    if let Err(e) = result {
        eprintln!("quire-desktop: {e}");
        std::process::exit(1);
    }
}
