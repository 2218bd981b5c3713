//! `quire serve`: the HTTP + server-sent-events adapter over [`Engine`] that also
//! serves `ui/` to a browser. It forwards requests and events; it holds no logic.
//!
//! It binds loopback by default and answers only its own page: the `Host`, `Origin`
//! and access-token checks are [`guard`]'s. `quire serve` makes a random token at
//! start unless one is given (`--token`) or refused (`--no-token`, loopback only).

mod assets;
mod collections;
mod error;
mod folders;
mod guard;
mod library;
mod openai;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Multipart, Path as UrlPath, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use futures_util::stream::Stream;

pub use error::{ApiError, ApiResult};
pub use guard::random_token;
use quire::engine::{self, AskRequest, Conversation, ConversationInfo, Engine, Settings};

/// The Content-Security-Policy of every response: nothing but our own scripts and
/// styles, no inline code, no remote sources. `worker-src 'self'`: the PDF viewer
/// (PDF.js) parses documents in a module worker loaded from our own origin, and only
/// from there (`script-src` would allow the same; named, it stays so if that changes).
pub const CSP: &str = "default-src 'self'; script-src 'self'; worker-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Largest upload accepted, in bytes.
pub const DEFAULT_MAX_UPLOAD: usize = 100 * 1024 * 1024;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub addr: SocketAddr,
    /// The access token: `/api` takes it as the page's cookie or a bearer, `/v1` as a
    /// bearer. `None` serves without one, which only loopback allows.
    pub token: Option<String>,
    pub max_upload: usize,
    pub ui_dir: Option<PathBuf>,
    /// Host names answered besides loopback's (`--allow-host`): the name a reverse
    /// proxy forwards, a name of the machine's.
    pub allowed_hosts: Vec<String>,
}

#[derive(Clone)]
struct AppState {
    engine: Arc<Engine>,
    ui_dir: Arc<PathBuf>,
    token: Option<Arc<str>>,
    max_upload: usize,
    /// The address bound (a `Host` of that address is answered).
    bound: IpAddr,
    allowed_hosts: Arc<[String]>,
    /// The token's cookie, named for the port: two servers on one host keep theirs.
    cookie: Arc<str>,
}

/// The router, for tests and for [`serve`].
pub fn router(engine: Arc<Engine>, opts: &ServeOptions) -> Router {
    let state = AppState {
        engine,
        ui_dir: Arc::new(opts.ui_dir.clone().unwrap_or_else(assets::find_ui_dir)),
        token: opts.token.as_deref().map(Arc::from),
        max_upload: opts.max_upload,
        bound: opts.addr.ip(),
        allowed_hosts: opts.allowed_hosts.clone().into(),
        cookie: format!("quire_token_{}", opts.addr.port()).into(),
    };
    let api = Router::new()
        .route("/status", get(status))
        .route("/documents", get(library::page))
        .route("/documents/summary", get(library::summary))
        .route("/documents/{id}/retry", post(library::retry))
        .route("/documents/{id}/ignore", post(library::ignore))
        .route("/documents/{id}", delete(remove_document))
        .route("/documents/{id}/file", get(document_file))
        .route("/settings", get(get_settings).put(put_settings))
        .route("/modes", get(modes))
        .route(
            "/collections",
            get(collections::list).post(collections::create),
        )
        .route(
            "/collections/{id}",
            axum::routing::put(collections::update).delete(collections::remove),
        )
        .route("/folders", get(folders::list).post(folders::add))
        .route("/folders/{id}", delete(folders::remove))
        .route("/folders/{id}/rescan", post(folders::rescan))
        .route("/conversations", get(conversations))
        .route(
            "/conversations/{id}",
            get(conversation).delete(remove_conversation),
        )
        .route(
            "/conversations/{id}/messages/{message}",
            delete(delete_message),
        )
        .route("/conversations/{id}/export", get(export_conversation))
        .route("/ask", post(ask))
        .route("/reembed", post(reembed))
        .route("/queue", get(queue))
        .route("/queue/page", get(library::queue_page))
        .route("/queue/cancel", post(cancel_queued))
        .route(
            "/upload",
            post(upload).layer(DefaultBodyLimit::max(opts.max_upload)),
        );
    Router::new()
        .nest("/api", api)
        .nest("/v1", openai::routes())
        .fallback(get(static_file))
        .layer(middleware::from_fn_with_state(state.clone(), guard::guard))
        .with_state(state)
}

