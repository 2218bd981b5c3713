//! Synthesis with the real default model (SmolLM2-135M-Instruct, chat-wrapped): every
//! mode answers and streams its answer; structured answer filtering gives valid JSON
//! by construction (constrained decoding) and the answer follows the satisfied steps.

#![allow(clippy::unwrap_used)]

use std::sync::OnceLock;

use quire::llm::{Cancel, GenParams, GgufLlm, Llm, LoadOptions};
use quire::synth::{
    parse_answer_filter, synthesize, Event, Node, Request, ResponseMode, RunOptions,
};

use crate::util;

fn model() -> &'static GgufLlm {
    static M: OnceLock<GgufLlm> = OnceLock::new();
    M.get_or_init(|| {
        let opts = LoadOptions {
            chat: true,
            max_context: 2048,
            ..LoadOptions::default()
        };
        GgufLlm::load_with(util::smollm2(), &opts).expect("load default LLM")
    })
}

fn nodes() -> Vec<Node> {
    vec![
        Node::new(
            "a",
            "The Quire river flows north from the Alder mountains to the Grey sea. \
             Its source is a glacier lake called Tarn Elka, at 2100 metres.",
        ),
        Node::new(
            "b",
            "Bridges over the Quire: the Old Bridge (1420), built of stone, and the \
             Iron Bridge (1889). The Old Bridge has seven arches.",
        ),
        Node::new(
            "c",
            "The town of Vell lies at the mouth of the Quire. It is known for salted \
             herring and a lighthouse painted red.",
        ),
    ]
}

/// The window for packing: `window` less the chat template's wrapping.
fn packing_window(window: usize) -> usize {
    let llm = model();
    let wrap = llm.count_tokens(&llm.render_prompt("").unwrap()).unwrap();
    assert!(wrap > 0, "the default model is chat-wrapped");
    window - wrap
}

fn request(mode: ResponseMode, window: usize) -> Request {
    Request {
        mode,
        options: RunOptions {
            context_window: Some(packing_window(window)),
            params: GenParams {
                max_tokens: 16,
                ..GenParams::default()
            },
            ..RunOptions::default()
        },
        ..Request::default()
    }
}

#[test]
fn every_mode_answers_and_streams_with_the_real_model() {
    let llm = model();
    for mode in ResponseMode::ALL {
        let mut streamed = String::new();
        let mut steps = 0;
        let r = synthesize(
            llm,
            &request(mode, 1000),
            "How many arches does the Old Bridge have?",
            &nodes(),
            &Cancel::new(),
            &mut |e| {
                match e {
                    Event::Token {
                        text,
                        is_final: true,
                        ..
                    } => streamed.push_str(&text),
                    Event::Step { .. } => steps += 1,
                    _ => {}
                }
                Ok(true)
            },
        )
        .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(r.sources.len(), 3);
        assert_eq!(steps, r.calls.len(), "{mode}");
        if mode == ResponseMode::NoText {
            assert!(r.calls.is_empty());
            continue;
        }
        assert!(!r.calls.is_empty(), "{mode}");
        assert!(!r.answer.trim().is_empty(), "{mode}");
        assert_eq!(
            streamed, r.answer,
            "{mode}: streamed text differs from the answer"
        );
        for c in &r.calls {
            // the runtime counts the chat-wrapped prompt: at least the raw prompt
            assert!(
                c.prompt_tokens >= llm.count_tokens(&c.prompt).unwrap(),
                "{mode}"
            );
            assert!(c.prompt_tokens <= 1000, "{mode}: prompt over the window");
            assert!(c.output_tokens <= 16, "{mode}");
        }
        if matches!(mode, ResponseMode::Refine | ResponseMode::Accumulate) {
            assert_eq!(r.calls.len(), 3, "{mode}: one call per node");
        }
    }
}

#[test]
fn answer_filtering_gives_valid_json_with_the_real_model() {
    let llm = model();
    for mode in [ResponseMode::Refine, ResponseMode::Compact] {
        let mut req = request(mode, 1400);
        req.answer_filter = true;
        req.options.params.max_tokens = 60;
        let r = synthesize(
            llm,
            &req,
            "Where is the source of the Quire river?",
            &nodes(),
            &Cancel::new(),
            &mut |_| Ok(true),
        )
        .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert!(!r.calls.is_empty());
        let mut expected = None;
        for c in &r.calls {
            let f = parse_answer_filter(&c.output)
                .unwrap_or_else(|e| panic!("{mode}: step {} not valid JSON: {e}", c.step));
            assert!(c.output.trim_start().starts_with("{\"query_satisfied\": "));
            if f.query_satisfied && !f.answer.is_empty() {
                expected = Some(f.answer);
            }
        }
        assert_eq!(
            r.answer,
            expected.unwrap_or_else(|| "Empty Response".into()),
            "{mode}"
        );
    }
}

