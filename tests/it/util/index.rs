//! Indexing as the tests drive it: `quire index --json` run to its end or killed
//! mid-way, its events parsed; the engine's own `index` with its events collected;
//! how many documents a database holds done.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};

use quire::engine::{Cancel, Engine, IndexEvent};

/// `quire index --json --data-dir DATA`: add the files (and any other argument).
pub fn quire_index(data: &Path) -> Command {
    let mut c = Command::new(super::quire_exe());
    c.args(["index", "--json", "--data-dir"]).arg(data);
    c
}

/// Run `cmd` (a [`quire_index`]) to its end: its output, and the events it printed on
/// stdout, one a line (a line that is not one fails the test).
pub fn run_index(cmd: &mut Command) -> (Output, Vec<IndexEvent>) {
    let out = cmd.output().expect("run quire index");
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not an event ({e}): {l:?}")))
        .collect();
    (out, events)
}

/// Start `cmd` (a [`quire_index`]) and kill it with SIGKILL at the first progress line
/// at which `stop()` holds: asked before each line (no timers), `polls` times at the
/// most, and not after the output ends. Its exit status: not a success, unless the run
/// finished first.
pub fn run_index_killed_when(
    cmd: &mut Command,
    polls: usize,
    mut stop: impl FnMut() -> bool,
) -> ExitStatus {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn quire index");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    for _ in 0..polls {
        if stop() {
            break;
        }
        match lines.next() {
            Some(Ok(_)) => {}
            _ => break,
        }
    }
    child.kill().expect("kill -9"); // SIGKILL on Unix
    child.wait().expect("wait")
}

/// How many documents of the SQLite index at `db` are done, read-only (0 while it does
/// not exist or cannot be read).
pub fn done_in_db(db: &Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return 0;
    };
    conn.query_row(
        "SELECT count(*) FROM documents WHERE status = 'done'",
        [],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

/// Run `engine.index` on `paths` and collect its events.
pub fn index(engine: &Engine, paths: &[PathBuf]) -> Vec<IndexEvent> {
    let mut events = Vec::new();
    engine
        .index(paths, &Cancel::new(), &mut |ev| {
            events.push(ev);
            true
        })
        .expect("index");
    events
}

/// [`index`] `paths`, none of which may fail.
pub fn index_ok(engine: &Engine, paths: &[PathBuf]) {
    let failed: Vec<IndexEvent> = index(engine, paths)
        .into_iter()
        .filter(|ev| matches!(ev, IndexEvent::FileFailed { .. }))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
}

/// The id of the document indexed from a file named `file_name`.
pub fn document_id(engine: &Engine, file_name: &str) -> i64 {
    engine
        .documents()
        .expect("documents")
        .into_iter()
        .find(|d| d.file_name == file_name)
        .unwrap_or_else(|| panic!("{file_name} is not indexed"))
        .id
}
