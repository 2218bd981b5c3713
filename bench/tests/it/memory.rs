//! `quire-bench memory --chunks 2000 --json`, the binary as a person runs it: a new
//! data directory filled with synthetic chunks, then a child process that builds the
//! retrieval index through the engine and searches it; the JSON's figures present and
//! consistent with each other.

use std::process::Command;

use crate::util::{self, json_out};

#[test]
fn memory_bench_fills_opens_and_searches_a_small_library() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_quire-bench"))
        .args([
            "memory", "--chunks", "2000", "--base", "16", "--reps", "1", "--json",
        ])
        .arg("--data-dir")
        .arg(&data)
        .arg("--pdfs")
        .arg(util::shared().join("corpus/pdfs"))
        .arg("--questions")
        .arg(util::shared().join("corpus/questions.jsonl"))
        .current_dir(util::repo())
        .output()
        .unwrap();
    let v = json_out(&out);
    let fill = &v["fill"];
    assert_eq!(fill["chunks"], 2000, "{v}");
    assert_eq!(fill["documents"], 10, "200 chunks to a document: {v}");
    assert!(fill["db_mb"].as_f64().unwrap() > 0.0, "{v}");
    let open = &v["open"];
    // The child indexed every chunk written.
    assert_eq!(open["chunks"], 2000, "{v}");
    let f = |k: &str| open[k].as_f64().unwrap();
    // int8 codes: a 384-dimension row is 384 bytes plus its scale, not 1,536 f32 bytes.
    let per_row = f("vector_mb") * 1024.0 * 1024.0 / 2000.0;
    assert!(
        (384.0..1000.0).contains(&per_row),
        "{per_row} bytes a row: {v}"
    );
    assert!(f("bm25_mb") > 0.0, "{v}");
    // The kernel's RSS counters are approximate (per-thread caches): within 1 MiB.
    assert!(f("peak_mb") >= f("rss_before_build_mb") - 1.0, "{v}");
    assert!(f("peak_mb") >= f("rss_mb") - 1.0, "{v}");
    assert!(f("searches") > 0.0, "{v}");
    assert!(f("search_p99_ms") >= f("search_p50_ms"), "{v}");
}
