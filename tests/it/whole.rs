//! Whole-document questions through the engine with a real model (SmolLM2): a
//! document longer than the model's window is read map-reduce, every chunk reaching
//! exactly one leaf prompt (LlamaIndex's tree_summarize prompt; neighbours' overlap
//! read once), with the pages read
//! said as it goes; Stop (`Engine::cancel`) stops the reading and the leaves read so
//! far are kept for the next question; another question starts from the kept summary
//! tree; re-indexing the document drops it. A short document goes in whole.

use quire::engine::{AskEvent, AskRequest, Engine, EngineConfig, RouteChoice, Scope};
use quire::llm::Cancel;
use quire::synth::summary_tree::{join_in_order, leaf_template, SUMMARY_QUERY};
use quire::synth::Templates;
use quire::text::leaders::collapse;
use quire::text::overlap::overlaps;
use quire::Error;

use crate::util;

/// An engine answering with SmolLM2, its window capped at `window` tokens (0: the
/// model's own, 8,192).
fn engine(dir: &std::path::Path, window: usize) -> Engine {
    let engine = Engine::open(EngineConfig::new(Some(dir.to_path_buf())).unwrap()).unwrap();
    let mut s = engine.settings();
    s.model = util::smollm2().display().to_string();
    s.max_tokens = 16;
    s.context_window = window;
    engine.set_settings(s).unwrap();
    let expected = if window == 0 { 8192 } else { window };
    assert_eq!(engine.llm().unwrap().context_window(), expected);
    engine
}

fn ask(engine: &Engine, question: &str, doc: i64, route: RouteChoice) -> Vec<AskEvent> {
    let mut events = Vec::new();
    engine
        .ask(
            AskRequest {
                question: question.into(),
                mode: Some("compact".into()),
                scope: Scope::Documents { ids: vec![doc] },
                route,
                ..Default::default()
            },
            &Cancel::new(),
            &mut |e| {
                events.push(e);
                true
            },
        )
        .unwrap();
    events
}

fn route_of(events: &[AskEvent]) -> quire::engine::RouteView {
    events
        .iter()
        .find_map(|e| match e {
            AskEvent::Route { route } => Some(route.clone()),
            _ => None,
        })
        .expect("a route event")
}

/// The prompts of the leaf (map) steps, in order.
fn leaf_prompts(events: &[AskEvent]) -> Vec<String> {
    let leaves: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            AskEvent::Step { step, label, .. } if label.starts_with("read ") => Some(*step),
            _ => None,
        })
        .collect();
    events
        .iter()
        .filter_map(|e| match e {
            AskEvent::Prompt { step, prompt } if leaves.contains(step) => Some(prompt.clone()),
            _ => None,
        })
        .collect()
}

/// The document's chunks as the whole-document route reads them (each run of dot
/// leaders as one `…`).
fn chunk_texts(engine: &Engine, doc: i64) -> Vec<String> {
    engine
        .store()
        .load_chunks_of(&[doc])
        .unwrap()
        .into_iter()
        .map(|c| collapse(&c.text).into_owned())
        .collect()
}

