//! The local LLM runtime against llama.cpp's reference outputs.

use std::path::{Path, PathBuf};

use quire::llm::tokenizer::Tokenizer;

use crate::util;

fn reference(model: &str, file: &str) -> Vec<serde_json::Value> {
    let p = util::shared()
        .join("reference/llamacpp")
        .join(model)
        .join(file);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("reference line is JSON"))
        .collect()
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .expect("ids array")
        .iter()
        .map(|x| x.as_u64().expect("id") as u32)
        .collect()
}

/// The optional Gemma 3 270M file, when it was fetched.
fn gemma() -> Option<PathBuf> {
    quire::models::find("gemma-3-270m-q4_k_m.gguf").ok()
}

fn check_tokenizer(path: &Path, model: &str) {
    let tok = Tokenizer::open(path).expect("tokenizer");
    let mut bad = Vec::new();
    let lines = reference(model, "tokenize.jsonl");
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
    check_tokenizer(&util::default_llm(), "SmolLM2-135M-Instruct.Q4_1");
}

#[test]
fn tokenizer_matches_llamacpp_gemma3() {
    let Some(p) = gemma() else {
        eprintln!("skipped: gemma-3-270m-q4_k_m.gguf not fetched (models/fetch.sh --gemma)");
        return;
    };
    check_tokenizer(&p, "gemma-3-270m-q4_k_m");
}
