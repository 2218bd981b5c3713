//! `/api/folders`: the watched folders listed, added (then synced in the background:
//! the queue shows the progress), removed, and rescanned.

use axum::extract::{Path as UrlPath, Query, State};
use axum::Json;
use serde::Deserialize;

use super::{blocking, ApiResult, AppState};
use quire::engine::{FolderOptions, FolderView};

/// A folder to watch: its path on the server's machine, and optionally the
/// collection to tie it to.
#[derive(Debug, Deserialize)]
pub(super) struct AddFolder {
    path: String,
    #[serde(default)]
    collection: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct RemoveFolder {
    #[serde(default)]
    keep_documents: bool,
}

pub(super) async fn list(State(st): State<AppState>) -> ApiResult<Json<Vec<FolderView>>> {
    let e = st.engine.clone();
    Ok(Json(blocking(move || e.folders()).await?))
}

pub(super) async fn add(
    State(st): State<AppState>,
    Json(b): Json<AddFolder>,
) -> ApiResult<Json<FolderView>> {
    let e = st.engine.clone();
    let opts = FolderOptions {
        collection: b.collection.filter(|c| !c.trim().is_empty()),
    };
    let f = blocking(move || e.add_folder(std::path::Path::new(b.path.trim()), &opts)).await?;
    quire::engine::spawn_sync(st.engine.clone());
    Ok(Json(f))
}

pub(super) async fn remove(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
    Query(q): Query<RemoveFolder>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    let n = blocking(move || e.remove_folder(id, q.keep_documents)).await?;
    Ok(Json(
        serde_json::json!({ "removed": id, "documents_removed": n }),
    ))
}

/// Sync every watched folder now, in the background (one folder's changes are found
/// by the same scan as all of them: a stat a file).
pub(super) async fn rescan(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    blocking(move || e.find_folder(&id.to_string())).await?;
    quire::engine::spawn_sync(st.engine.clone());
    Ok(Json(serde_json::json!({ "syncing": id })))
}