/// Bind and serve until Ctrl-C. Prints the URL once listening.
pub async fn serve(engine: Arc<Engine>, mut opts: ServeOptions) -> quire::Result<()> {
    if opts.token.as_deref() == Some("") {
        return Err(quire::Error::Invalid(
            "the access token is empty: pass a token, or --no-token on loopback".into(),
        ));
    }
    if !opts.addr.ip().is_loopback() && opts.token.is_none() {
        return Err(quire::Error::Invalid(format!(
            "refusing to serve on {} without an access token: drop --no-token, pass \
             --token (or bind 127.0.0.1)",
            opts.addr
        )));
    }
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .map_err(|e| quire::Error::Invalid(format!("cannot listen on {}: {e}", opts.addr)))?;
    let local = listener
        .local_addr()
        .map_err(|e| quire::Error::Invalid(e.to_string()))?;
    // The cookie is named for the port actually bound (`--port 0` picks one).
    opts.addr = local;
    match &opts.token {
        Some(t) => println!(
            "Quire is serving on http://{local}/?token={t}\n  (open that address: it \
             carries the access token; API clients send it as `Authorization: Bearer`)"
        ),
        None => println!(
            "Quire is serving on http://{local}/\n  (no access token: any program on this \
             machine can read and change the library)"
        ),
    }
    let app = router(engine, &opts);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| quire::Error::Invalid(format!("server: {e}")))
}

async fn static_file(State(st): State<AppState>, uri: axum::http::Uri) -> Response {
    assets::serve(&st.ui_dir, uri.path()).await
}

/// Run blocking engine work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> quire::Result<T> + Send + 'static,
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

/// The indexing queue with each file's progress and the ETA of the whole.
async fn queue(State(st): State<AppState>) -> ApiResult<Json<engine::QueueView>> {
    let e = st.engine.clone();
    Ok(Json(blocking(move || e.queue()).await?))
}

/// `{"id": N}` cancels one queued or running file; `{}` the whole queue.
#[derive(serde::Deserialize)]
struct CancelQueued {
    id: Option<i64>,
}

async fn cancel_queued(
    State(st): State<AppState>,
    Json(body): Json<CancelQueued>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    let n = blocking(move || e.cancel_queued(body.id)).await?;
    Ok(Json(serde_json::json!({ "cancelled": n })))
}

async fn remove_document(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    blocking(move || e.remove_document(id)).await?;
    Ok(Json(serde_json::json!({ "removed": id })))
}

/// A document's own PDF, for the viewer: the engine finds it by id and checks that it
/// is the file that was indexed; here, HTTP only: the whole file or one byte range
/// (RFC 9110 §14), streamed from that checked file off the async threads.
async fn document_file(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let e = st.engine.clone();
    let doc = blocking(move || e.document_file(id)).await?;
    let (len, name) = (doc.len, doc.file_name.clone());
    let ranges = headers.get_all(header::RANGE).iter().collect::<Vec<_>>();
    // A Range that comes with If-Range is served whole: no validator is sent, so none
    // can match (§13.1.5).
    let range = match ranges.as_slice() {
        [r] if !headers.contains_key(header::IF_RANGE) => {
            r.to_str().map_or(ByteRange::Whole, |r| byte_range(r, len))
        }
        _ => ByteRange::Whole,
    };
    let (status, start, end) = match range {
        ByteRange::Whole => (StatusCode::OK, 0, len),
        ByteRange::Part(a, b) => (StatusCode::PARTIAL_CONTENT, a, b + 1),
        ByteRange::Unsatisfiable => {
            let mut resp = ApiError::new(
                StatusCode::RANGE_NOT_SATISFIABLE,
                format!("range not satisfiable: the file has {len} bytes"),
            )
            .into_response();
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
                resp.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return Ok(resp);
        }
    };
    let body = futures_util::stream::try_unfold((doc, start), move |(mut doc, at)| async move {
        if at >= end {
            return Ok(None);
        }
        let n = (end - at).min(FILE_CHUNK);
        let (doc, bytes) = tokio::task::spawn_blocking(move || {
            let bytes = doc.read_range(at, n as usize);
            (doc, bytes)
        })
        .await
        .map_err(std::io::Error::other)?;
        let bytes = bytes.map_err(std::io::Error::other)?;
        Ok::<_, std::io::Error>(Some((Bytes::from(bytes), (doc, at + n))))
    });
    let mut resp = Response::new(Body::from_stream(body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/pdf"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if status == StatusCode::PARTIAL_CONTENT {
        if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{len}", end - 1)) {
            h.insert(header::CONTENT_RANGE, v);
        }
    }
    if let Ok(v) = HeaderValue::from_str(&inline_disposition(&name)) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

/// Bytes read from a file per step of a response body.
const FILE_CHUNK: u64 = 64 * 1024;

/// What to answer for one `Range` header value, for a representation of `len` bytes.
#[derive(Debug, PartialEq, Eq)]
enum ByteRange {
    /// The whole file: the Range is malformed, in another unit, or asks for several
    /// ranges, all of which a server may ignore (RFC 9110 §14.2).
    Whole,
    /// Bytes `start..=end`.
    Part(u64, u64),
    /// No byte of the file is in it: 416.
    Unsatisfiable,
}

/// Parse `bytes=a-b`, `bytes=a-` or `bytes=-n` (RFC 9110 §14.1.2).
fn byte_range(value: &str, len: u64) -> ByteRange {
    let Some((unit, spec)) = value.trim().split_once('=') else {
        return ByteRange::Whole;
    };
    if !unit.eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return ByteRange::Whole;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return ByteRange::Whole;
    };
    // Digits only: `parse` alone would take `+5`.
    let num = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    if first.is_empty() {
        return match num(last) {
            None => ByteRange::Whole,
            Some(0) => ByteRange::Unsatisfiable,
            Some(_) if len == 0 => ByteRange::Unsatisfiable,
            Some(n) => ByteRange::Part(len.saturating_sub(n), len - 1),
        };
    }
    let Some(a) = num(first) else {
        return ByteRange::Whole;
    };
    let b = match (last.is_empty(), num(last)) {
        (true, _) => None,
        (false, Some(b)) if b >= a => Some(b),
        (false, _) => return ByteRange::Whole,
    };
    if a >= len {
        return ByteRange::Unsatisfiable;
    }
    ByteRange::Part(a, b.map_or(len - 1, |b| b.min(len - 1)))
}

