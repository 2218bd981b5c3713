//! The GPU path (candle's forward pass and candle's BERT) against Quire's own CPU
//! kernels. The candle path runs on any candle device, the CPU included, so the tests
//! that prove it agrees with the own kernels run everywhere; only the runs on an
//! actual CUDA device are `#[ignore]`d ("needs an NVIDIA GPU").

use std::path::{Path, PathBuf};

use quire::embed::bert::BertEmbedder;
use quire::embed::Embedder;
use quire::llm::{Cancel, DeviceChoice, GenParams, GgufLlm, Llm, LoadOptions};

use crate::util;
use crate::util::cosine;
use crate::util::jsonl;

/// The greedy reference prompts of a model (the ones its llama.cpp parity uses).
fn prompts(model: &str) -> Vec<String> {
    let p = match model {
        "smollm2" => {
            util::shared().join("reference/llamacpp/SmolLM2-135M-Instruct.Q4_1/greedy.jsonl")
        }
        "gemma3" => util::repo().join("tests/data/gemma3_greedy_llamacpp_here.jsonl"),
        _ => util::repo().join("tests/data/qwen2_greedy_llamacpp_here.jsonl"),
    };
    jsonl(&p)
        .iter()
        .map(|l| l["prompt"].as_str().expect("prompt").to_string())
        .collect()
}

fn model(name: &str) -> PathBuf {
    match name {
        "smollm2" => util::smollm2(),
        "gemma3" => quire::models::find("gemma-3-270m-q4_k_m.gguf").expect("gemma 3 270m"),
        _ => quire::models::default_llm().expect("the default LLM"),
    }
}

fn load(path: &Path, device: DeviceChoice, candle: bool) -> GgufLlm {
    let opts = LoadOptions {
        device,
        candle,
        ..LoadOptions::default()
    };
    GgufLlm::load_with(path, &opts).expect("load")
}

/// Greedy ids of the candle path on `device` against the own kernels on the CPU, per
/// prompt (`n` generated): how many leading tokens agree, and where they part, by how
/// much the own kernels preferred their token over the candle path's (the margin of
/// a near-tie, in logits; 0 when all agree).
fn greedy_agreement(name: &str, device: DeviceChoice, n: usize) -> Vec<(usize, usize, f32)> {
    let path = model(name);
    let own = load(&path, DeviceChoice::Cpu, false);
    let other = load(&path, device, true);
    assert_eq!(own.runtime(), "own CPU kernels");
    assert!(
        other.runtime().starts_with("candle on "),
        "{}",
        other.runtime()
    );
    let mut out = Vec::new();
    for prompt in prompts(name) {
        let ids = own.tokenizer().encode_prompt(&prompt).expect("encode");
        own.reset_cache().expect("reset");
        other.reset_cache().expect("reset");
        let want = own.greedy_ids(&ids, n).expect("own");
        let got = other.greedy_ids(&ids, n).expect("candle");
        let same = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
        let margin = match (want.get(same), got.get(same)) {
            (Some(&w), Some(&g)) => {
                let l = own.forced_logits(&ids, &want[..same]).expect("logits");
                let l = l.last().expect("logits");
                l[w as usize] - l[g as usize]
            }
            _ => 0.0,
        };
        eprintln!(
            "{name} on {}: {same}/{} greedy tokens agree for {:?} (margin where they part: {margin:.3})",
            other.device().name,
            want.len(),
            &prompt[..prompt.len().min(50)]
        );
        out.push((same, want.len(), margin));
    }
    out
}

/// Greedy output agrees with the own kernels' until a near-tie: where the two part,
/// the own kernels' token led the candle path's by less than `tie` logits (candle
/// quantizes activations differently from llama.cpp, which moves logits by up to
/// ~1.5 here), and in all at least `need` of the first 16 tokens agree per prompt on
/// average.
fn check_greedy(name: &str, device: DeviceChoice, need: usize, tie: f32) {
    let r = greedy_agreement(name, device, 16);
    let mean = r.iter().map(|x| x.0).sum::<usize>() as f64 / r.len() as f64;
    assert!(mean >= need as f64, "{name}: {r:?}");
    for (same, of, margin) in &r {
        assert!(same == of || *margin < tie, "{name}: {r:?}");
    }
}

