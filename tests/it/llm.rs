//! The local LLM runtime against llama.cpp's reference outputs.

use std::path::{Path, PathBuf};

use quire::llm::tokenizer::Tokenizer;
use quire::llm::{BatchEvent, GgufLlm, LoadOptions};

use crate::util;
use crate::util::jsonl;

fn reference(model: &str, file: &str) -> Vec<serde_json::Value> {
    jsonl(
        &util::shared()
            .join("reference/llamacpp")
            .join(model)
            .join(file),
    )
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .expect("ids array")
        .iter()
        .map(|x| x.as_u64().expect("id") as u32)
        .collect()
}

/// The optional Gemma 3 270M file, when it was fetched.
/// Gemma 3 270M: the test set-up fetches it (`models/fetch.sh --gemma`), so its
/// absence is a failure, not a skip.
fn gemma() -> PathBuf {
    quire::models::find("gemma-3-270m-q4_k_m.gguf")
        .expect("gemma-3-270m-q4_k_m.gguf missing: run `models/fetch.sh --gemma` (make test does)")
}

/// Qwen2.5-Coder 0.5B Instruct (qwen2), the default LLM: the set-up fetches it, so its
/// absence is a failure.
fn qwen2() -> PathBuf {
    quire::models::default_llm()
        .expect("the default LLM is missing: run `models/fetch.sh` (make test does)")
}

/// A reference recorded here by `scripts/llamacpp_*.py` (in `tests/data`).
pub(crate) fn here(file: &str) -> Vec<serde_json::Value> {
    jsonl(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(file),
    )
}

fn check_tokenizer(path: &Path, model: &str) {
    check_tokenizer_lines(path, reference(model, "tokenize.jsonl"));
}

