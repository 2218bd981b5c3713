//! Retrieval over real PDFs of the corpus with the real embedding model.

use std::path::PathBuf;
use std::sync::OnceLock;

use quire::embed::bert::BertEmbedder;
use quire::llm::Cancel;
use quire::retrieve::{FusionMode, IndexedChunk, RetrievalIndex, RetrieveOptions, RetrieverKind};
use quire_bench::pdftotext::{self, Layout};
use quire_bench::retrieval::{self as bench, PageChunk};

use crate::util;

const FILES: [&str; 2] = ["ctex-faq.pdf", "debian-faq.en.pdf"];

fn pdf(name: &str) -> PathBuf {
    util::shared().join("corpus/pdfs").join(name)
}

/// The default embedder, the page chunks of [`FILES`] and their index, built once for
/// the tests of this module.
fn corpus() -> &'static (BertEmbedder, Vec<PageChunk>, RetrievalIndex) {
    static CORPUS: OnceLock<(BertEmbedder, Vec<PageChunk>, RetrievalIndex)> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let emb = BertEmbedder::open(util::default_embedder()).expect("embedder");
        let mut chunks = Vec::new();
        for f in FILES {
            let pages =
                pdftotext::pages(&pdf(f), Layout::Reading).expect("pdftotext (poppler-utils) runs");
            chunks.extend(bench::chunk_pages(f, &pages, &emb, 200, 40).expect("chunking"));
        }
        let indexed: Vec<IndexedChunk> = bench::embed_chunks(&chunks, &emb).expect("embedding");
        let index = RetrievalIndex::build(indexed).expect("index");
        (emb, chunks, index)
    })
}

#[test]
fn corpus_questions_find_their_pages() {
    let (emb, chunks, index) = corpus();
    assert_eq!(index.len(), chunks.len());

    // Questions about the two documents, English and Chinese.
    let questions: Vec<_> = bench::load_questions(&util::shared().join("corpus/questions.jsonl"))
        .expect("questions")
        .into_iter()
        .filter(|q| FILES.contains(&q.file.as_str()))
        .collect();
    assert!(questions.iter().any(|q| q.lang == "zh"));
    assert!(questions.iter().any(|q| q.lang == "en"));
    let split = bench::Split::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/retrieval_split.json"),
    )
    .expect("split");
    let settings = bench::QualitySettings {
        fusion: FusionMode::ReciprocalRerank,
        ..Default::default()
    };
    let r = bench::quality(index, emb, None, &questions, &split, settings).expect("quality");
    let row = |set: &str| {
        r.rows
            .iter()
            .find(|x| x.retrievers == set && x.lang == "all" && x.half == "all")
            .expect("row")
            .clone()
    };
    // Every question is in a half of the corpus set.
    assert!(r
        .per_question
        .iter()
        .all(|q| q.set == "corpus" && q.half != "none"));
    let (vector, bm25, fused) = (row("vector"), row("bm25"), row("fused"));
    // Every question finds an expected page among the first ten fused sources, and
    // fusion is at least as good as the better retriever alone at 5.
    assert_eq!(fused.hit10, 1.0, "{r}");
    assert!(fused.hit5 >= vector.hit5.max(bm25.hit5), "{r}");
}

#[test]
fn two_character_chinese_queries_find_their_chunk() {
    let (emb, chunks, index) = corpus();
    // Two-character Chinese words that occur in exactly one chunk: BM25 must rank
    // that chunk first.
    let is_han = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
    let mut words: Vec<String> = Vec::new();
    for c in chunks {
        let cs: Vec<char> = c.text.chars().collect();
        for w in cs.windows(2) {
            if !(is_han(w[0]) && is_han(w[1])) {
                continue;
            }
            let word: String = w.iter().collect();
            if words.contains(&word) {
                continue;
            }
            if chunks.iter().filter(|o| o.text.contains(&word)).count() == 1 {
                words.push(word);
            }
        }
        if words.len() >= 20 {
            break;
        }
    }
    assert!(words.len() >= 20, "found only {words:?}");
    let opts = RetrieveOptions {
        top_k: 3,
        retrievers: vec![RetrieverKind::Bm25],
        ..RetrieveOptions::default()
    };
    for word in &words {
        let r =
            quire::retrieve::search(index, word, emb, None, &opts, &Cancel::new()).expect("search");
        let top = r.nodes.first().and_then(|n| n.chunk.as_ref());
        assert!(
            top.is_some_and(|c| c.text.contains(word.as_str())),
            "{word}: {r}"
        );
        // The evidence says BM25 ranked it first for the user's query.
        let ev = &r.nodes[0].evidence;
        assert_eq!((ev[0].query, ev[0].retriever, ev[0].rank), (0, 0, 1));
    }
}
