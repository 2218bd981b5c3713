//! The fuzzing campaign's kept corpus as a regression set: every input the campaign
//! found new coverage with (`seeds/<target>/` in `fuzz/seeds.tar.xz`, minimized by
//! libFuzzer's `-set_cover_merge`) goes through the extractor again, the way its target
//! fed it (`content` and `cmap` inputs wrapped in the same one-page PDF by
//! `fuzz/fuzz_targets/wrap.rs`), and must come back as text or an error: no panic, no
//! stack overflow. A crasher the campaign finds is kept in `seeds/crashers/<target>/`
//! of the same archive and runs here too.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[allow(dead_code)]
#[path = "../../fuzz/fuzz_targets/wrap.rs"]
mod wrap;

/// The archive unpacked once (by `tar`, as the campaign packed it) into a folder that
/// lives as long as the test binary.
fn unpacked() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tmp");
        let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds.tar.xz");
        let out = Command::new("tar")
            .arg("xJf")
            .arg(&archive)
            .arg("-C")
            .arg(dir.path())
            .output()
            .expect("run tar");
        assert!(
            out.status.success(),
            "tar xJf {}: {}",
            archive.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
    .path()
}

/// The files of `seeds/<dir>` in the archive, sorted; none when the folder is absent.
fn seeds(dir: &str) -> Vec<PathBuf> {
    let root = unpacked().join("seeds").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// The bytes a target extracts for fuzzer input `data`.
fn as_target_feeds(target: &str, data: &[u8]) -> Vec<u8> {
    match target {
        "content" => wrap::page(data, wrap::PLAIN_CMAP),
        "cmap" => wrap::page(wrap::CMAP_CONTENT, data),
        _ => data.to_vec(),
    }
}

/// Extract every kept input of `target` (and its crashers) on a thread with the stack
/// libFuzzer's runs had (8 MiB); returns how many ran.
fn replay(target: &'static str) -> usize {
    let mut files = seeds(target);
    files.extend(seeds(&format!("crashers/{target}")));
    let n = files.len();
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            for f in files {
                let data = std::fs::read(&f).expect("read seed");
                let pdf = as_target_feeds(target, &data);
                // Text or an error, both fine; a panic fails the test with the file named.
                let r = std::panic::catch_unwind(|| {
                    let _ = quire::ingest::pdf::extract_bytes(&f, &pdf);
                });
                assert!(r.is_ok(), "{} panicked", f.display());
            }
        })
        .expect("spawn")
        .join()
        .expect("replay thread");
    n
}

#[test]
fn the_extract_targets_corpus_extracts_without_a_crash() {
    let n = replay("extract");
    assert!(n >= 100, "only {n} kept inputs in seeds/extract");
}

#[test]
fn the_content_targets_corpus_extracts_without_a_crash() {
    let n = replay("content");
    assert!(n >= 100, "only {n} kept inputs in seeds/content");
}

#[test]
fn the_cmap_targets_corpus_extracts_without_a_crash() {
    let n = replay("cmap");
    assert!(n >= 100, "only {n} kept inputs in seeds/cmap");
}
