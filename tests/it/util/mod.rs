//! Helpers shared by the integration tests.
#![allow(dead_code)]

mod engine;
mod index;
pub mod llama_server;
mod pdfs;
pub mod postgres;

use std::path::PathBuf;

pub use engine::smollm2_engine;
pub use index::{
    document_id, done_in_db, index, index_ok, quire_index, run_index, run_index_killed_when,
};
pub use pdfs::{encrypted, pdf_bytes, raw_pdf, stream, text_pdf, topic_pdf, write_pdf};

/// Start `quire serve` (`cmd`, its arguments set), read the line it prints once
/// listening, and keep draining its output so it never blocks on a full pipe: the
/// child and what follows `http://` in that line (`HOST:PORT/`, or
/// `HOST:PORT/?token=…`).
pub fn spawn_serve(cmd: &mut std::process::Command) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("quire serve");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("the serving line");
    let url = line
        .trim()
        .strip_prefix("Quire is serving on http://")
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, url)
}

/// The address of a `quire serve` URL without a token (`HOST:PORT/`).
pub fn serve_addr(url: &str) -> std::net::SocketAddr {
    url.trim_end_matches('/')
        .parse()
        .unwrap_or_else(|_| panic!("no address in {url:?}"))
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `quire` binary (the `quire-cli` package's), next to this test binary's folder
/// (`target/debug/deps/it-…` → `target/debug/quire`). `cargo test --workspace` (what
/// `make test` runs) builds it before any test runs: the package's own tests need it.
pub fn quire_exe() -> PathBuf {
    let me = std::env::current_exe().expect("the test binary's path");
    let exe = me
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps")
        .join(format!("quire{}", std::env::consts::EXE_SUFFIX));
    assert!(
        exe.is_file(),
        "{} is missing: build it with `cargo build -p quire-cli` (or run `cargo test --workspace`)",
        exe.display()
    );
    exe
}

/// `../shared` next to the repository (the team's fixtures, corpus and references).
pub fn shared() -> PathBuf {
    std::env::var_os("QUIRE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared"))
}

/// SmolLM2-135M-Instruct, the smallest model, used where any model proves the point
/// (and the one the shared llama.cpp references were recorded with); the test set-up
/// fetches it, so its absence is a failure.
pub fn smollm2() -> PathBuf {
    quire::models::find(quire::models::SMOLLM2)
        .expect("SmolLM2 missing: run `models/fetch.sh --smollm2` (make test does)")
}

/// The default embedding model's folder.
pub fn default_embedder() -> PathBuf {
    quire::models::default_embedder().expect("embedding model missing: run `make models`")
}

/// Every `*.json` file of `dir`, sorted by name, parsed (a file that does not parse
/// fails the test, naming it).
pub fn json_fixtures<T: serde::de::DeserializeOwned>(dir: &std::path::Path) -> Vec<T> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        })
        .collect()
}

/// Every non-blank line of the JSON-lines file `path` (`quire::jsonl::read`); a file
/// that cannot be read or a line that does not parse fails the test, naming the file
/// and line.
pub fn jsonl(path: &std::path::Path) -> Vec<serde_json::Value> {
    quire::jsonl::read(path).unwrap_or_else(|e| panic!("{e}"))
}

/// The cosine of two vectors, in f64.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x as f64) * (*y as f64))
        .sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// Where two strings first differ, with a little context.
pub fn first_diff(a: &str, b: &str) -> String {
    let i = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let ctx = |s: &str| -> String { s.chars().skip(i.saturating_sub(40)).take(120).collect() };
    format!(
        "at char {i}:\n      expected: {:?}\n      got:      {:?}",
        ctx(a),
        ctx(b)
    )
}

/// Held by tests that must not run beside the heaviest indexing tests: the kill -9
/// resume test failed in two full runs beside the PostgreSQL corpus tests on 2 cores
/// (four files of its batch neither done nor waiting), and passed alone every time.
pub static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Take [`HEAVY`] (a test that panicked while holding it does not matter).
pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}
