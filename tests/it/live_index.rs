//! The retrieval index follows the store without a full reload: after a document is
//! added or removed, the engine's updated index answers exactly as one built from the
//! store from scratch (a fresh engine over the same data directory), with the real
//! embedding model.

use quire::engine::{Engine, EngineConfig, RetrieveOptions};
use quire::llm::Cancel;

use crate::util;

const QUERIES: [&str; 4] = [
    "Which symbols does the wasysym package provide?",
    "How do I load txfonts with the varg option?",
    "integral signs and astronomical symbols",
    "Times Roman math fonts",
];

/// Each query's hits (chunk id, score bits) from `engine`.
fn hits(engine: &Engine) -> Vec<Vec<(i64, u32)>> {
    let opts = RetrieveOptions {
        top_k: 8,
        ..RetrieveOptions::default()
    };
    QUERIES
        .iter()
        .map(|q| {
            let r = engine.search(q, &opts, &Cancel::new()).unwrap();
            r.nodes
                .iter()
                .map(|n| (n.chunk_id, (n.score as f32).to_bits()))
                .collect()
        })
        .collect()
}

fn fresh(dir: &std::path::Path) -> Engine {
    Engine::open(EngineConfig::new(Some(dir.to_path_buf())).unwrap()).unwrap()
}

#[test]
fn the_index_follows_additions_and_removals_as_a_rebuild_would() {
    let dir = tempfile::tempdir().unwrap();
    let engine = fresh(dir.path());
    let pdfs = util::shared().join("corpus/pdfs");
    engine
        .index(&[pdfs.join("wasysym.pdf")], &Cancel::new(), &mut |_| true)
        .unwrap();
    let first = engine.retrieval_index().unwrap();
    assert_eq!(first.documents().len(), 1);
    // A document added: the index grows by its chunks, and searches as a rebuild.
    engine
        .index(&[pdfs.join("txfontsdoc.pdf")], &Cancel::new(), &mut |_| {
            true
        })
        .unwrap();
    let second = engine.retrieval_index().unwrap();
    assert_eq!(second.documents().len(), 2);
    assert!(second.len() > first.len());
    assert_eq!(hits(&engine), hits(&fresh(dir.path())));
    // A document removed: its chunks leave the index.
    let wasy = util::document_id(&engine, "wasysym.pdf");
    engine.remove_document(wasy).unwrap();
    let third = engine.retrieval_index().unwrap();
    assert!(!third.documents().contains(&wasy));
    assert_eq!(third.len(), second.len() - first.len());
    assert_eq!(hits(&engine), hits(&fresh(dir.path())));
    // Indexed again (a new document id), it comes back after the other.
    engine
        .index(&[pdfs.join("wasysym.pdf")], &Cancel::new(), &mut |_| true)
        .unwrap();
    assert_eq!(engine.retrieval_index().unwrap().len(), second.len());
    assert_eq!(hits(&engine), hits(&fresh(dir.path())));
    // Built from the store once; every change after that was an update.
    assert_eq!(engine.retrieval_index_builds(), 1);
}
