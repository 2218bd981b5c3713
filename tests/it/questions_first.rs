//! Questions first: while an answer is generated, indexing in the same engine pauses
//! at its next embedding batch (an `IndexEvent::Paused`, the queue says so), and goes
//! on after the answer; nothing is lost or indexed twice. Driven by events only: the
//! indexing callback holds the batch until the ask is streaming, the ask's callback
//! holds the answer until indexing has paused.

use std::sync::mpsc;

use quire::engine::{AskEvent, AskRequest, IndexEvent};
use quire::llm::Cancel;

use crate::util;

#[test]
fn an_answer_pauses_indexing_between_batches_and_indexing_goes_on_after() {
    let (engine, dir) = util::smollm2_engine(8, |_| {});
    let pdfs = util::shared().join("corpus/pdfs");
    engine
        .index(&[pdfs.join("wasysym.pdf")], &Cancel::new(), &mut |_| true)
        .unwrap();
    // A document of several batches of 32 chunks.
    let big = dir.path().join("glaciers.pdf");
    crate::util::topic_pdf(&big, "glaciers", 16);

    let (embedding_tx, embedding_rx) = mpsc::channel::<()>();
    let (streaming_tx, streaming_rx) = mpsc::channel::<()>();
    let (paused_tx, paused_rx) = mpsc::channel::<bool>();
    let engine = &engine;
    let (index_events, ask_events) = std::thread::scope(|s| {
        let indexer = s.spawn(move || {
            let mut events = Vec::new();
            let mut first = true;
            engine
                .index(std::slice::from_ref(&big), &Cancel::new(), &mut |ev| {
                    if matches!(ev, IndexEvent::Embedded { .. }) && first {
                        first = false;
                        embedding_tx.send(()).unwrap();
                        // Hold this batch until the answer streams.
                        streaming_rx.recv().unwrap();
                    }
                    if matches!(ev, IndexEvent::Paused { .. }) {
                        paused_tx
                            .send(engine.queue().unwrap().paused_for_question)
                            .unwrap();
                    }
                    events.push(ev);
                    true
                })
                .unwrap();
            events
        });
        embedding_rx.recv().unwrap();
        let mut events = Vec::new();
        let mut queue_said_paused = None;
        engine
            .ask(
                AskRequest {
                    question: "Which symbols does wasysym provide?".into(),
                    mode: Some("compact".into()),
                    ..Default::default()
                },
                &Cancel::new(),
                &mut |ev| {
                    if matches!(ev, AskEvent::Token { .. }) && queue_said_paused.is_none() {
                        assert!(engine.answering());
                        streaming_tx.send(()).unwrap();
                        // The answer goes on only once indexing has paused.
                        queue_said_paused = Some(paused_rx.recv().unwrap());
                    }
                    events.push(ev);
                    true
                },
            )
            .unwrap();
        assert_eq!(
            queue_said_paused,
            Some(true),
            "the queue did not say it paused"
        );
        assert!(!engine.answering());
        (indexer.join().unwrap(), events)
    });
    assert!(ask_events
        .iter()
        .any(|e| matches!(e, AskEvent::Done { .. })));
    // Paused once, after the first batch, then embedding went on to the end.
    let kinds: Vec<&str> = index_events
        .iter()
        .map(|e| match e {
            IndexEvent::Embedded { .. } => "embedded",
            IndexEvent::Paused { .. } => "paused",
            IndexEvent::FileDone { .. } => "done",
            IndexEvent::FileFailed { .. } => "failed",
            _ => "",
        })
        .filter(|k| !k.is_empty())
        .collect();
    let paused = kinds.iter().position(|k| *k == "paused").expect("no pause");
    assert_eq!(kinds[..paused], ["embedded"], "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "paused").count(),
        1,
        "{kinds:?}"
    );
    assert!(kinds[paused + 1..].len() >= 2, "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"done"), "{kinds:?}");
    // Every chunk once: the document's chunks as its last progress said.
    let total = index_events
        .iter()
        .rev()
        .find_map(|e| match e {
            IndexEvent::Embedded { chunks, total, .. } => Some((*chunks, *total)),
            _ => None,
        })
        .unwrap();
    assert_eq!(total.0, total.1);
    let docs = engine.documents().unwrap();
    assert_eq!(docs.len(), 2);
}
