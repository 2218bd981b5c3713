//! `quire-bench tables --json` on a subset of the hand-marked tables (two documents):
//! the figures are computed — counts consistent, shares within 0..=1 — and the
//! detector finds rows of both.

use std::process::Command;

use crate::util::{self, json_out};

#[test]
fn tables_bench_reports_rows_and_cells_per_half() {
    let dir = tempfile::tempdir().unwrap();
    let all = std::fs::read_to_string(util::repo().join("bench/data/tables.jsonl")).unwrap();
    let subset: Vec<&str> = all
        .lines()
        .filter(|l| l.contains("\"debian-faq.en.pdf\"") || l.contains("\"page\": 43"))
        .collect();
    assert_eq!(subset.len(), 2, "{subset:?}");
    let ids: Vec<String> = subset
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].to_string())
        .collect();
    let marked = dir.path().join("tables.jsonl");
    std::fs::write(&marked, subset.join("\n")).unwrap();
    let split = dir.path().join("split.json");
    std::fs::write(
        &split,
        format!(
            r#"{{"seed": 1, "tune": [{}], "held": [{}]}}"#,
            ids[0], ids[1]
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_quire-bench"))
        .args(["tables", "--json", "--pdfs"])
        .arg(util::shared().join("corpus/pdfs"))
        .arg("--marked")
        .arg(&marked)
        .arg("--split")
        .arg(&split)
        .current_dir(util::repo())
        .output()
        .unwrap();
    let v = json_out(&out);
    assert_eq!(v["documents"], 2, "{v}");
    let figs = v["figures"].as_array().unwrap();
    let halves: Vec<&str> = figs.iter().map(|f| f["split"].as_str().unwrap()).collect();
    assert_eq!(halves, ["tune", "held", "all"]);
    let n = |f: &serde_json::Value, k: &str| f[k].as_u64().unwrap();
    for f in figs {
        assert_eq!(
            n(f, "tables"),
            if f["split"] == "all" { 2 } else { 1 },
            "{v}"
        );
        assert!(
            n(f, "rows_matched") <= n(f, "rows_marked").min(n(f, "rows_detected")),
            "{v}"
        );
        assert!(
            n(f, "cells_matched") <= n(f, "cells_marked").min(n(f, "cells_detected")),
            "{v}"
        );
        assert!(n(f, "tables_found") <= n(f, "tables"), "{v}");
    }
    let all = &figs[2];
    // 10 rows (apt) and 12 (trigonometric functions), all marked.
    assert_eq!(n(all, "rows_marked"), 22, "{v}");
    assert!(n(all, "rows_matched") > 0, "{v}");
    assert_eq!(
        n(all, "rows_marked"),
        n(&figs[0], "rows_marked") + n(&figs[1], "rows_marked")
    );
}
