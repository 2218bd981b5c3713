//! `quire serve` over loopback, with the real default models: answers stream as
//! server-sent events, a client that goes away cancels its ask and frees the model,
//! concurrent asks are both answered, bad uploads are refused with clear errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use quire::engine::{Engine, EngineConfig};
use quire::llm::Cancel;
use quire_cli::server::{router, ServeOptions};
use serde_json::Value;

use crate::util;

pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    pub(crate) engine: Arc<Engine>,
    _rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn start(max_upload: usize) -> Server {
    start_with(max_upload, Ok)
}

/// A server over a fresh data directory, its engine first passed through `build`
/// (e.g. to register a synthesizer).
pub(crate) fn start_with(
    max_upload: usize,
    build: impl FnOnce(Engine) -> quire::Result<Engine>,
) -> Server {
    start_on(None, max_upload, build)
}

/// [`start_with`], the index in `store` (a `postgres://` URL) when given.
pub(crate) fn start_on(
    store: Option<&str>,
    max_upload: usize,
    build: impl FnOnce(Engine) -> quire::Result<Engine>,
) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Arc::new(
        build(
            Engine::open(EngineConfig {
                data_dir: dir.path().to_path_buf(),
                store: store.map(str::to_string),
                ..EngineConfig::default()
            })
            .expect("engine"),
        )
        .expect("engine"),
    );
    let mut s = engine.settings();
    s.max_tokens = 24;
    engine.set_settings(s).expect("settings");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let opts = ServeOptions {
        addr: "127.0.0.1:0".parse().expect("addr"),
        token: None,
        max_upload,
        ui_dir: Some(util::repo().join("ui")),
        allowed_hosts: Vec::new(),
    };
    let app = router(engine.clone(), &opts);
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    rt.spawn(async move { axum::serve(listener, app).await });
    Server {
        addr,
        engine,
        _rt: rt,
        _dir: dir,
    }
}

/// A server whose index holds one corpus PDF.
fn start_indexed() -> Server {
    index_one(start(quire_cli::server::DEFAULT_MAX_UPLOAD))
}

/// `s` with one corpus PDF indexed.
pub(crate) fn index_one(s: Server) -> Server {
    let pdf = util::shared().join("corpus/pdfs/wasysym.pdf");
    let mut failed = Vec::new();
    s.engine
        .index(&[pdf], &Cancel::new(), &mut |ev| {
            if let quire::engine::IndexEvent::FileFailed { reason, .. } = ev {
                failed.push(reason);
            }
            true
        })
        .expect("index");
    assert!(failed.is_empty(), "{failed:?}");
    s
}

pub(crate) fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    ctype: &str,
    body: &[u8],
) -> TcpStream {
    let mut t = TcpStream::connect(addr).expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {ctype}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    t.write_all(head.as_bytes()).expect("write");
    // A refused upload may be answered before the whole body is read.
    let _ = t.write_all(body);
    t
}

/// Status line and headers, lower-cased names.
pub(crate) fn head(r: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    r.read_line(&mut line).expect("status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).expect("header");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    (status, headers)
}

pub(crate) fn body(r: &mut BufReader<TcpStream>, headers: &[(String, String)]) -> String {
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let mut out = Vec::new();
    if chunked {
        while let Some(c) = chunk(r) {
            out.extend(c);
        }
    } else {
        r.read_to_end(&mut out).expect("body");
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One chunk of a chunked body; `None` at the end.
fn chunk(r: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let n = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
    if n == 0 {
        return None;
    }
    let mut buf = vec![0; n + 2];
    r.read_exact(&mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// Server-sent events, decoded as they arrive. The bytes are kept until an event is
/// whole, so a character cut by a chunk boundary is decoded whole (a lossy decode
/// would show a cut character in an event as U+FFFD).
pub(crate) struct Sse {
    r: BufReader<TcpStream>,
    buf: Vec<u8>,
}

impl Sse {
    fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.buf.drain(..i + 2).collect();
                let block = String::from_utf8(raw).expect("an event is UTF-8");
                let data: String = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue; // keep-alive comment
                }
                return Some(serde_json::from_str(&data).expect("event JSON"));
            }
            let c = chunk(&mut self.r)?;
            self.buf.extend_from_slice(&c);
        }
    }
}

/// `POST /api/ask` with this body; the stream, once its head says 200.
pub(crate) fn ask_json(addr: SocketAddr, body: &Value) -> Sse {
    let t = send(
        addr,
        "POST",
        "/api/ask",
        "application/json",
        body.to_string().as_bytes(),
    );
    let mut r = BufReader::new(t);
    let (status, _) = head(&mut r);
    assert_eq!(status, 200);
    Sse { r, buf: Vec::new() }
}

pub(crate) fn ask(addr: SocketAddr, question: &str, mode: &str) -> Sse {
    let body = serde_json::json!({ "question": question, "mode": mode }).to_string();
    let t = send(
        addr,
        "POST",
        "/api/ask",
        "application/json",
        body.as_bytes(),
    );
    let mut r = BufReader::new(t);
    let (status, headers) = head(&mut r);
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(k, v)| k == "content-type" && v.starts_with("text/event-stream")));
    Sse { r, buf: Vec::new() }
}

