//! Parity with llama-index-core: every fixture in `$QUIRE_PARITY_FIXTURES` (default
//! `../shared/fixtures/llamaindex`) is replayed with the scripted LLM (k-th call
//! answers `answer k`, one token per code point) and must produce the same prompts,
//! response and sources.

use std::collections::BTreeMap;
use std::path::PathBuf;

use quire::llm::{Cancel, GenParams};
use quire::synth::{
    synthesize, Node, Request, ResponseMode, RunOptions, ScriptedLlm, Template, Templates,
};

use crate::util;

#[derive(serde::Deserialize)]
struct Fixture {
    name: String,
    mode: String,
    query: String,
    chunks: Vec<String>,
    context_window: usize,
    num_output: usize,
    text_qa_template: Option<String>,
    #[serde(default)]
    extra_vars: BTreeMap<String, String>,
    expected_prompts: Vec<String>,
    expected_response: String,
    expected_source_ids: Vec<String>,
}

fn fixtures_dir() -> PathBuf {
    std::env::var_os("QUIRE_PARITY_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| util::shared().join("fixtures/llamaindex"))
}

/// Run one fixture; `Err` describes the first difference.
fn check(fx: &Fixture) -> Result<(), String> {
    let mode: ResponseMode = fx.mode.parse().map_err(|e| format!("{e}"))?;
    let templates = match &fx.text_qa_template {
        Some(t) => Templates::custom(Template::new(t.clone())),
        None => Templates::default(),
    };
    let req = Request {
        mode,
        templates,
        answer_filter: false,
        options: RunOptions {
            context_window: Some(fx.context_window),
            params: GenParams {
                max_tokens: fx.num_output,
                ..GenParams::default()
            },
            vars: fx.extra_vars.clone(),
            // A batch of independent calls must send LlamaIndex's prompts in its order.
            batch: true,
            first_step: 0,
        },
    };
    let llm = ScriptedLlm::new(fx.context_window);
    let nodes: Vec<Node> = fx
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| Node::new(format!("n{i}"), c.clone()))
        .collect();
    let resp = synthesize(&llm, &req, &fx.query, &nodes, &Cancel::new(), &mut |_| {
        Ok(true)
    });
    let got = llm.prompts();
    for (i, (e, g)) in fx.expected_prompts.iter().zip(&got).enumerate() {
        if e != g {
            return Err(format!(
                "prompt {} differs {}",
                i + 1,
                util::first_diff(e, g)
            ));
        }
    }
    if got.len() != fx.expected_prompts.len() {
        return Err(format!(
            "{} prompts, expected {}",
            got.len(),
            fx.expected_prompts.len()
        ));
    }
    let resp = resp.map_err(|e| format!("error: {e}"))?;
    if resp.answer != fx.expected_response {
        return Err(format!(
            "response differs {}",
            util::first_diff(&fx.expected_response, &resp.answer)
        ));
    }
    let ids: Vec<&str> = resp.sources.iter().map(|n| n.id.as_str()).collect();
    if ids != fx.expected_source_ids {
        return Err(format!(
            "sources {ids:?}, expected {:?}",
            fx.expected_source_ids
        ));
    }
    if resp.calls.len() != got.len() {
        return Err(format!(
            "{} calls recorded, {} made",
            resp.calls.len(),
            got.len()
        ));
    }
    Ok(())
}

#[test]
fn every_llamaindex_fixture_matches() {
    let dir = fixtures_dir();
    let fixtures: Vec<Fixture> = util::json_fixtures(&dir);
    assert!(!fixtures.is_empty(), "no fixtures in {}", dir.display());
    let mut failures = Vec::new();
    for fx in &fixtures {
        if let Err(why) = check(fx) {
            failures.push(format!("  {} ({}): {why}", fx.name, fx.mode));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures differ:\n{}",
        failures.len(),
        fixtures.len(),
        failures.join("\n")
    );
}