#[test]
fn a_long_document_is_read_leaf_by_leaf_stopped_kept_and_dropped_on_reindex() {
    let dir = tempfile::tempdir().unwrap();
    // The window capped at 1,536 tokens (the `context_window` setting): the same
    // reading as a longer document in the model's own 8,192, for a fraction of the
    // attention.
    let engine = engine(dir.path(), 1536);
    let pdf = dir.path().join("notes.pdf");
    // About 6,400 tokens: more than the window, and leaves (of at most 1,536 tokens)
    // enough for two batches, a short last batch joining the one before.
    util::topic_pdf(&pdf, "glacier erosion", 8);
    util::index_ok(&engine, std::slice::from_ref(&pdf));
    let doc = util::document_id(&engine, "notes.pdf");

    // 1. Read map-reduce (the question's kind decides it); Stop once the first batch
    //    of leaves is written: the answer stops, the leaves written are kept.
    let mut stopped = Vec::new();
    let mut ask_id = None;
    let mut written = false;
    let out = engine.ask(
        AskRequest {
            question: "Summarize this document.".into(),
            mode: Some("compact".into()),
            scope: Scope::Documents { ids: vec![doc] },
            ..Default::default()
        },
        &Cancel::new(),
        &mut |e| {
            match &e {
                AskEvent::Started { ask_id: id, .. } => ask_id = Some(*id),
                AskEvent::StepDone { call } if call.label.starts_with("read ") => written = true,
                AskEvent::Reading { pages_read, .. } if *pages_read > 0 && written => {
                    assert!(engine.cancel(ask_id.expect("started first")));
                }
                _ => {}
            }
            stopped.push(e);
            true
        },
    );
    assert!(matches!(out, Err(Error::Cancelled)), "{out:?}");
    let route = route_of(&stopped);
    assert_eq!(route.route, "whole");
    assert_eq!(route.how, "map_reduce");
    assert_eq!(route.label, "Read all 8 pages of notes.pdf");
    assert_eq!(route.cue.as_deref(), Some("summarize"));
    let first_batch = leaf_prompts(&stopped).len();
    assert!(first_batch >= 1);
    assert!(!stopped.iter().any(|e| matches!(e, AskEvent::Done { .. })));
    // The pages read so far, with the time left once a leaf is read.
    let reading: Vec<(u32, u32, Option<f64>)> = stopped
        .iter()
        .filter_map(|e| match e {
            AskEvent::Reading {
                pages_read,
                pages,
                secs_left,
                ..
            } => Some((*pages_read, *pages, *secs_left)),
            _ => None,
        })
        .collect();
    assert!(
        reading
            .iter()
            .any(|r| r.0 > 0 && r.0 < 8 && r.1 == 8 && r.2.is_some()),
        "{reading:?}"
    );
    // The pages of each leaf count as read once its prompt is: the first batch's
    // leaves move the pages read one by one before any of them is written.
    let first_written = stopped
        .iter()
        .position(|e| matches!(e, AskEvent::StepDone { call } if call.label.starts_with("read ")))
        .expect("a leaf written");
    let read_before: Vec<u32> = stopped[..first_written]
        .iter()
        .filter_map(|e| match e {
            AskEvent::Reading { pages_read, .. } if *pages_read > 0 => Some(*pages_read),
            _ => None,
        })
        .collect();
    assert_eq!(read_before.len(), first_batch, "{read_before:?}");
    assert!(
        read_before.windows(2).all(|w| w[0] < w[1]),
        "{read_before:?}"
    );
    assert_eq!(engine.store().summary_trees_of(doc).unwrap(), 1);

    // 2. Asked again: only the leaves left are read, then tree_summarize answers.
    let events = ask(&engine, "Summarize this document.", doc, RouteChoice::Auto);
    assert_eq!(route_of(&events).how, "map_reduce");
    let mut prompts = leaf_prompts(&stopped);
    prompts.extend(leaf_prompts(&events));
    assert!(prompts.len() > first_batch, "{} leaves", prompts.len());
    // Each leaf is LlamaIndex's tree_summarize prompt asked the summary query, over
    // whole chunks in order, the overlap of neighbours read once; every chunk is in
    // exactly one leaf.
    let leaf = leaf_template(&Templates::default().summary);
    let chunks = chunk_texts(&engine, doc);
    let (mut read, mut plain) = (0, 0);
    let mut next = 0;
    for p in &prompts {
        assert!(p.contains(SUMMARY_QUERY));
        let start = next;
        while next < chunks.len() && p.contains(chunks[next].as_str()) {
            next += 1;
        }
        assert!(next > start, "a leaf without the next chunk");
        let group: Vec<&str> = chunks[start..next].iter().map(String::as_str).collect();
        let joined = join_in_order(&group, &overlaps(&group));
        (read, plain) = (read + joined.len(), plain + group.join("\n\n").len());
        let vars = [("context_str".to_string(), joined)].into();
        assert_eq!(p, &leaf.format(&vars));
    }
    assert_eq!(next, chunks.len(), "every chunk reaches a leaf");
    assert!(read < plain, "no overlap read once: {read} vs {plain}");
    for c in &chunks {
        assert_eq!(prompts.iter().filter(|p| p.contains(c.as_str())).count(), 1);
    }
    let last = events.iter().rev().find_map(|e| match e {
        AskEvent::Reading {
            pages_read, pages, ..
        } => Some((*pages_read, *pages)),
        _ => None,
    });
    assert_eq!(last, Some((8, 8)));
    assert!(events.iter().any(
        |e| matches!(e, AskEvent::Step { label, is_final: true, .. } if label.starts_with("summarize"))
    ));
    assert!(matches!(events.last(), Some(AskEvent::Done { answer, .. }) if !answer.is_empty()));

    // 3. Another question starts from the kept leaves: no leaf call.
    let again = ask(
        &engine,
        "What topics does it cover?",
        doc,
        RouteChoice::Whole,
    );
    let route = route_of(&again);
    assert_eq!((route.how.as_str(), route.forced), ("cached", true));
    assert!(leaf_prompts(&again).is_empty());
    assert!(matches!(again.last(), Some(AskEvent::Done { .. })));

    // 4. Re-indexed (new text at the same path): the kept tree goes with the old id.
    util::topic_pdf(&pdf, "river deltas", 10);
    util::index_ok(&engine, std::slice::from_ref(&pdf));
    let new_doc = util::document_id(&engine, "notes.pdf");
    assert_ne!(new_doc, doc);
    assert_eq!(engine.store().summary_trees_of(doc).unwrap(), 0);
    assert_eq!(engine.store().summary_trees_of(new_doc).unwrap(), 0);
}

