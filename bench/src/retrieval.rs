//! Retrieval benchmarks: quality over the shared corpus (`quire bench retrieval`) and
//! latency at scale over synthetic chunks (`quire bench retrieval-scale`).
//!
//! Quality: every question of `questions.jsonl` is asked of the vector retriever
//! alone, BM25 alone and both fused; a question is a hit at k when one of the first
//! k source nodes is from the question's file and its pages include an expected
//! page. Reported per retriever set, question set, language and half: hit@1, hit@3,
//! hit@5, hit@10 and MRR (over the first 10). Every question is in the tuning or the
//! held-out half of its set (`bench/data/retrieval_split.json`, drawn once): retrieval
//! is tuned on the tuning half, and the held-out figures say whether that generalizes.
//!
//! Without `--data-dir`, [`index_pdf_dir`] stands in for ingestion: pages come from
//! poppler's `pdftotext` (installed by the test set-up) and [`chunk_pages`] cuts them
//! into windows of the embedder's tokens, one page at a time. Where poppler-data is
//! not installed, `pdftotext` drops the Chinese of Adobe-GB1 CID fonts
//! (lshort-zh-cn.pdf), so Chinese figures come from an index built by `quire index`
//! (`--data-dir`). `bench/data/questions-zh.jsonl` holds 32 more Chinese questions
//! over the corpus's two Chinese documents (`--questions`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Instant;

use quire::embed::Embedder;
use quire::llm::{Cancel, Llm};
use quire::retrieve::bm25::Bm25Builder;
use quire::retrieve::vector::{VectorIndexBuilder, VectorRetriever};
use quire::retrieve::{
    retrieve, search, ChunkInfo, Corpus, FusionMode, IndexedChunk, RetrievalIndex, RetrieveOptions,
    Retriever, RetrieverKind,
};
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::pdftotext::{self, Layout};

/// One question of the corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    /// `en` or `zh`.
    pub lang: String,
    /// The PDF's file name.
    pub file: String,
    /// 1-based physical pages where the answer is.
    pub pages: Vec<u32>,
    pub question: String,
}

/// Read a `questions.jsonl` file (other fields are ignored).
pub fn load_questions(path: &Path) -> Result<Vec<Question>> {
    quire::jsonl::read(path)
}

/// One question set's halves.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SetSplit {
    /// The question file, as the split was drawn from it.
    pub file: String,
    pub tune: Vec<String>,
    pub held: Vec<String>,
}

/// The committed split of the retrieval question sets: by set name, each set's
/// question ids in the tuning and the held-out half.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Split {
    pub seed: u64,
    pub sets: BTreeMap<String, SetSplit>,
}

impl Split {
    /// Read the committed split.
    pub fn load(path: &Path) -> Result<Split> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
    }

    /// The set holding question `id` and its half there (`tune` or `held`), or
    /// `None` for a question of no set.
    pub fn place(&self, id: &str) -> Option<(&str, &'static str)> {
        self.sets.iter().find_map(|(name, s)| {
            if s.tune.iter().any(|t| t == id) {
                Some((name.as_str(), "tune"))
            } else if s.held.iter().any(|t| t == id) {
                Some((name.as_str(), "held"))
            } else {
                None
            }
        })
    }
}

/// How the fused set retrieves in [`quality`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QualitySettings {
    pub fusion: FusionMode,
    /// Queries per question for the fused set (above 1 the LLM writes variants).
    pub num_queries: usize,
    /// [`RetrieveOptions::navigation_weight`], for every retriever set.
    pub navigation_weight: f64,
    /// [`RetrieveOptions::latin_variant`], for every retriever set.
    pub latin_variant: bool,
    /// [`RetrieveOptions::follow_contents`], for every retriever set.
    pub follow_contents: bool,
    /// [`RetrieveOptions::follow_captions`], for every retriever set.
    pub follow_captions: bool,
}

impl Default for QualitySettings {
    fn default() -> Self {
        Self {
            fusion: FusionMode::ReciprocalRerank,
            num_queries: 1,
            navigation_weight: RetrieveOptions::default().navigation_weight,
            latin_variant: RetrieveOptions::default().latin_variant,
            follow_contents: RetrieveOptions::default().follow_contents,
            follow_captions: RetrieveOptions::default().follow_captions,
        }
    }
}