/// Upload `name` with `content` to `/api/upload`: the indexing events, to the end of
/// the batch.
pub(crate) fn upload(addr: SocketAddr, name: &str, content: &[u8]) -> Vec<Value> {
    let (ctype, bytes) = multipart(name, content);
    let mut r = BufReader::new(send(addr, "POST", "/api/upload", &ctype, &bytes));
    let (status, headers) = head(&mut r);
    if status != 200 {
        panic!("upload: {status} {}", body(&mut r, &headers));
    }
    let mut sse = Sse { r, buf: Vec::new() };
    let mut out = Vec::new();
    while let Some(ev) = sse.next() {
        let end = kind(&ev) == "finished";
        out.push(ev);
        if end {
            break;
        }
    }
    out
}

pub(crate) fn kind(ev: &Value) -> &str {
    ev["type"].as_str().unwrap_or("")
}

/// Events until `done` (or an error), all of them.
pub(crate) fn until_done(sse: &mut Sse) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(ev) = sse.next() {
        let k = kind(&ev).to_string();
        out.push(ev);
        if k == "done" || k == "error" || k == "cancelled" {
            break;
        }
    }
    out
}

pub(crate) const QUESTION: &str = "Which symbols does the wasysym package provide?";

#[test]
fn answers_stream_as_server_sent_events() {
    let s = start_indexed();
    let mut sse = ask(s.addr, QUESTION, "compact");
    let events = until_done(&mut sse);
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(kinds.first(), Some(&"started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"done"), "{events:?}");
    let sources = events
        .iter()
        .find(|e| kind(e) == "sources")
        .expect("sources event");
    assert!(sources["sources"]
        .as_array()
        .is_some_and(|a| !a.is_empty() && a.iter().all(|s| s["file"] == "wasysym.pdf")));
    let tokens: String = events
        .iter()
        .filter(|e| kind(e) == "token" && e["final"] == true)
        .filter_map(|e| e["text"].as_str())
        .collect();
    let done = events.last().expect("done");
    assert!(
        events.iter().filter(|e| kind(e) == "token").count() > 1,
        "tokens did not stream"
    );
    assert_eq!(tokens.trim(), done["answer"].as_str().unwrap_or("").trim());
    assert!(done["stats"]["output_tokens"].as_u64().unwrap_or(0) > 0);
}

#[test]
fn a_client_that_goes_away_cancels_its_ask_and_frees_the_model() {
    let s = start_indexed();
    let mut first = ask(s.addr, QUESTION, "refine");
    let started = first.next().expect("started");
    let conversation = started["conversation_id"]
        .as_i64()
        .expect("conversation id");
    // Wait for the first generated token, then hang up.
    while let Some(ev) = first.next() {
        assert_ne!(kind(&ev), "done", "the ask ended before a token was seen");
        if kind(&ev) == "token" {
            break;
        }
    }
    drop(first);
    // The model is free again: the next ask is answered.
    let mut second = ask(s.addr, QUESTION, "no_text");
    let events = until_done(&mut second);
    assert_eq!(events.last().map(kind), Some("done"), "{events:?}");
    let mut second = ask(s.addr, QUESTION, "compact");
    let events = until_done(&mut second);
    assert_eq!(events.last().map(kind), Some("done"), "{events:?}");
    // The stopped exchange is kept, marked as stopped.
    let conv = s.engine.conversation(conversation).expect("conversation");
    let last = conv.messages.last().expect("messages");
    assert_eq!(last.role, "assistant");
    assert_eq!(
        last.extra.get("status").and_then(Value::as_str),
        Some("stopped")
    );
}

#[test]
fn two_concurrent_asks_are_both_answered() {
    let s = start_indexed();
    let addr = s.addr;
    let a = std::thread::spawn(move || until_done(&mut ask(addr, QUESTION, "compact")));
    let b = std::thread::spawn(move || {
        until_done(&mut ask(
            addr,
            "What is the wasysym font?",
            "simple_summarize",
        ))
    });
    for events in [a.join().expect("a"), b.join().expect("b")] {
        let done = events.last().expect("events");
        assert_eq!(kind(done), "done", "{events:?}");
        assert!(!done["answer"].as_str().unwrap_or("").trim().is_empty());
    }
}

pub(crate) fn multipart(name: &str, content: &[u8]) -> (String, Vec<u8>) {
    let boundary = "quire-test-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
         Content-Type: application/pdf\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[test]
fn a_non_pdf_upload_is_refused_with_a_clear_error() {
    let s = start(quire_cli::server::DEFAULT_MAX_UPLOAD);
    let (ctype, bytes) = multipart("notes.pdf", b"just some text, not a PDF at all");
    let mut r = BufReader::new(send(s.addr, "POST", "/api/upload", &ctype, &bytes));
    let (status, headers) = head(&mut r);
    let text = body(&mut r, &headers);
    assert_eq!(status, 415, "{text}");
    assert!(text.contains("notes.pdf is not a PDF"), "{text}");
    assert!(s.engine.documents().expect("documents").is_empty());
}

#[test]
fn an_oversized_upload_is_refused_with_a_clear_error() {
    let s = start(64 * 1024);
    let mut pdf = b"%PDF-1.4\n".to_vec();
    pdf.resize(200 * 1024, b' ');
    let (ctype, bytes) = multipart("big.pdf", &pdf);
    let mut r = BufReader::new(send(s.addr, "POST", "/api/upload", &ctype, &bytes));
    let (status, headers) = head(&mut r);
    let text = body(&mut r, &headers);
    assert_eq!(status, 413, "{text}");
    assert!(
        text.contains("too large") || text.contains("limit"),
        "{text}"
    );
    assert!(s.engine.documents().expect("documents").is_empty());
}

/// GET `path` with `extra` header lines (each ending in CRLF): status, headers, body.
pub(crate) fn get(
    addr: SocketAddr,
    path: &str,
    extra: &str,
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut t = TcpStream::connect(addr).expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n");
    t.write_all(req.as_bytes()).expect("write");
    let mut r = BufReader::new(t);
    let (status, headers) = head(&mut r);
    let mut out = Vec::new();
    if header(&headers, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        while let Some(c) = chunk(&mut r) {
            out.extend(c);
        }
    } else {
        r.read_to_end(&mut out).expect("body");
    }
    (status, headers, out)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The `error` of a JSON error body.
fn error_message(body: &[u8]) -> String {
    let v: Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)));
    v["error"].as_str().expect("error field").to_string()
}

#[test]
fn a_documents_pdf_is_served_whole_or_in_ranges_and_only_while_unchanged() {
    let s = start(quire_cli::server::DEFAULT_MAX_UPLOAD);
    let folder = tempfile::tempdir().expect("tempdir");
    let path = folder.path().join("wasysym copy é.pdf");
    std::fs::copy(util::shared().join("corpus/pdfs/wasysym.pdf"), &path).expect("copy");
    // Older than the engine's window for racy timestamps: its check is remembered.
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(hour_ago))
        .expect("set mtime");
    let pdf = std::fs::read(&path).expect("read");
    let len = pdf.len();
    let mut id = None;
    s.engine
        .index(std::slice::from_ref(&path), &Cancel::new(), &mut |ev| {
            if let quire::engine::IndexEvent::FileDone { doc_id, .. } = ev {
                id = Some(doc_id);
            }
            true
        })
        .expect("index");
    let id = id.expect("indexed");
    let url = format!("/api/documents/{id}/file");

    // Whole, twice (the second from the remembered check), in several body chunks.
    for _ in 0..2 {
        let (status, h, body) = get(s.addr, &url, "");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        assert!(
            body == pdf,
            "the body is not the file ({} bytes)",
            body.len()
        );
        assert_eq!(header(&h, "content-type"), Some("application/pdf"));
        assert_eq!(header(&h, "content-length"), Some(len.to_string().as_str()));
        assert_eq!(header(&h, "accept-ranges"), Some("bytes"));
        assert_eq!(header(&h, "cache-control"), Some("no-store"));
        assert_eq!(
            header(&h, "content-disposition"),
            Some("inline; filename*=UTF-8''wasysym%20copy%20%C3%A9.pdf")
        );
        assert!(
            header(&h, "content-security-policy").is_some_and(|v| v.contains("worker-src 'self'"))
        );
    }

    // One range: the first ten bytes, the last five, from an offset to the end.
    let (status, h, body) = get(s.addr, &url, "Range: bytes=0-9\r\n");
    assert_eq!(status, 206);
    assert_eq!(body, &pdf[..10]);
    assert_eq!(
        header(&h, "content-range"),
        Some(format!("bytes 0-9/{len}").as_str())
    );
    assert_eq!(header(&h, "content-length"), Some("10"));
    let (status, h, body) = get(s.addr, &url, "Range: bytes=-5\r\n");
    assert_eq!(status, 206);
    assert_eq!(body, &pdf[len - 5..]);
    assert_eq!(
        header(&h, "content-range"),
        Some(format!("bytes {}-{}/{len}", len - 5, len - 1).as_str())
    );
    let (status, _, body) = get(s.addr, &url, "Range: bytes=70000-\r\n");
    assert_eq!(status, 206);
    assert!(
        body == pdf[70000..],
        "bytes=70000- gave {} bytes",
        body.len()
    );

    // Past the end: 416, saying the length. Several ranges, or nonsense: the whole file.
    let (status, h, body) = get(s.addr, &url, &format!("Range: bytes={len}-\r\n"));
    assert_eq!(status, 416);
    assert_eq!(
        header(&h, "content-range"),
        Some(format!("bytes */{len}").as_str())
    );
    assert!(error_message(&body).contains("not satisfiable"));
    for ignored in ["bytes=0-1,5-9", "bytes=9-0", "pages=1-2"] {
        let (status, _, body) = get(s.addr, &url, &format!("Range: {ignored}\r\n"));
        assert_eq!(status, 200, "{ignored}");
        assert!(body == pdf, "{ignored}");
    }

    // No such document; no number at all.
    let (status, h, body) = get(s.addr, &format!("/api/documents/{}/file", id + 100), "");
    assert_eq!(status, 404);
    assert_eq!(header(&h, "content-type"), Some("application/json"));
    assert_eq!(
        error_message(&body),
        format!("not found: document {}", id + 100)
    );
    let (status, _, _) = get(s.addr, "/api/documents/..%2F..%2Fetc%2Fpasswd/file", "");
    assert!((400..500).contains(&status), "{status}");

    // Other bytes at the same path (same length): refused, never served.
    let mut other = pdf.clone();
    other[len / 2] ^= 0x55;
    std::fs::write(&path, &other).expect("write");
    for range in ["", "Range: bytes=0-9\r\n"] {
        let (status, _, body) = get(s.addr, &url, range);
        assert_eq!(status, 409, "{range:?}");
        assert!(
            body != other && !body.starts_with(b"%PDF"),
            "served the changed file"
        );
        let msg = error_message(&body);
        assert!(
            msg.contains("\"wasysym copy é.pdf\"")
                && msg.contains("has changed since it was indexed"),
            "{msg}"
        );
    }

    // Moved away: not found, saying so.
    std::fs::write(&path, &pdf).expect("write back");
    assert_eq!(get(s.addr, &url, "").0, 200);
    std::fs::rename(&path, folder.path().join("elsewhere.pdf")).expect("move");
    let (status, _, body) = get(s.addr, &url, "");
    assert_eq!(status, 404);
    let msg = error_message(&body);
    assert!(
        msg.contains("is no longer at") && msg.contains("moved or deleted"),
        "{msg}"
    );
}

