//! Answers you can check, through the engine with the real default models: a scripted
//! answer (a synthesizer registered on the engine that writes it, reading the
//! numbered sources it is given) with one sentence the documents hold, one they do
//! not, and one whose `[N]` points at the wrong source; the support check labels all
//! three, the quotes come with the sources, both are kept with the message; and the
//! extractive mode answers with the quotes and no LLM call.

use std::sync::Arc;

use quire::engine::{AskEvent, AskRequest, Engine, EngineConfig};
use quire::llm::Cancel;
use quire::support::{Support, Verdict};
use quire::synth::{Ctx, Node, Synthesizer};

use crate::util;

const LIGHT: &str = "Its light flashes once every five seconds";
const KEEPERS: &str = "The keepers left the lighthouse in 1989";

/// Writes the scripted answer: the keepers sentence citing its own source, an
/// invented sentence, and the light sentence citing the keepers' source.
struct Scripted;

impl Synthesizer for Scripted {
    fn answer(&self, _ctx: &mut Ctx<'_>, _query: &str, nodes: &[Node]) -> quire::Result<String> {
        let number = |needle: &str| {
            nodes
                .iter()
                .find(|n| n.text.contains(needle))
                .and_then(|n| n.text.strip_prefix("Source "))
                .and_then(|t| t.split(':').next())
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0)
        };
        let keepers = number("keepers left");
        Ok(format!(
            "{KEEPERS} [{keepers}]. The tower was painted green by Napoleon's engineers in 1802. \
             {LIGHT} [{keepers}]."
        ))
    }
}

fn library() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    util::write_pdf(
        &docs.join("fastnet.pdf"),
        &[format!(
            "The Fastnet lighthouse stands on a rock off the coast of Ireland.\n{LIGHT}.\nIt was built of granite blocks cut in Cornwall."
        )],
    );
    util::write_pdf(
        &docs.join("keepers.pdf"),
        &[format!(
            "Life on the rock was hard for the crew.\n{KEEPERS}.\nSince then the light has been automatic and watched from Dublin."
        )],
    );
    let engine = Engine::open(EngineConfig::new(Some(dir.path().join("data"))).unwrap())
        .unwrap()
        .with_synthesizer("scripted", "the test's answer", Arc::new(Scripted))
        .unwrap();
    let mut s = engine.settings();
    s.cite_sources = true;
    // Two tiny documents: every question is "covered".
    s.not_found_threshold = Some(0.0);
    engine.set_settings(s).unwrap();
    let files = vec![docs.join("fastnet.pdf"), docs.join("keepers.pdf")];
    engine.index(&files, &Cancel::new(), &mut |_| true).unwrap();
    (dir, engine)
}

fn ask(engine: &Engine, mode: &str) -> Vec<AskEvent> {
    let mut events = Vec::new();
    let req = AskRequest {
        question:
            "When did the keepers leave the Fastnet lighthouse, and how often does its light flash?"
                .into(),
        mode: Some(mode.into()),
        ..Default::default()
    };
    engine
        .ask(req, &Cancel::new(), &mut |ev| {
            events.push(ev);
            true
        })
        .unwrap();
    events
}

fn support_of(events: &[AskEvent]) -> Support {
    events
        .iter()
        .find_map(|e| match e {
            AskEvent::Support { support } => Some(support.clone()),
            _ => None,
        })
        .expect("a support event")
}

#[test]
fn a_supported_an_invented_and_a_miscited_sentence_are_each_labelled_right() {
    let _heavy = util::heavy();
    let (_dir, engine) = library();
    let events = ask(&engine, "scripted");
    let quotes = events
        .iter()
        .position(|e| matches!(e, AskEvent::Quotes { .. }))
        .expect("quotes");
    let sources = events
        .iter()
        .position(|e| matches!(e, AskEvent::Sources { .. }))
        .unwrap();
    assert!(sources < quotes, "the quotes come with the sources");
    let support = support_of(&events);
    let verdicts: Vec<Verdict> = support.sentences.iter().map(|s| s.verdict).collect();
    assert_eq!(
        verdicts,
        vec![Verdict::Supported, Verdict::NotFound, Verdict::Supported],
        "{support:#?}"
    );
    assert_eq!(support.summary, "2 of 3 sentences found in your documents");
    let keepers = &support.sentences[0];
    assert!(keepers.wrong_citation.is_none(), "{keepers:?}");
    let span = keepers.span.as_ref().unwrap();
    assert_eq!((span.file.as_str(), span.page), ("keepers.pdf", 1));
    assert!(span.text.contains("1989"), "{span:?}");
    let light = &support.sentences[2];
    let wrong = light
        .wrong_citation
        .as_ref()
        .expect("the wrong [N] is flagged");
    assert_eq!(Some(&wrong.cited), keepers.cited.first());
    assert!(wrong.better.is_some_and(|b| b != wrong.cited), "{wrong:?}");
    assert!(
        light.note.as_deref().unwrap().contains("does not say this"),
        "{light:?}"
    );
    assert_eq!(light.span.as_ref().unwrap().file, "fastnet.pdf");

    // Kept with the message: a reopened conversation shows the same.
    let conversation = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Started {
                conversation_id, ..
            } => Some(*conversation_id),
            _ => None,
        })
        .unwrap();
    let c = engine.conversation(conversation).unwrap();
    let m = c
        .messages
        .iter()
        .rev()
        .find(|m| m.role == "assistant")
        .unwrap();
    let kept: Support = serde_json::from_value(m.extra["support"].clone()).unwrap();
    assert_eq!(kept, support);
    assert!(m.extra["quotes"].as_array().is_some_and(|q| !q.is_empty()));
}

#[test]
fn the_extractive_mode_answers_with_the_quotes_and_no_model() {
    let _heavy = util::heavy();
    let (_dir, engine) = library();
    let events = ask(&engine, "extractive");
    let (answer, stats) = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Done { answer, stats, .. } => Some((answer.clone(), stats.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(stats.llm_calls, 0);
    assert!(
        answer.starts_with("> ") && answer.contains("1989"),
        "{answer}"
    );
    let support = support_of(&events);
    assert!(
        support.checked >= 1 && support.supported == support.checked,
        "{support:?}"
    );
    assert!(engine
        .modes()
        .iter()
        .any(|m| m.name == "extractive" && !m.uses_llm));
}