pub(crate) fn check_tokenizer_lines(path: &Path, lines: Vec<serde_json::Value>) {
    let tok = Tokenizer::open(path).expect("tokenizer");
    let mut bad = Vec::new();
    assert!(lines.len() >= 10);
    for line in &lines {
        let text = line["text"].as_str().expect("text");
        let plain = tok.encode(text, false).expect("encode");
        let special = tok.encode(text, true).expect("encode");
        if plain != ids(&line["ids_plain"]) {
            bad.push(format!(
                "plain {text:?}: got {plain:?} want {:?}",
                line["ids_plain"]
            ));
        }
        if special != ids(&line["ids_special"]) {
            bad.push(format!(
                "special {text:?}: got {special:?} want {:?}",
                line["ids_special"]
            ));
        }
        // Decoding the plain ids gives the text back.
        assert_eq!(tok.decode(&plain), text, "round trip of {text:?}");
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn tokenizer_matches_llamacpp_smollm2() {
    check_tokenizer(&util::smollm2(), "SmolLM2-135M-Instruct.Q4_1");
}

#[test]
fn tokenizer_matches_llamacpp_gemma3() {
    let p = gemma();
    check_tokenizer(&p, "gemma-3-270m-q4_k_m");
}

/// Greedy ids against llama.cpp's: at least `need` leading tokens (or all) match.
fn check_greedy(path: &Path, model: &str, requantize: bool, need: usize) {
    check_greedy_lines(
        path,
        model,
        reference(model, "greedy.jsonl"),
        requantize,
        need,
    );
}

pub(crate) fn check_greedy_lines(
    path: &Path,
    model: &str,
    lines: Vec<serde_json::Value>,
    requantize: bool,
    need: usize,
) {
    let opts = LoadOptions {
        requantize,
        ..LoadOptions::default()
    };
    let llm = GgufLlm::load_with(path, &opts).expect("load");
    let mut failures = Vec::new();
    for line in lines {
        let prompt = line["prompt"].as_str().expect("prompt");
        let want_prompt = ids(&line["prompt_ids"]);
        let got_prompt = llm.tokenizer().encode_prompt(prompt).expect("encode");
        assert_eq!(got_prompt, want_prompt, "prompt ids of {prompt:?}");
        let want = ids(&line["greedy_ids"]);
        llm.reset_cache().expect("reset");
        let got = llm.greedy_ids(&got_prompt, want.len()).expect("generate");
        let same = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
        eprintln!(
            "{model} requantize={requantize}: {same}/{} greedy tokens match for {:?}",
            want.len(),
            &prompt[..prompt.len().min(60)]
        );
        if same < need.min(want.len()) {
            failures.push(format!(
                "only {same} tokens match for {prompt:?}: got {got:?} want {want:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// SmolLM2 follows llama.cpp's greedy output token for token (32/32, 25/25, 32/32,
// 32/32): Quire's llama forward computes every operation with llama.cpp's own
// rounding (src/llm/runtime/), so all reference tokens must
// match, not only the first 16 the issue asks for.
#[test]
fn greedy_matches_llamacpp_smollm2() {
    check_greedy(
        &util::smollm2(),
        "SmolLM2-135M-Instruct.Q4_1",
        false,
        usize::MAX,
    );
}

/// Requantizing Q4_1 to Q8_0 changes the weights, so it cannot be exact; it must
/// still agree on the first 8 tokens of every prompt.
#[test]
fn greedy_with_requantized_weights_stays_close() {
    check_greedy(&util::smollm2(), "SmolLM2-135M-Instruct.Q4_1", true, 8);
}

// Gemma 3 270M against the shared reference (no test: it cannot pass here, and an
// ignored test that never runs checks nothing): 7/32, 0/32, 4/32, 32/32 — exactly what
// llama.cpp itself gives on this machine kind. Measured 2026-11-23 with
// llama-cpp-python 0.3.36 in every configuration (AMX backend on/off — on needs the
// GCC 12 tile-config fix noted in scripts/llamacpp_speed.py — × flash attention
// on/off): 7/0/4/32, 7/32/4/2, 7/0/32/32, 7/0/4/2. No llama.cpp build here reproduces
// the first prompt beyond 7 tokens, so the reference was recorded on a path not
// available here. What can be checked here is checked by
// `gemma3_greedy_matches_llamacpp_run_here`: llama.cpp's own greedy output on this
// machine (plain CPU kernels, the configuration that reproduces the SmolLM2
// references), all 32 tokens of every prompt — and the logits behind them are
// llama.cpp's bit for bit (all 262144, prompt and ten steps, checked 2026-11-23).

/// Gemma 3 gives llama.cpp's greedy tokens as llama.cpp computes them here (plain CPU
/// kernels, no flash attention: `scripts/llamacpp_greedy.py` wrote
/// `tests/data/gemma3_greedy_llamacpp_here.jsonl` with llama-cpp-python 0.3.36), every
/// token of every prompt: the second prompt's first token is a three-way near-tie
/// (within 0.01), so this needs llama.cpp's arithmetic, not only its graph.
#[test]
fn gemma3_greedy_matches_llamacpp_run_here() {
    let p = gemma();
    let lines = jsonl(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gemma3_greedy_llamacpp_here.jsonl"),
    );
    assert_eq!(lines.len(), 4);
    check_greedy_lines(
        &p,
        "gemma-3-270m-q4_k_m (llama.cpp here)",
        lines,
        false,
        usize::MAX,
    );
}

/// After a ~740-token prompt (two prompt batches), generation runs past 256 keys,
/// where one token's attention is split across cores by key and by output dimension,
/// and for Gemma 3 past its 512-key sliding window, whose masked keys are skipped:
/// llama.cpp's greedy tokens as it computes them here
/// (`scripts/llamacpp_long_greedy.py`), all 32.
#[test]
fn long_prompt_greedy_matches_llamacpp_run_here() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let runs = [
        (
            util::smollm2(),
            "SmolLM2 (llama.cpp here)",
            "smollm2_long_greedy_llamacpp_here.jsonl",
        ),
        (
            gemma(),
            "gemma-3-270m-q4_k_m (llama.cpp here)",
            "gemma3_long_greedy_llamacpp_here.jsonl",
        ),
    ];
    for (path, model, file) in runs {
        let lines = jsonl(&data.join(file));
        assert!(ids(&lines[0]["prompt_ids"]).len() > 700);
        check_greedy_lines(&path, model, lines, false, usize::MAX);
    }
}

/// Gemma 3 runs through the fixed model code: on the reference prompt without
/// near-ties its greedy output is llama.cpp's, all 32 tokens (candle's quantized_gemma3
/// repeated tokens 198 199 there). Runs when the optional file was fetched.
#[test]
fn gemma3_follows_llamacpp_where_there_is_no_near_tie() {
    let p = gemma();
    let llm = GgufLlm::load_with(&p, &LoadOptions::default()).expect("load");
    let line = reference("gemma-3-270m-q4_k_m", "greedy.jsonl")
        .into_iter()
        .find(|l| l["prompt"] == "The three primary colors are")
        .expect("reference prompt");
    let want = ids(&line["greedy_ids"]);
    let got = llm
        .greedy_ids(&ids(&line["prompt_ids"]), want.len())
        .expect("generate");
    assert_eq!(got, want);
}

// ---- bad input: clear errors naming the file, never a panic ----

/// A GGUF header by hand: `general.architecture = arch`, one tensor of `dims` with the
/// raw ggml type id `ty`, then `data_len` bytes of tensor data.
fn hand_gguf(arch: &str, ty: u32, dims: &[u64], data_len: usize) -> Vec<u8> {
    fn s(b: &mut Vec<u8>, x: &str) {
        b.extend((x.len() as u64).to_le_bytes());
        b.extend(x.as_bytes());
    }
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(1u64.to_le_bytes()); // tensors
    b.extend(1u64.to_le_bytes()); // metadata entries
    s(&mut b, "general.architecture");
    b.extend(8u32.to_le_bytes()); // string
    s(&mut b, arch);
    s(&mut b, "w.weight");
    b.extend((dims.len() as u32).to_le_bytes());
    for d in dims {
        b.extend(d.to_le_bytes());
    }
    b.extend(ty.to_le_bytes());
    b.extend(0u64.to_le_bytes()); // offset
    while !b.len().is_multiple_of(32) {
        b.push(0);
    }
    b.extend(vec![0u8; data_len]);
    b
}

fn write_tmp(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).expect("write");
    p
}

/// Loading `path` fails with a model-format error naming it whose reason has `needle`.
fn assert_model_error(path: &Path, needle: &str) {
    match GgufLlm::load_with(path, &LoadOptions::default()) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(quire::Error::ModelFormat { path: p, reason }) => {
            assert_eq!(p, path);
            assert!(
                reason.to_lowercase().contains(needle),
                "reason {reason:?} lacks {needle:?}"
            );
        }
        Err(e) => panic!("wrong error for {}: {e}", path.display()),
    }
}

#[test]
fn load_rejects_a_non_gguf_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write_tmp(&dir, "notes.gguf", b"%PDF-1.7 this is not a model");
    assert_model_error(&p, "not a gguf");
    let empty = write_tmp(&dir, "empty.gguf", b"");
    assert_model_error(&empty, "not a gguf");
}

#[test]
fn load_rejects_a_truncated_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Header says 64 f32 = 256 bytes of data; only 100 are there.
    let p = write_tmp(&dir, "cut.gguf", &hand_gguf("llama", 0, &[64], 100));
    assert_model_error(&p, "truncated");
    // Cut inside the header itself.
    let full = hand_gguf("llama", 0, &[64], 256);
    let p = write_tmp(&dir, "cut-header.gguf", &full[..40]);
    assert_model_error(&p, "gguf");
    // The real model, cut in half.
    let real = std::fs::read(util::smollm2()).expect("read model");
    let p = write_tmp(&dir, "half.gguf", &real[..real.len() / 2]);
    assert_model_error(&p, "truncated");
}

#[test]
fn load_rejects_an_unsupported_architecture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write_tmp(&dir, "mamba.gguf", &hand_gguf("mamba", 0, &[64], 256));
    assert_model_error(&p, "unsupported architecture \"mamba\"");
}

#[test]
fn load_rejects_an_unsupported_tensor_type() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 16 is IQ2_XXS in ggml: valid GGUF, no candle kernel.
    let p = write_tmp(&dir, "iq2.gguf", &hand_gguf("llama", 16, &[256], 1024));
    assert_model_error(&p, "unknown dtype");
}