#[test]
fn candle_path_greedy_agrees_with_own_kernels_smollm2() {
    check_greedy("smollm2", DeviceChoice::Cpu, 8, 1.0);
}

#[test]
fn candle_path_greedy_agrees_with_own_kernels_qwen2() {
    check_greedy("qwen2", DeviceChoice::Cpu, 8, 1.0);
}

#[test]
fn candle_path_greedy_agrees_with_own_kernels_gemma3() {
    check_greedy("gemma3", DeviceChoice::Cpu, 6, 1.0);
}

/// The same `Llm` behaviour on the candle path: streaming, stop strings, chat
/// templates, prefix reuse giving the same text, cancellation.
#[test]
fn candle_path_streams_reuses_prefixes_and_cancels() {
    let llm = load(&util::smollm2(), DeviceChoice::Cpu, true);
    let params = GenParams {
        max_tokens: 12,
        temperature: 0.0,
        ..GenParams::default()
    };
    let mut streamed = String::new();
    let (first, stats) = llm
        .complete_stats(
            "What is the capital of France?",
            &params,
            &Cancel::new(),
            &mut |s: &str| {
                streamed.push_str(s);
                Ok(true)
            },
        )
        .expect("complete");
    assert_eq!(streamed, first.text);
    assert!(!first.text.is_empty());
    assert_eq!(stats.reused_tokens, 0);
    // The same prompt again: its prefix comes from the cache, the text is the same.
    let (again, stats) = llm
        .complete_stats(
            "What is the capital of France?",
            &params,
            &Cancel::new(),
            &mut |_: &str| Ok(true),
        )
        .expect("complete again");
    assert!(stats.reused_tokens > 0, "{stats:?}");
    assert_eq!(again.text, first.text);
    // The own kernels say the same.
    let own = load(&util::smollm2(), DeviceChoice::Cpu, false);
    let mine = own
        .complete(
            "What is the capital of France?",
            &params,
            &Cancel::new(),
            &mut |_: &str| Ok(true),
        )
        .expect("own");
    assert_eq!(first.text, mine.text, "candle and the own kernels differ");
    // A chat through the template.
    let chat = llm
        .chat(
            &[quire::llm::chat::Message::user("Say hello.")],
            &params,
            &Cancel::new(),
            &mut |_: &str| Ok(true),
        )
        .expect("chat");
    assert!(chat.output_tokens > 0);
    // Cancelled before it starts.
    let cancel = Cancel::new();
    cancel.cancel();
    let e = llm.complete("Hello", &params, &cancel, &mut |_: &str| Ok(true));
    assert!(matches!(e, Err(quire::Error::Cancelled)), "{e:?}");
}

const TEXTS: &[&str] = &[
    "The cat sat on the mat.",
    "Quire answers questions about your PDFs with a local model.",
    "Reciprocal rank fusion merges the vector and BM25 rankings.",
    "x",
    "A longer passage, so that the batch is padded: the encoder must mask the padding \
     positions out of attention and out of the mean, or the short texts' vectors move.",
];

