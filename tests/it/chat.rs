//! A conversation through the engine with a real model (SmolLM2): a follow-up is
//! condensed with the history and that standalone question is what is searched for;
//! the answer prompt carries the conversation; citations number the sources; the LLM
//! reranks (or the fused order is kept, said in a note); and a reopened conversation
//! holds every step, prompt, searched-for question, citation and source again.

use quire::engine::{AskEvent, AskOverrides, AskRequest, Engine, EngineConfig};
use quire::llm::Cancel;

use crate::util;

fn engine() -> (Engine, tempfile::TempDir) {
    // Condensed (and fused with the thread query): the default `thread_only` does not
    // condense in condense_plus_context (tested below).
    let (engine, dir) = util::smollm2_engine(24, |s| s.follow_up_search = "thread".into());
    let pdf = util::shared().join("corpus/pdfs/wasysym.pdf");
    util::index_ok(&engine, &[pdf]);
    (engine, dir)
}

fn ask(engine: &Engine, req: AskRequest) -> Vec<AskEvent> {
    let mut events = Vec::new();
    engine
        .ask(req, &Cancel::new(), &mut |e| {
            events.push(e);
            true
        })
        .unwrap();
    events
}

fn labels(events: &[AskEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AskEvent::Step { label, .. } => Some(label.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_follow_up_is_condensed_cited_reranked_and_kept_whole() {
    let (engine, _dir) = engine();
    let first = "Which symbols does wasysym provide?";
    let events = ask(
        &engine,
        AskRequest {
            question: first.into(),
            mode: Some("compact".into()),
            ..Default::default()
        },
    );
    // The first message goes straight through: no condensing, the plain QA prompt.
    let id = match &events[0] {
        AskEvent::Started {
            conversation_id, ..
        } => *conversation_id,
        e => panic!("first event {e:?}"),
    };
    assert!(!events
        .iter()
        .any(|e| matches!(e, AskEvent::Condensed { .. })));
    assert!(!labels(&events).iter().any(|l| l.contains("condense")));

    let follow = "And how do I get the astronomical ones?";
    let events = ask(
        &engine,
        AskRequest {
            conversation_id: Some(id),
            question: follow.into(),
            mode: Some("compact".into()),
            overrides: AskOverrides {
                chat_mode: Some("condense_plus_context".into()),
                cite_sources: Some(true),
                rerank: Some(true),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let steps = labels(&events);
    assert_eq!(steps[0], "condense the question", "{steps:?}");
    assert!(steps[1].starts_with("rerank the sources"), "{steps:?}");
    let prompts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AskEvent::Prompt { prompt, .. } => Some(prompt.as_str()),
            _ => None,
        })
        .collect();
    // The condense prompt holds the conversation and the follow-up.
    assert!(
        prompts[0].contains(&format!("user: {first}")),
        "{}",
        prompts[0]
    );
    assert!(prompts[0].contains(&format!("Follow Up Input: {follow}")));
    // The reranker reads numbered documents and the standalone question.
    assert!(prompts[1].contains("Document 1:\n"), "{}", prompts[1]);
    // The answer: the context prompt with the citation instruction, then the history,
    // then the follow-up itself.
    let answer_prompt = prompts.last().unwrap();
    assert!(answer_prompt.contains("Source 1:\n"), "{answer_prompt}");
    assert!(answer_prompt.contains("[1] or [2][3]"), "{answer_prompt}");
    assert!(answer_prompt.contains(&format!("user: {first}\nassistant: ")));
    assert!(answer_prompt.ends_with(&format!("user: {follow}\nassistant: ")));

    let searched = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Condensed { question } => Some(question.clone()),
            _ => None,
        })
        .expect("a condensed question");
    assert!(!searched.trim().is_empty());
    let citations = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Citations { citations } => Some(citations.clone()),
            _ => None,
        })
        .expect("citations");
    let (sources, notes) = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Sources { sources, notes, .. } => Some((sources.clone(), notes.clone())),
            _ => None,
        })
        .unwrap();
    assert!(!sources.is_empty() && sources.len() <= 4);
    assert_eq!(citations[0].number, 1);
    assert!(citations.iter().all(|c| sources
        .iter()
        .any(|s| s.chunk_id == c.chunk_id && s.text.contains(&c.text))));
    // Either the reranker's relevances are on every source, or a note says its
    // answer could not be read and the fused order was kept.
    let reranked = sources.iter().all(|s| s.rerank_score.is_some());
    assert!(
        reranked || notes.iter().any(|n| n.contains("reranker")),
        "{sources:?} {notes:?}"
    );
    let stats = match events.last() {
        Some(AskEvent::Done { stats, .. }) => stats.clone(),
        e => panic!("last event {e:?}"),
    };
    assert!(stats.condense_secs.is_some() && stats.rerank_secs.is_some());
    assert_eq!(stats.llm_calls, steps.len());

    // Reopened: both exchanges, and the follow-up's steps, prompts, searched-for
    // question, citations and sources are all kept.
    let conv = engine.conversation(id).unwrap();
    assert_eq!(conv.messages.len(), 4);
    let m = &conv.messages[3];
    assert_eq!(m.extra["searched_for"], searched.as_str());
    assert_eq!(
        m.extra["citations"].as_array().unwrap().len(),
        citations.len()
    );
    assert_eq!(m.extra["sources"].as_array().unwrap().len(), sources.len());
    let calls = m.extra["calls"].as_array().unwrap();
    assert_eq!(calls.len(), steps.len());
    assert_eq!(calls[0]["label"], "condense the question");
    assert_eq!(calls[0]["prompt"], prompts[0]);
}

