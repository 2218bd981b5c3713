//! The model chosen for the machine, on real models: `quire models` calibrates each
//! installed model (a short timed run), keeps the result in the data directory keyed
//! by CPU, thread count and file, chooses the best-answering model predicted within
//! 6 s, and chooses otherwise on a fake slow machine (`QUIRE_CALIBRATION_SLOWDOWN`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

/// A model folder holding links to `files` (real models found in the model folders)
/// and the embedding model (`quire models` wants one).
pub(crate) fn model_dir(dir: &Path, files: &[&str]) -> PathBuf {
    let m = dir.join("models");
    std::fs::create_dir_all(&m).unwrap();
    for f in files.iter().chain([&quire::models::DEFAULT_EMBEDDER]) {
        let src = quire::models::find(f)
            .and_then(|p| std::fs::canonicalize(&p).map_err(|e| quire::Error::io(p, e)))
            .unwrap_or_else(|e| panic!("{f}: {e} (the test set-up fetches it)"));
        std::os::unix::fs::symlink(src, m.join(f)).unwrap();
    }
    m
}

/// `quire models …` over the model folder `models`, the data directory `data`.
fn quire_models(
    prefix: &[&str],
    models: &Path,
    data: &Path,
    args: &[&str],
    slowdown: Option<&str>,
) -> std::process::Output {
    let (prog, pre): (PathBuf, Vec<String>) = match prefix.split_first() {
        Some((p, rest)) => (
            PathBuf::from(p),
            rest.iter()
                .map(|s| s.to_string())
                .chain([util::quire_exe().display().to_string()])
                .collect(),
        ),
        None => (util::quire_exe(), Vec::new()),
    };
    let mut cmd = Command::new(prog);
    cmd.args(pre)
        .arg("models")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env("QUIRE_MODELS_PATH", models)
        .env_remove("RAYON_NUM_THREADS")
        .env_remove("QUIRE_CALIBRATION_SLOWDOWN");
    if let Some(f) = slowdown {
        cmd.env("QUIRE_CALIBRATION_SLOWDOWN", f);
    }
    let out = cmd.output().expect("quire models runs");
    assert!(
        out.status.success(),
        "quire models {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("quire models --json prints JSON")
}

fn model<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["choice"]["models"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("{name} not in {v}"))
}

fn cache(data: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(data.join("calibration.json")).expect("the cache is kept");
    let v: serde_json::Value = serde_json::from_str(&text).expect("the cache is JSON");
    v["entries"].as_array().cloned().unwrap_or_default()
}

