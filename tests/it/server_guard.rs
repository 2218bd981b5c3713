//! The local server answers only its own page, tested against a real `quire serve`
//! (the binary, with the access token it makes at start): a rebound `Host`, a
//! cross-site upload, a request the browser marks cross-site, `/v1` without the
//! bearer and `/api` without the cookie are each refused, and nothing of them reaches
//! the library; the page's own flow (the printed address, the cookie, uploading and
//! asking) works.

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command};

use serde_json::Value;

use crate::server::{head, multipart};
use crate::util;

/// `quire serve --port 0` over a fresh data directory, killed when dropped.
struct Serve {
    child: Child,
    addr: SocketAddr,
    token: String,
    _dir: tempfile::TempDir,
}

impl Serve {
    fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let (child, url) = util::spawn_serve(
            Command::new(util::quire_exe())
                .args(["serve", "--port", "0", "--data-dir"])
                .arg(dir.path())
                .env_remove("QUIRE_TOKEN"),
        );
        // "Quire is serving on http://127.0.0.1:PORT/?token=TOKEN"
        let (addr, token) = url
            .split_once("/?token=")
            .unwrap_or_else(|| panic!("no token in the printed address {url:?}"));
        assert!(token.len() >= 32, "a short token: {token:?}");
        let addr = addr.parse().expect("address");
        let token = token.to_string();
        Serve {
            child,
            addr,
            token,
            _dir: dir,
        }
    }

    fn cookie(&self) -> String {
        format!(
            "Cookie: quire_token_{}={}\r\n",
            self.addr.port(),
            self.token
        )
    }

    fn bearer(&self) -> String {
        format!("Authorization: Bearer {}\r\n", self.token)
    }

    fn own_origin(&self) -> String {
        format!("Origin: http://{}\r\n", self.addr)
    }

    /// The documents listed, asked the page's way.
    fn documents(&self) -> Vec<Value> {
        let (status, _, body) = request(
            self.addr,
            "GET",
            "/api/documents",
            &format!("Host: {}\r\n{}", self.addr, self.cookie()),
            None,
        );
        assert_eq!(status, 200, "{body}");
        let page: Value = serde_json::from_str(&body).expect("documents JSON");
        page["items"]
            .as_array()
            .expect("a page of documents")
            .clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request with exactly these header lines (`Host` included, each ending in
/// CRLF) and, for a body, its content type and bytes: status, headers, body (as text;
/// an event stream is read to its end).
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: Option<(&str, &[u8])>,
) -> (u16, Vec<(String, String)>, String) {
    let mut t = TcpStream::connect(addr).expect("connect");
    let mut head_text = format!("{method} {path} HTTP/1.1\r\n{headers}Connection: close\r\n");
    if let Some((ctype, bytes)) = body {
        head_text += &format!(
            "Content-Type: {ctype}\r\nContent-Length: {}\r\n",
            bytes.len()
        );
    }
    head_text += "\r\n";
    t.write_all(head_text.as_bytes()).expect("write");
    if let Some((_, bytes)) = body {
        // A refused request may be answered before the whole body is read.
        let _ = t.write_all(bytes);
    }
    let mut r = BufReader::new(t);
    let (status, headers) = head(&mut r);
    // The whole rest (a chunked body's sizes in between do not matter to these checks).
    let mut raw = Vec::new();
    let _ = r.read_to_end(&mut raw);
    (status, headers, String::from_utf8_lossy(&raw).into_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn pdf() -> (String, Vec<u8>) {
    let bytes = std::fs::read(util::shared().join("corpus/pdfs/wasysym.pdf")).expect("pdf");
    multipart("wasysym.pdf", &bytes)
}

#[test]
fn a_rebound_host_is_refused_on_every_route_even_with_the_token() {
    let s = Serve::start();
    for path in [
        "/",
        "/api/conversations",
        "/api/documents/1/file",
        "/v1/models",
    ] {
        let (status, _, body) = request(
            s.addr,
            "GET",
            path,
            &format!(
                "Host: evil.example:{}\r\n{}{}",
                s.addr.port(),
                s.cookie(),
                s.bearer()
            ),
            None,
        );
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("evil.example"), "{path}: {body}");
    }
    // The same request with its own address is answered.
    let (status, _, _) = request(
        s.addr,
        "GET",
        "/api/conversations",
        &format!("Host: localhost:{}\r\n{}", s.addr.port(), s.cookie()),
        None,
    );
    assert_eq!(status, 200);
}

#[test]
fn a_cross_site_upload_is_refused_and_indexes_nothing() {
    let _alone = util::heavy();
    let s = Serve::start();
    let (ctype, bytes) = pdf();
    // A form post from another site: no preflight, the cookie withheld by SameSite, but
    // even with it (a lax browser) the Origin refuses it.
    let (status, _, body) = request(
        s.addr,
        "POST",
        "/api/upload",
        &format!(
            "Host: {}\r\nOrigin: http://evil.example\r\n{}",
            s.addr,
            s.cookie()
        ),
        Some((&ctype, &bytes)),
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("another web site"), "{body}");
    // A page on another loopback port is another origin too.
    let (status, _, body) = request(
        s.addr,
        "POST",
        "/api/upload",
        &format!(
            "Host: {}\r\nOrigin: http://127.0.0.1:1\r\n{}",
            s.addr,
            s.cookie()
        ),
        Some((&ctype, &bytes)),
    );
    assert_eq!(status, 403, "{body}");
    assert!(s.documents().is_empty(), "a refused upload was indexed");
}

#[test]
fn what_the_browser_marks_cross_site_is_refused() {
    let s = Serve::start();
    for site in ["cross-site", "same-site"] {
        let (status, _, body) = request(
            s.addr,
            "GET",
            "/api/conversations",
            &format!(
                "Host: {}\r\nSec-Fetch-Site: {site}\r\n{}",
                s.addr,
                s.cookie()
            ),
            None,
        );
        assert_eq!(status, 403, "{site}: {body}");
        assert!(body.contains(site), "{body}");
    }
    let (status, _, _) = request(
        s.addr,
        "GET",
        "/api/conversations",
        &format!(
            "Host: {}\r\nSec-Fetch-Site: same-origin\r\n{}",
            s.addr,
            s.cookie()
        ),
        None,
    );
    assert_eq!(status, 200);
}

#[test]
fn v1_needs_the_bearer_and_api_needs_the_cookie_or_the_bearer() {
    let s = Serve::start();
    let host = format!("Host: {}\r\n", s.addr);
    // /v1 without the bearer (the cookie is the page's, not an API key's).
    for extra in [String::new(), s.cookie()] {
        let (status, _, body) =
            request(s.addr, "GET", "/v1/models", &(host.clone() + &extra), None);
        assert_eq!(status, 401, "{body}");
        assert!(body.contains("access token"), "{body}");
    }
    let (status, _, body) = request(
        s.addr,
        "GET",
        "/v1/models",
        &(host.clone() + &s.bearer()),
        None,
    );
    assert_eq!(status, 200, "{body}");
    // /api without the cookie, or with a wrong one.
    let wrong = format!("Cookie: quire_token_{}=not-the-token\r\n", s.addr.port());
    for extra in [String::new(), wrong] {
        let (status, _, body) =
            request(s.addr, "GET", "/api/status", &(host.clone() + &extra), None);
        assert_eq!(status, 401, "{body}");
    }
    // The token in the query opens only the page, not the API.
    let (status, _, _) = request(
        s.addr,
        "GET",
        &format!("/api/status?token={}", s.token),
        &host,
        None,
    );
    assert_eq!(status, 401);
    for extra in [s.cookie(), s.bearer()] {
        let (status, _, body) =
            request(s.addr, "GET", "/api/status", &(host.clone() + &extra), None);
        assert_eq!(status, 200, "{body}");
    }
    // A browser navigating without the token reads a page, not JSON.
    let (status, headers, body) = request(
        s.addr,
        "GET",
        "/",
        &(host + "Sec-Fetch-Mode: navigate\r\nAccept: text/html\r\n"),
        None,
    );
    assert_eq!(status, 401);
    assert!(header(&headers, "content-type").is_some_and(|v| v.starts_with("text/html")));
    assert!(body.contains("access token"), "{body}");
}

#[test]
fn the_pages_own_flow_takes_the_token_into_a_cookie_then_uploads_and_asks() {
    let _alone = util::heavy();
    let s = Serve::start();
    let host = format!("Host: {}\r\n", s.addr);
    // The printed address: the token moves into the cookie and leaves the address.
    let (status, headers, _) = request(
        s.addr,
        "GET",
        &format!("/?token={}", s.token),
        &(host.clone() + "Sec-Fetch-Site: none\r\nSec-Fetch-Mode: navigate\r\n"),
        None,
    );
    assert_eq!(status, 303);
    assert_eq!(header(&headers, "location"), Some("/"));
    let cookie = header(&headers, "set-cookie").expect("a cookie");
    assert!(
        cookie.starts_with(&format!("quire_token_{}={};", s.addr.port(), s.token)),
        "{cookie}"
    );
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attr), "{cookie} lacks {attr}");
    }
    // A wrong token in the address opens nothing.
    let (status, _, _) = request(s.addr, "GET", "/?token=wrong", &host, None);
    assert_eq!(status, 401);
    // With the cookie: the page, then an upload and an ask from it.
    let page = host.clone() + &s.cookie() + "Sec-Fetch-Site: same-origin\r\n";
    let (status, _, body) = request(s.addr, "GET", "/", &page, None);
    assert_eq!(status, 200);
    assert!(
        body.contains("<html") || body.contains("<!doctype"),
        "{body}"
    );
    let (ctype, bytes) = pdf();
    let from_page = page.clone() + &s.own_origin();
    let (status, _, body) = request(
        s.addr,
        "POST",
        "/api/upload",
        &from_page,
        Some((&ctype, &bytes)),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("finished"), "{body}");
    assert_eq!(s.documents().len(), 1);
    // no_text answers with the sources alone: the ask's whole path, no generation.
    let ask = serde_json::json!({ "question": "What is wasysym?", "mode": "no_text" }).to_string();
    let (status, headers, body) = request(
        s.addr,
        "POST",
        "/api/ask",
        &from_page,
        Some(("application/json", ask.as_bytes())),
    );
    assert_eq!(status, 200, "{body}");
    assert!(header(&headers, "content-type").is_some_and(|v| v.starts_with("text/event-stream")));
    assert!(body.contains("\"sources\""), "{body}");
    assert!(body.contains("wasysym"), "{body}");
}