#[test]
fn load_rejects_a_llama_file_without_weights_or_vocabulary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write_tmp(&dir, "bare.gguf", &hand_gguf("llama", 0, &[64], 256));
    match GgufLlm::load_with(&p, &LoadOptions::default()) {
        Ok(_) => panic!("a bare header loaded"),
        Err(e) => assert!(e.to_string().contains("bare.gguf"), "{e}"),
    }
}

// The logit margins along llama.cpp's greedy sequences (a diagnostic that checks
// nothing) are printed by `quire bench margins` (bench/src/margins.rs).

/// A batch of prompts run together gives each prompt exactly what it gets alone:
/// same text, same token counts, same stop reasons; the pieces streamed for each
/// prompt add up to its text. Sampling with a seed and a repeat penalty, and
/// prompts of different lengths that share a head, as tree_summarize sends them (the
/// head read once for all of them).
#[test]
fn a_batch_of_prompts_gives_what_each_gives_alone() {
    use quire::llm::{Cancel, GenParams, Llm};
    let llm = GgufLlm::load_with(util::smollm2(), &LoadOptions::default()).expect("load");
    let head = "Context information from multiple sources is below.\n";
    let prompts: Vec<String> = [
        "The Eiffel Tower is in Paris. Where is the Eiffel Tower?",
        "Water is H2O. Hydrogen peroxide is H2O2. Name two compounds of hydrogen and oxygen, with their formulas, and say which one is used to bleach hair.",
        "Count: one, two, three,",
    ]
    .iter()
    .map(|p| format!("{head}{p}"))
    .collect();
    for params in [
        GenParams {
            max_tokens: 24,
            ..GenParams::default()
        },
        GenParams {
            max_tokens: 20,
            temperature: 0.8,
            top_p: Some(0.9),
            repeat_penalty: 1.15,
            stop: vec!["\n\n".into()],
            ..GenParams::default()
        },
    ] {
        let alone: Vec<_> = prompts
            .iter()
            .map(|p| {
                llm.complete(p, &params, &Cancel::new(), &mut |_: &str| Ok(true))
                    .expect("complete")
            })
            .collect();
        // The model's own cache left holding another text: the batch reads the head
        // its prompts share once, into a cache each of them starts from.
        llm.complete("Say hello.", &params, &Cancel::new(), &mut |_: &str| {
            Ok(true)
        })
        .expect("another text");
        let mut streamed = vec![String::new(); prompts.len()];
        let mut read = Vec::new();
        let batch = llm
            .complete_batch(&prompts, &params, &Cancel::new(), &mut |ev: BatchEvent<
                '_,
            >| {
                match ev {
                    BatchEvent::Read(i) => read.push(i),
                    BatchEvent::Text(i, s) => {
                        assert!(read.contains(&i), "prompt {i}: text before it was read");
                        streamed[i].push_str(s);
                    }
                }
                Ok(true)
            })
            .expect("batch");
        assert_eq!(batch.len(), prompts.len());
        // Each prompt is reported read once, in order.
        assert_eq!(read, (0..prompts.len()).collect::<Vec<_>>());
        for (i, (a, b)) in alone.iter().zip(&batch).enumerate() {
            assert!(!a.text.is_empty(), "prompt {i} generated nothing");
            assert_eq!(a.text, b.text, "prompt {i}");
            assert_eq!(a.output_tokens, b.output_tokens, "prompt {i}");
            assert_eq!(a.prompt_tokens, b.prompt_tokens, "prompt {i}");
            assert_eq!(a.stop, b.stop, "prompt {i}");
            assert_eq!(streamed[i], b.text, "prompt {i}: streamed pieces");
        }
    }
}