#[test]
fn a_chinese_answer_streams_in_whole_characters() {
    // The default model answers Chinese questions in Chinese.
    let s = start(quire_cli::server::DEFAULT_MAX_UPLOAD);
    let pdf = util::shared().join("corpus/pdfs/ctex-faq.pdf");
    s.engine
        .index(&[pdf], &Cancel::new(), &mut |_| true)
        .expect("index");
    let q = "有一大段内容暂时不想让 LaTeX 编译，有没有办法一次性把整段屏蔽掉？";
    let mut sse = ask(s.addr, q, "compact");
    let events = until_done(&mut sse);
    let done = events.last().expect("done");
    assert_eq!(kind(done), "done", "{events:?}");
    let tokens: Vec<&str> = events
        .iter()
        .filter(|e| kind(e) == "token" && e["final"] == true)
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(tokens.len() > 1, "tokens did not stream");
    for t in &tokens {
        assert!(
            !t.contains('\u{FFFD}'),
            "a token carries a cut character: {t:?}"
        );
    }
    let answer = done["answer"].as_str().unwrap_or("");
    assert_eq!(tokens.concat().trim(), answer.trim());
    let han = answer.chars().filter(|c| quire::text::is_cjk(*c)).count();
    assert!(han >= 4, "not answered in Chinese: {answer}");
}

