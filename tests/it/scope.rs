//! Collections and the scope of a question, and the honest "not found", through the
//! engine with the real default embedding model (and SmolLM2 where a model would
//! answer): retrieval searches only the documents in scope, each answer names its
//! scope, a scope with nothing in it is refused before anything is kept, and a
//! question the documents do not cover is answered by no model, with the closest
//! passages shown.

use quire::engine::{AskEvent, AskRequest, Engine, EngineConfig, Relevance, Scope, Source};
use quire::llm::Cancel;

use crate::util;

fn engine() -> (Engine, tempfile::TempDir, i64, i64) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(Some(dir.path().to_path_buf())).unwrap()).unwrap();
    let mut s = engine.settings();
    s.model = util::smollm2().display().to_string();
    s.max_tokens = 16;
    engine.set_settings(s).unwrap();
    let pdfs = util::shared().join("corpus/pdfs");
    engine
        .index(
            &[pdfs.join("wasysym.pdf"), pdfs.join("txfontsdoc.pdf")],
            &Cancel::new(),
            &mut |_| true,
        )
        .unwrap();
    let docs = engine.documents().unwrap();
    let id = |name: &str| docs.iter().find(|d| d.file_name == name).unwrap().id;
    let (wasy, tx) = (id("wasysym.pdf"), id("txfontsdoc.pdf"));
    (engine, dir, wasy, tx)
}

struct Answer {
    events: Vec<AskEvent>,
    sources: Vec<Source>,
    scope: String,
    relevance: Option<Relevance>,
    answer: String,
    llm_calls: usize,
}

fn ask(engine: &Engine, question: &str, mode: &str, scope: Scope) -> quire::Result<Answer> {
    let mut events = Vec::new();
    engine.ask(
        AskRequest {
            question: question.into(),
            mode: Some(mode.into()),
            scope,
            ..Default::default()
        },
        &Cancel::new(),
        &mut |e| {
            events.push(e);
            true
        },
    )?;
    let (sources, scope, relevance) = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Sources {
                sources,
                scope,
                relevance,
                ..
            } => Some((sources.clone(), scope.clone(), relevance.clone())),
            _ => None,
        })
        .expect("a sources event");
    let (answer, llm_calls) = events
        .iter()
        .find_map(|e| match e {
            AskEvent::Done { answer, stats, .. } => Some((answer.clone(), stats.llm_calls)),
            _ => None,
        })
        .expect("a done event");
    Ok(Answer {
        events,
        sources,
        scope,
        relevance,
        answer,
        llm_calls,
    })
}

const WASY_Q: &str =
    "Which wasysym option keeps the integral signs of LaTeX and amsmath unchanged?";

