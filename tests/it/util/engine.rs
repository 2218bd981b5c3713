//! An engine in a fresh data directory, as the model-path tests set one up.

use quire::engine::{Engine, EngineConfig};
use quire::settings::Settings;

/// An engine over a new temporary data directory (kept alive by the returned guard)
/// answering with SmolLM2, the smallest model, at most `max_tokens` a call, with the
/// "not found" check off (these tests are about what happens to an answer; the
/// smallest model's questions may be far from every page, and scope.rs tests the
/// check); `tweak` changes any other setting first.
pub fn smollm2_engine(
    max_tokens: usize,
    tweak: impl FnOnce(&mut Settings),
) -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(Some(dir.path().to_path_buf())).unwrap()).unwrap();
    let mut s = engine.settings();
    s.model = super::smollm2().display().to_string();
    s.max_tokens = max_tokens;
    s.not_found_threshold = Some(0.0);
    tweak(&mut s);
    engine.set_settings(s).unwrap();
    (engine, dir)
}
