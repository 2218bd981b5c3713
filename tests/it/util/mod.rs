//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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
