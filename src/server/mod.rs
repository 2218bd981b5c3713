//! `quire serve`: the HTTP + server-sent-events adapter over [`Engine`] that also
//! serves `ui/` to a browser. It forwards requests and events; it holds no logic.
//!
//! It binds loopback by default. Any other address needs an access token, sent as the
//! `x-quire-token` header or the `quire_token` cookie (set by opening `/?token=...`).

mod assets;
mod error;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Multipart, Path as UrlPath, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use futures_util::stream::Stream;

use crate::engine::{self, AskRequest, Conversation, ConversationInfo, Engine, Settings};
pub use error::{ApiError, ApiResult};

/// The Content-Security-Policy of every response: nothing but our own scripts and
/// styles, no inline code, no remote sources.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// Largest upload accepted, in bytes.
pub const DEFAULT_MAX_UPLOAD: usize = 100 * 1024 * 1024;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub addr: SocketAddr,
    /// Required when `addr` is not loopback.
    pub token: Option<String>,
    pub max_upload: usize,
    pub ui_dir: Option<PathBuf>,
}

#[derive(Clone)]
struct AppState {
    engine: Arc<Engine>,
    ui_dir: Arc<PathBuf>,
    token: Option<Arc<str>>,
    max_upload: usize,
}

/// The router, for tests and for [`serve`].
pub fn router(engine: Arc<Engine>, opts: &ServeOptions) -> Router {
    let state = AppState {
        engine,
        ui_dir: Arc::new(opts.ui_dir.clone().unwrap_or_else(assets::find_ui_dir)),
        token: opts.token.as_deref().map(Arc::from),
        max_upload: opts.max_upload,
    };
    let api = Router::new()
        .route("/status", get(status))
        .route("/documents", get(documents))
        .route("/documents/{id}", delete(remove_document))
        .route("/settings", get(get_settings).put(put_settings))
        .route("/conversations", get(conversations))
        .route(
            "/conversations/{id}",
            get(conversation).delete(remove_conversation),
        )
        .route("/ask", post(ask))
        .route("/reembed", post(reembed))
        .route(
            "/upload",
            post(upload).layer(DefaultBodyLimit::max(opts.max_upload)),
        );
    Router::new()
        .nest("/api", api)
        .fallback(get(static_file))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Bind and serve until Ctrl-C. Prints the URL once listening.
pub async fn serve(engine: Arc<Engine>, opts: ServeOptions) -> crate::Result<()> {
    if !opts.addr.ip().is_loopback() && opts.token.as_deref().is_none_or(str::is_empty) {
        return Err(crate::Error::Invalid(format!(
            "refusing to serve on {} without an access token: pass --token (or bind 127.0.0.1)",
            opts.addr
        )));
    }
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .map_err(|e| crate::Error::Invalid(format!("cannot listen on {}: {e}", opts.addr)))?;
    let local = listener
        .local_addr()
        .map_err(|e| crate::Error::Invalid(e.to_string()))?;
    match &opts.token {
        Some(t) => println!("Quire is serving on http://{local}/?token={t}"),
        None => println!("Quire is serving on http://{local}/"),
    }
    let app = router(engine, &opts);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| crate::Error::Invalid(format!("server: {e}")))
}

/// Security headers on every response, and the access token where one is set.
async fn guard(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let mut set_cookie = None;
    if let Some(token) = &st.token {
        let query_token = req.uri().query().and_then(|q| {
            q.split('&')
                .find_map(|kv| kv.strip_prefix("token="))
                .map(str::to_owned)
        });
        let header_token = req
            .headers()
            .get("x-quire-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let cookie_token = req
            .headers()
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .find_map(|c| c.trim().strip_prefix("quire_token=").map(str::to_owned));
        let ok = [&query_token, &header_token, &cookie_token]
            .iter()
            .any(|t| t.as_deref() == Some(&**token));
        if !ok {
            return ApiError::new(StatusCode::UNAUTHORIZED, "an access token is required")
                .into_response();
        }
        if query_token.is_some() {
            set_cookie = Some(format!(
                "quire_token={token}; HttpOnly; SameSite=Strict; Path=/"
            ));
        }
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::SET_COOKIE, c);
    }
    resp
}

