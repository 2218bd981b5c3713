//! Serving `ui/` from disk: only files inside the UI folder, with the content types
//! the browser needs and no directory listing.

use std::path::{Component, Path, PathBuf};

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// Find the UI folder: `$QUIRE_UI_DIR`, `ui/` beside the executable or its ancestors
/// (for `target/*/quire`), or the source tree's.
pub fn find_ui_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("QUIRE_UI_DIR") {
        return PathBuf::from(d);
    }
    if let Ok(exe) = std::env::current_exe() {
        for anc in exe.ancestors().skip(1).take(4) {
            let d = anc.join("ui");
            if d.join("index.html").is_file() {
                return d;
            }
        }
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ui")
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        // PDF.js (ui/vendor/pdfjs/): ES modules, their WebAssembly decoders, CMaps
        // and standard fonts.
        Some("mjs") => "text/javascript; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("bcmap") => "application/octet-stream",
        Some("pfb") => "application/x-font-type1",
        Some("ttf") => "font/ttf",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// The file at URL path `rel` under `root`, or 404. `..` and absolute parts are refused.
pub async fn serve(root: &Path, rel: &str) -> Response {
    let rel = rel.trim_start_matches('/');
    let rel = if rel.is_empty() { "index.html" } else { rel };
    let rel_path = Path::new(rel);
    if rel_path
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return StatusCode::NOT_FOUND.into_response();
    }
    let path = root.join(rel_path);
    match tokio::fs::read(&path).await {
        Ok(bytes) => (
            [
                (header::CONTENT_TYPE, content_type(&path)),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            bytes,
        )
            .into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}
