//! A table followed from its caption in the prose.
//!
//! A table's rows become chunks of their own (`ingest::split`), each titled with the
//! table's caption, while the caption line stays in the page's prose where the table
//! stood. A question worded like the text around a table ("表格的列格式 p{⟨width⟩}
//! 是什么意思？" against "基本的列格式见表 3.1 … 表 3.1: LATEX 表格列格式") finds that
//! prose, which holds the caption and none of the rows that answer it. So when a
//! prose chunk among a list's first hits holds a caption line ([`text::is_caption`]),
//! the table chunk titled with it — same document, same or next page — that holds the
//! most of the question's term weight is placed right behind it in that list (it
//! takes the prose chunk's score, seen after it; or keeps its own, when higher).

use std::collections::{HashMap, HashSet};

use super::{
    chunk_kind, first_hits, read_first_hits, read_missing, ChunkInfo, Corpus, DocFilter, Hit,
    Retriever,
};
use super::{fusion, TermWeight};
use crate::text;
use crate::Result;

/// The hits of each list whose text is read for captions.
const CAPTION_DEPTH: usize = 5;

/// Hits of a caption searched (by BM25, in its document) for the chunks of its table.
const CAPTION_HITS: usize = 10;

/// The longest caption line followed, in characters (as `ingest::split` reads one).
const CAPTION_CHARS: usize = 160;

/// The share of the question's term weight (BM25's IDF of each analyzed term) a
/// table chunk must hold to be followed from its caption: a caption beside a passage
/// that answers something else leads to rows that share nothing with the question.
pub const CAPTION_MATCH: f64 = 0.1;

/// Place behind each prose chunk among the first [`CAPTION_DEPTH`] hits of each list
/// the table its caption titles (the module's doc). `read` holds the chunks read, and
/// gets those read here.
pub(super) fn follow_captions(
    corpus: &dyn Corpus,
    retrievers: &[&dyn Retriever],
    question: &str,
    lists: &mut [fusion::RankedList],
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<()> {
    let Some(bm25) = retrievers.iter().find(|r| r.name() == "bm25") else {
        return Ok(());
    };
    read_first_hits(corpus, lists, CAPTION_DEPTH, read)?;
    // The question's term weights, weighed once and only when a caption is found (a
    // database store reads them).
    let mut weights: Option<Vec<TermWeight>> = None;
    // Each prose chunk's table, found once for every list that has the chunk.
    let mut tables: HashMap<i64, Option<i64>> = HashMap::new();
    for l in lists.iter_mut() {
        for prose in first_hits(l, CAPTION_DEPTH) {
            let table = match tables.get(&prose.chunk_id) {
                Some(t) => *t,
                None => {
                    let t = captioned_table(
                        corpus,
                        *bm25,
                        question,
                        prose.chunk_id,
                        &mut weights,
                        read,
                    )?;
                    tables.insert(prose.chunk_id, t);
                    t
                }
            };
            let Some(table) = table else { continue };
            // Pushed last, an equal score ranks behind the prose (the fusion's sort
            // is stable); one already behind it in the list is there too.
            match l.hits.iter_mut().find(|h| h.chunk_id == table) {
                Some(h) => h.score = h.score.max(prose.score),
                None => l.hits.push(Hit {
                    chunk_id: table,
                    score: prose.score,
                }),
            }
        }
    }
    Ok(())
}

/// The caption lines of a prose chunk's text, each once, in order.
pub(super) fn caption_lines(text: &str) -> Vec<&str> {
    let mut seen = HashSet::new();
    text.lines()
        .map(str::trim)
        .filter(|l| l.chars().count() <= CAPTION_CHARS && text::is_caption(l))
        .filter(|l| seen.insert(*l))
        .collect()
}

/// The table chunk a caption in prose chunk `id` titles, of those holding at least
/// [`CAPTION_MATCH`] of `question`'s term weight (`weights`, weighed here the first
/// time it is needed) the one holding the most (the first, on a tie); none for a
/// table or navigation chunk, or without one.
fn captioned_table(
    corpus: &dyn Corpus,
    bm25: &dyn Retriever,
    question: &str,
    id: i64,
    weights: &mut Option<Vec<TermWeight>>,
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<Option<i64>> {
    let Some(prose) = read.get(&id).cloned() else {
        return Ok(None);
    };
    if chunk_kind(&prose.text).is_some() {
        return Ok(None);
    }
    let captions = caption_lines(&prose.text);
    if captions.is_empty() {
        return Ok(None);
    }
    let weights: &[TermWeight] = weights.get_or_insert_with(|| bm25.term_weights(question));
    let filter = DocFilter::new([prose.doc_id]);
    let mut best: Option<(f64, i64)> = None;
    for caption in captions {
        let hits = bm25.retrieve(caption, CAPTION_HITS, Some(&filter))?;
        let ids: Vec<i64> = hits.iter().map(|h| h.chunk_id).collect();
        read_missing(corpus, &ids, read)?;
        for h in &hits {
            let Some(c) = read.get(&h.chunk_id) else {
                continue;
            };
            let near = c.page_start <= prose.page_end + 1 && c.page_end + 1 >= prose.page_start;
            let titled = text::table_head(&c.text)
                .and_then(|head| head.lines().next())
                .is_some_and(|title| title.contains(caption));
            if !(near && titled) {
                continue;
            }
            let share = share_of(weights, &c.text);
            if share >= CAPTION_MATCH && best.is_none_or(|b| share > b.0) {
                best = Some((share, h.chunk_id));
            }
        }
    }
    Ok(best.map(|(_, t)| t))
}

/// The share of the question's term weight (`weights`, BM25's IDF of each analyzed
/// term) that `text` holds.
fn share_of(weights: &[TermWeight], text: &str) -> f64 {
    let total: f64 = weights.iter().map(|w| f64::from(w.idf)).sum();
    if total <= 0.0 {
        return 0.0;
    }
    let mut terms: HashSet<String> = HashSet::new();
    text::analyzer::analyze(text, |t| {
        terms.insert(t.to_string());
    });
    weights
        .iter()
        .filter(|w| terms.contains(&w.term))
        .map(|w| f64::from(w.idf))
        .sum::<f64>()
        / total
}
