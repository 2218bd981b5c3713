//! Architectures no small real file exists for, tested as llama.cpp tests them: small
//! GGUFs with random weights (`scripts/random_gguf.py`, written into `models/random/` (out of the app's model list) by the
//! test set-up, `scripts/setup.sh --test`) run on Quire's own forward pass, their
//! logits after a prompt and eight forced tokens compared bit for bit with llama.cpp's
//! (llama-cpp-python 0.3.36, plain CPU kernels: fingerprints recorded by
//! `scripts/llamacpp_reference_here.py` then `scripts/llamacpp_logits.py`).
//!
//! Each file's SHA-256 is checked against `tests/data/random_gguf.sha256` first: the
//! fingerprints hold only for the file they were recorded from.

use std::path::{Path, PathBuf};

use crate::llm::{check_greedy_lines, check_logits, check_tokenizer_lines, here};

/// The random-weight fixture `name`, checked to be the file the references were
/// recorded from.
fn fixture(name: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let listed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/random_gguf.sha256"),
    )
    .expect("tests/data/random_gguf.sha256");
    let want = listed
        .lines()
        .find_map(|l| l.split_once("  ").filter(|(_, n)| *n == name))
        .map(|(h, _)| h.to_owned())
        .unwrap_or_else(|| panic!("{name} is not listed in tests/data/random_gguf.sha256"));
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models/random")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("{}: {e}; the test set-up writes it: scripts/setup.sh --test (or `.venv-gguf/bin/python scripts/random_gguf.py models/random`)", path.display())
    });
    let got: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        got,
        want,
        "{} is not the file the llama.cpp references were recorded from: write it again \
         with the pinned gguf and numpy (scripts/setup.sh --test, or `.venv-gguf/bin/python \
         scripts/random_gguf.py models/random {name}`)",
        path.display()
    );
    path
}

/// Qwen3 (per-head q/k RMS norms, NeoX rope, head width 128 ≠ hidden/heads, tied
/// output; Q4_K, Q6_K, Q8_0, Q4_0, Q4_1 weights) on the own forward pass: every logit
/// llama.cpp's bits.
#[test]
fn logits_are_llamacpps_bit_for_bit_qwen3() {
    check_logits(
        &fixture("random-qwen3.gguf"),
        "random_qwen3_logits_llamacpp_here.jsonl",
    );
}

#[test]
fn qwen3_greedy_matches_llamacpp_run_here() {
    let lines = here("random_qwen3_greedy_llamacpp_here.jsonl");
    assert_eq!(lines.len(), 4);
    check_greedy_lines(
        &fixture("random-qwen3.gguf"),
        "random qwen3 (llama.cpp here)",
        lines,
        false,
        usize::MAX,
    );
}

/// Q5_K (the type of Q5_K_M files) on Quire's own kernels: Qwen3 with most weights
/// Q5_K (attention, gate, up, down) and an untied Q5_K output of 151,936 rows, beside
/// Q4_K, Q6_K, Q8_0 and Q4_0: every logit llama.cpp's bits, after the prompts (its tiled
/// arithmetic) and after each one-token step (its `ggml_vec_dot_q5_K_q8_K`).
#[test]
fn logits_are_llamacpps_bit_for_bit_qwen3_q5k() {
    check_logits(
        &fixture("random-qwen3-q5k.gguf"),
        "random_qwen3_q5k_logits_llamacpp_here.jsonl",
    );
}

#[test]
fn qwen3_q5k_greedy_matches_llamacpp_run_here() {
    let lines = here("random_qwen3_q5k_greedy_llamacpp_here.jsonl");
    assert_eq!(lines.len(), 4);
    check_greedy_lines(
        &fixture("random-qwen3-q5k.gguf"),
        "random qwen3 Q5_K (llama.cpp here)",
        lines,
        false,
        usize::MAX,
    );
}

/// Llama 3.x: the llama architecture with rotary frequency factors
/// (`rope_freqs.weight`), an untied Q6_K output, and Llama 3's pre-tokenizer
/// (`llama-bpe`: whole pieces found in the vocabulary taken as they are, BOS added
/// when the file does not say) over a byte-level BPE vocabulary (SmolLM2's): the
/// tokens, the logits bit for bit and the greedy output are llama.cpp's. (Its untied
/// Q6_K output is why its prompts' logits once differed: the references were recorded
/// with every row's logits, which makes llama.cpp compute the output of a prompt as a
/// batch, in its tiled arithmetic. They are now recorded as an app runs llama.cpp, the
/// last row's logits only, and Quire computes only that row past the last layer's
/// attention, as llama.cpp does.)
#[test]
fn logits_are_llamacpps_bit_for_bit_llama3() {
    check_logits(
        &fixture("random-llama3.gguf"),
        "random_llama3_logits_llamacpp_here.jsonl",
    );
}

#[test]
fn llama3_greedy_matches_llamacpp_run_here() {
    let lines = here("random_llama3_greedy_llamacpp_here.jsonl");
    assert_eq!(lines.len(), 4);
    check_greedy_lines(
        &fixture("random-llama3.gguf"),
        "random llama3 (llama.cpp here)",
        lines,
        false,
        usize::MAX,
    );
}

#[test]
fn tokenizer_matches_llamacpp_llama_bpe() {
    check_tokenizer_lines(
        &fixture("random-llama3.gguf"),
        here("random_llama3_tokenize_llamacpp_here.jsonl"),
    );
}

/// Phi-3 (Phi-3.5-mini, Phi-4-mini): fused q/k/v and gate+up projections, partial
/// rotary (48 of 64 values per head) with the long rope factors and their attention
/// factor, queries scaled before attention.
#[test]
fn logits_are_llamacpps_bit_for_bit_phi3() {
    check_logits(
        &fixture("random-phi3.gguf"),
        "random_phi3_logits_llamacpp_here.jsonl",
    );
}

#[test]
fn phi3_greedy_matches_llamacpp_run_here() {
    let lines = here("random_phi3_greedy_llamacpp_here.jsonl");
    assert_eq!(lines.len(), 4);
    check_greedy_lines(
        &fixture("random-phi3.gguf"),
        "random phi3 (llama.cpp here)",
        lines,
        false,
        usize::MAX,
    );
}

/// The logits tests of the K-quant files (Q4_K, Q5_K and Q6_K weights: the 0.5B
/// Qwen2.5-Coder, the random Qwen3s) again in a child process with `QUIRE_NO_VNNI=1`,
/// which this process cannot turn on for itself (it is read once): on a CPU with
/// AVX-512 VNNI the K-quant products then take the AVX2 kernels (else the portable
/// ones), whose prompt products lay the rows out in bands of their own, and every
/// logit must still be llama.cpp's.
#[test]
fn k_quant_logits_are_llamacpps_without_vnni_too() {
    let tests = [
        "archs::logits_are_llamacpps_bit_for_bit_qwen3",
        "archs::logits_are_llamacpps_bit_for_bit_qwen3_q5k",
        "llm::logits_are_llamacpps_bit_for_bit_qwen2",
    ];
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(tests)
        .args(["--exact", "--test-threads", "1"])
        .env("QUIRE_NO_VNNI", "1")
        .output()
        .expect("run the test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "without VNNI:\n{text}");
    let want = format!("test result: ok. {} passed; 0 failed", tests.len());
    assert!(
        text.contains(&want),
        "not every test ran without VNNI:\n{text}"
    );
}
