//! LlamaIndex's `SentenceEmbeddingOptimizer`, replayed: the recorded cases
//! (`tests/fixtures/llamaindex_optimizer/`, written by
//! `scripts/llamaindex_optimizer_fixtures.py` with llama-index-core) give the same
//! sentences embedded, the same texts after it, and the same error when nothing is kept.

use quire::chat::optimizer::{Optimizer, ZERO_SENTENCES};
use quire::synth::Node;
use serde_json::Value;
use std::collections::HashMap;

fn opt_of(case: &Value) -> Optimizer {
    Optimizer {
        percentile_cutoff: case["percentile_cutoff"].as_f64(),
        threshold_cutoff: case["threshold_cutoff"].as_f64(),
        context_before: case["context_before"].as_u64().map(|v| v as usize),
        context_after: case["context_after"].as_u64().map(|v| v as usize),
    }
}

fn vector(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

#[test]
fn the_optimizer_keeps_what_llamaindex_keeps() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/llamaindex_optimizer");
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let fx: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let opt = opt_of(&fx["case"]);
        for run in fx["runs"].as_array().unwrap() {
            let table: HashMap<String, Vec<f32>> = run["embedded"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), vector(v)))
                .collect();
            let mut nodes: Vec<Node> = fx["texts"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, t)| Node::new(i.to_string(), t.as_str().unwrap()))
                .collect();
            let mut asked = Vec::new();
            let mut embed = |texts: &[&str]| -> quire::Result<Vec<Vec<f32>>> {
                texts
                    .iter()
                    .map(|t| {
                        asked.push(t.to_string());
                        table.get(*t).cloned().ok_or_else(|| {
                            quire::Error::Invalid(format!(
                                "{name}: LlamaIndex never embedded {t:?}"
                            ))
                        })
                    })
                    .collect()
            };
            let got = opt.postprocess(&mut nodes, &vector(&run["query_embedding"]), &mut embed);
            match run.get("error") {
                Some(e) => {
                    assert_eq!(e.as_str(), Some(ZERO_SENTENCES), "{name}");
                    let err = got.expect_err(&name).to_string();
                    assert!(err.contains(ZERO_SENTENCES), "{name}: {err}");
                }
                None => {
                    got.unwrap_or_else(|e| panic!("{name}: {e}"));
                    let want: Vec<&str> = run["texts"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| t.as_str().unwrap())
                        .collect();
                    let texts: Vec<&str> = nodes.iter().map(|n| n.text.as_str()).collect();
                    assert_eq!(texts, want, "{name}: {}", run["query"]);
                    let mut a = asked.clone();
                    a.sort();
                    a.dedup();
                    let mut w: Vec<&String> = table.keys().collect();
                    w.sort();
                    assert_eq!(
                        a.iter().collect::<Vec<_>>(),
                        w,
                        "{name}: the sentences embedded"
                    );
                }
            }
            cases += 1;
        }
    }
    assert_eq!(cases, 14, "every recorded case was replayed");
}

/// Through the engine with a real model: the optimizer shortens what the model reads
/// (fewer prompt tokens for the same question and sources), and the sources panel
/// still shows the whole passages.
#[test]
fn the_optimizer_shortens_the_prompt_and_keeps_the_sources_whole() {
    use crate::util;
    use quire::engine::{AskEvent, AskRequest, Engine};
    use quire::llm::Cancel;
    let (engine, _dir) = util::smollm2_engine(4, |_| {});
    let mut s = engine.settings();
    util::index_ok(&engine, &[util::shared().join("corpus/pdfs/wasysym.pdf")]);
    let ask = |engine: &Engine| {
        let (mut prompt, mut sources) = (0, Vec::new());
        engine
            .ask(
                AskRequest {
                    question: "Who made the wasy fonts, and which version do I need?".into(),
                    mode: Some("simple_summarize".into()),
                    ..Default::default()
                },
                &Cancel::new(),
                &mut |e| {
                    match e {
                        AskEvent::Sources { sources: s, .. } => {
                            sources = s.iter().map(|s| s.text.clone()).collect()
                        }
                        AskEvent::Done { stats, .. } => prompt = stats.prompt_tokens,
                        _ => {}
                    }
                    true
                },
            )
            .unwrap();
        (prompt, sources)
    };
    let (whole, whole_sources) = ask(&engine);
    s.optimizer_percentile = Some(0.3);
    engine.set_settings(s.clone()).unwrap();
    let (short, short_sources) = ask(&engine);
    assert!(whole > 0 && short > 0, "{whole} {short}");
    assert!(
        short < whole,
        "the optimizer's prompt ({short} tokens) is not shorter than {whole}"
    );
    assert_eq!(
        short_sources, whole_sources,
        "the sources panel shows the whole passages"
    );
    // Out of range is refused with a clear error, and nothing changes.
    s.optimizer_percentile = Some(1.5);
    let err = engine.set_settings(s).unwrap_err().to_string();
    assert!(err.contains("optimizer_percentile"), "{err}");
    assert_eq!(engine.settings().optimizer_percentile, Some(0.3));
}