#[test]
fn a_question_searches_only_its_scope_and_names_it() {
    let (engine, dir, wasy, tx) = engine();
    // All documents: the wasysym question finds wasysym.
    let all = ask(&engine, WASY_Q, "no_text", Scope::All).unwrap();
    assert_eq!(all.scope, "All documents");
    assert_eq!(all.sources[0].file, "wasysym.pdf");

    // A collection without wasysym: only the TX fonts document is searched.
    let fonts = engine.create_collection("Fonts", &[tx]).unwrap();
    assert_eq!(fonts.documents, vec![tx]);
    let (scoped, scope) = {
        let threshold_off = {
            let mut s = engine.settings();
            s.not_found_threshold = Some(0.0);
            s
        };
        engine.set_settings(threshold_off).unwrap();
        let a = ask(
            &engine,
            WASY_Q,
            "no_text",
            Scope::Collection { id: fonts.id },
        )
        .unwrap();
        let scope = a.scope.clone();
        (a, scope)
    };
    assert_eq!(scope, "Collection \"Fonts\"");
    assert!(!scoped.sources.is_empty());
    assert!(
        scoped.sources.iter().all(|s| s.doc_id == tx),
        "{:?}",
        scoped.sources.iter().map(|s| &s.file).collect::<Vec<_>>()
    );

    // Chosen documents, by the command line's words too.
    let chosen = engine.parse_scope("wasysym.pdf").unwrap();
    assert_eq!(chosen, Scope::Documents { ids: vec![wasy] });
    let a = ask(&engine, "Which fonts does TX provide?", "no_text", chosen).unwrap();
    assert_eq!(a.scope, "wasysym.pdf");
    assert!(a.sources.iter().all(|s| s.doc_id == wasy));
    assert_eq!(
        engine.parse_scope("collection:fonts").unwrap(),
        Scope::Collection { id: fonts.id }
    );
    assert!(engine.parse_scope("collection:nope").is_err());
    assert!(engine.parse_scope("nope.pdf").is_err());

    // The scope is kept with the answer.
    let conv = engine.conversations().unwrap()[0].id;
    let kept = engine.conversation(conv).unwrap();
    assert_eq!(kept.messages[1].extra["scope"], "wasysym.pdf");

    // A scope with nothing searchable is refused, and nothing is kept.
    let before = engine.conversations().unwrap().len();
    let empty = engine.create_collection("Empty", &[]).unwrap();
    let e = ask(
        &engine,
        WASY_Q,
        "no_text",
        Scope::Collection { id: empty.id },
    )
    .err()
    .expect("refused");
    assert!(
        e.to_string()
            .contains("\"Empty\" holds no indexed document"),
        "{e}"
    );
    let e = ask(&engine, WASY_Q, "no_text", Scope::Documents { ids: vec![] })
        .err()
        .expect("refused");
    assert!(e.to_string().contains("no document chosen"), "{e}");
    assert!(ask(
        &engine,
        WASY_Q,
        "no_text",
        Scope::Documents { ids: vec![999] }
    )
    .is_err());
    assert_eq!(engine.conversations().unwrap().len(), before);

    // Collections: names are unique, a bad document changes nothing, a document
    // indexed again stays in its collections, a removed one leaves them.
    assert!(engine.create_collection("fonts", &[]).is_err());
    assert!(engine.create_collection("Bad", &[999]).is_err());
    assert!(!engine
        .collections()
        .unwrap()
        .iter()
        .any(|c| c.name == "Bad"));
    assert!(engine
        .update_collection(fonts.id, Some("Empty"), Some(&[wasy]))
        .is_err());
    assert_eq!(
        engine
            .collections()
            .unwrap()
            .iter()
            .find(|c| c.id == fonts.id)
            .unwrap()
            .documents,
        vec![tx],
        "a refused rename changed the documents"
    );
    let both = engine
        .update_collection(fonts.id, Some("TeX fonts"), Some(&[wasy, tx]))
        .unwrap();
    assert_eq!((both.name.as_str(), both.documents.len()), ("TeX fonts", 2));
    // A document indexed again (its file changed) gets a new id and keeps its
    // collections.
    let copy = dir.path().join("again.pdf");
    let mut bytes = std::fs::read(util::shared().join("corpus/pdfs/wasysym.pdf")).unwrap();
    bytes.extend_from_slice(b"\n% one\n");
    std::fs::write(&copy, &bytes).unwrap();
    engine
        .index(std::slice::from_ref(&copy), &Cancel::new(), &mut |_| true)
        .unwrap();
    let again = engine.find_document(copy.to_str().unwrap()).unwrap();
    engine
        .update_collection(fonts.id, None, Some(&[wasy, tx, again]))
        .unwrap();
    bytes.extend_from_slice(b"% two\n");
    std::fs::write(&copy, &bytes).unwrap();
    engine
        .index(std::slice::from_ref(&copy), &Cancel::new(), &mut |_| true)
        .unwrap();
    let renewed = engine.find_document(copy.to_str().unwrap()).unwrap();
    assert_ne!(renewed, again, "indexed again under a new id");
    let c = engine
        .collections()
        .unwrap()
        .into_iter()
        .find(|c| c.id == fonts.id)
        .unwrap();
    assert!(c.documents.contains(&renewed), "{:?}", c.documents);
    engine.remove_document(tx).unwrap();
    let c = engine
        .collections()
        .unwrap()
        .into_iter()
        .find(|c| c.id == fonts.id)
        .unwrap();
    assert!(!c.documents.contains(&tx));
    engine.remove_collection(fonts.id).unwrap();
    assert!(engine.remove_collection(fonts.id).is_err());
    assert!(
        engine.documents().unwrap().iter().any(|d| d.id == wasy),
        "documents stay indexed when their collection goes"
    );
}

#[test]
fn a_question_the_documents_do_not_cover_is_not_answered_by_the_model() {
    let (engine, _dir, _, _) = engine();
    // Off topic: no LLM call, the answer says so, the closest passages are shown and
    // the decision with its numbers is in the event (and kept).
    let off = ask(
        &engine,
        "What is a good recipe for banana bread with walnuts?",
        "compact",
        Scope::All,
    )
    .unwrap();
    let r = off.relevance.clone().expect("a relevance decision");
    assert!(!r.covered, "{r:?}");
    assert!(r.best.unwrap() < r.threshold.unwrap());
    assert!(off.answer.contains("don't seem to cover"), "{}", off.answer);
    assert_eq!(off.llm_calls, 0);
    assert!(!off
        .events
        .iter()
        .any(|e| matches!(e, AskEvent::Step { .. })));
    assert!(!off.sources.is_empty(), "the closest passages are shown");
    let conv = engine.conversations().unwrap()[0].id;
    let kept = engine.conversation(conv).unwrap();
    assert_eq!(kept.messages[1].extra["relevance"]["covered"], false);

    // On topic: the model answers.
    let on = ask(&engine, WASY_Q, "compact", Scope::All).unwrap();
    let r = on.relevance.clone().expect("a relevance decision");
    assert!(
        r.covered && r.best.unwrap() >= r.threshold.unwrap(),
        "{r:?}"
    );
    assert!(on.llm_calls >= 1);

    // The check off: the model answers the off-topic question too.
    let mut s = engine.settings();
    s.not_found_threshold = Some(0.0);
    engine.set_settings(s).unwrap();
    let off = ask(
        &engine,
        "What is a good recipe for banana bread with walnuts?",
        "compact",
        Scope::All,
    )
    .unwrap();
    assert!(off.relevance.unwrap().reason.contains("off"));
    assert!(off.llm_calls >= 1);
}