/// Candle's BERT (in f32, the dtype it runs in on a GPU) against the own encoder.
fn check_embeddings(device: DeviceChoice, min: f64) {
    let dir = util::default_embedder();
    let own = BertEmbedder::open(&dir).expect("own");
    let want = own.embed(TEXTS).expect("own embed");
    let chosen = device.resolve().expect("device");
    for dtype in [candle_core::DType::F32] {
        let other = BertEmbedder::open_on(&dir, &chosen.device, Some(dtype)).expect("candle bert");
        let got = other.embed(TEXTS).expect("candle embed");
        let alone = other.embed(&TEXTS[..1]).expect("one");
        let q = other.embed_query(TEXTS[1]).expect("query");
        assert!(
            got.iter()
                .chain([&alone[0], &q])
                .flatten()
                .all(|x| x.is_finite()),
            "{dtype:?}: not finite: {:?}",
            &got[0][..4]
        );
        let mut worst = 1f64;
        for (g, w) in got.iter().zip(&want) {
            worst = worst.min(cosine(g, w));
        }
        worst = worst.min(cosine(&alone[0], &want[0]));
        worst = worst.min(cosine(&q, &own.embed_query(TEXTS[1]).expect("q")));
        eprintln!(
            "candle BERT on {} in {dtype:?}: worst cosine {worst:.6} (1 - cos = {:.1e})",
            chosen.name,
            1.0 - worst
        );
        assert!(worst >= min, "{dtype:?}: worst cosine {worst}");
    }
}

#[test]
fn candle_bert_matches_own_encoder() {
    check_embeddings(DeviceChoice::Cpu, 0.999);
}

#[test]
#[ignore = "needs an NVIDIA GPU and a build with --features cuda (make build-cuda)"]
fn cuda_greedy_agrees_with_own_kernels() {
    for name in ["smollm2", "qwen2", "gemma3"] {
        check_greedy(name, DeviceChoice::Cuda(0), 8, 1.0);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and a build with --features cuda (make build-cuda)"]
fn cuda_embeddings_match_own_encoder() {
    check_embeddings(DeviceChoice::Cuda(0), 0.999);
}

/// Without a GPU compiled in, asking for one is an error naming the missing
/// feature, and `auto` loads on the CPU saying why.
#[test]
#[cfg_attr(
    feature = "cuda",
    ignore = "a CUDA build has the GPU compiled in: gpu::cuda_* check it"
)]
fn a_gpu_not_compiled_in_is_a_clear_error() {
    let opts = LoadOptions {
        device: DeviceChoice::Cuda(0),
        ..LoadOptions::default()
    };
    let e = GgufLlm::load_with(util::smollm2(), &opts).expect_err("no cuda here");
    assert!(e.to_string().contains("--features cuda"), "{e}");
    let auto = load(&util::smollm2(), DeviceChoice::Auto, false);
    assert_eq!(auto.runtime(), "own CPU kernels");
    assert!(
        auto.device().reason.starts_with("auto:"),
        "{:?}",
        auto.device()
    );
}

/// The device setting through the engine: an unknown name is refused, the status
/// says where the models run and why, and a GPU this build lacks is a problem the
/// status names (and an error when a model loads), never a panic.
#[test]
fn the_device_setting_through_the_engine() {
    use quire::engine::{Engine, EngineConfig};
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(Some(dir.path().to_path_buf())).unwrap()).unwrap();
    assert_eq!(engine.settings().device, "auto");
    let st = engine.status();
    if quire::llm::device::compiled_gpus().is_empty() {
        assert!(st.device.starts_with("cpu (auto: "), "{}", st.device);
    }
    let mut s = engine.settings();
    s.device = "tpu".into();
    let e = engine.set_settings(s.clone()).expect_err("unknown device");
    assert!(e.to_string().contains("unknown device"), "{e}");
    s.device = "cpu".into();
    engine.set_settings(s.clone()).expect("cpu");
    assert_eq!(engine.status().device, "cpu (asked for)");
    if !cfg!(feature = "cuda") {
        s.device = "cuda:1".into();
        engine.set_settings(s).expect("a valid name is kept");
        let st = engine.status();
        assert!(st.device.starts_with("unavailable"), "{}", st.device);
        assert!(
            st.problems.iter().any(|p| p.contains("--features cuda")),
            "{:?}",
            st.problems
        );
        let e = engine.embedder().map(|_| ()).expect_err("no cuda");
        assert!(e.to_string().contains("--features cuda"), "{e}");
    }
}