/// A piece of a page, before embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct PageChunk {
    pub file: String,
    /// 1-based.
    pub page: u32,
    pub text: String,
}

/// Cut each page into windows of at most `window` of the embedder's tokens,
/// overlapping by `overlap` tokens; whitespace is collapsed and empty pages skipped.
pub fn chunk_pages(
    file: &str,
    pages: &[String],
    embedder: &dyn Embedder,
    window: usize,
    overlap: usize,
) -> Result<Vec<PageChunk>> {
    if window == 0 || overlap >= window {
        return Err(Error::Invalid(format!(
            "chunk window {window} must be above its overlap {overlap}"
        )));
    }
    let mut out = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        let text = page.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            continue;
        }
        let spans = embedder.token_spans(&text)?;
        let page_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let mut start = 0;
        while start < spans.len() {
            let end = (start + window).min(spans.len());
            let (a, b) = (spans[start].start, spans[end - 1].end);
            if let Some(t) = text.get(a..b) {
                out.push(PageChunk {
                    file: file.to_string(),
                    page: page_no,
                    text: t.to_string(),
                });
            }
            if end == spans.len() {
                break;
            }
            start = end - overlap;
        }
    }
    Ok(out)
}

/// Embed `chunks` into [`IndexedChunk`]s (ids from 1, one document id per file).
pub fn embed_chunks(chunks: &[PageChunk], embedder: &dyn Embedder) -> Result<Vec<IndexedChunk>> {
    let mut files: Vec<&str> = Vec::new();
    let mut out = Vec::with_capacity(chunks.len());
    for batch in chunks.chunks(64) {
        let texts: Vec<&str> = batch.iter().map(|c| c.text.as_str()).collect();
        let vecs = embedder.embed(&texts)?;
        for (c, embedding) in batch.iter().zip(vecs) {
            let doc = match files.iter().position(|f| *f == c.file) {
                Some(d) => d,
                None => {
                    files.push(&c.file);
                    files.len() - 1
                }
            };
            out.push(IndexedChunk {
                id: out.len() as i64 + 1,
                info: ChunkInfo {
                    doc_id: doc as i64 + 1,
                    file: c.file.clone(),
                    page_start: c.page,
                    page_end: c.page,
                    text: c.text.clone(),
                },
                embedding,
            });
        }
    }
    Ok(out)
}

/// Index every PDF in `dir` (sorted by name) with the stand-in pipeline: pdftotext
/// pages, windows of 200 tokens overlapping by 40, embedded by `embedder`.
pub fn index_pdf_dir(dir: &Path, embedder: &dyn Embedder) -> Result<Vec<IndexedChunk>> {
    let pdfs = crate::pdfs(dir)?;
    if pdfs.is_empty() {
        return Err(Error::Invalid(format!("no PDF in {}", dir.display())));
    }
    let window = embedder.max_tokens().saturating_sub(2).clamp(16, 200);
    let mut chunks = Vec::new();
    for pdf in &pdfs {
        let name = pdf
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        chunks.extend(chunk_pages(
            &name,
            &pdftotext::pages(pdf, Layout::Reading)?,
            embedder,
            window,
            window / 5,
        )?);
    }
    embed_chunks(&chunks, embedder)
}

/// Hit rates and MRR of one retriever set over some questions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityRow {
    /// `vector`, `bm25` or `fused`.
    pub retrievers: String,
    /// The question set (a set of the split, `other` for a question in none), or
    /// `all`.
    pub set: String,
    /// `en`, `zh` or `all`.
    pub lang: String,
    /// `tune`, `held` or `all`.
    pub half: String,
    pub questions: usize,
    pub hit1: f64,
    pub hit3: f64,
    pub hit5: f64,
    pub hit10: f64,
    pub mrr: f64,
}

/// Where each question's first relevant source was, per retriever set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionResult {
    pub id: String,
    pub lang: String,
    /// Its set in the split (`other` when in none).
    pub set: String,
    /// `tune`, `held`, or `none` for a question in no set.
    pub half: String,
    /// Ranks (as in `ranks`) of the first navigation page among the sources, if any.
    pub navigation: Vec<Option<usize>>,
    /// 1-based rank of the first relevant source among the first 10, per retriever
    /// set in the order of [`QualityReport::sets`].
    pub ranks: Vec<Option<usize>>,
}

