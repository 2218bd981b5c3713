//! Connections to the PostgreSQL index: opening one (with a clear error), the hop off
//! an async runtime that every call through the blocking client takes, a connection
//! closed off the runtime too, a small pool for the retrievers, and vectors as
//! pgvector's text.

use std::sync::Mutex;

use postgres::{Client, NoTls};

use crate::{Error, Result};

/// `url` without its password, for messages.
pub(super) fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let cred = &url[s + 3..at];
            match cred.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &cred[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Run `f`, on a thread of its own when called from inside an async runtime (an HTTP
/// handler): the blocking postgres client drives a runtime of its own, which cannot
/// start inside another.
pub(super) fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| {
        s.spawn(f)
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// A connection that is closed off any async runtime when dropped (closing blocks
/// on the client's own runtime too): an engine may be dropped by an HTTP server's
/// worker.
pub(super) struct Conn(Option<Client>);

impl Conn {
    pub(super) fn new(c: Client) -> Self {
        Self(Some(c))
    }
}

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("taken only when dropped"))
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        self.0
            .as_mut()
            .unwrap_or_else(|| unreachable!("taken only when dropped"))
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            off_runtime(move || drop(c));
        }
    }
}

/// A new connection to `url`, with a clear error when the server is not there.
pub(super) fn connect(url: &str) -> Result<Client> {
    off_runtime(|| Client::connect(url, NoTls)).map_err(|e| {
        let why = match e.as_db_error() {
            Some(db) => db.message().to_string(),
            None => {
                let s = e.to_string();
                match std::error::Error::source(&e) {
                    Some(src) => format!("{s}: {src}"),
                    None => s,
                }
            }
        };
        Error::Postgres(format!("cannot connect to {}: {why}", shown(url)))
    })
}

/// Connections kept for the next query (more are opened when several run at once).
const POOL: usize = 4;

/// Connections of their own for the retrievers, so that a question never waits for
/// the indexer's transaction on the store's connection.
pub(super) struct Pool {
    url: String,
    conns: Mutex<Vec<Conn>>,
}

impl Pool {
    pub(super) fn new(url: &str) -> Self {
        Self {
            url: url.to_string(),
            conns: Mutex::new(Vec::new()),
        }
    }

    /// Run `f` on a pooled connection, off any async runtime ([`off_runtime`]); a
    /// connection that failed is dropped.
    pub(super) fn with<T: Send>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T> + Send,
    ) -> Result<T> {
        off_runtime(|| self.pooled(f))
    }

    fn pooled<T>(&self, f: impl FnOnce(&mut Client) -> Result<T>) -> Result<T> {
        let pooled = self.conns.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut client = match pooled {
            Some(c) if !c.is_closed() => c,
            _ => Conn::new(connect(&self.url)?),
        };
        let r = f(&mut client);
        if r.is_ok() {
            let mut pool = self.conns.lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < POOL {
                pool.push(client);
            }
        }
        r
    }
}

/// A vector as pgvector's text (`[x,y,…]`).
pub(super) fn vector_text(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 12 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        // Rust prints the shortest decimal that reads back as the same f32, and
        // pgvector reads it with strtof: the same bits.
        s.push_str(&format!("{x:?}"));
    }
    s.push(']');
    s
}

/// pgvector's text back as a vector.
pub(super) fn text_vector(s: &str) -> Vec<f32> {
    s.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn vectors_go_to_pgvector_text_and_back_bit_for_bit() {
        let v = vec![0.1f32, -1.5e-7, 3.0, f32::MIN_POSITIVE, 0.333_333_34];
        assert_eq!(text_vector(&vector_text(&v)), v);
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            shown("postgres://quire:secret@db:5432/quire"),
            "postgres://quire:***@db:5432/quire"
        );
        assert_eq!(shown("postgres://quire@db/q"), "postgres://quire@db/q");
    }
}