#[test]
fn models_are_calibrated_cached_and_chosen_differently_on_a_slow_machine() {
    let dir = tempfile::tempdir().unwrap();
    let q05 = quire::models::DEFAULT_LLM;
    let smol = quire::models::SMOLLM2;
    let models = model_dir(dir.path(), &[q05, smol]);
    let data = dir.path().join("data");

    let v = json(&quire_models(&[], &models, &data, &["--json"], None));
    let p = |v: &serde_json::Value, n: &str| model(v, n)["predicted_secs"].as_f64().unwrap();
    let (p05, psmol) = (p(&v, q05), p(&v, smol));
    assert!(p05 > 0.0 && psmol > 0.0, "{v}");
    assert_eq!(model(&v, q05)["cached"], false, "{v}");
    // The rule: the better-answering 0.5B whenever it fits 6 s, else the faster.
    // (Compared as shown, to the tenth of a second, as the choice compares them.)
    let shown = |x: f64| format!("{x:.1}").parse::<f64>().unwrap();
    let expect = if shown(p05) <= 6.0 {
        q05
    } else if shown(psmol) <= 6.0 || shown(psmol) < shown(p05) {
        smol
    } else {
        q05
    };
    assert_eq!(v["choice"]["chosen"], expect, "{v}");
    // (On a machine busy enough that neither fits, the 0.5B may be chosen as the
    // faster one instead: `chosen_fastest`, checked on the slow machine below.)
    if shown(p05) <= 6.0 {
        assert_eq!(model(&v, q05)["reason"]["kind"], "chosen", "{v}");
        assert_eq!(
            model(&v, smol)["why"],
            format!("answers worse than {q05}"),
            "{v}"
        );
    }
    assert_eq!(cache(&data).len(), 2);

    // Again: from the cache, the same predictions.
    let again = json(&quire_models(&[], &models, &data, &["--json"], None));
    assert_eq!(model(&again, q05)["cached"], true, "{again}");
    assert_eq!(p(&again, q05), p05);
    assert_eq!(again["choice"]["chosen"], v["choice"]["chosen"]);

    // A machine so slow that neither fits: a new calibration (the slowdown is part of
    // the key), and the faster model is chosen, saying that none fits.
    let factor = format!("{}", (60.0 / psmol.min(p05)).ceil());
    let slow = json(&quire_models(
        &[],
        &models,
        &data,
        &["--json"],
        Some(&factor),
    ));
    assert_eq!(model(&slow, q05)["cached"], false, "{slow}");
    let (s05, ssmol) = (p(&slow, q05), p(&slow, smol));
    assert!(s05 > 6.0 && ssmol > 6.0, "{slow}");
    // (Of two shown alike, the better-answering 0.5B.)
    let fastest = if shown(ssmol) < shown(s05) { smol } else { q05 };
    assert_eq!(slow["choice"]["chosen"], fastest, "{slow}");
    assert_eq!(model(&slow, fastest)["reason"]["kind"], "chosen_fastest");
    assert!(
        model(&slow, fastest)["why"]
            .as_str()
            .unwrap()
            .contains("no model fits 6 s"),
        "{slow}"
    );
    // Which of the two is faster is the machine's to say (they are close): what the
    // slow machine changes is the reason, from "fits" to "the fastest, none fits".
    if shown(p05) <= 6.0 || shown(psmol) <= 6.0 {
        assert_eq!(model(&v, expect)["reason"]["kind"], "chosen", "{v}");
    }
    assert_eq!(cache(&data).len(), 4);

    // `--choose` prints the chosen file name alone, from the cache.
    let out = quire_models(&[], &models, &data, &["--choose"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), expect);

    // A bad slowdown is a clear error.
    let out = Command::new(util::quire_exe())
        .args(["models", "--choose", "--data-dir"])
        .arg(&data)
        .env("QUIRE_MODELS_PATH", &models)
        .env("QUIRE_CALIBRATION_SLOWDOWN", "fast")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("QUIRE_CALIBRATION_SLOWDOWN"));
}

/// One thread under `taskset -c 0` and every core measure apart: the thread count is
/// part of the cache key.
#[test]
fn the_thread_count_is_part_of_the_cache_key() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cpus >= 2, "this test needs two CPUs, found {cpus}");
    let dir = tempfile::tempdir().unwrap();
    let smol = quire::models::SMOLLM2;
    let models = model_dir(dir.path(), &[smol]);
    let data = dir.path().join("data");

    let one = quire_models(
        &["taskset", "-c", "0"],
        &models,
        &data,
        &["--choose", "--threads", "1"],
        None,
    );
    assert_eq!(String::from_utf8_lossy(&one.stdout).trim(), smol);
    let both = json(&quire_models(
        &["taskset", "-c", "0,1"],
        &models,
        &data,
        &["--json"],
        None,
    ));
    assert_eq!(both["choice"]["threads"], 2, "{both}");
    assert_eq!(model(&both, smol)["cached"], false, "{both}");
    let entries = cache(&data);
    let mut threads: Vec<_> = entries
        .iter()
        .map(|e| e["key"]["threads"].as_u64().unwrap())
        .collect();
    threads.sort();
    assert_eq!(threads, [1, 2], "{entries:?}");
    assert_eq!(entries[0]["key"]["path"], entries[1]["key"]["path"]);

    // Under `taskset -c 0` without --threads: one thread, from the cache.
    let again = json(&quire_models(
        &["taskset", "-c", "0"],
        &models,
        &data,
        &["--json"],
        None,
    ));
    assert_eq!(again["choice"]["threads"], 1, "{again}");
    assert_eq!(model(&again, smol)["cached"], true, "{again}");
}
