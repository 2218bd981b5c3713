//! Parity with llama-index-core for conversations: every fixture in
//! `tests/fixtures/llamaindex_chat` (recorded by `scripts/llamaindex_chat_fixtures.py`
//! the way the response-mode fixtures were: a scripted LLM, one token per code point)
//! is replayed through Quire's chat engines, citation engine and LLM reranker, and must
//! send the same prompts in the same order and end with the same answer, standalone
//! question, numbered sources and ranking.

use std::path::PathBuf;

use quire::chat::{citation, condense, memory, rerank, ChatMode, Message};
use quire::llm::{Cancel, GenParams};
use quire::synth::splitter::count_chars;
use quire::synth::{
    self, synthesize, with_ctx, Node, Request, ResponseMode, RunOptions, ScriptedLlm, Templates,
};

use crate::util;

#[derive(serde::Deserialize)]
struct Turn {
    role: String,
    content: String,
}

#[derive(serde::Deserialize)]
struct Fixture {
    name: String,
    kind: String,
    #[serde(default)]
    mode: Option<String>,
    query: String,
    #[serde(default)]
    history: Vec<Turn>,
    chunks: Vec<String>,
    context_window: usize,
    num_output: usize,
    #[serde(default)]
    token_limit: Option<usize>,
    #[serde(default)]
    cite: bool,
    #[serde(default)]
    citation_chunk_size: Option<usize>,
    #[serde(default)]
    citation_chunk_overlap: Option<usize>,
    #[serde(default)]
    choice_batch_size: Option<usize>,
    #[serde(default)]
    top_n: Option<usize>,
    #[serde(default)]
    replies: Option<Vec<String>>,
    expected_prompts: Vec<String>,
    #[serde(default)]
    expected_response: Option<String>,
    #[serde(default)]
    expected_condensed: Option<String>,
    #[serde(default)]
    expected_source_texts: Option<Vec<String>>,
    #[serde(default)]
    expected_ranked: Option<Vec<(String, f64)>>,
}

fn fixtures_dir() -> PathBuf {
    util::repo().join("tests/fixtures/llamaindex_chat")
}

/// What one fixture's run produced.
#[derive(Default)]
struct Outcome {
    response: Option<String>,
    condensed: Option<String>,
    source_texts: Option<Vec<String>>,
    ranked: Option<Vec<(String, f64)>>,
}

fn run(fx: &Fixture, llm: &ScriptedLlm) -> Result<Outcome, String> {
    let e = |e: quire::Error| format!("error: {e}");
    let nodes: Vec<Node> = fx
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| Node::new(format!("n{i}"), c.clone()))
        .collect();
    let opts = RunOptions {
        context_window: Some(fx.context_window),
        params: GenParams {
            max_tokens: fx.num_output,
            ..GenParams::default()
        },
        batch: true,
        ..RunOptions::default()
    };
    let mode: ResponseMode = fx.mode.as_deref().unwrap_or("compact").parse().map_err(e)?;
    let cancel = Cancel::new();
    let mut quiet = |_: synth::Event| Ok(true);
    let synth = |templates: Templates, query: &str, nodes: &[Node]| {
        let req = Request {
            mode,
            templates,
            answer_filter: false,
            options: opts.clone(),
        };
        synthesize(llm, &req, query, nodes, &Cancel::new(), &mut |_| Ok(true))
    };
    let numbered = |nodes: &[Node]| {
        citation::number_sources(
            nodes,
            fx.citation_chunk_size.unwrap_or(citation::CHUNK_SIZE),
            fx.citation_chunk_overlap.unwrap_or(citation::CHUNK_OVERLAP),
            &count_chars,
        )
    };
    let mut out = Outcome::default();
    match fx.kind.as_str() {
        "condense_question" | "condense_plus_context" => {
            let chat_mode: ChatMode = fx.kind.parse().map_err(e)?;
            let history: Vec<Message> = fx
                .history
                .iter()
                .map(|t| Message::new(t.role.clone(), t.content.clone()))
                .collect();
            let limit = fx.token_limit.ok_or("no token_limit")?;
            let memory = memory::window(&history, limit, &count_chars).map_err(e)?;
            let (q, _) = with_ctx(llm, &opts, &cancel, &mut quiet, |ctx| {
                condense::condense(ctx, chat_mode, &memory, &fx.query)
            })
            .map_err(e)?;
            let resp = if chat_mode == ChatMode::CondenseQuestion {
                synth(Templates::default(), &q, &nodes)
            } else {
                let (nodes, system) = if fx.cite {
                    (numbered(&nodes).map_err(e)?.0, citation::CITE_SYSTEM_PROMPT)
                } else {
                    (nodes.clone(), "")
                };
                synth(
                    condense::context_templates(&memory, system),
                    &fx.query,
                    &nodes,
                )
            }
            .map_err(e)?;
            out.condensed = Some(q);
            out.source_texts = Some(resp.sources.iter().map(|n| n.text.clone()).collect());
            out.response = Some(resp.answer);
        }
        "citation" => {
            let (nodes, _) = numbered(&nodes).map_err(e)?;
            let resp = synth(citation::templates(), &fx.query, &nodes).map_err(e)?;
            out.source_texts = Some(resp.sources.iter().map(|n| n.text.clone()).collect());
            out.response = Some(resp.answer);
        }
        "rerank" => {
            let (ranked, _) = with_ctx(llm, &opts, &cancel, &mut quiet, |ctx| {
                rerank::rerank(
                    ctx,
                    &fx.query,
                    &nodes,
                    fx.choice_batch_size.unwrap_or(rerank::BATCH_SIZE),
                    fx.top_n.unwrap_or(10),
                )
            })
            .map_err(e)?;
            out.ranked = Some(
                ranked
                    .iter()
                    .map(|r| (nodes[r.node].id.clone(), r.score))
                    .collect(),
            );
        }
        k => return Err(format!("unknown kind {k}")),
    }
    Ok(out)
}

