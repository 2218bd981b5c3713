//! Who may talk to the server: every request passes here before any route.
//!
//! The server is on loopback for one person's browser, and other web sites run in that
//! browser too. What a hostile page can try, and what stops it:
//!
//! - **DNS rebinding**: a domain of the attacker's, re-pointed at 127.0.0.1, makes its
//!   page same-origin with the server, so CORS no longer applies. Its requests carry
//!   `Host: evil.example`: only loopback names (`localhost`, `127.0.0.1`, `[::1]`, with
//!   any port), the address bound and the hosts the person configured
//!   (`--allow-host`) are answered; anything else gets 403.
//! - **Cross-site requests**: a form post (an upload is one) needs no CORS preflight.
//!   A request to `/api` or `/v1`, and any request that changes state, is refused when
//!   its `Origin` is not the server's own or the browser marks it `Sec-Fetch-Site:
//!   cross-site` or `same-site` (a page on another port of the same host is same-site,
//!   not same-origin). Clients that are not browsers send neither header.
//! - **The access token**, on loopback too (`quire serve` makes one at start): `/api`
//!   takes the page's cookie or a bearer, `/v1` a bearer (or `X-Quire-Token`). The
//!   printed address carries it once (`/?token=…`): that visit is answered with the
//!   cookie (`HttpOnly; SameSite=Strict`, named for the port) and a redirect to the
//!   same page without it, so it leaves the address bar and the history.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, AppState, CSP};

/// The refusal page's policy: its inline style, no script, no other source.
const REFUSAL_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The first check a request fails, and how it is answered.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// 403: a `Host` this server does not answer to.
    Host(String),
    /// 403: a request from another site.
    CrossSite(String),
    /// 401: no valid token.
    Token,
}

impl Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Refusal::Host(_) | Refusal::CrossSite(_) => StatusCode::FORBIDDEN,
            Refusal::Token => StatusCode::UNAUTHORIZED,
        }
    }

    fn message(&self) -> String {
        match self {
            Refusal::Host(h) => format!(
                "This Quire server answers only to its own address, not to the host `{h}`: \
                 open it as http://127.0.0.1 or http://localhost (a name of your own can be \
                 allowed with `quire serve --allow-host NAME`)"
            ),
            Refusal::CrossSite(why) => format!(
                "Quire refused a request from another web site ({why}): its documents and \
                 conversations answer only to its own page"
            ),
            Refusal::Token => "An access token is required: open the address `quire serve` \
                 printed (it carries the token), or send `Authorization: Bearer TOKEN`"
                .to_string(),
        }
    }

    /// JSON for API clients; a page a person can read for a browser's navigation.
    fn into_response(self, headers: &HeaderMap) -> Response {
        let navigating = headers
            .get("sec-fetch-mode")
            .is_some_and(|v| v.as_bytes() == b"navigate")
            || headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|a| a.contains("text/html"));
        if !navigating {
            return ApiError::new(self.status(), self.message()).into_response();
        }
        let title = match self {
            Refusal::Token => "Quire needs its access token",
            _ => "Quire refused this request",
        };
        let page = format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"color-scheme\" content=\"light dark\">\
             <title>{title}</title></head>\
             <body style=\"font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em\">\
             <h1 style=\"font-size:1.4em\">{title}</h1><p>{}</p></body></html>",
            escape_html(&self.message())
        );
        (
            self.status(),
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            page,
        )
            .into_response()
    }
}

fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The name part of a `Host` value: `[::1]:8717` → `[::1]`, `localhost:80` →
/// `localhost`, lower-cased.
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if host.starts_with('[') {
        match host.find(']') {
            Some(i) => &host[..=i],
            None => host,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.to_ascii_lowercase()
}

fn ip_of(name: &str) -> Option<IpAddr> {
    // An IPv6 address is bracketed in a Host; an IPv4 one is bare.
    match name.strip_prefix('[') {
        Some(inner) => inner.strip_suffix(']')?.parse().ok().map(IpAddr::V6),
        None => name.parse().ok().map(IpAddr::V4),
    }
}

/// Whether the server answers to `host` (the `Host` header): a loopback name or
/// address, the address it is bound to, a configured name; and, when it is bound
/// beyond loopback (where a token is always required), any IP address: a rebound
/// domain is a name, never an address.
pub(super) fn host_allowed(host: &str, bound: IpAddr, allowed: &[String]) -> bool {
    let name = host_name(host);
    if name == "localhost" || allowed.iter().any(|a| host_name(a) == name) {
        return true;
    }
    match ip_of(&name) {
        Some(ip) => ip.is_loopback() || ip == bound || !bound.is_loopback(),
        None => false,
    }
}

/// Why a request comes from another site, if it does: its `Origin` is not `host`'s
/// (the scheme aside: a TLS proxy in front changes it), or the browser says so.
fn cross_site(headers: &HeaderMap, host: &str) -> Option<String> {
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or("?");
        if !matches!(site, "same-origin" | "none") {
            return Some(format!("Sec-Fetch-Site: {site}"));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("?");
        let authority = origin.split_once("://").map(|(_, a)| a);
        if !authority.is_some_and(|a| a.eq_ignore_ascii_case(host.trim())) {
            return Some(format!("Origin: {origin}"));
        }
    }
    None
}

/// Equal in time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn query_token(req: &Request) -> Option<String> {
    req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("token="))
            .map(str::to_owned)
    })
}

