//! `quire-bench llm --json`, the binary as a person runs it, with llama.cpp beside it
//! (llama-cpp-python in `.venv-llama`, which the test set-up installs): generation
//! measured after `--gen-depth` prompt tokens on both sides, sequences generating
//! together (`--batch`), and a depth or batch of 0 refused with a clear error.

use std::process::Command;

use crate::util::{default_llm, json_out, repo};

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_quire-bench"))
        .arg("llm")
        .arg("--model")
        .arg(default_llm())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn llm_bench_generates_at_the_depth_asked_beside_llama_cpp() {
    let peer = repo().join(".venv-llama/bin/python");
    let peer = peer.to_str().unwrap();
    let out = bench(&[
        "--prompt-tokens",
        "32",
        "--gen-depth",
        "300",
        "--batch",
        "2",
        "--peer",
        peer,
        "--json",
    ]);
    let v = json_out(&out);
    assert_eq!(v["prompt_tokens"], 32, "{v}");
    assert_eq!(v["gen_depth"], 300, "{v}");
    assert_eq!(v["gen_tokens"], 128, "{v}");
    let f = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} missing: {v}"));
    for k in [
        "pp_tok_s",
        "gen_tok_s",
        "llamacpp_pp_tok_s",
        "llamacpp_gen_tok_s",
    ] {
        assert!(f(k) > 0.0, "{k}: {v}");
    }
    assert!(
        (f("gen_ratio") - f("gen_tok_s") / f("llamacpp_gen_tok_s")).abs() < 1e-9,
        "{v}"
    );
    assert_eq!(v["llamacpp_source"], "llama-cpp-python, run here", "{v}");
    // Two sequences 300 deep, one pass a step for both.
    assert_eq!(v["batch"], 2, "{v}");
    assert!(f("batch_step_secs") > 0.0, "{v}");
}

#[test]
fn llm_bench_refuses_a_depth_or_batch_of_zero() {
    let out = bench(&["--gen-depth", "0", "--json"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--gen-depth: at least 1"), "{err}");
    let out = bench(&["--batch", "0", "--json"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--batch: at least 1"), "{err}");
}
