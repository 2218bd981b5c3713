//! Retrieval: vector and BM25 retrievers, query generation, rank fusion.
//!
//! Quire retrieves the way LlamaIndex's `QueryFusionRetriever` does (after
//! RAG-fusion): the LLM may write variants of the question ([`query_gen`]), every
//! query runs through every [`Retriever`] ([`vector`], [`bm25`]), and the ranked
//! lists are fused ([`fusion`]) into the top-k [`SourceNode`]s. Each source node keeps,
//! for every (query, retriever) list that found it, its rank and raw score, so the UI
//! can show why a chunk was chosen.
//!
//! The indexes here are plain in-memory structures ([`RetrievalIndex`], `index.rs`)
//! that the store fills, row by row; this room knows nothing of SQLite. An index may
//! keep its chunks' text and f32 vectors, or only what search needs (int8 codes,
//! postings, pages): then the text of the sources and the vectors the ranking is made
//! exact with are read through [`ChunkTexts`] and [`ExactVectors`].

pub mod back_matter;
pub mod bm25;
mod captions;
pub mod fusion;
mod index;
pub mod page_kind;
pub mod query_gen;
pub mod relevance;
mod section_number;
pub mod vector;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::cpu::Cancel;
use crate::embed::Embedder;
use crate::llm::Llm;
use crate::{Error, Result};

pub use bm25::Bm25Index;
pub use fusion::{Evidence, FusionMode};
pub use index::{ChunkRow, IndexBuilder, IndexCorpus, RetrievalIndex};
pub use page_kind::{page_kind, table_kind, PageKind};
pub use vector::{ExactVectors, VectorIndex};

/// One retriever's answer for one chunk: its id and the retriever's raw score
/// (cosine for the vector retriever, BM25 for the BM25 retriever).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub chunk_id: i64,
    pub score: f32,
}

/// Restricts retrieval to some documents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocFilter {
    docs: HashSet<i64>,
}

impl DocFilter {
    /// Only chunks of these documents.
    pub fn new(docs: impl IntoIterator<Item = i64>) -> Self {
        Self {
            docs: docs.into_iter().collect(),
        }
    }
    /// Whether `doc_id` passes.
    pub fn allows(&self, doc_id: i64) -> bool {
        self.docs.contains(&doc_id)
    }
    /// The documents that pass, in ascending order.
    pub fn documents(&self) -> impl Iterator<Item = i64> + '_ {
        let mut d: Vec<i64> = self.docs.iter().copied().collect();
        d.sort_unstable();
        d.into_iter()
    }
}

/// Finds the chunks that best match a query.
pub trait Retriever: Send + Sync {
    /// Short name shown with the evidence: `vector`, `bm25`.
    fn name(&self) -> &str;
    /// At most `top_k` hits, best first, only from `filter`'s documents when given.
    fn retrieve(&self, query: &str, top_k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>>;
    /// Whether this retriever's ranking means anything for `query` (a vector
    /// retriever over an English-only embedding model does not for Chinese).
    fn covers(&self, query: &str) -> bool {
        let _ = query;
        true
    }
    /// For a retriever that weighs query terms (BM25): each distinct term of `query`
    /// with its weight over the whole index, for the "not found" check
    /// ([`relevance`]). Empty for the others.
    fn term_weights(&self, query: &str) -> Vec<TermWeight> {
        let _ = query;
        Vec::new()
    }
    /// [`Self::retrieve`] and [`Self::term_weights`] together, for a retriever that
    /// can weigh the terms from what its retrieval read (PostgreSQL's BM25).
    fn retrieve_weighed(
        &self,
        query: &str,
        top_k: usize,
        filter: Option<&DocFilter>,
    ) -> Result<(Vec<Hit>, Vec<TermWeight>)> {
        Ok((
            self.retrieve(query, top_k, filter)?,
            self.term_weights(query),
        ))
    }
}

/// One query term as a term-weighing retriever sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TermWeight {
    /// The analyzed term (stemmed word, CJK character or bigram).
    pub term: String,
    /// Its inverse document frequency, as the retriever weighs it.
    pub idf: f32,
    /// Chunks holding it (0: the library never uses it).
    pub chunks: usize,
    /// Chunks in the index.
    pub of: usize,
}

impl TermWeight {
    /// `term`, held by `chunks` of the `of` chunks in the index, with BM25's IDF
    /// (Lucene's, in f32); a term no chunk holds gets the IDF of a term in none.
    pub fn new(term: String, chunks: usize, of: usize) -> Self {
        let (n, df) = (of as f32, chunks as f32);
        Self {
            term,
            idf: (1.0 + (n - df + 0.5) / (df + 0.5)).ln(),
            chunks,
            of,
        }
    }
}

impl<T: Retriever + ?Sized> Retriever for &T {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn covers(&self, query: &str) -> bool {
        (**self).covers(query)
    }
    fn retrieve(&self, query: &str, top_k: usize, filter: Option<&DocFilter>) -> Result<Vec<Hit>> {
        (**self).retrieve(query, top_k, filter)
    }
    fn term_weights(&self, query: &str) -> Vec<TermWeight> {
        (**self).term_weights(query)
    }
    fn retrieve_weighed(
        &self,
        query: &str,
        top_k: usize,
        filter: Option<&DocFilter>,
    ) -> Result<(Vec<Hit>, Vec<TermWeight>)> {
        (**self).retrieve_weighed(query, top_k, filter)
    }
}

/// The retrievers Quire has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrieverKind {
    Vector,
    Bm25,
}

impl RetrieverKind {
    /// Its name in settings, on the command line and in the evidence.
    pub fn as_str(self) -> &'static str {
        match self {
            RetrieverKind::Vector => "vector",
            RetrieverKind::Bm25 => "bm25",
        }
    }
    /// Parse a comma-separated list such as `vector,bm25`.
    pub fn parse_list(s: &str) -> Result<Vec<RetrieverKind>> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let k = part.parse()?;
            if !out.contains(&k) {
                out.push(k);
            }
        }
        if out.is_empty() {
            return Err(Error::Invalid(
                "no retriever given (use vector, bm25)".into(),
            ));
        }
        Ok(out)
    }
}

impl std::str::FromStr for RetrieverKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "vector" => Ok(RetrieverKind::Vector),
            "bm25" => Ok(RetrieverKind::Bm25),
            other => Err(Error::Invalid(format!(
                "unknown retriever {other:?} (use vector, bm25)"
            ))),
        }
    }
}

impl std::fmt::Display for RetrieverKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the side panel shows about a chunk besides its scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkInfo {
    pub doc_id: i64,
    /// The PDF's file name.
    pub file: String,
    /// First and last page the chunk spans, 1-based.
    pub page_start: u32,
    pub page_end: u32,
    pub text: String,
}

/// One chunk as the store hands it to the retrieval indexes.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedChunk {
    pub id: i64,
    pub info: ChunkInfo,
    /// L2-normalized embedding.
    pub embedding: Vec<f32>,
}

/// A fused result: a chunk, its fused score, and why it was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceNode {
    pub chunk_id: i64,
    /// The fusion mode's score (higher is better).
    pub score: f64,
    /// For each (query, retriever) list that found the chunk: rank and raw score.
    pub evidence: Vec<Evidence>,
    /// Text, file and pages; `None` until filled from the index or the store.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub chunk: Option<ChunkInfo>,
    /// What kind of navigation page its text is (a table of contents, an index…),
    /// or `table` for a table's rows; `None` for body text or before [`search`] read
    /// the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<PageKind>,
}

impl SourceNode {
    /// Whether it is a navigation page, which retrieval demotes.
    pub fn is_navigation(&self) -> bool {
        self.kind.is_some_and(PageKind::is_navigation)
    }
}

