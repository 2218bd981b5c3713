//! `quire-bench library --docs 5 --json`, the binary as a person runs it: a small
//! generated library indexed into SQLite through the engine, and the JSON's figures
//! present and consistent with each other.

use std::process::Command;

use crate::util::json_out;

#[test]
fn library_bench_indexes_a_small_library_and_reports_sane_figures() {
    let dir = tempfile::tempdir().unwrap();
    let pdfs = dir.path().join("pdfs");
    let out = Command::new(env!("CARGO_BIN_EXE_quire-bench"))
        .args([
            "library",
            "--docs",
            "5",
            "--queries",
            "20",
            "--json",
            "--dir",
        ])
        .arg(&pdfs)
        .output()
        .unwrap();
    let v = json_out(&out);
    assert_eq!(v["docs"], 5, "{v}");
    assert_eq!(v["generated"], 5, "{v}");
    assert!(!v["cpu"].as_str().unwrap().is_empty(), "{v}");
    assert!(v["embedder"].as_str().unwrap().contains("MiniLM"), "{v}");
    let library_pages = v["pages"].as_u64().unwrap();
    assert!(library_pages >= 5, "{v}");
    let files = quire_bench::pdfs(&pdfs).unwrap();
    assert_eq!(files.len(), 5);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{v}");
    let r = &runs[0];
    assert_eq!(r["store"], "sqlite");
    assert_eq!(
        (r["indexed"].as_u64(), r["failed"].as_u64()),
        (Some(5), Some(0))
    );
    // Every page of every generated PDF was extracted and indexed.
    assert_eq!(r["pages"].as_u64().unwrap(), library_pages, "{r}");
    let chunks = r["chunks"].as_u64().unwrap();
    assert!(chunks >= library_pages, "{r}");
    let f = |k: &str| r[k].as_f64().unwrap();
    assert!(f("index_secs") > 0.0 && f("write_secs") > 0.0, "{r}");
    assert!(f("write_secs") < f("index_secs"), "{r}");
    assert!((f("pages_per_sec") * f("index_secs") - library_pages as f64).abs() < 1.0);
    assert!(f("chunks_per_sec") > f("docs_per_sec"), "{r}");
    assert!(f("peak_rss_mb") > 10.0, "{r}");
    assert!(f("index_bytes_per_page") > 100.0, "{r}");
    // The ETA sampled at each point, with an error wherever there was an estimate,
    // and one by the end at the latest.
    let eta = r["eta"].as_array().unwrap();
    assert_eq!(eta.len(), 5, "{r}");
    let mut known = 0;
    for (e, at) in eta.iter().zip([0.05, 0.10, 0.25, 0.50, 0.75]) {
        assert!(e["at"].as_f64().unwrap() >= at, "{e}");
        let actual = e["actual_secs"].as_f64().unwrap();
        assert!(actual >= 0.0 && actual < f("index_secs"), "{e}");
        for (est, err) in [
            ("queue_eta_secs", "queue_error_pct"),
            ("pipeline_eta_secs", "pipeline_error_pct"),
        ] {
            assert_eq!(e[est].is_null(), e[err].is_null(), "{e}");
            if let Some(x) = e[err].as_f64() {
                assert!(x.is_finite() && e[est].as_f64().unwrap() >= 0.0, "{e}");
                known += 1;
            }
        }
    }
    assert!(known > 0, "{r}");
    let s = &r["search"];
    assert_eq!(s["queries"], 20);
    let (p50, p99) = (s["p50_ms"].as_f64().unwrap(), s["p99_ms"].as_f64().unwrap());
    assert!(p50 > 0.0 && p50 <= p99, "{s}");
    // One file of five changed: it alone is indexed again.
    let sync = &r["sync"];
    assert_eq!(sync["changed"], 1, "{sync}");
    assert_eq!(sync["reindexed"], 1, "{sync}");
    assert_eq!(sync["unchanged"], 4, "{sync}");
    assert!(sync["secs"].as_f64().unwrap() > 0.0);
    // The changed file was put back: a second run reuses all five, unchanged.
    let again: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let fresh = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_quire-bench"))
        .args([
            "library",
            "--docs",
            "5",
            "--queries",
            "1",
            "--json",
            "--dir",
        ])
        .arg(fresh.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let made: Vec<Vec<u8>> = quire_bench::pdfs(fresh.path())
        .unwrap()
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert_eq!(again, made, "the same seed makes the same files");
}

#[test]
fn library_bench_refuses_an_unknown_store() {
    let out = Command::new(env!("CARGO_BIN_EXE_quire-bench"))
        .args(["library", "--docs", "1", "--store", "mysql://x", "--dir"])
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--store \"mysql://x\""));
}