async fn static_file(State(st): State<AppState>, uri: axum::http::Uri) -> Response {
    assets::serve(&st.ui_dir, uri.path()).await
}

/// Run blocking engine work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(ApiError::from)
}

async fn status(State(st): State<AppState>) -> ApiResult<Json<engine::Status>> {
    let e = st.engine.clone();
    Ok(Json(blocking(move || Ok(e.status())).await?))
}

async fn documents(State(st): State<AppState>) -> ApiResult<Json<Vec<engine::DocumentView>>> {
    let e = st.engine.clone();
    Ok(Json(blocking(move || e.documents()).await?))
}

async fn remove_document(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    blocking(move || e.remove_document(id)).await?;
    Ok(Json(serde_json::json!({ "removed": id })))
}

async fn get_settings(State(st): State<AppState>) -> ApiResult<Json<engine::SettingsView>> {
    Ok(Json(st.engine.settings_view()))
}

async fn put_settings(
    State(st): State<AppState>,
    Json(s): Json<Settings>,
) -> ApiResult<Json<engine::SettingsView>> {
    let e = st.engine.clone();
    blocking(move || e.set_settings(s)).await?;
    Ok(Json(st.engine.settings_view()))
}

async fn conversations(State(st): State<AppState>) -> ApiResult<Json<Vec<ConversationInfo>>> {
    let e = st.engine.clone();
    Ok(Json(blocking(move || e.conversations()).await?))
}

async fn conversation(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Json<Conversation>> {
    let e = st.engine.clone();
    Ok(Json(blocking(move || e.conversation(id)).await?))
}

async fn remove_conversation(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    blocking(move || e.remove_conversation(id)).await?;
    Ok(Json(serde_json::json!({ "removed": id })))
}

fn sse_event<T: serde::Serialize>(ev: &T) -> Event {
    Event::default().json_data(ev).unwrap_or_else(|e| {
        Event::default().data(format!("{{\"type\":\"error\",\"message\":\"{e}\"}}"))
    })
}

/// Ask: the answer streams as server-sent events. A client that goes away cancels the
/// generation (the stream, and with it the ask handle, is dropped).
async fn ask(
    State(st): State<AppState>,
    Json(req): Json<AskRequest>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    st.engine.check_ask(&req)?;
    let handle = engine::spawn_ask(st.engine.clone(), req);
    let stream = futures_util::stream::unfold(handle, |mut h| async move {
        let ev = h.events.recv().await?;
        Some((Ok(sse_event(&ev)), h))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Upload PDFs (multipart, field `file`, any number): each is handed to the engine,
/// which keeps it in its uploads folder, then all are indexed, with progress streamed
/// as server-sent events.
async fn upload(
    State(st): State<AppState>,
    mut form: Multipart,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let mut paths = Vec::new();
    loop {
        let field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(upload_error(e, st.max_upload)),
        };
        let name = field.file_name().unwrap_or("upload.pdf").to_string();
        let bytes = field
            .bytes()
            .await
            .map_err(|e| upload_error(e, st.max_upload))?;
        let e = st.engine.clone();
        paths.push(blocking(move || e.save_upload(&name, &bytes)).await?);
    }
    if paths.is_empty() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "no file in the upload",
        ));
    }
    Ok(index_events(engine::spawn_index(st.engine.clone(), paths)))
}

/// Indexing (or re-embedding) progress as server-sent events; dropping the stream (the
/// client went away) drops the handle, which cancels the work.
fn index_events(handle: engine::IndexHandle) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = futures_util::stream::unfold(handle, |mut h| async move {
        let ev = h.events.recv().await?;
        Some((Ok(sse_event(&ev)), h))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// Re-embed the index with the embedding model the settings choose, with progress
/// streamed as server-sent events (the indexing events).
async fn reembed(
    State(st): State<AppState>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    Ok(index_events(engine::spawn_reembed(st.engine.clone())))
}

/// A multipart error as the user reads it: an upload over the limit says the limit.
fn upload_error(e: axum::extract::multipart::MultipartError, max: usize) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "upload rejected: the file is too large (the limit is {:.1} MiB)",
                max as f64 / (1024.0 * 1024.0)
            ),
        )
    } else {
        ApiError::new(e.status(), format!("upload rejected: {}", e.body_text()))
    }
}