/// How to retrieve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrieveOptions {
    /// Source nodes to keep after fusion.
    pub top_k: usize,
    /// Hits each retriever returns per query before fusion (LlamaIndex's
    /// per-retriever `similarity_top_k`); `None` means `max(top_k, 10)`.
    pub candidates: Option<usize>,
    pub fusion: FusionMode,
    /// Queries in all, the user's included; above 1 the LLM writes the rest.
    pub num_queries: usize,
    pub retrievers: Vec<RetrieverKind>,
    /// Retriever weights for the score-based fusions, one per retriever (they are
    /// normalized to sum to 1); `None` means equal weights.
    pub weights: Option<Vec<f64>>,
    /// Leave out of the fusion, for a query, a retriever that does not cover the
    /// query's language (see [`Retriever::covers`]), unless no retriever does.
    pub route_by_language: bool,
    /// What a navigation page's fused score is multiplied by ([`page_kind`]: tables
    /// of contents, indexes, lists of figures, bibliographies match every question
    /// and answer none), 0 to 1: `1` leaves them as fused, `0` puts them below every
    /// other candidate. [`search`] applies it to each retriever's scores before fusion
    /// and again over the fused candidates, so a demoted page is still found when
    /// nothing else matches.
    pub navigation_weight: f64,
    /// For each query that mixes CJK text with Latin-script words, also search its
    /// Latin words alone ([`crate::text::latin_words`]), fused with the rest: a
    /// Chinese question about an English document shares only its command and
    /// package names with it, which the CJK characters' matches would drown. Off by
    /// default: on the tuning half of the Chinese retrieval questions it found two
    /// such pages and lost two others (fused hit@5 0.907 → 0.884).
    pub latin_variant: bool,
    /// Follow a table of contents to the section it lists: when a contents chunk is
    /// among the first five hits of a list and one of its entries holds at least
    /// [`CONTENTS_MATCH`] of the question's term weight, the section that entry
    /// lists takes the contents chunk's place in the lists ([`follow_contents`]).
    pub follow_contents: bool,
    /// Follow a table's caption in the prose to its rows: when a prose chunk among
    /// the first five hits of a list holds a caption line, the table chunk titled
    /// with it that holds the most of the question's term weight (at least
    /// [`captions::CAPTION_MATCH`]) is placed right behind it in the list
    /// ([`captions`]).
    pub follow_captions: bool,
    /// Restrict retrieval to these documents.
    #[serde(skip)]
    pub filter: Option<DocFilter>,
    /// The queries, the user's first, when the caller generated the variants itself
    /// (the engine does, as a step of the answer); empty lets retrieval ask the LLM.
    #[serde(skip)]
    pub queries: Vec<String>,
    /// A custom query-generation prompt ([`query_gen::prompt_from`]).
    #[serde(skip)]
    pub query_gen_template: Option<String>,
}

/// The default [`RetrieveOptions::follow_contents`].
pub const FOLLOW_CONTENTS: bool = true;

/// The default [`RetrieveOptions::follow_captions`].
pub const FOLLOW_CAPTIONS: bool = true;

/// The share of the question's term weight (BM25's IDF) a contents entry must hold
/// for retrieval to follow it ([`RetrieveOptions::follow_contents`]). On the tuning
/// half of the retrieval questions fused hit@5 was 0.923 from 0 to 0.15, and 0.904
/// from 0.2 up (as without following): the middle of the flat range.
pub const CONTENTS_MATCH: f64 = 0.1;

/// The hits of each list whose contents entries are read.
const CONTENTS_DEPTH: usize = 5;

/// The hits of each list whose contents are read when the question names a part by
/// its number ("chapter 4", "第三章"): its words say little else, so the contents
/// rank lower. On the tuning half of the `nav` retrieval set, 10 found two of the
/// three Chinese questions' contents that 5 missed (fused hit@5 0.7 → 0.9).
const NAMED_DEPTH: usize = 10;

/// Hits of a contents entry's title searched for its section (the contents page
/// itself and passages that cite the title match it too).
const TITLE_HITS: usize = 10;

/// The default [`RetrieveOptions::navigation_weight`], chosen on the tuning half of
/// the retrieval questions (`bench/data/retrieval_split.json`).
pub const NAVIGATION_WEIGHT: f64 = 0.5;

impl Default for RetrieveOptions {
    fn default() -> Self {
        Self {
            top_k: 5,
            candidates: None,
            fusion: FusionMode::ReciprocalRerank,
            num_queries: 1,
            retrievers: vec![RetrieverKind::Vector, RetrieverKind::Bm25],
            weights: None,
            route_by_language: true,
            navigation_weight: NAVIGATION_WEIGHT,
            latin_variant: false,
            follow_contents: FOLLOW_CONTENTS,
            follow_captions: FOLLOW_CAPTIONS,
            filter: None,
            queries: Vec::new(),
            query_gen_template: None,
        }
    }
}

impl RetrieveOptions {
    /// Refuse options out of range: `top_k` 0, a navigation weight outside 0 to 1.
    pub fn check(&self) -> Result<()> {
        if self.top_k == 0 {
            return Err(Error::Invalid("top_k must be at least 1".into()));
        }
        if !(0.0..=1.0).contains(&self.navigation_weight) {
            return Err(Error::Invalid(format!(
                "navigation_weight must be 0 to 1, not {}",
                self.navigation_weight
            )));
        }
        Ok(())
    }

    /// Hits asked of each retriever per query.
    pub fn candidates(&self) -> usize {
        self.candidates
            .unwrap_or(self.top_k.max(10))
            .max(self.top_k)
    }
}

/// The result of one retrieval: the queries run and the fused source nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retrieval {
    /// The user's query first, then the generated ones.
    pub queries: Vec<String>,
    /// Retriever names, in the order of [`Evidence::retriever`] indices.
    pub retrievers: Vec<String>,
    pub fusion: FusionMode,
    pub nodes: Vec<SourceNode>,
    /// The (query, retriever) pairs left out because the retriever does not cover
    /// the query's language, as indices into `queries` and `retrievers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<(usize, usize)>,
    /// Each (query, retriever) list's best hit before fusion, whether or not fusion
    /// kept it: how close the closest chunk came ([`relevance`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub best: Vec<BestHit>,
    /// The user's question's terms as the first term-weighing retriever (BM25) weighs
    /// them; empty without one. Not serialized.
    #[serde(skip)]
    pub term_weights: Vec<TermWeight>,
}

/// The best hit of one (query, retriever) list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestHit {
    pub query: usize,
    pub retriever: usize,
    pub chunk_id: i64,
    /// The retriever's raw score (cosine similarity for `vector`).
    pub score: f32,
}

/// Run `retrievers` for `query` (and, when `opts.num_queries > 1` and an LLM is
/// given, for its generated variants), then fuse.
pub fn retrieve(
    query: &str,
    retrievers: &[&dyn Retriever],
    llm: Option<&dyn Llm>,
    opts: &RetrieveOptions,
    cancel: &Cancel,
) -> Result<Retrieval> {
    retrieve_then(
        query,
        retrievers,
        llm,
        opts,
        cancel,
        &mut |_| Ok(()),
        opts.top_k,
    )
}

/// [`retrieve`], with `adjust` run over the ranked lists before they are fused (each
/// list's best hit is taken before it), keeping the first `keep` fused nodes.
#[allow(clippy::too_many_arguments)]
fn retrieve_then(
    query: &str,
    retrievers: &[&dyn Retriever],
    llm: Option<&dyn Llm>,
    opts: &RetrieveOptions,
    cancel: &Cancel,
    adjust: &mut dyn FnMut(&mut [fusion::RankedList]) -> Result<()>,
    keep: usize,
) -> Result<Retrieval> {
    if query.trim().is_empty() {
        return Err(Error::Invalid("empty query".into()));
    }
    if retrievers.is_empty() {
        return Err(Error::Invalid("no retriever".into()));
    }
    opts.check()?;
    let num_queries = opts.num_queries.max(1);
    let queries = match (num_queries, llm) {
        _ if !opts.queries.is_empty() => opts.queries.clone(),
        (1, _) => vec![query.to_string()],
        (n, Some(llm)) => query_gen::generate_queries_with(
            llm,
            opts.query_gen_template.as_deref(),
            query,
            n,
            cancel,
        )?,
        (_, None) => {
            return Err(Error::Invalid(
                "query generation needs an LLM (or use num_queries = 1)".into(),
            ))
        }
    };
    let mut queries = queries;
    if opts.latin_variant {
        for q in queries.clone() {
            if let Some(l) = crate::text::latin_words(&q) {
                if !queries.contains(&l) {
                    queries.push(l);
                }
            }
        }
    }
    let num_queries = num_queries.max(queries.len());
    let weights = fusion::normalized_weights(opts.weights.as_deref(), retrievers.len())?;
    let candidates = opts.candidates();
    let mut lists = Vec::with_capacity(queries.len() * retrievers.len());
    let mut skipped = Vec::new();
    let mut best = Vec::new();
    let mut term_weights = Vec::new();
    for (qi, q) in queries.iter().enumerate() {
        cancel.check()?;
        let covered: Vec<bool> = retrievers.iter().map(|r| r.covers(q)).collect();
        let route = opts.route_by_language && covered.iter().any(|&c| c);
        let run: Vec<usize> = (0..retrievers.len())
            .filter(|&ri| !route || covered[ri])
            .collect();
        skipped.extend(
            (0..retrievers.len())
                .filter(|ri| !run.contains(ri))
                .map(|ri| (qi, ri)),
        );
        // The user's question also weighs its terms (the first retriever that can).
        let weigh = qi == 0;
        let results = each_retriever(&run, |ri| {
            let r = retrievers[ri];
            if weigh {
                r.retrieve_weighed(q, candidates, opts.filter.as_ref())
            } else {
                Ok((r.retrieve(q, candidates, opts.filter.as_ref())?, Vec::new()))
            }
        });
        for (ri, result) in run.into_iter().zip(results) {
            let (hits, weights) = result?;
            if term_weights.is_empty() {
                term_weights = weights;
            }
            if let Some(h) = hits.first() {
                best.push(BestHit {
                    query: qi,
                    retriever: ri,
                    chunk_id: h.chunk_id,
                    score: h.score,
                });
            }
            lists.push(fusion::RankedList {
                query: qi,
                retriever: ri,
                hits,
            });
        }
    }
    adjust(&mut lists)?;
    let nodes = fusion::fuse(&lists, opts.fusion, &weights, num_queries, keep);
    Ok(Retrieval {
        queries,
        retrievers: retrievers.iter().map(|r| r.name().to_string()).collect(),
        fusion: opts.fusion,
        nodes,
        skipped,
        best,
        term_weights,
    })
}