#[test]
fn a_short_document_goes_in_whole_and_search_stays_a_choice() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 0);
    let pdf = dir.path().join("short.pdf");
    // A contents page with dot leaders, two pages of text, then two of index.
    let mut pages = vec![[
        "Contents",
        "1 Tide pools . . . . . . . . . . . . . . 2",
        "2 Rock shores.......................3",
    ]
    .join("\n")];
    pages.extend((2..=3).map(|p| {
        (0..40)
            .map(|line| format!("Page {p} line {line}: tide pools are studied here."))
            .collect::<Vec<_>>()
            .join("\n")
    }));
    let terms = [
        "algae",
        "anemones",
        "barnacles",
        "crabs",
        "currents",
        "estuaries",
        "gulls",
        "kelp",
        "limpets",
        "mussels",
        "periwinkles",
        "plankton",
        "rock shores",
        "salinity",
        "sea stars",
        "sea urchins",
        "snails",
        "sponges",
        "surf",
        "tide pools",
        "tides",
        "waves",
        "whelks",
        "zonation",
    ];
    // Two pages of index: `algae (shore), 2, 3`…
    let index: Vec<String> = ["shore", "pool", "reef", "bay", "cove"]
        .iter()
        .flat_map(|place| terms.iter().map(move |t| format!("{t} ({place})")))
        .enumerate()
        .map(|(i, t)| format!("{t}, {}, 3", 2 + i % 2))
        .collect();
    let (first, second) = index.split_at(index.len() / 2);
    pages.push(format!("Index\n{}", first.join("\n")));
    pages.push(second.join("\n"));
    util::write_pdf(&pdf, &pages);
    util::index_ok(&engine, std::slice::from_ref(&pdf));
    let doc = util::document_id(&engine, "short.pdf");
    let events = ask(
        &engine,
        "Give me an overview of it.",
        doc,
        RouteChoice::Auto,
    );
    let route = route_of(&events);
    assert_eq!(
        (route.route.as_str(), route.how.as_str()),
        ("whole", "whole")
    );
    // The index at the back is passed over, and the label says so.
    assert_eq!(route.label, "Read all 5 pages of short.pdf but the index");
    // Apart too, so that the window can say how the rest was read before it.
    assert_eq!(route.passed_over, "the index");
    // One prompt holds every chunk (compact over the document's chunks in order).
    let prompts: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            AskEvent::Prompt { prompt, .. } => Some(prompt),
            _ => None,
        })
        .collect();
    assert_eq!(prompts.len(), 1);
    // The contents read with each run of leaders as one `…`, every word and page kept.
    assert!(prompts[0].contains("1 Tide pools … 2"), "{}", prompts[0]);
    assert!(prompts[0].contains("2 Rock shores…3"), "{}", prompts[0]);
    assert!(!prompts[0].contains(". . . ."));
    for entry in second {
        assert!(!prompts[0].contains(entry.as_str()), "{entry}");
    }
    for p in 2..=3 {
        for line in 0..40 {
            let marker = format!("Page {p} line {line}:");
            assert!(prompts[0].contains(&marker), "{marker}");
        }
    }
    // Forced to search, the same question is answered from the top passages.
    let searched = ask(
        &engine,
        "Give me an overview of it.",
        doc,
        RouteChoice::Search,
    );
    let route = route_of(&searched);
    assert_eq!(route.route, "search");
    assert!(route.forced);
    assert!(route.label.starts_with("Searched: top "));
    assert!(searched
        .iter()
        .any(|e| matches!(e, AskEvent::Sources { sources, .. } if !sources.is_empty())));
}