fn check(fx: &Fixture) -> Result<(), String> {
    let llm = match &fx.replies {
        Some(r) => ScriptedLlm::replaying(fx.context_window, r.clone()),
        None => ScriptedLlm::new(fx.context_window),
    };
    let outcome = run(fx, &llm);
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
    let out = outcome?;
    if let Some(want) = &fx.expected_response {
        let got = out.response.unwrap_or_default();
        if &got != want {
            return Err(format!("response differs {}", util::first_diff(want, &got)));
        }
    }
    if fx.expected_condensed.is_some() && out.condensed != fx.expected_condensed {
        return Err(format!(
            "searched for {:?}, expected {:?}",
            out.condensed, fx.expected_condensed
        ));
    }
    if let Some(want) = &fx.expected_source_texts {
        let got = out.source_texts.unwrap_or_default();
        if &got != want {
            let i = want.iter().zip(&got).take_while(|(a, b)| a == b).count();
            return Err(format!(
                "source texts differ ({} vs {}) at {i}: {}",
                want.len(),
                got.len(),
                util::first_diff(
                    want.get(i).map_or("", String::as_str),
                    got.get(i).map_or("", String::as_str)
                )
            ));
        }
    }
    if fx.expected_ranked.is_some() && out.ranked != fx.expected_ranked {
        return Err(format!(
            "ranked {:?}, expected {:?}",
            out.ranked, fx.expected_ranked
        ));
    }
    Ok(())
}

#[test]
fn every_llamaindex_chat_fixture_matches() {
    let dir = fixtures_dir();
    let fixtures: Vec<Fixture> = util::json_fixtures(&dir);
    assert!(
        fixtures.len() >= 30,
        "fixtures missing in {}",
        dir.display()
    );
    let mut failures = Vec::new();
    for fx in &fixtures {
        if let Err(why) = check(fx) {
            failures.push(format!("  {} ({}): {why}", fx.name, fx.kind));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} chat fixtures differ:\n{}",
        failures.len(),
        fixtures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_first_message_goes_straight_through() {
    // No history: no condensing call, the message is what is searched for.
    let llm = ScriptedLlm::new(4000);
    let (q, calls) = with_ctx(
        &llm,
        &RunOptions::default(),
        &Cancel::new(),
        &mut |_| Ok(true),
        |ctx| condense::condense(ctx, ChatMode::CondensePlusContext, &[], "What is X?"),
    )
    .unwrap();
    assert_eq!(q, "What is X?");
    assert!(calls.is_empty() && llm.prompts().is_empty());
}

#[test]
fn history_braces_are_text_not_placeholders() {
    // A LaTeX answer in the history (`\ch{H2O}`) neither fails the template check
    // nor gets filled.
    let history = vec![
        Message::user("How do I write water?"),
        Message::assistant("Use \\ch{H2O} and {query_str}."),
    ];
    let t = condense::context_templates(&history, "");
    let b = quire::synth::Builtin {
        mode: ResponseMode::Compact,
        templates: t.clone(),
        answer_filter: false,
    };
    use quire::synth::Synthesizer;
    b.check(&Default::default()).unwrap();
    let mut vals = quire::synth::Vars::new();
    vals.insert("query_str".into(), "Q".into());
    vals.insert("context_str".into(), "C".into());
    let text = t.text_qa.format(&vals);
    assert!(text.contains("Use \\ch{H2O} and {query_str}."), "{text}");
    assert!(text.ends_with("user: Q\nassistant: "), "{text}");
}