/// `method path` with a JSON body: status and parsed JSON body.
pub(crate) fn json_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    json: &Value,
) -> (u16, Value) {
    let t = send(
        addr,
        method,
        path,
        "application/json",
        json.to_string().as_bytes(),
    );
    let mut r = BufReader::new(t);
    let (status, headers) = head(&mut r);
    let text = body(&mut r, &headers);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn collections_are_kept_over_http_and_a_question_s_scope_is_honoured() {
    let s = start_indexed();
    let doc = s.engine.documents().expect("documents")[0].id;
    let (status, made) = json_request(
        s.addr,
        "POST",
        "/api/collections",
        &serde_json::json!({ "name": "Symbols", "documents": [doc] }),
    );
    assert_eq!(status, 200, "{made}");
    let id = made["id"].as_i64().expect("id");
    assert_eq!(made["documents"], serde_json::json!([doc]));
    // Refused with a message that says why.
    let (status, e) = json_request(
        s.addr,
        "POST",
        "/api/collections",
        &serde_json::json!({ "name": " " }),
    );
    assert_eq!(status, 400);
    assert!(
        e["error"].as_str().unwrap_or("").contains("needs a name"),
        "{e}"
    );
    let (status, e) = json_request(
        s.addr,
        "PUT",
        &format!("/api/collections/{id}"),
        &serde_json::json!({ "documents": [doc, 999] }),
    );
    assert_eq!(status, 404, "{e}");
    let (status, renamed) = json_request(
        s.addr,
        "PUT",
        &format!("/api/collections/{id}"),
        &serde_json::json!({ "name": "Wasy" }),
    );
    assert_eq!(status, 200);
    assert_eq!(
        (renamed["name"].as_str(), renamed["documents"].clone()),
        (Some("Wasy"), serde_json::json!([doc]))
    );
    let (_, _, list) = get(s.addr, "/api/collections", "");
    let list: Value = serde_json::from_slice(&list).expect("json");
    assert_eq!(list[0]["name"], "Wasy");

    // The ask's scope field.
    let body = serde_json::json!({
        "question": QUESTION, "mode": "no_text", "scope": { "kind": "collection", "id": id }
    });
    let t = send(
        s.addr,
        "POST",
        "/api/ask",
        "application/json",
        body.to_string().as_bytes(),
    );
    let mut r = BufReader::new(t);
    let (status, _) = head(&mut r);
    assert_eq!(status, 200);
    let events = until_done(&mut Sse { r, buf: Vec::new() });
    let sources = events
        .iter()
        .find(|e| kind(e) == "sources")
        .expect("sources");
    assert_eq!(sources["scope"], "Collection \"Wasy\"");
    assert_eq!(sources["relevance"]["covered"], true, "{sources}");
    // A scope naming nothing is refused before the stream starts.
    let (status, e) = json_request(
        s.addr,
        "POST",
        "/api/ask",
        &serde_json::json!({ "question": QUESTION, "scope": { "kind": "documents", "ids": [] } }),
    );
    assert_eq!(status, 400, "{e}");
    let t = send(
        s.addr,
        "DELETE",
        &format!("/api/collections/{id}"),
        "application/json",
        b"",
    );
    let mut r = BufReader::new(t);
    assert_eq!(head(&mut r).0, 200);
    let (_, _, list) = get(s.addr, "/api/collections", "");
    assert_eq!(
        serde_json::from_slice::<Value>(&list).expect("json"),
        serde_json::json!([])
    );
}