/// The figures of `quire bench retrieval`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityReport {
    pub chunks: usize,
    pub fusion: FusionMode,
    pub num_queries: usize,
    pub navigation_weight: f64,
    pub latin_variant: bool,
    pub follow_contents: bool,
    pub follow_captions: bool,
    /// The split's seed.
    pub split_seed: u64,
    pub sets: Vec<String>,
    pub rows: Vec<QualityRow>,
    pub per_question: Vec<QuestionResult>,
    /// Seconds to answer all questions with all retriever sets.
    pub search_secs: f64,
}

/// Ask every question of `questions` with vector only, BM25 only, and both fused
/// (with `settings`' fusion and queries, the LLM writing variants when above 1), and
/// report each figure per half of `split`.
pub fn quality(
    index: &dyn Corpus,
    embedder: &dyn Embedder,
    llm: Option<&dyn Llm>,
    questions: &[Question],
    split: &Split,
    settings: QualitySettings,
) -> Result<QualityReport> {
    let QualitySettings {
        fusion,
        num_queries,
        navigation_weight,
        latin_variant,
        follow_contents,
        follow_captions,
    } = settings;
    let sets: [(&str, Vec<RetrieverKind>, usize); 3] = [
        ("vector", vec![RetrieverKind::Vector], 1),
        ("bm25", vec![RetrieverKind::Bm25], 1),
        (
            "fused",
            vec![RetrieverKind::Vector, RetrieverKind::Bm25],
            num_queries,
        ),
    ];
    let cancel = Cancel::new();
    let started = Instant::now();
    let mut per_question = Vec::with_capacity(questions.len());
    for q in questions {
        let mut ranks = Vec::with_capacity(sets.len());
        let mut navigation = Vec::with_capacity(sets.len());
        for (_, kinds, nq) in &sets {
            let opts = RetrieveOptions {
                top_k: 10,
                fusion,
                num_queries: *nq,
                retrievers: kinds.clone(),
                navigation_weight,
                latin_variant,
                follow_contents,
                follow_captions,
                ..RetrieveOptions::default()
            };
            let r = search(index, &q.question, embedder, llm, &opts, &cancel)?;
            let rank = r.nodes.iter().position(|n| {
                n.chunk.as_ref().is_some_and(|c| {
                    c.file == q.file
                        && q.pages
                            .iter()
                            .any(|p| (c.page_start..=c.page_end).contains(p))
                })
            });
            ranks.push(rank.map(|r| r + 1));
            navigation.push(
                r.nodes
                    .iter()
                    .position(|n| n.kind.is_some_and(|k| k.is_navigation()))
                    .map(|r| r + 1),
            );
        }
        let (set, half) = split.place(&q.id).unwrap_or(("other", "none"));
        per_question.push(QuestionResult {
            id: q.id.clone(),
            lang: q.lang.clone(),
            set: set.to_string(),
            half: half.to_string(),
            ranks,
            navigation,
        });
    }
    let search_secs = started.elapsed().as_secs_f64();
    let mut set_names: Vec<&str> = per_question.iter().map(|r| r.set.as_str()).collect();
    set_names.sort_unstable();
    set_names.dedup();
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for s in &set_names {
        for lang in ["en", "zh", "all"] {
            groups.push((s, lang));
        }
    }
    if set_names.len() > 1 {
        groups.extend([("all", "en"), ("all", "zh"), ("all", "all")]);
    }
    let mut rows = Vec::new();
    for (si, (name, _, _)) in sets.iter().enumerate() {
        for &(set, lang) in &groups {
            let in_group: Vec<&QuestionResult> = per_question
                .iter()
                .filter(|r| (set == "all" || r.set == set) && (lang == "all" || r.lang == lang))
                .collect();
            // `all` languages is left out where it is the same as the one there is.
            let one_lang = in_group.windows(2).all(|w| w[0].lang == w[1].lang);
            if in_group.is_empty() || (lang == "all" && one_lang) {
                continue;
            }
            for half in ["tune", "held", "all"] {
                let rs: Vec<Option<usize>> = in_group
                    .iter()
                    .filter(|r| half == "all" || r.half == half)
                    .map(|r| r.ranks[si])
                    .collect();
                if rs.is_empty() {
                    continue;
                }
                let n = rs.len() as f64;
                let hit =
                    |k: usize| rs.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / n;
                let mrr = rs
                    .iter()
                    .map(|r| r.map_or(0.0, |r| 1.0 / r as f64))
                    .sum::<f64>()
                    / n;
                rows.push(QualityRow {
                    retrievers: name.to_string(),
                    set: set.to_string(),
                    lang: lang.to_string(),
                    half: half.to_string(),
                    questions: rs.len(),
                    hit1: hit(1),
                    hit3: hit(3),
                    hit5: hit(5),
                    hit10: hit(10),
                    mrr,
                });
            }
        }
    }
    Ok(QualityReport {
        chunks: index.chunks_indexed()?,
        fusion,
        num_queries,
        navigation_weight,
        latin_variant,
        follow_contents,
        follow_captions,
        split_seed: split.seed,
        sets: sets.iter().map(|s| s.0.to_string()).collect(),
        rows,
        per_question,
        search_secs,
    })
}