/// `f` for each retriever of `run`, at once (the first on this thread, the others on
/// threads of their own: a database's BM25 and its vector search wait on different
/// connections, and the query's embedding runs beside BM25), the results in `run`'s
/// order.
fn each_retriever<T: Send>(run: &[usize], f: impl Fn(usize) -> Result<T> + Sync) -> Vec<Result<T>> {
    let Some((&first, rest)) = run.split_first() else {
        return Vec::new();
    };
    // A CPU width imposed on this thread holds on the others too.
    let width = crate::cpu::pool::forced_width();
    std::thread::scope(|s| {
        let f = &f;
        let others: Vec<_> = rest
            .iter()
            .map(|&ri| {
                s.spawn(move || match width {
                    Some(w) => crate::cpu::pool::with_width(w, || f(ri)),
                    None => f(ri),
                })
            })
            .collect();
        let mut out = vec![f(first)];
        for h in others {
            out.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        out
    })
}

/// What a search runs over: the in-memory index ([`RetrievalIndex`]) or a database
/// that retrieves by itself (the PostgreSQL store implements this).
pub trait Corpus: Send + Sync {
    /// Chunks searchable (of documents done, with a vector).
    fn chunks_indexed(&self) -> Result<usize>;
    /// The retrievers of `kinds`; the vector one embeds queries with `embedder`.
    fn retrievers<'a>(
        &'a self,
        kinds: &[RetrieverKind],
        embedder: &'a dyn Embedder,
    ) -> Vec<Box<dyn Retriever + 'a>>;
    /// Text, file and pages of these chunks (those it knows).
    fn chunk_infos(&self, ids: &[i64]) -> Result<HashMap<i64, ChunkInfo>>;
}

/// The text of chunks, by id, where an index does not keep it (the engine reads it
/// from the store).
pub trait ChunkTexts: Send + Sync {
    /// The text of those of `ids` that still exist, in any order.
    fn chunk_texts(&self, ids: &[i64]) -> Result<Vec<(i64, String)>>;
}

/// [`retrieve`] over a corpus's retrievers, with the source nodes' text, file and
/// pages read from it and each one's [`PageKind`]. Navigation pages are demoted by
/// `opts.navigation_weight` (below 1) twice: in each ranked list before fusion (a
/// table of contents that leads BM25's list would otherwise take a rank from every
/// passage behind it), then, when one is still among the first `top_k`, over the
/// fused candidates (up to [`RetrieveOptions::candidates`] per list): its fused score
/// multiplied by the weight, and the first `top_k` of the new order kept.
pub fn search(
    corpus: &dyn Corpus,
    query: &str,
    embedder: &dyn Embedder,
    llm: Option<&dyn Llm>,
    opts: &RetrieveOptions,
    cancel: &Cancel,
) -> Result<Retrieval> {
    let boxed = corpus.retrievers(&opts.retrievers, embedder);
    let refs: Vec<&dyn Retriever> = boxed.iter().map(|b| b.as_ref()).collect();
    opts.check()?;
    let demote = opts.navigation_weight < 1.0;
    // The chunks read to demote in the lists, kept for the sources.
    let mut read = HashMap::new();
    let mut in_lists = |lists: &mut [fusion::RankedList]| -> Result<()> {
        // Contents are followed from the lists' order before demotion.
        if opts.follow_contents {
            follow_contents(corpus, &refs, query, lists, &mut read)?;
        }
        if opts.follow_captions {
            captions::follow_captions(corpus, &refs, query, lists, &mut read)?;
        }
        if demote {
            demote_in_lists(corpus, lists, opts.top_k, opts.navigation_weight, &mut read)?;
        }
        Ok(())
    };
    // Demoting keeps every fused candidate (`candidates()` per list at most).
    let keep = if demote { usize::MAX } else { opts.top_k };
    let mut r = retrieve_then(query, &refs, llm, opts, cancel, &mut in_lists, keep)?;
    let first = opts.top_k.min(r.nodes.len());
    read_chunks(corpus, &mut read, &mut r.nodes[..first])?;
    if demote && r.nodes[..first].iter().any(SourceNode::is_navigation) {
        read_chunks(corpus, &mut read, &mut r.nodes[first..])?;
        demote_navigation(&mut r.nodes, opts.navigation_weight);
    }
    r.nodes.truncate(opts.top_k);
    Ok(r)
}

