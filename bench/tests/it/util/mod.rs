//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The repository root (the workspace's, one folder above this package).
pub fn repo() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// `../shared` next to the repository (the team's fixtures, corpus and references).
pub fn shared() -> PathBuf {
    std::env::var_os("QUIRE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared"))
}

/// The default LLM; the test suite's setup fetches it, so its absence is a failure.
pub fn default_llm() -> PathBuf {
    quire::models::default_llm().expect("default LLM missing: run `make models`")
}

/// The default embedding model's folder.
pub fn default_embedder() -> PathBuf {
    quire::models::default_embedder().expect("embedding model missing: run `make models`")
}

/// The JSON a benchmark printed, after asserting that it succeeded (its stderr shown
/// when not).
pub fn json_out(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
