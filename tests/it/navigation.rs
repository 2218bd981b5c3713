//! Navigation pages demoted, not dropped, through the engine with the real default
//! embedding model over a real PDF: ctex-faq.pdf's table of contents lists every
//! question of the FAQ, so a Chinese question matches its contents line ("38
//! 如何注释掉一大段内容，不做编译？ ........ 15") as well as the answer on page 15.
//! Demoted, the answering page comes before any contents page, the contents page is
//! still among the sources with its kind, and the kind reaches the sources' JSON.

use quire::engine::{Engine, EngineConfig};
use quire::llm::Cancel;
use quire::retrieve::{PageKind, RetrieveOptions};

use crate::util;

#[test]
fn a_contents_page_ranks_below_the_page_it_points_to() {
    let _heavy = util::heavy();
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(Some(dir.path().to_path_buf())).unwrap()).unwrap();
    util::index_ok(&engine, &[util::shared().join("corpus/pdfs/ctex-faq.pdf")]);
    let question = "如何注释掉一大段内容，不做编译？";
    let search = |w: f64| {
        let opts = RetrieveOptions {
            top_k: 5,
            navigation_weight: w,
            ..RetrieveOptions::default()
        };
        engine.search(question, &opts, &Cancel::new()).unwrap()
    };
    // Each source's last page and kind, for the messages.
    let kinds = |r: &quire::retrieve::Retrieval| -> Vec<(u32, Option<PageKind>)> {
        r.nodes
            .iter()
            .map(|n| (n.chunk.as_ref().map_or(0, |c| c.page_end), n.kind))
            .collect()
    };
    // As fused, the contents page (pages 1-4) comes before the answer (page 15).
    let plain = search(1.0);
    let contents_at = |r: &quire::retrieve::Retrieval| {
        r.nodes
            .iter()
            .position(|n| n.kind == Some(PageKind::Contents))
    };
    let answer_at = |r: &quire::retrieve::Retrieval| {
        r.nodes.iter().position(|n| {
            n.kind.is_none()
                && n.chunk
                    .as_ref()
                    .is_some_and(|c| (c.page_start..=c.page_end).contains(&15))
        })
    };
    let (toc, answer) = (contents_at(&plain), answer_at(&plain));
    assert!(toc.is_some(), "{:?}", kinds(&plain));
    assert!(answer.is_some(), "{:?}", kinds(&plain));
    assert!(toc < answer, "{:?}", kinds(&plain));
    // Demoted (the default weight): the answer first, every navigation page after
    // every body page.
    let demoted = search(RetrieveOptions::default().navigation_weight);
    assert_eq!(answer_at(&demoted), Some(0), "{:?}", kinds(&demoted));
    // (A table is a kind of source too, but a body page, not navigation.)
    let nav = |n: &&quire::retrieve::SourceNode| n.kind.is_some_and(|k| k.is_navigation());
    let first_nav = demoted.nodes.iter().position(|n| nav(&n));
    let last_body = demoted.nodes.iter().rposition(|n| !nav(&n));
    if let (Some(nav), Some(body)) = (first_nav, last_body) {
        assert!(nav > body, "{:?}", kinds(&demoted));
    }
    // A contents page's kind reaches the sources the UI is sent.
    let sources = engine.sources_of(&plain);
    let json = serde_json::to_value(&sources).unwrap();
    let shown: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("kind").and_then(|k| k.as_str()))
        .collect();
    assert!(shown.contains(&"contents"), "{json}");
    // Body sources carry no kind at all.
    assert!(json
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s.get("kind").is_none()));
}