#[test]
fn each_question_alone_when_chat_mode_is_off() {
    let (engine, _dir) = engine();
    let events = ask(
        &engine,
        AskRequest {
            question: "Which symbols does wasysym provide?".into(),
            mode: Some("no_text".into()),
            ..Default::default()
        },
    );
    let id = match &events[0] {
        AskEvent::Started {
            conversation_id, ..
        } => *conversation_id,
        e => panic!("{e:?}"),
    };
    let events = ask(
        &engine,
        AskRequest {
            conversation_id: Some(id),
            question: "And the astronomical ones?".into(),
            mode: Some("no_text".into()),
            overrides: AskOverrides {
                chat_mode: Some("off".into()),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    assert!(labels(&events).is_empty(), "no LLM call at all");
    assert!(!events
        .iter()
        .any(|e| matches!(e, AskEvent::Condensed { .. })));
    // An unknown chat mode is refused before anything runs.
    let mut seen = 0;
    let r = engine.ask(
        AskRequest {
            conversation_id: Some(id),
            question: "x".into(),
            overrides: AskOverrides {
                chat_mode: Some("telepathy".into()),
                ..Default::default()
            },
            ..Default::default()
        },
        &Cancel::new(),
        &mut |_| {
            seen += 1;
            true
        },
    );
    assert!(r.unwrap_err().to_string().contains("telepathy"));
    assert_eq!(seen, 0);
}

#[test]
fn quire_chat_holds_one_conversation_over_stdin() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let (_engine, dir) = engine();
    drop(_engine);
    let mut child = Command::new(crate::util::quire_exe())
        .args([
            "chat",
            "--mode",
            "no_text",
            "--chat-mode",
            "off",
            "--json",
            "--data-dir",
        ])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all("Which symbols does wasysym provide?\nAnd the astronomical ones?\n".as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started: Vec<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<AskEvent>(l).ok())
        .filter_map(|e| match e {
            AskEvent::Started {
                conversation_id, ..
            } => Some(conversation_id),
            _ => None,
        })
        .collect();
    assert_eq!(started.len(), 2, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        started[0], started[1],
        "the second line continues the conversation"
    );
}

/// The question message and answer message ids an ask reports.
fn ids(events: &[AskEvent]) -> (i64, i64, i64) {
    let (conversation, question) = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Started {
                conversation_id,
                question_id,
                ..
            } => Some((*conversation_id, *question_id)),
            _ => None,
        })
        .unwrap();
    let answer = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Done { message_id, .. } => Some(*message_id),
            _ => None,
        })
        .unwrap();
    (conversation, question, answer)
}