impl fmt::Display for QualityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "retrieval quality: {} chunks, fusion {}, {} quer{} for fused, navigation \
             weight {}, Latin-words variant {}, contents followed {}, captions followed {}; \
             split seed {} (tune: \
             tuning half, held: held-out half)",
            self.chunks,
            self.fusion,
            self.num_queries,
            if self.num_queries == 1 { "y" } else { "ies" },
            self.navigation_weight,
            if self.latin_variant { "on" } else { "off" },
            if self.follow_contents { "on" } else { "off" },
            if self.follow_captions { "on" } else { "off" },
            self.split_seed
        )?;
        writeln!(
            f,
            "{:<8} {:<7} {:<4} {:<4} {:>3} {:>6} {:>6} {:>6} {:>6} {:>6}",
            "set", "qset", "lang", "half", "n", "hit@1", "hit@3", "hit@5", "hit@10", "MRR"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:<8} {:<7} {:<4} {:<4} {:>3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3}",
                r.retrievers,
                r.set,
                r.lang,
                r.half,
                r.questions,
                r.hit1,
                r.hit3,
                r.hit5,
                r.hit10,
                r.mrr
            )?;
        }
        for half in ["tune", "held", "none"] {
            let of_half = || self.per_question.iter().filter(move |q| q.half == half);
            if of_half().next().is_none() {
                continue;
            }
            let misses: Vec<String> = of_half()
                .filter(|q| q.ranks.last().is_some_and(|r| r.is_none_or(|r| r > 5)))
                .map(|q| q.id.clone())
                .collect();
            let navigation = of_half()
                .filter(|q| {
                    q.navigation
                        .last()
                        .is_some_and(|r| r.is_some_and(|r| r <= 5))
                })
                .count();
            writeln!(
                f,
                "{half}: fused misses at 5: {}; a navigation page in the fused top 5: {} of {}",
                misses.join(" "),
                navigation,
                of_half().count()
            )?;
        }
        writeln!(
            f,
            "search time (all questions, all sets): {:.2} s",
            self.search_secs
        )
    }
}

/// An embedder that returns a vector fixed in advance, so that the scale benchmark
/// measures retrieval, not the model.
pub struct FixedEmbedder(pub Vec<f32>);

impl Embedder for FixedEmbedder {
    fn dims(&self) -> usize {
        self.0.len()
    }
    fn max_tokens(&self) -> usize {
        usize::MAX
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|_| self.0.clone()).collect())
    }
}

/// A small xorshift generator: synthetic data needs speed and repeatability, not
/// quality.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A term rank in `0..vocab` with density about 1/rank (Zipf's law, s = 1).
    fn zipf(&mut self, vocab: usize) -> usize {
        let r = ((vocab as f64).ln() * self.unit()).exp() as usize;
        r.saturating_sub(1).min(vocab.saturating_sub(1))
    }
}

/// Settings of the scale benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleParams {
    pub sizes: Vec<usize>,
    pub dims: usize,
    /// Distinct words of the synthetic texts.
    pub vocab: usize,
    /// Words per synthetic chunk.
    pub words_per_chunk: usize,
    /// Words per query.
    pub words_per_query: usize,
    /// Queries timed per size.
    pub queries: usize,
    pub top_k: usize,
}

