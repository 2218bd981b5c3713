//! `/api/documents`: the library a page at a time (`?search=&filter=&sort=&offset=&limit=`),
//! its counts (`/api/documents/summary`), retrying or ignoring a failed file; and the
//! queue's waiting files a page at a time (`/api/queue/page?offset=&limit=`).

use axum::extract::{Path as UrlPath, Query, State};
use axum::Json;
use serde::Deserialize;

use super::{blocking, ApiResult, AppState};
use quire::engine::{LibraryPage, LibraryQuery, LibrarySummary, QueuePage};

/// The query string of a page; absent fields take their defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct PageParams {
    search: String,
    filter: String,
    sort: String,
    offset: usize,
    limit: usize,
}

pub(super) async fn page(
    State(st): State<AppState>,
    Query(p): Query<PageParams>,
) -> ApiResult<Json<LibraryPage>> {
    let e = st.engine.clone();
    Ok(Json(
        blocking(move || {
            e.library(&LibraryQuery {
                search: p.search,
                filter: p.filter.parse()?,
                sort: p.sort.parse()?,
                offset: p.offset,
                limit: p.limit,
            })
        })
        .await?,
    ))
}

pub(super) async fn summary(State(st): State<AppState>) -> ApiResult<Json<LibrarySummary>> {
    let e = st.engine.clone();
    Ok(Json(blocking(move || e.library_summary()).await?))
}

/// `{"queue_id": N}`: the queue row the failed file went back to.
pub(super) async fn retry(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    let row = blocking(move || e.retry_failed(id)).await?;
    Ok(Json(serde_json::json!({ "queue_id": row })))
}

pub(super) async fn ignore(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    blocking(move || e.ignore_failed(id)).await?;
    Ok(Json(serde_json::json!({})))
}

pub(super) async fn queue_page(
    State(st): State<AppState>,
    Query(p): Query<PageParams>,
) -> ApiResult<Json<QueuePage>> {
    let e = st.engine.clone();
    Ok(Json(
        blocking(move || e.queue_page(p.offset, p.limit)).await?,
    ))
}