#[test]
fn a_question_is_asked_again_edited_and_deleted_and_the_conversation_exports() {
    let (engine, _dir) = engine();
    let first = "Which option keeps the integral signs untouched?";
    let (conv, q1, a1) = ids(&ask(
        &engine,
        AskRequest {
            question: first.into(),
            mode: Some("compact".into()),
            ..Default::default()
        },
    ));
    // Asked again in another mode: a second answer to the same question.
    let again = ask(
        &engine,
        AskRequest {
            conversation_id: Some(conv),
            question: "(ignored)".into(),
            mode: Some("simple_summarize".into()),
            regenerate: Some(q1),
            ..Default::default()
        },
    );
    let (_, q1_again, a1b) = ids(&again);
    assert_eq!(q1_again, q1);
    let c = engine.conversation(conv).unwrap();
    let shape: Vec<(&str, Option<&str>)> = c
        .messages
        .iter()
        .map(|m| (m.role.as_str(), m.mode.as_deref()))
        .collect();
    assert_eq!(
        shape,
        [
            ("user", None),
            ("assistant", Some("compact")),
            ("assistant", Some("simple_summarize"))
        ]
    );
    assert_eq!(c.messages[2].extra["query"], first);
    // A follow-up sees the newest answer to the question, once.
    let second = ask(
        &engine,
        AskRequest {
            conversation_id: Some(conv),
            question: "And the other symbols?".into(),
            mode: Some("compact".into()),
            ..Default::default()
        },
    );
    let (_, q2, _) = ids(&second);
    let condense = second
        .iter()
        .find_map(|e| match e {
            AskEvent::Prompt { prompt, .. } if prompt.contains("Chat History") => {
                Some(prompt.clone())
            }
            _ => None,
        })
        .unwrap();
    let newest = &c.messages[2].content;
    assert!(
        condense.contains(&format!("assistant: {newest}")),
        "{condense}"
    );
    assert_eq!(condense.matches(first).count(), 1, "{condense}");
    // Only the last question can be asked again.
    let err = engine
        .ask(
            AskRequest {
                conversation_id: Some(conv),
                question: first.into(),
                regenerate: Some(q1),
                ..Default::default()
            },
            &Cancel::new(),
            &mut |_| true,
        )
        .unwrap_err();
    assert!(err.to_string().contains("only the last question"), "{err}");
    // Edited: the follow-up and its answer are replaced by the new question's.
    let (_, q2b, _) = ids(&ask(
        &engine,
        AskRequest {
            conversation_id: Some(conv),
            question: "And which symbols does it add for music?".into(),
            mode: Some("no_text".into()),
            replace_from: Some(q2),
            ..Default::default()
        },
    ));
    let c = engine.conversation(conv).unwrap();
    let texts: Vec<&str> = c
        .messages
        .iter()
        .filter(|m| m.role == "user")
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(texts, [first, "And which symbols does it add for music?"]);
    assert_eq!(c.messages.len(), 5);
    // Deleted: an answer alone; a question with its answers.
    engine.delete_message(conv, a1).unwrap();
    assert_eq!(engine.conversation(conv).unwrap().messages.len(), 4);
    engine.delete_message(conv, q2b).unwrap();
    let c = engine.conversation(conv).unwrap();
    let left: Vec<i64> = c.messages.iter().map(|m| m.id).collect();
    assert_eq!(left, [q1, a1b]);
    assert!(engine.delete_message(conv, q2b).is_err());
    // Exported: the question, the answer with its mode, its sources with pages.
    let md = engine.export_conversation(conv).unwrap();
    assert!(md.starts_with("# Which option keeps"), "{md}");
    assert!(md.contains(&format!("## Question\n\n{first}")), "{md}");
    assert!(md.contains("### Answer (simple_summarize)"), "{md}");
    assert!(md.contains(c.messages[1].content.trim()), "{md}");
    assert!(md.contains("1. **wasysym.pdf**, p"), "{md}");
}

/// Issue 46: a follow-up whose referent is only in the previous turn ("the result"
/// of building a Debian package) finds the page that answers it, with the default
/// models and settings: the default `thread_only` follow-up search searches the
/// previous question with the follow-up as typed, without condensing (no LLM step
/// before the answer), says so, and keeps it with the message; the answer's prompt
/// still holds the conversation.
#[test]
fn a_follow_up_whose_referent_is_only_in_the_previous_turn_finds_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(Some(dir.path().to_path_buf())).unwrap()).unwrap();
    let mut s = engine.settings();
    assert_eq!(s.follow_up_search, "thread_only");
    assert_eq!(s.chat_mode, "condense_plus_context");
    s.model = quire::models::default_llm()
        .expect("the default LLM")
        .display()
        .to_string();
    s.max_tokens = 24;
    engine.set_settings(s).unwrap();
    let pdfs = util::shared().join("corpus/pdfs");
    util::index_ok(
        &engine,
        &[pdfs.join("debian-faq.en.pdf"), pdfs.join("wasysym.pdf")],
    );
    let first = "How do I build a binary package from a Debian source package?";
    let events = ask(
        &engine,
        AskRequest {
            question: first.into(),
            mode: Some("compact".into()),
            ..Default::default()
        },
    );
    let id = match &events[0] {
        AskEvent::Started {
            conversation_id, ..
        } => *conversation_id,
        e => panic!("first event {e:?}"),
    };
    let follow = "How do I install the result afterwards?";
    let events = ask(
        &engine,
        AskRequest {
            conversation_id: Some(id),
            question: follow.into(),
            mode: Some("compact".into()),
            ..Default::default()
        },
    );
    let thread = format!("{first}\n{follow}");
    let searched = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Condensed { question } => Some(question.clone()),
            _ => None,
        })
        .expect("the searched-for question");
    assert_eq!(searched, thread);
    // One query, nothing condensed: the answer is the only LLM step.
    assert!(!events.iter().any(|e| matches!(e, AskEvent::Queries { .. })));
    let steps = labels(&events);
    assert!(!steps.iter().any(|l| l.contains("condense")), "{steps:?}");
    let sources = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Sources { sources, .. } => Some(sources.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        sources
            .iter()
            .any(|s| s.file.ends_with("debian-faq.en.pdf")
                && (s.page_start..=s.page_end).contains(&41)),
        "searched {searched:?}: {:?}",
        sources
            .iter()
            .map(|s| (&s.file, s.page_start))
            .collect::<Vec<_>>()
    );
    // Kept with the message: what was searched, and the answer's prompt with the
    // conversation in it.
    let conv = engine.conversation(id).unwrap();
    let m = &conv.messages[3];
    assert_eq!(m.extra["searched_for"], thread.as_str());
    let prompt = m.extra["calls"][0]["prompt"].as_str().unwrap_or_default();
    assert!(prompt.contains(first), "{prompt}");
    let stats = match events.last() {
        Some(AskEvent::Done { stats, .. }) => stats.clone(),
        e => panic!("last event {e:?}"),
    };
    assert!(stats.condense_secs.is_none());
}