impl Default for ScaleParams {
    fn default() -> Self {
        Self {
            sizes: vec![10_000, 100_000, 1_000_000],
            dims: 384,
            vocab: 50_000,
            words_per_chunk: 120,
            words_per_query: 6,
            queries: 50,
            top_k: 5,
        }
    }
}

/// Latency figures at one index size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleRow {
    pub chunks: usize,
    pub build_secs: f64,
    pub vector_mb: f64,
    pub bm25_mb: f64,
    pub bm25_postings: usize,
    /// One fused query (vector + BM25, one query, reciprocal rerank), milliseconds.
    pub fused_p50_ms: f64,
    pub fused_p95_ms: f64,
    pub fused_p99_ms: f64,
    pub vector_p50_ms: f64,
    pub bm25_p50_ms: f64,
    /// Adding one document (50 chunks) to the built index as the engine does
    /// ([`quire::retrieve::RetrievalIndex::update`]), milliseconds (median of 5).
    pub add_doc_ms: f64,
    /// Removing one document from it, milliseconds (median of 5).
    pub remove_doc_ms: f64,
    /// The process's resident memory after building and querying, MB.
    pub rss_mb: f64,
}

/// The figures of `quire bench retrieval-scale`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScaleReport {
    pub params: ScaleParams,
    pub rows: Vec<ScaleRow>,
}

impl fmt::Display for ScaleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.params;
        writeln!(
            f,
            "retrieval latency: synthetic chunks, {}-d vectors, {} words each from a \
             {}-word Zipf vocabulary; {}-word queries, top {}, {} queries per size \
             (query embedding precomputed)",
            p.dims, p.words_per_chunk, p.vocab, p.words_per_query, p.top_k, p.queries
        )?;
        writeln!(
            f,
            "{:>9} {:>8} {:>9} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}",
            "chunks",
            "build s",
            "vector MB",
            "bm25 MB",
            "fused p50",
            "fused p95",
            "fused p99",
            "vec p50",
            "bm25 p50",
            "add doc",
            "rm doc",
            "RSS MB"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:>9} {:>8.1} {:>9.0} {:>8.0} {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>8.0}ms {:>8.0}ms {:>8.0}",
                r.chunks,
                r.build_secs,
                r.vector_mb,
                r.bm25_mb,
                r.fused_p50_ms,
                r.fused_p95_ms,
                r.fused_p99_ms,
                r.vector_p50_ms,
                r.bm25_p50_ms,
                r.add_doc_ms,
                r.remove_doc_ms,
                r.rss_mb
            )?;
        }
        Ok(())
    }
}

/// The process's resident memory now, MB (Linux; 0 elsewhere).
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1e3)
}

/// Percentile `p` (0..=1) of `xs`, by nearest rank (0 when there is none).
pub(crate) fn percentile(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let i = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
    xs[i]
}

fn random_unit_vector(rng: &mut Rng, dims: usize, out: &mut Vec<f32>) {
    out.clear();
    out.extend((0..dims).map(|_| (rng.unit() * 2.0 - 1.0) as f32));
    let n = out
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::MIN_POSITIVE);
    out.iter_mut().for_each(|x| *x /= n);
}