/// Demote the navigation pages among the first `top_k` hits of each ranked list
/// before fusion: the score multiplied by `weight` (a negative one divided), so that
/// in its list the page falls below the passages it outscored by less than that
/// factor. A table of contents that leads BM25's list takes no rank from the passage
/// behind it. The chunks read go into `read` (only those first hits not read yet: a
/// library that keeps its text in the store reads a few more per search than its
/// sources).
fn demote_in_lists(
    corpus: &dyn Corpus,
    lists: &mut [fusion::RankedList],
    top_k: usize,
    weight: f64,
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<()> {
    let ids = read_first_hits(corpus, lists, top_k, read)?;
    let navigation: HashSet<i64> = ids
        .iter()
        .filter(|id| {
            read.get(id)
                .is_some_and(|c| chunk_kind(&c.text).is_some_and(PageKind::is_navigation))
        })
        .copied()
        .collect();
    for h in lists
        .iter_mut()
        .flat_map(|l| l.hits.iter_mut())
        .filter(|h| navigation.contains(&h.chunk_id))
    {
        h.score = demoted(f64::from(h.score), weight) as f32;
    }
    Ok(())
}

/// Follow a table of contents to the section it lists. Of the contents chunks among
/// the first [`CONTENTS_DEPTH`] hits of each list (`read` holds the chunks read, and
/// gets those read here), one entry is taken: when the question names a part by its
/// number ("chapter 4", "第三章"), the entry with that number in the contents around
/// the best-ranked such chunk ([`numbered_entry`]); otherwise the entry holding the
/// largest share of `question`'s term weight (BM25's IDF of each analyzed term), when
/// that share reaches [`CONTENTS_MATCH`] ([`matching_entry`]). Its title is searched
/// by BM25 in the contents' document, and the best hit on or after the page the entry
/// prints that holds the title as a heading ([`heading_key`]; navigation left out)
/// takes the contents chunk's score in each list that has it (or keeps its own, when
/// higher). The contents page is then demoted below it: a question worded as an
/// entry of the contents, or naming its number, is led to the section, in the
/// contents' place, and never past the passages that outranked the contents.
fn follow_contents(
    corpus: &dyn Corpus,
    retrievers: &[&dyn Retriever],
    question: &str,
    lists: &mut [fusion::RankedList],
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<()> {
    let Some(bm25) = retrievers.iter().position(|r| r.name() == "bm25") else {
        return Ok(());
    };
    let named = section_number::named_section(question);
    let depth = if named.is_some() {
        NAMED_DEPTH
    } else {
        CONTENTS_DEPTH
    };
    read_first_hits(corpus, lists, depth, read)?;
    // The contents chunks among the first hits, best-ranked first.
    let mut contents: Vec<(usize, i64)> = Vec::new();
    for l in lists.iter() {
        for (rank, h) in first_hits(l, depth).iter().enumerate() {
            if read
                .get(&h.chunk_id)
                .is_some_and(|c| chunk_kind(&c.text) == Some(PageKind::Contents))
            {
                contents.push((rank, h.chunk_id));
            }
        }
    }
    contents.sort_unstable();
    let mut seen = HashSet::new();
    let contents: Vec<i64> = contents
        .into_iter()
        .map(|(_, id)| id)
        .filter(|id| seen.insert(*id))
        .collect();
    let entry = match &named {
        Some(label) => {
            let ranked = named_contents(corpus, retrievers[bm25], lists, &contents, depth, read)?;
            let appendix = section_number::names_appendix(question);
            numbered_entry(corpus, &ranked, label, appendix, read)?
        }
        None => None,
    };
    if entry.is_none() && contents.is_empty() {
        return Ok(());
    }
    let entry = match entry {
        Some(e) => Some(e),
        None => matching_entry(retrievers[bm25], question, &contents, read),
    };
    let Some(Followed {
        contents,
        doc,
        title,
        page,
    }) = entry
    else {
        return Ok(());
    };
    let key = heading_key(&title);
    if key.chars().count() < 4 {
        return Ok(());
    }
    let filter = DocFilter::new([doc]);
    let hits = retrievers[bm25].retrieve(&title, TITLE_HITS, Some(&filter))?;
    let ids: Vec<i64> = hits.iter().map(|h| h.chunk_id).collect();
    read_missing(corpus, &ids, read)?;
    // The section itself: a chunk on or after the printed page that holds the
    // title (its section number aside) as the page does, as a heading.
    let Some(section) = hits.iter().map(|h| h.chunk_id).find(|id| {
        read.get(id).is_some_and(|c| {
            c.page_end >= page
                && !chunk_kind(&c.text).is_some_and(PageKind::is_navigation)
                && heading_key(&c.text).contains(&key)
        })
    }) else {
        return Ok(());
    };
    // The section takes the contents page's score in each list that has it, unless
    // it scores higher there already (then the page is demoted below it).
    for l in lists.iter_mut() {
        // A part named by its number takes the best score of its document among the
        // list's first hits: the number says which part, the hits which document.
        let donor = if named.is_some() {
            first_hits(l, depth)
                .into_iter()
                .find(|h| read.get(&h.chunk_id).is_some_and(|c| c.doc_id == doc))
                .map(|h| h.score)
        } else {
            l.hits
                .iter()
                .find(|h| h.chunk_id == contents)
                .map(|h| h.score)
        };
        let Some(score) = donor else {
            continue;
        };
        match l.hits.iter_mut().find(|h| h.chunk_id == section) {
            Some(h) => h.score = h.score.max(score),
            None => l.hits.push(Hit {
                chunk_id: section,
                score,
            }),
        }
    }
    Ok(())
}

/// Words that head a table of contents, searched for the contents of the documents
/// a question naming a part by its number found ([`named_contents`]).
const CONTENTS_HEADINGS: &str = "contents table of contents 目录 目次";

/// Hits of [`CONTENTS_HEADINGS`] read in each document searched.
const HEADING_HITS: usize = 5;

/// The documents searched for their contents by [`CONTENTS_HEADINGS`]: the best
/// ones among the first hits.
const HEADING_DOCS: usize = 3;

/// The contents chunks to look for a numbered entry in, for a question that names a
/// part by its number: those among the first hits (`found`), and the contents of
/// the documents among the first `depth` hits of each list that BM25 finds by
/// their heading ([`CONTENTS_HEADINGS`], the documents' own hits only): a part
/// named by its number shares few words with its document's contents, which then
/// rank low. Ordered by document (reciprocal rank of each document's best hit in
/// each list, summed), then by rank.
fn named_contents(
    corpus: &dyn Corpus,
    bm25: &dyn Retriever,
    lists: &[fusion::RankedList],
    found: &[i64],
    depth: usize,
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<Vec<i64>> {
    let mut doc_score: HashMap<i64, f64> = HashMap::new();
    for l in lists {
        let mut best: HashMap<i64, usize> = HashMap::new();
        for (rank, h) in first_hits(l, depth).iter().enumerate() {
            if let Some(c) = read.get(&h.chunk_id) {
                best.entry(c.doc_id).or_insert(rank);
            }
        }
        for (doc, rank) in best {
            *doc_score.entry(doc).or_default() += 1.0 / (60.0 + rank as f64 + 1.0);
        }
    }
    let mut ids = found.to_vec();
    let mut docs: Vec<(i64, f64)> = doc_score.iter().map(|(d, s)| (*d, *s)).collect();
    docs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    for (doc, _) in docs.into_iter().take(HEADING_DOCS) {
        let filter = DocFilter::new([doc]);
        let hits = bm25.retrieve(CONTENTS_HEADINGS, HEADING_HITS, Some(&filter))?;
        // A hit, or the chunk after it: a title page's last chunk holds the heading
        // and the contents start in the next.
        let more: Vec<i64> = hits
            .iter()
            .flat_map(|h| [h.chunk_id, h.chunk_id + 1])
            .collect();
        read_missing(corpus, &more, read)?;
        for pair in more.chunks(2) {
            let contents = |id: &i64| {
                read.get(id).is_some_and(|c| {
                    c.doc_id == doc && chunk_kind(&c.text) == Some(PageKind::Contents)
                })
            };
            if let Some(id) = pair.iter().find(|id| contents(id)) {
                if !ids.contains(id) {
                    ids.push(*id);
                }
            }
        }
    }
    // Stable: within a document, `found`'s rank order, then the heading search's.
    let score = |id: &i64| {
        read.get(id)
            .and_then(|c| doc_score.get(&c.doc_id))
            .copied()
            .unwrap_or(0.0)
    };
    ids.sort_by(|a, b| score(b).total_cmp(&score(a)));
    Ok(ids)
}

/// A contents entry chosen to be followed: the contents chunk among the first hits
/// whose score its section takes, the document, the entry's title and printed page.
struct Followed {
    contents: i64,
    doc: i64,
    title: String,
    page: u32,
}

/// Chunks read on each side of a contents chunk at a time, looking for the rest of
/// the contents ([`contents_around`]).
const CONTENTS_STEP: i64 = 16;

/// Chunks read at most on each side of a contents chunk.
const CONTENTS_REACH: i64 = 256;

/// The entry numbered `label` in the contents around the first of `contents` (best
/// ranked first) whose document has one: the question names a part by its number,
/// and the entry with that number may be in another chunk of the contents than the
/// one the question found (whose score the section takes). The contents' chunks are
/// read as one text, so that an entry cut between two is whole; the first entry with
/// the number in reading order is taken.
fn numbered_entry(
    corpus: &dyn Corpus,
    contents: &[i64],
    label: &str,
    appendix: bool,
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<Option<Followed>> {
    // Each run of contents chunks read once (a document may have two: its contents
    // and an index of the same shape), in the order of `contents`.
    let mut runs: Vec<(i64, i64, Vec<page_kind::ContentsEntry>)> = Vec::new();
    let mut seen: HashSet<i64> = HashSet::new();
    for &id in contents {
        let Some(doc) = read.get(&id).map(|c| c.doc_id) else {
            continue;
        };
        if seen.contains(&id) {
            continue;
        }
        let run = contents_around(corpus, id, doc, read)?;
        seen.extend(run.iter().copied());
        // The run read as one text: an entry cut between two chunks is whole again.
        let text: Vec<&str> = run
            .iter()
            .filter_map(|at| read.get(at).map(|c| c.text.as_str()))
            .collect();
        runs.push((id, doc, page_kind::contents_entries(&text.join("\n"))));
    }
    // A question that names an appendix takes an entry that says it is one first
    // (another document's part `B` is no appendix B).
    let passes: &[bool] = if appendix { &[true, false] } else { &[false] };
    for &explicit in passes {
        for (id, doc, entries) in &runs {
            let found = entries.iter().find_map(|e| {
                if explicit && !section_number::is_appendix_entry(&e.title) {
                    return None;
                }
                let (l, words) = section_number::entry_label(&e.title)?;
                (l == label).then(|| (words.to_string(), e.page))
            });
            if let Some((title, page)) = found {
                return Ok(Some(Followed {
                    contents: *id,
                    doc: *doc,
                    title,
                    page,
                }));
            }
        }
    }
    Ok(None)
}

/// The run of contents chunks of `doc` that `id` is in, in reading order: the
/// chunks of a document are stored in reading order under rising ids, so the run is
/// read outwards from `id` ([`CONTENTS_STEP`] at a time, up to [`CONTENTS_REACH`]
/// on each side) until a chunk of another document or of another kind.
fn contents_around(
    corpus: &dyn Corpus,
    id: i64,
    doc: i64,
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<Vec<i64>> {
    let mut run = vec![id];
    for dir in [-1i64, 1] {
        let mut at = id;
        'side: while (at - id).abs() < CONTENTS_REACH {
            let step: Vec<i64> = (1..=CONTENTS_STEP)
                .map(|k| at + dir * k)
                .filter(|x| *x > 0)
                .collect();
            read_missing(corpus, &step, read)?;
            for x in step {
                let contents = read.get(&x).is_some_and(|c| {
                    c.doc_id == doc && chunk_kind(&c.text) == Some(PageKind::Contents)
                });
                if !contents {
                    break 'side;
                }
                run.push(x);
            }
            at += dir * CONTENTS_STEP;
        }
    }
    run.sort_unstable();
    Ok(run)
}

/// Of the entries of `contents`, the one with the best balance (F1) of the
/// question's term weight it holds and of its own weight the question holds, when
/// that reaches [`CONTENTS_MATCH`]. Every entry's terms are weighed at once (a
/// database store reads them in one go).
fn matching_entry(
    bm25: &dyn Retriever,
    question: &str,
    contents: &[i64],
    read: &HashMap<i64, ChunkInfo>,
) -> Option<Followed> {
    let weights = bm25.term_weights(question);
    let total: f64 = weights.iter().map(|w| f64::from(w.idf)).sum();
    if total <= 0.0 {
        return None;
    }
    // The entries of every contents chunk, with the chunk and its document.
    let mut entries: Vec<(i64, i64, page_kind::ContentsEntry)> = Vec::new();
    let mut ids = contents.to_vec();
    ids.sort_unstable();
    for id in &ids {
        let Some(c) = read.get(id) else { continue };
        for e in page_kind::contents_entries(&c.text) {
            entries.push((*id, c.doc_id, e));
        }
    }
    if entries.is_empty() {
        return None;
    }
    let titles: Vec<&str> = entries
        .iter()
        .map(|(_, _, e)| heading_words(&e.title))
        .collect();
    let idf: HashMap<String, f64> = bm25
        .term_weights(&titles.join("\n"))
        .into_iter()
        .map(|w| (w.term, f64::from(w.idf)))
        .collect();
    let asked: HashMap<&str, f64> = weights
        .iter()
        .map(|w| (w.term.as_str(), f64::from(w.idf)))
        .collect();
    let mut best: Option<(f64, usize)> = None;
    for (i, title) in titles.iter().enumerate() {
        let mut terms: HashSet<String> = HashSet::new();
        crate::text::analyzer::analyze(title, |t| {
            terms.insert(t.to_string());
        });
        let of_entry: f64 = terms.iter().filter_map(|t| idf.get(t)).sum();
        let shared: Vec<&String> = terms
            .iter()
            .filter(|t| asked.contains_key(t.as_str()))
            .collect();
        let q = shared.iter().map(|t| asked[t.as_str()]).sum::<f64>() / total;
        let t = if of_entry > 0.0 {
            shared.iter().filter_map(|t| idf.get(*t)).sum::<f64>() / of_entry
        } else {
            0.0
        };
        let share = if q + t > 0.0 {
            2.0 * q * t / (q + t)
        } else {
            0.0
        };
        if best.is_none_or(|b| share > b.0) {
            best = Some((share, i));
        }
    }
    let (share, at) = best?;
    if share < CONTENTS_MATCH {
        return None;
    }
    let (contents, doc, entry) = entries.swap_remove(at);
    Some(Followed {
        contents,
        doc,
        title: entry.title,
        page: entry.page,
    })
}

/// A contents entry's title without its leading section number (`30`, `2.2.1`).
fn heading_words(title: &str) -> &str {
    let title = title.trim_start();
    match title.split_once(char::is_whitespace) {
        Some((first, rest)) if first.chars().all(|c| c.is_ascii_digit() || c == '.') => rest,
        _ => title,
    }
}

/// A title or a text reduced to what a heading and its contents entry share: the
/// letters, digits and CJK characters, lower-cased, a leading section number (`30`,
/// `2.2.1`) left out.
fn heading_key(text: &str) -> String {
    heading_words(text)
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The distinct chunks among the first `depth` hits of each list (by score), each
/// read into `read` unless it is there already.
fn read_first_hits(
    corpus: &dyn Corpus,
    lists: &[fusion::RankedList],
    depth: usize,
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<Vec<i64>> {
    let mut ids: Vec<i64> = Vec::new();
    for l in lists {
        ids.extend(first_hits(l, depth).iter().map(|h| h.chunk_id));
    }
    ids.sort_unstable();
    ids.dedup();
    read_missing(corpus, &ids, read)?;
    Ok(ids)
}

/// The first `depth` hits of a list, best first (equal scores in the list's order,
/// as the fusion ranks them).
fn first_hits(list: &fusion::RankedList, depth: usize) -> Vec<Hit> {
    let mut hits = list.hits.clone();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(depth);
    hits
}

/// Read into `read` those of `ids` it does not hold.
fn read_missing(
    corpus: &dyn Corpus,
    ids: &[i64],
    read: &mut HashMap<i64, ChunkInfo>,
) -> Result<()> {
    let missing: Vec<i64> = ids
        .iter()
        .copied()
        .filter(|id| !read.contains_key(id))
        .collect();
    if !missing.is_empty() {
        read.extend(corpus.chunk_infos(&missing)?);
    }
    Ok(())
}

/// Fill `nodes`' text, file and pages from `read` (chunks already read) or else
/// from `corpus`, and their page kind.
fn read_chunks(
    corpus: &dyn Corpus,
    read: &mut HashMap<i64, ChunkInfo>,
    nodes: &mut [SourceNode],
) -> Result<()> {
    let ids: Vec<i64> = nodes.iter().map(|n| n.chunk_id).collect();
    read_missing(corpus, &ids, read)?;
    for n in nodes {
        n.chunk = read.remove(&n.chunk_id);
        n.kind = n.chunk.as_ref().and_then(|c| chunk_kind(&c.text));
    }
    Ok(())
}

/// A chunk's kind: a table, else the kind of page its text has, if any.
fn chunk_kind(text: &str) -> Option<PageKind> {
    table_kind(text).or_else(|| page_kind(text))
}

/// `score` demoted by `weight` (0 to 1): multiplied, or, when negative (a cosine),
/// divided, so that it too moves down.
fn demoted(score: f64, weight: f64) -> f64 {
    if score >= 0.0 || weight == 0.0 {
        score * weight
    } else {
        score / weight
    }
}

/// Multiply the score of every navigation node by `weight` (0 to 1; a negative
/// score, which only `simple` fusion over cosines gives, is divided by it instead,
/// so that it too moves down) and sort again, best first, ties in their order.
fn demote_navigation(nodes: &mut [SourceNode], weight: f64) {
    for n in nodes.iter_mut().filter(|n| n.is_navigation()) {
        n.score = demoted(n.score, weight);
    }
    // At weight 0 a navigation page goes below every other candidate, whatever the
    // scores' signs.
    let zero = weight == 0.0;
    nodes.sort_by(|a, b| {
        let last = |n: &SourceNode| zero && n.is_navigation();
        last(a)
            .cmp(&last(b))
            .then_with(|| b.score.total_cmp(&a.score))
    });
}

impl std::fmt::Display for Retrieval {
    /// The ranked sources with, for each, the rank and raw score every (retriever,
    /// query) list gave it, as `quire search` prints them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "fusion {} over {}",
            self.fusion,
            self.retrievers.join(" + ")
        )?;
        for (i, q) in self.queries.iter().enumerate() {
            let who = if i == 0 { "user" } else { "generated" };
            writeln!(f, "query q{i} ({who}): {q}")?;
        }
        for &(qi, ri) in &self.skipped {
            let name = self.retrievers.get(ri).map_or("?", String::as_str);
            writeln!(
                f,
                "{name} left out for q{qi}: its model does not cover the query's language"
            )?;
        }
        for (i, n) in self.nodes.iter().enumerate() {
            write!(
                f,
                "\n#{:<2} score {:.4}  chunk {}",
                i + 1,
                n.score,
                n.chunk_id
            )?;
            if let Some(c) = &n.chunk {
                if c.page_start == c.page_end {
                    write!(f, "  {} p.{}", c.file, c.page_start)?;
                } else {
                    write!(f, "  {} pp.{}-{}", c.file, c.page_start, c.page_end)?;
                }
            }
            if let Some(k) = n.kind {
                write!(f, "  ({k} page)")?;
            }
            writeln!(f)?;
            let why: Vec<String> = n
                .evidence
                .iter()
                .map(|e| {
                    let name = self.retrievers.get(e.retriever).map_or("?", String::as_str);
                    format!("{name} q{} #{} ({:.4})", e.query, e.rank, e.score)
                })
                .collect();
            writeln!(f, "    found by: {}", why.join(", "))?;
            if let Some(c) = &n.chunk {
                let text: String = c.text.split_whitespace().collect::<Vec<_>>().join(" ");
                let mut short: String = text.chars().take(240).collect();
                if short.len() < text.len() {
                    short.push('…');
                }
                writeln!(f, "    {short}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::llm::{Completion, GenParams, StopReason, TokenSink};

    /// Counts of the words `apple`, `banana`, `cherry`: a toy embedding.
    struct Fruit;
    impl Embedder for Fruit {
        fn dims(&self) -> usize {
            3
        }
        fn max_tokens(&self) -> usize {
            512
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts
                .iter()
                .map(|t| {
                    ["apple", "banana", "cherry"]
                        .iter()
                        .map(|w| t.matches(w).count() as f32 + 0.01)
                        .collect()
                })
                .collect())
        }
    }

    /// [`Fruit`] declared English-only, as all-MiniLM-L6-v2's model card is.
    struct EnglishFruit;
    impl Embedder for EnglishFruit {
        fn dims(&self) -> usize {
            3
        }
        fn max_tokens(&self) -> usize {
            512
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Fruit.embed(texts)
        }
        fn covers(&self, text: &str) -> bool {
            crate::embed::languages_cover(&["en".to_string()], text)
        }
    }

    #[test]
    fn a_retriever_that_does_not_cover_the_query_language_is_left_out() {
        let ix = RetrievalIndex::build(vec![
            chunk(1, 1, 1, "apple apple pie"),
            chunk(2, 1, 2, "苹果派 apple"),
            chunk(3, 2, 5, "banana bread"),
        ])
        .unwrap();
        let search = |q: &str, opts: &RetrieveOptions| {
            super::search(&ix, q, &EnglishFruit, None, opts, &Cancel::new()).unwrap()
        };
        let opts = RetrieveOptions::default();
        let r = search("苹果派", &opts);
        assert_eq!(r.skipped, vec![(0, 0)]);
        assert_eq!(r.nodes[0].chunk_id, 2);
        assert!(r
            .nodes
            .iter()
            .all(|n| n.evidence.iter().all(|e| e.retriever == 1)));
        // A single rank-1 BM25 hit: 1/60.
        assert!((r.nodes[0].score - 1.0 / 60.0).abs() < 1e-12);
        assert!(r.to_string().contains("vector left out for q0"));
        // English queries keep both; so does a Chinese one with routing off.
        assert!(search("apple pie", &opts).skipped.is_empty());
        let off = RetrieveOptions {
            route_by_language: false,
            ..RetrieveOptions::default()
        };
        let r = search("苹果派", &off);
        assert!(r.skipped.is_empty());
        assert!(r
            .nodes
            .iter()
            .any(|n| n.evidence.iter().any(|e| e.retriever == 0)));
        // When no retriever covers the query, the ones asked for still run.
        let vector_only = RetrieveOptions {
            retrievers: vec![RetrieverKind::Vector],
            ..RetrieveOptions::default()
        };
        let r = search("苹果派", &vector_only);
        assert!(r.skipped.is_empty());
        assert_eq!(r.nodes.len(), 3);
    }

    /// A retriever that says it started and waits (up to 10 s) for the other one
    /// to say so too: two of them finish only when they run at once.
    struct Meets {
        name: &'static str,
        me: std::sync::mpsc::SyncSender<()>,
        other: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
        hit: i64,
        fail: bool,
    }
    impl Retriever for Meets {
        fn name(&self) -> &str {
            self.name
        }
        fn retrieve(&self, _q: &str, _k: usize, _f: Option<&DocFilter>) -> Result<Vec<Hit>> {
            self.me
                .send(())
                .map_err(|_| Error::Invalid("gone".into()))?;
            let other = self.other.lock().unwrap_or_else(|e| e.into_inner());
            other
                .recv_timeout(std::time::Duration::from_secs(10))
                .map_err(|_| Error::Invalid(format!("{} ran alone", self.name)))?;
            if self.fail {
                return Err(Error::Invalid(format!("{} failed", self.name)));
            }
            Ok(vec![Hit {
                chunk_id: self.hit,
                score: 1.0,
            }])
        }
    }

    fn meeting(fail: [bool; 2]) -> [Meets; 2] {
        let (a_tx, a_rx) = std::sync::mpsc::sync_channel(1);
        let (b_tx, b_rx) = std::sync::mpsc::sync_channel(1);
        [
            Meets {
                name: "a",
                me: a_tx,
                other: std::sync::Mutex::new(b_rx),
                hit: 1,
                fail: fail[0],
            },
            Meets {
                name: "b",
                me: b_tx,
                other: std::sync::Mutex::new(a_rx),
                hit: 2,
                fail: fail[1],
            },
        ]
    }

    #[test]
    fn a_querys_retrievers_run_at_once_and_fuse_in_their_order() {
        let [a, b] = meeting([false, false]);
        let refs: [&dyn Retriever; 2] = [&a, &b];
        let r = retrieve(
            "q",
            &refs,
            None,
            &RetrieveOptions::default(),
            &Cancel::new(),
        )
        .unwrap();
        assert_eq!(r.retrievers, ["a", "b"]);
        let best: Vec<(usize, i64)> = r.best.iter().map(|h| (h.retriever, h.chunk_id)).collect();
        assert_eq!(best, [(0, 1), (1, 2)]);
        // Equal reciprocal ranks: the first retriever's hit first.
        let ids: Vec<i64> = r.nodes.iter().map(|n| n.chunk_id).collect();
        assert_eq!(ids, [1, 2]);
        // An error is the search's, the first retriever's before the second's.
        for (fail, want) in [([false, true], "b failed"), ([true, true], "a failed")] {
            let [a, b] = meeting(fail);
            let refs: [&dyn Retriever; 2] = [&a, &b];
            let e = retrieve(
                "q",
                &refs,
                None,
                &RetrieveOptions::default(),
                &Cancel::new(),
            )
            .unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        }
    }

    /// Writes the same variants for every prompt.
    struct Variants(&'static str);
    impl Llm for Variants {
        fn context_window(&self) -> usize {
            2048
        }
        fn count_tokens(&self, text: &str) -> Result<usize> {
            Ok(text.len())
        }
        fn complete(
            &self,
            _prompt: &str,
            _params: &GenParams,
            _cancel: &Cancel,
            sink: &mut TokenSink<'_>,
        ) -> Result<Completion> {
            sink(self.0)?;
            Ok(Completion {
                text: self.0.to_string(),
                prompt_tokens: 0,
                output_tokens: 0,
                stop: StopReason::EndToken,
                prompt_secs: 0.0,
                gen_secs: 0.0,
                draft: None,
            })
        }
    }

    fn chunk(id: i64, doc_id: i64, page: u32, text: &str) -> IndexedChunk {
        IndexedChunk {
            id,
            info: ChunkInfo {
                doc_id,
                file: format!("doc{doc_id}.pdf"),
                page_start: page,
                page_end: page,
                text: text.to_string(),
            },
            embedding: Fruit.embed(&[text]).unwrap().remove(0),
        }
    }

    fn index() -> RetrievalIndex {
        RetrievalIndex::build(vec![
            chunk(1, 1, 1, "apple apple pie"),
            chunk(2, 1, 2, "banana bread"),
            chunk(3, 2, 5, "cherry tart with apple"),
            chunk(4, 2, 6, "plain water"),
        ])
        .unwrap()
    }

    #[test]
    fn search_fuses_both_retrievers_and_fills_the_chunks() {
        let ix = index();
        let r = super::search(
            &ix,
            "apple",
            &Fruit,
            None,
            &RetrieveOptions::default(),
            &Cancel::new(),
        )
        .unwrap();
        assert_eq!(r.queries, vec!["apple"]);
        assert_eq!(r.retrievers, vec!["vector", "bm25"]);
        let first = &r.nodes[0];
        assert_eq!(first.chunk_id, 1);
        let info = first.chunk.as_ref().unwrap();
        assert_eq!((info.file.as_str(), info.page_start), ("doc1.pdf", 1));
        // Chunk 1 is first for both retrievers: 1/60 + 1/60.
        assert!((first.score - 2.0 / 60.0).abs() < 1e-12);
        assert_eq!(first.evidence.len(), 2);
        assert!(first.evidence.iter().all(|e| e.rank == 1 && e.query == 0));
        // The vector retriever returns every chunk, BM25 only those with "apple".
        let bm25_found: Vec<i64> = r
            .nodes
            .iter()
            .filter(|n| n.evidence.iter().any(|e| e.retriever == 1))
            .map(|n| n.chunk_id)
            .collect();
        assert_eq!(bm25_found, vec![1, 3]);
        let shown = r.to_string();
        assert!(shown.contains("vector q0 #1"), "{shown}");
        assert!(shown.contains("doc1.pdf p.1"), "{shown}");
    }

    #[test]
    fn generated_queries_are_run_and_reported() {
        let ix = index();
        let opts = RetrieveOptions {
            num_queries: 3,
            retrievers: vec![RetrieverKind::Bm25],
            ..RetrieveOptions::default()
        };
        let llm = Variants("1. banana\n2. cherry\n");
        let r = super::search(&ix, "apple", &Fruit, Some(&llm), &opts, &Cancel::new()).unwrap();
        assert_eq!(r.queries, vec!["apple", "banana", "cherry"]);
        let by_query = |q: usize| -> Vec<i64> {
            r.nodes
                .iter()
                .filter(|n| n.evidence.iter().any(|e| e.query == q))
                .map(|n| n.chunk_id)
                .collect()
        };
        assert_eq!(by_query(1), vec![2]);
        assert_eq!(by_query(2), vec![3]);
        // Without an LLM, more than one query is an error, not a silent fallback.
        assert!(super::search(&ix, "apple", &Fruit, None, &opts, &Cancel::new()).is_err());
    }

    #[test]
    fn filter_cancel_and_bad_input() {
        let ix = index();
        let opts = RetrieveOptions {
            filter: Some(DocFilter::new([2])),
            ..RetrieveOptions::default()
        };
        let r = super::search(&ix, "apple", &Fruit, None, &opts, &Cancel::new()).unwrap();
        assert!(r
            .nodes
            .iter()
            .all(|n| n.chunk.as_ref().unwrap().doc_id == 2));
        assert!(!r.nodes.is_empty());
        let cancel = Cancel::new();
        cancel.cancel();
        assert!(matches!(
            super::search(
                &ix,
                "apple",
                &Fruit,
                None,
                &RetrieveOptions::default(),
                &cancel
            ),
            Err(Error::Cancelled)
        ));
        let none = RetrieveOptions::default();
        assert!(super::search(&ix, "  ", &Fruit, None, &none, &Cancel::new()).is_err());
        let zero = RetrieveOptions {
            top_k: 0,
            ..RetrieveOptions::default()
        };
        assert!(super::search(&ix, "apple", &Fruit, None, &zero, &Cancel::new()).is_err());
        assert!(RetrievalIndex::build(vec![chunk(1, 1, 1, "a"), chunk(1, 1, 2, "b")]).is_err());
        assert_eq!(
            RetrieverKind::parse_list("bm25, vector,bm25").unwrap(),
            vec![RetrieverKind::Bm25, RetrieverKind::Vector]
        );
        assert!(RetrieverKind::parse_list("vector,sql").is_err());
        assert!(RetrieverKind::parse_list(",").is_err());
    }

    #[test]
    fn navigation_pages_are_demoted_not_dropped() {
        let toc = "Contents\n1 apple pie . . . . . . . . 3\n2 apple tart . . . . . . . 5\n\
                   3 apple cake . . . . . . . 8\n4 banana bread . . . . . . 9";
        let ix = RetrievalIndex::build(vec![
            chunk(1, 1, 1, toc),
            chunk(2, 1, 3, "bake the apple pie for an hour"),
            chunk(3, 2, 5, "cherry jam"),
        ])
        .unwrap();
        let run = |q: &str, w: f64| {
            let opts = RetrieveOptions {
                top_k: 2,
                navigation_weight: w,
                retrievers: vec![RetrieverKind::Bm25],
                ..RetrieveOptions::default()
            };
            super::search(&ix, q, &Fruit, None, &opts, &Cancel::new()).unwrap()
        };
        // Left alone, the contents page's three "apple"s put it first.
        let r = run("apple", 1.0);
        assert_eq!(r.nodes[0].chunk_id, 1);
        assert_eq!(r.nodes[0].kind, Some(PageKind::Contents));
        assert_eq!(r.nodes[1].kind, None);
        assert!(r.to_string().contains("(contents page)"));
        // The kind is kept through JSON (a kept answer's sources), absent for body text.
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains(r#""kind":"contents""#), "{json}");
        let back: Retrieval = serde_json::from_str(&json).unwrap();
        assert_eq!(back.nodes, r.nodes);
        // Demoted, the body page comes first, and the kind travels with the node.
        for w in [0.5, 0.0] {
            let r = run("apple", w);
            let ids: Vec<i64> = r.nodes.iter().map(|n| n.chunk_id).collect();
            assert_eq!(ids, vec![2, 1], "weight {w}");
            assert_eq!(r.nodes[1].kind, Some(PageKind::Contents));
        }
        // Demoted in BM25's list (second there now: 1 / 61) and again once fused.
        let score = run("apple", 0.5)
            .nodes
            .iter()
            .find(|n| n.chunk_id == 1)
            .unwrap()
            .score;
        assert!((score - 0.5 / 61.0).abs() < 1e-12, "{score}");
        // When only the contents page matches, it is still found.
        let r = run("banana", 0.0);
        assert_eq!(r.nodes.len(), 1);
        assert_eq!(r.nodes[0].chunk_id, 1);
        // A weight out of range is refused.
        let bad = RetrieveOptions {
            navigation_weight: 1.5,
            ..RetrieveOptions::default()
        };
        assert!(super::search(&ix, "apple", &Fruit, None, &bad, &Cancel::new()).is_err());
    }

    #[test]
    fn a_demoted_page_takes_no_rank_from_the_passages_behind_it() {
        // Two hits per list. BM25 ranks the contents page (three "apple"s) first and
        // the apple passage second; the vector list has "pineapple" (the query's
        // direction exactly) first and the contents page second. Demoted only once
        // fused, the contents page kept BM25's first rank: the passage got 1 / 61,
        // below pineapple's 1 / 60 and the halved contents page's 0.0165, and was
        // left out. Demoted in each list first, the passage is BM25's first (1 / 60, a
        // tie, seen first in BM25's list).
        let toc = "Contents\n1 apple pie . . . . . . . . 3\n2 apple tart . . . . . . . 5\n\
                   3 apple cake . . . . . . . 8\n4 plum bread . . . . . . 9";
        let ix = RetrievalIndex::build(vec![
            chunk(1, 1, 1, toc),
            chunk(2, 1, 3, "an apple with banana and plum bread for the tea"),
            chunk(3, 2, 5, "pineapple"),
        ])
        .unwrap();
        let run = |w: f64| {
            let opts = RetrieveOptions {
                top_k: 2,
                candidates: Some(2),
                retrievers: vec![RetrieverKind::Bm25, RetrieverKind::Vector],
                navigation_weight: w,
                ..RetrieveOptions::default()
            };
            super::search(&ix, "apple", &Fruit, None, &opts, &Cancel::new()).unwrap()
        };
        let ids = |r: &Retrieval| r.nodes.iter().map(|n| n.chunk_id).collect::<Vec<_>>();
        let r = run(0.5);
        assert_eq!(ids(&r), vec![2, 3], "{r}");
        assert!(r.nodes.iter().all(|n| n.kind.is_none()), "{r}");
        let bm25 = r.nodes[0]
            .evidence
            .iter()
            .find(|e| e.retriever == 0)
            .unwrap();
        assert_eq!(bm25.rank, 1, "{r}");
        // Undemoted, the contents page leads.
        let r = run(1.0);
        assert_eq!(ids(&r), vec![1, 3], "{r}");
        assert_eq!(r.nodes[0].kind, Some(PageKind::Contents));
    }

    /// BM25's first hit alone for `q`, contents followed or not.
    fn bm25_first(ix: &RetrievalIndex, q: &str, follow: bool) -> Retrieval {
        let opts = RetrieveOptions {
            top_k: 1,
            candidates: Some(1),
            retrievers: vec![RetrieverKind::Bm25],
            follow_contents: follow,
            ..RetrieveOptions::default()
        };
        super::search(ix, q, &Fruit, None, &opts, &Cancel::new()).unwrap()
    }

    #[test]
    fn a_matching_contents_entry_leads_to_its_section() {
        // BM25 keeps one hit: the contents page, which lists the question's words.
        // Followed, the section it lists (page 7, under the entry's title) takes its
        // place; a page before the printed one, and a page after it without the
        // title as a heading, are not followed.
        let toc = "Contents\n1 Turning one page to landscape . . . . . . 7\n\
                   2 Fonts and sizes . . . . . . . . 9\n3 Page numbers . . . . . . . . 11";
        let ix = RetrievalIndex::build(vec![
            chunk(1, 1, 1, toc),
            chunk(2, 1, 4, "as said, landscape comes later"),
            chunk(
                3,
                1,
                7,
                &format!(
                    "1 Turning One Page to Landscape\n{}",
                    "use pdflscape ".repeat(30)
                ),
            ),
            chunk(4, 1, 8, "landscape"),
            chunk(5, 2, 1, "apple banana cherry"),
            chunk(6, 2, 2, "fonts sizes numbers"),
            chunk(7, 2, 3, "plum bread for the tea"),
        ])
        .unwrap();
        let q = "how do I turn a single page to landscape orientation";
        let run = |follow: bool| bm25_first(&ix, q, follow);
        let r = run(true);
        assert_eq!(r.nodes[0].chunk_id, 3, "{r}");
        assert_eq!(r.nodes.len(), 1);
        let r = run(false);
        assert_eq!(r.nodes[0].chunk_id, 1, "{r}");
        assert_eq!(r.nodes[0].kind, Some(PageKind::Contents));
    }

    #[test]
    fn a_part_named_by_its_number_is_found_through_the_contents() {
        // The contents run over three chunks, an entry (2.1) cut between the first
        // two; the question names a part only by its number.
        let ix = RetrievalIndex::build(vec![
            chunk(
                1,
                1,
                1,
                "The Widget Manual\nContents\n1 Getting started 3\n1.1 Install . . . . . . 3\n\
                 2 Drawing boxes 5\n2.1 Borders . . . . . .",
            ),
            chunk(
                2,
                1,
                1,
                ". . . . . . 6\n2.2 Shadows . . . . . . 7\n2.3 Rounded corners . . . . . 8\n\
                 3 Printing pages 9\n3.1 Paper . . . . . . 9",
            ),
            chunk(
                3,
                1,
                2,
                "3.2 Margins . . . . . . 10\n3.3 Duplex . . . . . . 11\n4 Index . . . . . . 12",
            ),
            chunk(
                4,
                1,
                3,
                "1 Getting started\nRun make install and then widget.",
            ),
            chunk(
                5,
                1,
                5,
                "2 Drawing boxes\nA box is drawn with the box command.",
            ),
            chunk(
                6,
                1,
                6,
                "2.1 Borders\nThe border key sets the width of the line.",
            ),
            chunk(7, 1, 9, "3 Printing pages\nPrint with lpr."),
            chunk(8, 2, 1, "A letter to the shop about widget prices."),
        ])
        .unwrap();
        let run = |q: &str, follow: bool| bm25_first(&ix, q, follow);
        let q = "What does chapter 2 of the widget manual cover?";
        let r = run(q, true);
        assert_eq!(r.nodes[0].chunk_id, 5, "{r}");
        let r = run(q, false);
        assert_ne!(r.nodes[0].chunk_id, 5, "{r}");
        // The entry cut between two chunks is read whole.
        let r = run("What is section 2.1 of the widget manual about?", true);
        assert_eq!(r.nodes[0].chunk_id, 6, "{r}");
        let r = run("What is in chapter 3 of the widget manual?", true);
        assert_eq!(r.nodes[0].chunk_id, 7, "{r}");
        // A number no entry has leads nowhere.
        let r = run("What does chapter 7 of the widget manual cover?", true);
        assert!(![5, 6, 7].contains(&r.nodes[0].chunk_id), "{r}");
    }

    #[test]
    fn a_caption_in_the_prose_leads_to_its_table() {
        // The prose where table 2 stood keeps its caption; the table's rows are
        // chunks of their own titled with it (as `ingest::split` writes them). The
        // question is worded as the prose is; the answer is a row.
        let table = |rows: &str| {
            format!(
                "2.1 Layout — Table 2: Column types\n\n| type | meaning |\n| --- | --- |\n{rows}"
            )
        };
        let mut c = vec![
            chunk(
                1,
                1,
                4,
                "The column types of a tabular are set out in table 2.\n\
                 Table 2: Column types\nColumns are separated by ampersands.",
            ),
            chunk(2, 1, 4, &table("| l | left aligned |\n| c | centred |")),
            chunk(3, 1, 4, &table("| p{width} | a tabular paragraph |")),
            chunk(
                4,
                1,
                9,
                "Table 7: Lengths\nThe tabcolsep length sets the space.",
            ),
            // Another page's table under the same caption, with more of the words.
            chunk(
                5,
                1,
                30,
                &table("| x | the column types of a tabular set out |"),
            ),
        ];
        // Another document says "column types of a tabular" often, so that BM25
        // ranks it above the rows.
        for id in 6..9 {
            c.push(chunk(
                id,
                2,
                1,
                "column types of a tabular, column types of a tabular, column types of a tabular",
            ));
        }
        let ix = RetrievalIndex::build(c).unwrap();
        let run = |follow: bool| {
            let opts = RetrieveOptions {
                top_k: 3,
                candidates: Some(3),
                retrievers: vec![RetrieverKind::Bm25],
                follow_captions: follow,
                ..RetrieveOptions::default()
            };
            let q = "how are the column types of a tabular set out";
            let r = super::search(&ix, q, &Fruit, None, &opts, &Cancel::new()).unwrap();
            r.nodes.iter().map(|n| n.chunk_id).collect::<Vec<_>>()
        };
        let without = run(false);
        assert_eq!(without[0], 1, "{without:?}");
        assert!(!without.contains(&3), "{without:?}");
        // Followed: of the table's chunks, the one holding more of the question's
        // words, right behind the prose with its caption; not the far page's.
        assert_eq!(run(true)[..2], [1, 3]);
        // The caption lines of a text, each once; a sentence that names a table is
        // none.
        assert_eq!(
            captions::caption_lines(
                "see table 2.\nTable 2: Column types\n Table 2: Column types\n表 3.1: 列格式"
            ),
            vec!["Table 2: Column types", "表 3.1: 列格式"]
        );
    }

    #[test]
    fn a_heading_key_drops_the_section_number_and_the_case() {
        assert_eq!(
            heading_key("2.2.1 Installing the Mode"),
            "installingthemode"
        );
        assert_eq!(
            heading_key("30 中英文混排时为何无法正确分行？"),
            "中英文混排时为何无法正确分行"
        );
        assert_eq!(heading_key("Fonts, and sizes"), "fontsandsizes");
    }

    #[test]
    fn demoting_keeps_order_among_equals_and_moves_negative_scores_down() {
        let node = |id: i64, score: f64, nav: bool| SourceNode {
            chunk_id: id,
            score,
            evidence: Vec::new(),
            chunk: None,
            kind: nav.then_some(PageKind::Index),
        };
        let mut nodes = vec![
            node(1, 0.9, true),
            node(2, 0.5, false),
            node(3, 0.45, true),
            node(4, -0.2, true),
            node(5, -0.3, false),
        ];
        demote_navigation(&mut nodes, 0.5);
        let ids: Vec<i64> = nodes.iter().map(|n| n.chunk_id).collect();
        // 1 → 0.45 (below 2's 0.5), 3 → 0.225, 4 → −0.4 (below 5's −0.3).
        assert_eq!(ids, vec![2, 1, 3, 5, 4]);
        let mut nodes = vec![node(1, 0.9, true), node(5, -0.3, false)];
        demote_navigation(&mut nodes, 0.0);
        assert_eq!(nodes[0].chunk_id, 5);
    }

    #[test]
    fn an_empty_index_finds_nothing() {
        let ix = RetrievalIndex::build(Vec::new()).unwrap();
        let r = super::search(
            &ix,
            "apple",
            &Fruit,
            None,
            &RetrieveOptions::default(),
            &Cancel::new(),
        )
        .unwrap();
        assert!(r.nodes.is_empty());
    }

    /// Chunks of documents 1..=n (three each) with varied words and pseudo-random
    /// vectors.
    fn synthetic_chunks(docs: std::ops::RangeInclusive<i64>) -> Vec<IndexedChunk> {
        let words = [
            "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
        ];
        let mut out = Vec::new();
        for doc in docs {
            for k in 0..3i64 {
                let id = doc * 10 + k;
                let text: Vec<&str> = (0..(5 + (id % 7) as usize))
                    .map(|i| words[(id as usize * 7 + i * i) % words.len()])
                    .collect();
                let embedding = (0..4)
                    .map(|i| ((id * 31 + i * 17) % 13) as f32 - 6.0)
                    .collect();
                out.push(IndexedChunk {
                    id,
                    info: ChunkInfo {
                        doc_id: doc,
                        file: format!("d{doc}.pdf"),
                        page_start: 1,
                        page_end: 1,
                        text: format!("{} doc{doc}", text.join(" ")),
                    },
                    embedding,
                });
            }
        }
        out
    }

    #[test]
    fn an_updated_index_searches_as_one_built_from_scratch() {
        let mut inc = RetrievalIndex::build(synthetic_chunks(1..=5)).unwrap();
        let removed: HashSet<i64> = [2, 4].into_iter().collect();
        inc.update(&removed, synthetic_chunks(6..=7)).unwrap();
        let full = RetrievalIndex::build(
            synthetic_chunks(1..=7)
                .into_iter()
                .filter(|c| !removed.contains(&c.info.doc_id))
                .collect(),
        )
        .unwrap();
        assert_eq!(inc.len(), full.len());
        assert_eq!(inc.documents(), full.documents());
        assert_eq!(inc.bm25.terms(), full.bm25.terms());
        assert_eq!(inc.bm25.postings(), full.bm25.postings());
        for q in [
            "alpha beta",
            "gamma doc6",
            "doc2 theta",
            "eta",
            "doc7 zeta delta",
        ] {
            assert_eq!(
                inc.bm25.search(q, 10, None),
                full.bm25.search(q, 10, None),
                "{q}"
            );
        }
        for i in 0..6 {
            let q: Vec<f32> = (0..4).map(|j| ((i * 5 + j * 3) % 7) as f32 - 3.0).collect();
            assert_eq!(
                inc.vector.search(&q, 8, None).unwrap(),
                full.vector.search(&q, 8, None).unwrap()
            );
            let only: DocFilter = DocFilter::new([3, 6]);
            assert_eq!(
                inc.vector.search(&q, 8, Some(&only)).unwrap(),
                full.vector.search(&q, 8, Some(&only)).unwrap()
            );
        }
        // A document that is not newer than the index is refused, and nothing changes.
        let before = inc.len();
        let old = synthetic_chunks(3..=3);
        assert!(inc.update(&HashSet::new(), old).is_err());
        assert_eq!(inc.len(), before);
        // Removing everything, then adding, works from empty.
        let all = inc.documents();
        inc.update(&all, synthetic_chunks(8..=8)).unwrap();
        assert_eq!(inc.documents(), [8].into_iter().collect());
    }
}