/// An engine over a temporary data directory holding one small corpus PDF, with short
/// answers.
fn engine() -> (quire::engine::Engine, tempfile::TempDir) {
    use quire::engine::{Engine, EngineConfig, IndexEvent};
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(Some(dir.path().to_path_buf())).unwrap()).unwrap();
    let mut s = engine.settings();
    s.max_tokens = 16;
    engine.set_settings(s).unwrap();
    let pdf = util::shared().join("corpus/pdfs/wasysym.pdf");
    let mut failed = Vec::new();
    engine
        .index(&[pdf], &Cancel::new(), &mut |ev| {
            if let IndexEvent::FileFailed { reason, .. } = ev {
                failed.push(reason);
            }
            true
        })
        .unwrap();
    assert!(failed.is_empty(), "{failed:?}");
    (engine, dir)
}

fn ask(
    engine: &quire::engine::Engine,
    mode: &str,
    overrides: quire::engine::AskOverrides,
) -> (quire::Result<()>, Vec<quire::engine::AskEvent>) {
    let req = quire::engine::AskRequest {
        question: "Which symbols does wasysym provide?".into(),
        mode: Some(mode.into()),
        overrides,
        ..Default::default()
    };
    let mut events = Vec::new();
    let r = engine.ask(req, &Cancel::new(), &mut |e| {
        events.push(e);
        true
    });
    (r, events)
}

#[test]
fn ask_overrides_reach_the_prompt_and_bad_templates_fail_first() {
    use quire::engine::{AskEvent, AskOverrides};
    let (engine, _dir) = engine();
    let tmpl = "Facts:\n{context_str}\nAnswer in a {tone_name} tone.\nQ: {query_str}\nA: ";

    // Missing {query_str}: an error naming it, before anything runs or is kept.
    let (r, events) = ask(
        &engine,
        "compact",
        AskOverrides {
            template: Some("Facts: {context_str}\nA: ".into()),
            ..Default::default()
        },
    );
    let e = r.unwrap_err();
    assert!(matches!(e, quire::Error::Template(_)), "{e}");
    assert!(e.to_string().contains("query_str"), "{e}");
    assert!(events.is_empty(), "{events:?}");
    assert!(engine.conversations().unwrap().is_empty());

    // A variable nobody supplied.
    let (r, events) = ask(
        &engine,
        "tree_summarize",
        AskOverrides {
            template: Some(tmpl.into()),
            ..Default::default()
        },
    );
    let e = r.unwrap_err();
    assert!(e.to_string().contains("tone_name"), "{e}");
    assert!(events.is_empty(), "{events:?}");

    // Supplied: the template, the variable and top_k reach the run.
    let vars = [("tone_name".to_string(), "pirate".to_string())].into();
    let (r, events) = ask(
        &engine,
        "simple_summarize",
        AskOverrides {
            template: Some(tmpl.into()),
            vars,
            top_k: Some(2),
            max_tokens: Some(8),
            ..Default::default()
        },
    );
    r.unwrap();
    let sources = events.iter().find_map(|e| match e {
        AskEvent::Sources { sources, .. } => Some(sources.len()),
        _ => None,
    });
    assert_eq!(sources, Some(2));
    let prompts: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            AskEvent::Prompt { prompt, .. } => Some(prompt),
            _ => None,
        })
        .collect();
    assert_eq!(prompts.len(), 1);
    assert!(prompts[0].starts_with("Facts:\n"), "{}", prompts[0]);
    assert!(prompts[0].contains("in a pirate tone"), "{}", prompts[0]);
    assert!(prompts[0].contains("Q: Which symbols does wasysym provide?"));
    match events.last() {
        Some(AskEvent::Done { stats, .. }) => {
            assert_eq!(stats.llm_calls, 1);
            assert!(stats.output_tokens <= 8, "{stats:?}");
        }
        other => panic!("last event {other:?}"),
    }
    // The settings themselves are untouched.
    assert_eq!(engine.settings().top_k, 4);
    assert!(engine.settings().text_qa_template.is_none());
}
