//! A real PostgreSQL server with pgvector for the tests: the pgserver wheel's binaries
//! (`scripts/setup.sh --test` installs them into `.venv-pg`), started by
//! `scripts/pg-test-server.sh` on a free loopback port with its cluster in a temporary
//! directory, and stopped when dropped.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running server, with a database `quire` that has the `vector` extension.
pub struct Postgres {
    /// `postgres://postgres@127.0.0.1:PORT/quire`.
    pub url: String,
    /// The cluster, the server's log and its socket; removed after the server stops.
    dir: tempfile::TempDir,
}

fn script() -> PathBuf {
    super::repo().join("scripts/pg-test-server.sh")
}

/// Run `scripts/pg-test-server.sh ARGS…`; its one line of output (a URL).
fn run(args: &[&OsStr]) -> String {
    let out = Command::new(script())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script().display()));
    assert!(
        out.status.success(),
        "scripts/pg-test-server.sh {:?} failed ({}):\n{}",
        args,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

impl Postgres {
    /// Initialise a cluster in a new temporary directory and start it: returns once the
    /// server accepts connections and `quire` exists.
    pub fn start() -> Self {
        let venv = super::repo().join(".venv-pg");
        assert!(
            venv.is_dir(),
            "{} missing: run `scripts/setup.sh --test` (make test does), which installs \
             PostgreSQL and pgvector (the pgserver wheel) there",
            venv.display()
        );
        let dir = tempfile::Builder::new()
            .prefix("quire-pg-")
            .tempdir()
            .unwrap();
        let url = run(&[OsStr::new("start"), dir.path().as_os_str()]);
        assert!(
            url.starts_with("postgres://"),
            "scripts/pg-test-server.sh start printed {url:?}, not a URL"
        );
        Self { url, dir }
    }

    /// Create the database `name` (letters, digits and `_`) on this server, with the
    /// `vector` extension; its URL. One that exists already is kept as it is.
    pub fn fresh_database(&self, name: &str) -> String {
        run(&[
            OsStr::new("createdb"),
            self.dir.path().as_os_str(),
            OsStr::new(name),
        ])
    }

    /// The cluster's directory (its log is `postgres.log` there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Stop it before the TempDir goes (fields drop after this); never panic here.
        let _ = Command::new(script())
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}