/// The query without its `token=` pair.
fn query_without_token(query: &str) -> String {
    query
        .split('&')
        .filter(|kv| !kv.starts_with("token=") && !kv.is_empty())
        .collect::<Vec<_>>()
        .join("&")
}

fn header_token(headers: &HeaderMap) -> Option<&str> {
    // OpenAI clients send their API key as a bearer token.
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .or_else(|| {
            headers
                .get("x-quire-token")
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
        })
}

fn cookie_token<'a>(headers: &'a HeaderMap, cookie: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            let (k, v) = c.trim().split_once('=')?;
            (k == cookie).then_some(v)
        })
}

/// The middleware: the checks above in order, then the security headers on every
/// response.
pub(super) async fn guard(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let path = req.uri().path().to_owned();
    let api = path == "/api" || path.starts_with("/api/");
    let v1 = path == "/v1" || path.starts_with("/v1/");
    let reads_only = matches!(*req.method(), Method::GET | Method::HEAD);

    let refusal = if !host_allowed(&host, st.bound, &st.allowed_hosts) {
        Some(Refusal::Host(host.clone()))
    } else if let Some(why) = (api || v1 || !reads_only)
        .then(|| cross_site(headers, &host))
        .flatten()
    {
        Some(Refusal::CrossSite(why))
    } else if let Some(token) = &st.token {
        let by_header = header_token(headers).is_some_and(|t| same_secret(t, token));
        let by_cookie =
            !v1 && cookie_token(headers, &st.cookie).is_some_and(|t| same_secret(t, token));
        let by_query = !api && !v1 && query_token(&req).is_some_and(|t| same_secret(&t, token));
        if by_query && reads_only {
            // The printed address: keep the token in a cookie, drop it from the bar.
            let rest = query_without_token(req.uri().query().unwrap_or(""));
            let location = if rest.is_empty() {
                path.clone()
            } else {
                format!("{path}?{rest}")
            };
            let cookie = format!("{}={token}; HttpOnly; SameSite=Strict; Path=/", st.cookie);
            let mut resp = (
                StatusCode::SEE_OTHER,
                [(header::LOCATION, location), (header::SET_COOKIE, cookie)],
            )
                .into_response();
            secure(resp.headers_mut());
            return resp;
        }
        if by_header || by_cookie {
            None
        } else {
            Some(Refusal::Token)
        }
    } else {
        None
    };
    if let Some(r) = refusal {
        let mut resp = r.into_response(headers);
        secure(resp.headers_mut());
        if resp
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/html"))
        {
            // The refusal page: its own inline style, and nothing else at all.
            resp.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(REFUSAL_CSP),
            );
        }
        return resp;
    }
    let mut resp = next.run(req).await;
    secure(resp.headers_mut());
    resp
}

/// The headers every response carries.
fn secure(h: &mut HeaderMap) {
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
}

/// A fresh access token: 24 random bytes from the kernel, in hex.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn loopback_names_are_answered_and_other_names_are_not() {
        for ok in [
            "127.0.0.1:8717",
            "127.0.0.1",
            "localhost:8717",
            "LocalHost",
            "[::1]:8717",
            "127.1.2.3:80",
        ] {
            assert!(host_allowed(ok, LOOPBACK, &[]), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8717",
            "localhost.evil.example",
            "10.0.0.5:8717",
            "",
            "[::1",
        ] {
            assert!(!host_allowed(bad, LOOPBACK, &[]), "{bad}");
        }
        assert!(host_allowed(
            "quire.lan:8717",
            LOOPBACK,
            &["quire.lan".into()]
        ));
        // Bound beyond loopback: addresses are answered (a token is required there),
        // names only when configured.
        let lan: IpAddr = "10.0.0.5".parse().expect("ip");
        assert!(host_allowed("10.0.0.5:8717", lan, &[]));
        assert!(!host_allowed("evil.example", lan, &[]));
    }

    #[test]
    fn another_origin_or_site_is_cross_site() {
        let mut h = HeaderMap::new();
        assert_eq!(cross_site(&h, "127.0.0.1:8717"), None);
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8717"),
        );
        assert_eq!(cross_site(&h, "127.0.0.1:8717"), None);
        assert!(cross_site(&h, "127.0.0.1:9000").is_some());
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(cross_site(&h, "127.0.0.1:8717").is_some());
        let mut h = HeaderMap::new();
        for (site, cross) in [
            ("same-origin", false),
            ("none", false),
            ("same-site", true),
            ("cross-site", true),
        ] {
            h.insert("sec-fetch-site", HeaderValue::from_static(site));
            assert_eq!(cross_site(&h, "localhost:1").is_some(), cross, "{site}");
        }
    }

    #[test]
    fn the_token_leaves_the_query_and_nothing_else_does() {
        assert_eq!(query_without_token("token=abc"), "");
        assert_eq!(query_without_token("a=1&token=abc&b=2"), "a=1&b=2");
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
        let t = random_token().expect("urandom");
        assert_eq!(t.len(), 48);
        assert_ne!(t, random_token().expect("urandom"));
    }

    #[test]
    fn a_refusal_page_escapes_what_the_request_said() {
        let mut h = HeaderMap::new();
        h.insert("sec-fetch-mode", HeaderValue::from_static("navigate"));
        let r = Refusal::Host("<script>x</script>".into()).into_response(&h);
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        assert_eq!(
            escape_html("<a href=\"x\">"),
            "&lt;a href=&quot;x&quot;&gt;"
        );
    }
}
