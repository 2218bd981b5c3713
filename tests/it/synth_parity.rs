//! Parity with llama-index-core: every fixture in `$QUIRE_PARITY_FIXTURES` (default
//! `../shared/fixtures/llamaindex`) is replayed with the scripted LLM (k-th call
//! answers `answer k`, one token per code point) and must produce the same prompts,
//! response and sources; so must the fixtures recorded with custom refine and simple
//! templates (`tests/fixtures/llamaindex_templates`, by
//! `scripts/llamaindex_template_fixtures.py`). Every fixture is replayed twice: through
//! the built-in mode, and through the mode written as building blocks the way a person
//! composes one in Settings (JSON, read as `CustomMode`), which must make the same
//! prompts: that is the test that the blocks are right.

use std::collections::BTreeMap;
use std::path::PathBuf;

use quire::llm::{Cancel, GenParams};
use quire::settings::CustomMode;
use quire::synth::{
    run, synthesize, Composed, Node, Request, ResponseMode, RunOptions, ScriptedLlm, Template,
    Templates,
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
    refine_template: Option<String>,
    #[serde(default)]
    simple_template: Option<String>,
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

/// The templates a fixture names (its QA template also summarizes, as the shared
/// fixtures pass it to tree_summarize as the summary template).
fn templates_of(fx: &Fixture) -> Templates {
    let mut t = match &fx.text_qa_template {
        Some(t) => Templates::custom(Template::new(t.clone())),
        None => Templates::default(),
    };
    if let Some(r) = &fx.refine_template {
        t.refine = Template::new(r.clone());
    }
    t.simple = fx.simple_template.clone().map(Template::new);
    t
}

/// Each built-in mode as a person writes it in Settings' `custom_modes`.
fn as_custom_mode(mode: ResponseMode) -> CustomMode {
    let blocks = match mode {
        ResponseMode::Refine => {
            r#""pack":"separate","combine":"refine","first":"qa","next":"refine""#
        }
        ResponseMode::Compact => {
            r#""pack":"compact","combine":"refine","first":"qa","next":"refine""#
        }
        ResponseMode::TreeSummarize => {
            r#""pack":"compact","combine":"tree","first":"summary","next":"summary""#
        }
        ResponseMode::SimpleSummarize => {
            r#""pack":"separate","combine":"single","first":"simple","next":"simple""#
        }
        ResponseMode::NoText => r#""pack":"separate","combine":"none","first":"qa","next":"qa""#,
        ResponseMode::Accumulate => {
            r#""pack":"separate","combine":"accumulate","first":"qa","next":"qa""#
        }
        ResponseMode::CompactAccumulate => {
            r#""pack":"compact","combine":"accumulate","first":"qa","next":"qa""#
        }
    };
    let json = format!(r#"{{"name":"my_{mode}","description":"",{blocks}}}"#);
    serde_json::from_str(&json).expect("a custom mode")
}

/// Run one fixture, through the built-in mode or (`composed`) the same mode as a
/// person's blocks; `Err` describes the first difference.
fn check(fx: &Fixture, composed: bool) -> Result<(), String> {
    let mode: ResponseMode = fx.mode.parse().map_err(|e| format!("{e}"))?;
    let templates = templates_of(fx);
    let req = Request {
        mode,
        templates: templates.clone(),
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
    let resp = if composed {
        let synth = Composed {
            blocks: as_custom_mode(mode).blocks,
            templates,
            answer_filter: false,
        };
        run(
            &synth,
            &llm,
            &req.options,
            &fx.query,
            &nodes,
            &Cancel::new(),
            &mut |_| Ok(true),
        )
    } else {
        synthesize(&llm, &req, &fx.query, &nodes, &Cancel::new(), &mut |_| {
            Ok(true)
        })
    };
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

/// Every fixture of the shared set and of the custom-template set.
fn all_fixtures() -> Vec<Fixture> {
    let dir = fixtures_dir();
    let mut fixtures: Vec<Fixture> = util::json_fixtures(&dir);
    assert!(!fixtures.is_empty(), "no fixtures in {}", dir.display());
    let templates = util::repo().join("tests/fixtures/llamaindex_templates");
    let custom: Vec<Fixture> = util::json_fixtures(&templates);
    assert!(
        custom.iter().any(|f| f.refine_template.is_some())
            && custom.iter().any(|f| f.simple_template.is_some()),
        "no custom refine and simple template fixtures in {}",
        templates.display()
    );
    fixtures.extend(custom);
    fixtures
}

#[test]
fn every_llamaindex_fixture_matches() {
    check_all(false);
}

#[test]
fn every_builtin_mode_written_as_blocks_matches_its_fixtures() {
    check_all(true);
}

fn check_all(composed: bool) {
    let fixtures = all_fixtures();
    let mut failures = Vec::new();
    for fx in &fixtures {
        if let Err(why) = check(fx, composed) {
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