/// Quire's logits against llama.cpp's as run here (plain CPU kernels; fingerprints
/// written by `scripts/llamacpp_logits.py`): after the prompt and after each of the
/// first 8 greedy tokens fed one at a time, every logit the same f32 bits.
pub(crate) fn check_logits(path: &Path, data: &str) {
    use sha2::{Digest, Sha256};
    let llm = GgufLlm::load_with(path, &LoadOptions::default()).expect("load");
    let lines = jsonl(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(data),
    );
    assert_eq!(lines.len(), 4);
    let mut bad = Vec::new();
    for line in &lines {
        let forced = ids(&line["forced_ids"]);
        let got = llm
            .forced_logits(&ids(&line["prompt_ids"]), &forced)
            .expect("logits");
        let want = line["logits"].as_array().expect("logits");
        assert_eq!(got.len(), want.len());
        for (step, (g, w)) in got.iter().zip(want).enumerate() {
            let bytes: Vec<u8> = g.iter().flat_map(|v| v.to_le_bytes()).collect();
            let sha: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            if sha != w["sha256"].as_str().expect("sha256") {
                let argmax = g
                    .iter()
                    .enumerate()
                    .fold((0, f32::MIN), |m, (i, &v)| if v > m.1 { (i, v) } else { m })
                    .0;
                bad.push(format!(
                    "{:?} step {step}: logits differ (argmax {argmax}, llama.cpp {})",
                    &line["prompt"].as_str().unwrap_or("")[..20],
                    w["argmax"]
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn logits_are_llamacpps_bit_for_bit_smollm2() {
    check_logits(&util::smollm2(), "smollm2_logits_llamacpp_here.jsonl");
}

#[test]
fn logits_are_llamacpps_bit_for_bit_gemma3() {
    let p = gemma();
    check_logits(&p, "gemma3_logits_llamacpp_here.jsonl");
}

/// Qwen2 (Qwen2.5-Coder 0.5B Instruct, Q4_K_M: Q5_0, Q8_0, Q4_K and Q6_K weights, q/k/v
/// biases) on Quire's own forward pass: the tokenizer, the logits bit for bit and the
/// greedy tokens are llama.cpp's as run here (`scripts/llamacpp_reference_here.py`,
/// then `scripts/llamacpp_logits.py`, llama-cpp-python 0.3.36, plain CPU kernels).
#[test]
fn tokenizer_matches_llamacpp_qwen2() {
    check_tokenizer_lines(&qwen2(), here("qwen2_tokenize_llamacpp_here.jsonl"));
}

#[test]
fn logits_are_llamacpps_bit_for_bit_qwen2() {
    check_logits(&qwen2(), "qwen2_logits_llamacpp_here.jsonl");
}

#[test]
fn qwen2_greedy_matches_llamacpp_run_here() {
    let lines = here("qwen2_greedy_llamacpp_here.jsonl");
    assert_eq!(lines.len(), 4);
    check_greedy_lines(
        &qwen2(),
        "qwen2.5-coder-0.5b (llama.cpp here)",
        lines,
        false,
        usize::MAX,
    );
}

/// Generation stops where llama.cpp's does: the end-of-generation tokens read from each
/// GGUF (eos, eot, the chat end markers, and for code models the fill-in-the-middle
/// ones) are the ids `llama_vocab_is_eog` accepts, recorded by
/// `scripts/llamacpp_eog.py` (llama-cpp-python 0.3.36).
#[test]
fn stop_tokens_are_llamacpps() {
    let lines = here("eog_llamacpp_here.jsonl");
    assert!(lines.len() >= 3, "{lines:?}");
    for line in lines {
        let name = line["model"].as_str().expect("model");
        let want = ids(&line["eog"]);
        let path = quire::models::find(name)
            .unwrap_or_else(|e| panic!("{name}: {e} (the test set-up fetches every model here)"));
        let tok = Tokenizer::open(&path).expect("tokenizer");
        let mut got = tok.eog_tokens().to_vec();
        got.sort_unstable();
        assert_eq!(got, want, "{name}: end-of-generation tokens");
        // End markers that were not control tokens in the file became ones: text
        // holding them tokenizes as llama.cpp's does.
        let probe = line["probe"].as_str().expect("probe");
        assert_eq!(
            tok.encode(probe, true).expect("encode"),
            ids(&line["probe_ids"]),
            "{name}: {probe:?}"
        );
    }
}