/// `inline` with the file name percent-encoded as UTF-8 (RFC 6266, RFC 8187): no byte
/// of the name reaches the header unescaped.
fn inline_disposition(name: &str) -> String {
    let mut v = String::from("inline; filename*=UTF-8''");
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            v.push(char::from(b));
        } else {
            v.push_str(&format!("%{b:02X}"));
        }
    }
    v
}

async fn modes(State(st): State<AppState>) -> Json<Vec<engine::ModeInfo>> {
    Json(st.engine.modes())
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

async fn delete_message(
    State(st): State<AppState>,
    UrlPath((id, message)): UrlPath<(i64, i64)>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = st.engine.clone();
    blocking(move || e.delete_message(id, message)).await?;
    Ok(Json(serde_json::json!({ "removed": message })))
}

/// The conversation as a Markdown file to save.
async fn export_conversation(
    State(st): State<AppState>,
    UrlPath(id): UrlPath<i64>,
) -> ApiResult<Response> {
    let e = st.engine.clone();
    let md = blocking(move || e.export_conversation(id)).await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                "text/markdown; charset=utf-8".to_string(),
            ),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"quire-conversation-{id}.md\""),
            ),
        ],
        md,
    )
        .into_response())
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

#[cfg(test)]
mod tests {
    use super::{byte_range, inline_disposition, ByteRange::*};

    #[test]
    fn byte_ranges_as_rfc_9110_reads_them() {
        assert_eq!(byte_range("bytes=0-9", 100), Part(0, 9));
        assert_eq!(byte_range("bytes=90-", 100), Part(90, 99));
        assert_eq!(byte_range("bytes=-5", 100), Part(95, 99));
        assert_eq!(byte_range("bytes=-500", 100), Part(0, 99));
        assert_eq!(byte_range("bytes=50-5000", 100), Part(50, 99));
        assert_eq!(byte_range("Bytes=99-99", 100), Part(99, 99));
        assert_eq!(byte_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(byte_range("bytes=100-200", 100), Unsatisfiable);
        assert_eq!(byte_range("bytes=-0", 100), Unsatisfiable);
        for ignored in [
            "bytes=0-1,5-9",
            "bytes=9-0",
            "bytes=-",
            "bytes=a-b",
            "bytes=+1-2",
            "bytes= 0-9",
            "bytes=0-99999999999999999999999",
            "items=0-9",
            "0-9",
            "",
        ] {
            assert_eq!(byte_range(ignored, 100), Whole, "{ignored:?}");
        }
    }

    #[test]
    fn file_names_are_percent_encoded_in_the_disposition() {
        assert_eq!(
            inline_disposition("a b\"\r\n;é.pdf"),
            "inline; filename*=UTF-8''a%20b%22%0D%0A%3B%C3%A9.pdf"
        );
    }
}
