//! `/api/collections`: list, create, change and delete collections of documents.

use axum::extract::{Path as UrlPath, State};
use axum::Json;
use serde::Deserialize;

use super::{blocking, ApiResult, AppState};
use quire::engine::Collection;

/// A new collection, or the changes to one (absent fields stay as they are).
#[derive(Debug, Deserialize)]
pub(super) struct CollectionBody {
    name: Option<String>,
    documents: Option<Vec<i64>>,
}

pub(super) async fn list(State(st): State<AppState>) -> ApiResult<Json<Vec<Collection>>> {
    let e = st.engine.clone();
    Ok(Json(blocking(move || e.collections()).await?))
}

pub(super) async fn create(
    State(st): State<AppState>,
    Json(b): Json<CollectionBody>,
) -> ApiResult<Json<Collection>> {
    let e = st.engine.clone();
    Ok(Json(
        blocking(move || {
            e.create_collection(
                b.name.as_deref().unwrap_or_default(),
                b.documents.as_deref().unwrap_or_default(),
            )
        })
        .await?,
    ))
}

pub(super) async fn update(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
    Json(b): Json<CollectionBody>,
) -> ApiResult<Json<Collection>> {
    let e = st.engine.clone();
    Ok(Json(
        blocking(move || e.update_collection(id, b.name.as_deref(), b.documents.as_deref()))
            .await?,
    ))
}

pub(super) async fn remove(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    blocking(move || e.remove_collection(id)).await?;
    Ok(Json(serde_json::json!({ "removed": id })))
}