/// Time one fused query (vector + BM25) at each of `params.sizes` synthetic chunks.
/// `progress` is told what is being done.
pub fn scale(params: &ScaleParams, mut progress: impl FnMut(&str)) -> Result<ScaleReport> {
    if params.dims == 0 || params.vocab == 0 || params.queries == 0 || params.top_k == 0 {
        return Err(Error::Invalid(
            "dims, vocab, queries and top_k must be at least 1".into(),
        ));
    }
    let mut rows = Vec::new();
    for &n in &params.sizes {
        progress(&format!("building {n} synthetic chunks"));
        let started = Instant::now();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ n as u64);
        let mut vb = VectorIndexBuilder::new(params.dims);
        vb.reserve(n);
        let mut bb = Bm25Builder::new();
        let term_ids: Vec<u32> = (0..params.vocab)
            .map(|i| bb.term_id(&format!("w{i}")))
            .collect();
        let mut v = Vec::with_capacity(params.dims);
        let mut terms = Vec::with_capacity(params.words_per_chunk);
        for i in 0..n {
            random_unit_vector(&mut rng, params.dims, &mut v);
            let doc = (i / 50) as i64;
            vb.push(i as i64, doc, &v)?;
            terms.clear();
            terms.extend((0..params.words_per_chunk).map(|_| term_ids[rng.zipf(params.vocab)]));
            bb.add_term_ids(i as i64, doc, &mut terms);
        }
        // The chunks' infos, as the engine keeps them (no text: the scan and the
        // update do not read it).
        let infos = (0..n)
            .map(|i| {
                let info = ChunkInfo {
                    doc_id: (i / 50) as i64,
                    file: String::new(),
                    page_start: 1,
                    page_end: 1,
                    text: String::new(),
                };
                (i as i64, info)
            })
            .collect();
        let mut index = RetrievalIndex::from_parts(vb.build(), bb.build(), infos);
        let build_secs = started.elapsed().as_secs_f64();
        progress(&format!(
            "timing {} queries over {n} chunks",
            params.queries
        ));
        let queries: Vec<(String, Vec<f32>)> = (0..params.queries)
            .map(|_| {
                let words: Vec<String> = (0..params.words_per_query)
                    .map(|_| format!("w{}", rng.zipf(params.vocab)))
                    .collect();
                let mut q = Vec::with_capacity(params.dims);
                random_unit_vector(&mut rng, params.dims, &mut q);
                (words.join(" "), q)
            })
            .collect();
        let opts = RetrieveOptions {
            top_k: params.top_k,
            ..RetrieveOptions::default()
        };
        let cancel = Cancel::new();
        let (mut fused, mut vec_ms, mut bm25_ms) = (Vec::new(), Vec::new(), Vec::new());
        let (vector, bm25) = (&index.vector, &index.bm25);
        for (text, qv) in &queries {
            let embedder = FixedEmbedder(qv.clone());
            let vr = VectorRetriever {
                index: vector,
                embedder: &embedder,
                exact: None,
            };
            let t = Instant::now();
            let r = retrieve(text, &[&vr, bm25], None, &opts, &cancel)?;
            fused.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(r);
            let t = Instant::now();
            std::hint::black_box(vr.retrieve(text, opts.candidates(), None)?);
            vec_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            std::hint::black_box(bm25.retrieve(text, opts.candidates(), None)?);
            bm25_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let (vector_mb, bm25_mb, bm25_postings) = (
            vector.bytes() as f64 / 1e6,
            bm25.bytes() as f64 / 1e6,
            bm25.postings(),
        );
        // Five more documents of 50 chunks each, added one at a time as the engine adds
        // newly indexed PDFs, then taken out again one at a time: the medians. (The
        // first addition also grows the vectors' allocation, which then has room.)
        progress("adding and removing documents");
        let words: Vec<String> = (0..params.vocab).map(|i| format!("w{i}")).collect();
        let (mut add_ms, mut remove_ms) = (Vec::new(), Vec::new());
        let first_doc = (n / 50 + 1) as i64;
        for d in 0..5i64 {
            let doc = first_doc + d;
            let added: Vec<IndexedChunk> = (0..50)
                .map(|k| {
                    let mut e = Vec::with_capacity(params.dims);
                    random_unit_vector(&mut rng, params.dims, &mut e);
                    let text: Vec<&str> = (0..params.words_per_chunk)
                        .map(|_| words[rng.zipf(params.vocab)].as_str())
                        .collect();
                    IndexedChunk {
                        id: (n as i64) + d * 50 + k,
                        info: ChunkInfo {
                            doc_id: doc,
                            file: "added.pdf".into(),
                            page_start: 1,
                            page_end: 1,
                            text: text.join(" "),
                        },
                        embedding: e,
                    }
                })
                .collect();
            let t = Instant::now();
            index.update(&Default::default(), added)?;
            add_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for d in 0..5i64 {
            let t = Instant::now();
            index.update(&[first_doc + d].into_iter().collect(), Vec::new())?;
            remove_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let (add_doc_ms, remove_doc_ms) = (
            percentile(&mut add_ms, 0.5),
            percentile(&mut remove_ms, 0.5),
        );
        rows.push(ScaleRow {
            chunks: n,
            build_secs,
            vector_mb,
            bm25_mb,
            bm25_postings,
            fused_p50_ms: percentile(&mut fused, 0.5),
            fused_p95_ms: percentile(&mut fused, 0.95),
            fused_p99_ms: percentile(&mut fused, 0.99),
            vector_p50_ms: percentile(&mut vec_ms, 0.5),
            bm25_p50_ms: percentile(&mut bm25_ms, 0.5),
            add_doc_ms,
            remove_doc_ms,
            rss_mb: rss_mb(),
        });
        drop(index);
    }
    Ok(ScaleReport {
        params: params.clone(),
        rows,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_extra_chinese_questions_load() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/questions-zh.jsonl");
        let qs = load_questions(&path).unwrap();
        assert_eq!(qs.len(), 32);
        let mut ids: Vec<&str> = qs.iter().map(|q| q.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), qs.len());
        for q in &qs {
            assert_eq!(q.lang, "zh", "{}", q.id);
            assert!(
                ["ctex-faq.pdf", "lshort-zh-cn.pdf"].contains(&q.file.as_str()),
                "{}",
                q.id
            );
            assert!(
                !q.pages.is_empty() && q.pages.iter().all(|&p| p >= 1),
                "{}",
                q.id
            );
        }
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let mut xs = vec![5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&mut xs, 0.5), 3.0);
        assert_eq!(percentile(&mut xs, 0.95), 5.0);
        assert_eq!(percentile(&mut [], 0.5), 0.0);
    }

    #[test]
    fn zipf_ranks_stay_in_the_vocabulary_and_favour_low_ranks() {
        let mut rng = Rng(42);
        let draws: Vec<usize> = (0..10_000).map(|_| rng.zipf(1000)).collect();
        assert!(draws.iter().all(|&r| r < 1000));
        let low = draws.iter().filter(|&&r| r < 10).count();
        let high = draws.iter().filter(|&&r| (990..1000).contains(&r)).count();
        assert!(low > 10 * high, "{low} vs {high}");
    }

    #[test]
    fn scale_runs_on_a_tiny_index() {
        let params = ScaleParams {
            sizes: vec![300],
            dims: 8,
            vocab: 100,
            queries: 3,
            ..ScaleParams::default()
        };
        let r = scale(&params, |_| {}).unwrap();
        assert_eq!(r.rows.len(), 1);
        assert_eq!(r.rows[0].chunks, 300);
        assert!(r.rows[0].bm25_postings > 300);
    }

    /// Splits on spaces, one token a word.
    struct Words;
    impl Embedder for Words {
        fn dims(&self) -> usize {
            2
        }
        fn max_tokens(&self) -> usize {
            8
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    #[test]
    fn pages_are_cut_into_overlapping_windows() {
        let pages = vec![
            "a b c d\n e f g".to_string(),
            "   ".to_string(),
            "h".to_string(),
        ];
        let got = chunk_pages("x.pdf", &pages, &Words, 3, 1).unwrap();
        let texts: Vec<(&str, u32)> = got.iter().map(|c| (c.text.as_str(), c.page)).collect();
        assert_eq!(
            texts,
            vec![("a b c", 1), ("c d e", 1), ("e f g", 1), ("h", 3)]
        );
        assert!(chunk_pages("x.pdf", &pages, &Words, 2, 2).is_err());
        let indexed = embed_chunks(&got, &Words).unwrap();
        assert_eq!(indexed.len(), 4);
        assert_eq!(indexed[3].info.page_start, 3);
        assert_eq!(indexed[3].id, 4);
    }

    #[test]
    fn quality_counts_hits_by_file_and_page() {
        let chunks = vec![
            IndexedChunk {
                id: 1,
                info: ChunkInfo {
                    doc_id: 1,
                    file: "a.pdf".into(),
                    page_start: 2,
                    page_end: 2,
                    text: "apt-mark hold keeps a package".into(),
                },
                embedding: vec![1.0, 0.0],
            },
            IndexedChunk {
                id: 2,
                info: ChunkInfo {
                    doc_id: 2,
                    file: "b.pdf".into(),
                    page_start: 7,
                    page_end: 7,
                    text: "宏包 的 说明".into(),
                },
                embedding: vec![0.0, 1.0],
            },
        ];
        let index = RetrievalIndex::build(chunks).unwrap();
        let questions = vec![
            Question {
                id: "Q1".into(),
                lang: "en".into(),
                file: "a.pdf".into(),
                pages: vec![2],
                question: "how to hold a package".into(),
            },
            Question {
                id: "Q2".into(),
                lang: "zh".into(),
                file: "b.pdf".into(),
                pages: vec![9],
                question: "宏包".into(),
            },
        ];
        let split: Split = serde_json::from_str(
            r#"{"seed": 7, "sets": {"s": {"file": "q.jsonl", "tune": ["Q1"], "held": ["Q2"]}}}"#,
        )
        .unwrap();
        // The fixed query vector favours chunk 1 for the vector retriever.
        let r = quality(
            &index,
            &FixedEmbedder(vec![1.0, 0.0]),
            None,
            &questions,
            &split,
            QualitySettings::default(),
        )
        .unwrap();
        // Q1: chunk 1 is first everywhere. Q2: the page is wrong, never a hit.
        assert_eq!(r.per_question[0].ranks, vec![Some(1), Some(1), Some(1)]);
        assert_eq!(r.per_question[1].ranks, vec![None, None, None]);
        assert_eq!(r.per_question[0].half, "tune");
        assert_eq!(r.per_question[1].set, "s");
        let fused = |lang: &str, half: &str| {
            r.rows
                .iter()
                .find(|x| x.retrievers == "fused" && x.lang == lang && x.half == half)
                .unwrap()
        };
        assert_eq!(fused("all", "all").questions, 2);
        assert!((fused("all", "all").hit1 - 0.5).abs() < 1e-12);
        assert!((fused("all", "all").mrr - 0.5).abs() < 1e-12);
        assert_eq!(
            (fused("all", "tune").questions, fused("all", "tune").hit1),
            (1, 1.0)
        );
        assert_eq!(
            (fused("all", "held").questions, fused("all", "held").hit5),
            (1, 0.0)
        );
        assert_eq!(fused("zh", "held").questions, 1);
        assert!(!r.rows.iter().any(|x| x.lang == "zh" && x.half == "tune"));
        // One set only: no `all` sets row.
        assert!(r.rows.iter().all(|x| x.set == "s"));
        let shown = r.to_string();
        assert!(shown.contains("held: fused misses at 5: Q2"), "{shown}");
        assert!(shown.contains("tune: fused misses at 5: ;"), "{shown}");
    }

    #[test]
    fn every_retrieval_question_is_in_exactly_one_half() {
        let bench = Path::new(env!("CARGO_MANIFEST_DIR"));
        let split = Split::load(&bench.join("data/retrieval_split.json")).unwrap();
        let zh = load_questions(&bench.join("data/questions-zh.jsonl")).unwrap();
        let s = &split.sets["zh"];
        assert_eq!(s.tune.len() + s.held.len(), zh.len());
        // Halved within each of its two files, the odd one out to the tuning half.
        assert!(s.tune.len().abs_diff(s.held.len()) <= 2);
        for q in &zh {
            assert_eq!(split.place(&q.id).map(|p| p.0), Some("zh"), "{}", q.id);
        }
        // The later Chinese set, halved the same way.
        let zh2 = load_questions(&bench.join("data/questions-zh2.jsonl")).unwrap();
        let s2 = &split.sets["zh2"];
        assert!(zh2.len() >= 40);
        assert_eq!(s2.tune.len() + s2.held.len(), zh2.len());
        assert!(s2.tune.len().abs_diff(s2.held.len()) <= 4);
        for q in &zh2 {
            assert_eq!(q.lang, "zh", "{}", q.id);
            assert!(!q.pages.is_empty(), "{}", q.id);
            assert_eq!(split.place(&q.id).map(|p| p.0), Some("zh2"), "{}", q.id);
        }
        // The questions that name a part by its number, halved per language.
        let nav = load_questions(&bench.join("data/questions-nav.jsonl")).unwrap();
        let s3 = &split.sets["nav"];
        assert_eq!(s3.tune.len() + s3.held.len(), nav.len());
        assert!(s3.tune.len().abs_diff(s3.held.len()) <= 2);
        for q in &nav {
            assert!(!q.pages.is_empty(), "{}", q.id);
            assert_eq!(split.place(&q.id).map(|p| p.0), Some("nav"), "{}", q.id);
        }
        // The corpus set (in ../shared, not in the repository): its ids are halved
        // per language, and no id is in two halves or two sets.
        let corpus = &split.sets["corpus"];
        assert_eq!(corpus.tune.len() + corpus.held.len(), 24);
        let mut all: Vec<&String> = split
            .sets
            .values()
            .flat_map(|s| s.tune.iter().chain(&s.held))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }
}
