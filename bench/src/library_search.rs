//! `quire bench library-search --sizes 1000,3000,10000 --store URL`: search latency
//! at library sizes too large to index here in a session (10,000 documents into
//! PostgreSQL is over two hours on 2 cores, most of it the embedding model).
//!
//! The library is [`crate::library`]'s (the same seed, the same documents, the same
//! queries), but its text is written straight to the store instead of through PDFs:
//! - each document's pages as the generator makes them, chunked by the real splitter
//!   (the default embedding model's tokenizer and `SplitConfig`), written by the
//!   store's own `insert_document`, so the BM25 lists, the statistics and the HNSW
//!   index are what indexing makes;
//! - the vectors are **stand-ins**: each chunk's analyzed terms hashed into the
//!   embedder's dimension (signed feature hashing, unit length), labelled with the
//!   embedder's name so that the engine searches them. The graph search costs what it
//!   costs for the model's vectors of the same number and dimension; the ranking of
//!   the vector retriever means nothing here, and no quality is measured.
//!
//! The store is filled up to each size in turn (a store already holding some of the
//! library is topped up: a run can be resumed), and at each size the engine's search
//! is timed as [`crate::library`] times it (fused, the settings' top k, no LLM), and
//! each retriever alone, after as many other queries of the same kind (another
//! seed's) have warmed the database's buffers and the common terms' lists.

use std::fmt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Instant;

use quire::embed::Embedder;
use quire::engine::{Engine, EngineConfig, RetrieverKind};
use quire::ingest::split::{split, SplitConfig};
use quire::ingest::ExtractedPage;
use quire::store::postgres::PgSearch;
use quire::store::{Chunk, NewDocument};
use quire::{Error, Result};
use serde::Serialize;

use crate::library::{percentile, search_with, SearchFigures};
use crate::pdfgen::{self, TextPool};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Library sizes to time the search at, ascending.
    pub sizes: Vec<usize>,
    /// A `postgres://…` URL (a database of the bench's own: its other documents are
    /// removed), or `sqlite` (a temporary data directory).
    pub store: String,
    pub seed: u64,
    pub queries: usize,
}

/// The figures at one size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeRun {
    pub docs: usize,
    pub pages: u64,
    pub chunks: u64,
    /// Seconds this run spent writing documents to reach this size (0 when the store
    /// already held them).
    pub fill_secs: f64,
    pub fused: SearchFigures,
    pub bm25: SearchFigures,
    pub vector: SearchFigures,
    /// PostgreSQL only: the store's BM25 ranking alone (MaxScore), and the median
    /// rows (a term's list in one document) it read.
    pub maxscore_bm25: Option<SearchFigures>,
    pub maxscore_rows_p50: Option<f64>,
    /// PostgreSQL only: BM25 as the store ranked before MaxScore, in the same run
    /// (every list of the query's terms read, then scored), and the rows that read.
    pub exhaustive_bm25: Option<SearchFigures>,
    pub exhaustive_rows_p50: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub store: String,
    pub embedder: String,
    pub stand_in_vectors: bool,
    pub runs: Vec<SizeRun>,
}

/// One document's rows, made off the writing thread.
struct Made {
    path: String,
    pages: Vec<ExtractedPage>,
    chunks: Vec<Chunk>,
    vectors: Vec<Vec<f32>>,
}

pub fn run(opts: &Options, progress: &mut dyn FnMut(&str)) -> Result<Report> {
    let mut sizes = opts.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() || sizes[0] == 0 {
        return Err(Error::Invalid("--sizes: one or more sizes above 0".into()));
    }
    let pool = TextPool::load(Path::new(pdfgen::LICENSES))?;
    let queries = pool.queries(opts.seed, opts.queries.max(1));
    let warm = pool.queries(opts.seed ^ 0x7761_726d, opts.queries.max(1));
    let data = tempfile::Builder::new()
        .prefix("quire-bench-library-search-")
        .tempdir()
        .map_err(|e| Error::io(Path::new("tempdir"), e))?;
    let url = match opts.store.as_str() {
        "sqlite" => None,
        u if u.starts_with("postgres://") || u.starts_with("postgresql://") => Some(u.to_string()),
        other => {
            return Err(Error::Invalid(format!(
                "--store {other:?}: sqlite or a postgres:// URL"
            )))
        }
    };
    let engine = Engine::open(EngineConfig {
        data_dir: data.path().to_path_buf(),
        store: url.clone(),
        ..EngineConfig::default()
    })?;
    let embedder = engine.embedder()?;
    let model = engine.embedder_name();
    // What the store holds already: this library's documents by name; anything
    // else is removed.
    let mut have = std::collections::HashSet::new();
    for d in engine.documents()? {
        match library_index(&d.path) {
            Some(i) if i < *sizes.last().unwrap_or(&0) => {
                have.insert(i);
            }
            _ => {
                engine.remove_document(d.id)?;
            }
        }
    }
    let mut runs = Vec::new();
    let mut from = 0;
    for &size in &sizes {
        let todo: Vec<usize> = (from..size).filter(|i| !have.contains(i)).collect();
        from = size;
        let t = Instant::now();
        if !todo.is_empty() {
            fill(
                &engine, &pool, opts.seed, &todo, &*embedder, &model, progress,
            )?;
        }
        let fill_secs = t.elapsed().as_secs_f64();
        let docs = engine.documents()?;
        let pages: u64 = docs.iter().map(|d| u64::from(d.pages)).sum();
        let chunks: u64 = docs.iter().map(|d| d.chunks as u64).sum();
        progress(&format!(
            "{size} documents ({pages} pages, {chunks} chunks; {:.0} s writing); searching",
            fill_secs
        ));
        // Warm (the database's buffers, the common terms' lists) with other
        // queries of the same kind, then time.
        search_with(&engine, &warm, None)?;
        let fused = search_with(&engine, &queries, None)?;
        let bm25 = search_with(&engine, &queries, Some(RetrieverKind::Bm25))?;
        let vector = search_with(&engine, &queries, Some(RetrieverKind::Vector))?;
        let k = engine.settings().top_k;
        let (mut maxscore_bm25, mut maxscore_rows_p50) = (None, None);
        let (mut exhaustive_bm25, mut exhaustive_rows_p50) = (None, None);
        if let Some(u) = &url {
            // Interleaved, so that both see the same machine.
            let (m, mrows) = maxscore(u, &queries, k)?;
            let (e, erows) = exhaustive(u, &queries, k)?;
            (maxscore_bm25, maxscore_rows_p50) = (Some(m), Some(mrows));
            (exhaustive_bm25, exhaustive_rows_p50) = (Some(e), Some(erows));
        }
        runs.push(SizeRun {
            docs: docs.len(),
            pages,
            chunks,
            fill_secs,
            fused,
            bm25,
            vector,
            maxscore_bm25,
            maxscore_rows_p50,
            exhaustive_bm25,
            exhaustive_rows_p50,
        });
    }
    Ok(Report {
        store: if url.is_some() { "postgres" } else { "sqlite" }.into(),
        embedder: model,
        stand_in_vectors: true,
        runs,
    })
}

/// The store's BM25 ranking alone ([`PgSearch::bm25_reads`]: MaxScore), timed as
/// [`exhaustive`] is. Returns the timings and the median rows read.
fn maxscore(url: &str, queries: &[String], k: usize) -> Result<(SearchFigures, f64)> {
    let search = PgSearch::new(url);
    let (mut ms, mut rows_read) = (Vec::new(), Vec::new());
    let mut first_ms = 0.0;
    for (n, q) in std::iter::once(&queries[0]).chain(queries).enumerate() {
        let t = Instant::now();
        let (_, reads) = search.bm25_reads(q, k, None)?;
        let took = t.elapsed().as_secs_f64() * 1e3;
        if n == 0 {
            first_ms = took;
        } else {
            ms.push(took);
            rows_read.push(reads.rows as f64);
        }
    }
    Ok(figures(first_ms, ms, rows_read))
}

/// BM25 over PostgreSQL as the store ranked before MaxScore (its statement and its
/// scoring): every document's list of each of the query's terms read in one
/// statement, each chunk's score summed, the best `k` kept. Returns the timings and
/// the median rows read.
fn exhaustive(url: &str, queries: &[String], k: usize) -> Result<(SearchFigures, f64)> {
    use quire::text::bm25::{B, K1};
    let pg = |e: postgres::Error| Error::Postgres(e.to_string());
    let mut c = postgres::Client::connect(url, postgres::NoTls).map_err(pg)?;
    let (mut ms, mut rows_read) = (Vec::new(), Vec::new());
    let mut first_ms = 0.0;
    for (n, q) in std::iter::once(&queries[0]).chain(queries).enumerate() {
        let mut terms: Vec<String> = Vec::new();
        quire::text::analyzer::analyze(q, |t| {
            if !terms.iter().any(|x| x == t) {
                terms.push(t.to_string());
            }
        });
        let t = Instant::now();
        let rows = c
            .query(
                "SELECT t.term, t.doc_id, t.postings, m.n, m.total
                 FROM term_docs t,
                      (SELECT (SELECT value FROM meta WHERE key = 'chunks') AS n,
                              (SELECT value FROM meta WHERE key = 'terms') AS total) m
                 WHERE t.term = ANY($1)",
                &[&terms],
            )
            .map_err(pg)?;
        let mut scores: std::collections::HashMap<i64, f64> = Default::default();
        if let Some(r) = rows.first() {
            let (n, total): (i64, i64) = (r.get(3), r.get(4));
            let per_term = f64::from(B) / (total as f64 / n.max(1) as f64).max(1e-9);
            for term in &terms {
                let lists: Vec<&[u8]> = rows
                    .iter()
                    .filter(|r| r.get::<_, &str>(0) == term)
                    .map(|r| r.get(2))
                    .collect();
                let df = lists.iter().map(|l| l.len() / 16).sum::<usize>() as f64;
                let w = (1.0 + (n as f64 - df + 0.5) / (df + 0.5)).ln() * (f64::from(K1) + 1.0);
                for p in lists.iter().flat_map(|l| l.chunks_exact(16)) {
                    let id = i64::from_be_bytes(p[..8].try_into().unwrap_or_default());
                    let tf = f64::from(i32::from_be_bytes(p[8..12].try_into().unwrap_or_default()));
                    let len = f64::from(i32::from_be_bytes(p[12..].try_into().unwrap_or_default()));
                    *scores.entry(id).or_insert(0.0) +=
                        w * tf / (tf + f64::from(K1) * (1.0 - f64::from(B) + per_term * len));
                }
            }
        }
        let mut best: Vec<(i64, f64)> = scores.into_iter().collect();
        if best.len() > k && k > 0 {
            best.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let took = t.elapsed().as_secs_f64() * 1e3;
        if n == 0 {
            first_ms = took;
        } else {
            ms.push(took);
            rows_read.push(rows.len() as f64);
        }
    }
    Ok(figures(first_ms, ms, rows_read))
}

/// The timings (after a first query, timed apart) and the median rows read.
fn figures(first_ms: f64, mut ms: Vec<f64>, mut rows: Vec<f64>) -> (SearchFigures, f64) {
    (
        SearchFigures {
            queries: ms.len(),
            first_ms,
            p50_ms: percentile(&mut ms, 0.5),
            p99_ms: percentile(&mut ms, 0.99),
        },
        percentile(&mut rows, 0.5),
    )
}

/// Document `i`'s path in the store.
fn library_path(i: usize) -> String {
    format!("/quire-bench/library/{}", pdfgen::doc_name(i))
}

fn library_index(path: &str) -> Option<usize> {
    let name = path.strip_prefix("/quire-bench/library/lib-")?;
    let n: usize = name.strip_suffix(".pdf")?.parse().ok()?;
    n.checked_sub(1)
}

/// Write documents `todo`: made on a thread of their own (text, chunks, vectors),
/// written here one transaction each, as indexing writes them.
fn fill(
    engine: &Engine,
    pool: &TextPool,
    seed: u64,
    todo: &[usize],
    embedder: &(dyn Embedder + Sync),
    model: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    let dims = embedder.dims();
    let (tx, rx) = mpsc::sync_channel::<Result<Made>>(8);
    std::thread::scope(|s| -> Result<()> {
        s.spawn(move || {
            for &i in todo {
                let made = make(pool, seed, i, embedder, dims);
                if tx.send(made).is_err() {
                    return;
                }
            }
        });
        let t = Instant::now();
        for (n, made) in rx.iter().enumerate() {
            let m = made?;
            engine.store().insert_document(&NewDocument {
                path: &m.path,
                hash: &m.path,
                bytes: 0,
                title: None,
                pages: &m.pages,
                chunks: &m.chunks,
                embeddings: &m.vectors,
                model,
            })?;
            if (n + 1) % 250 == 0 {
                let rate = (n + 1) as f64 / t.elapsed().as_secs_f64();
                progress(&format!(
                    "written {} of {} ({rate:.1} documents a second)",
                    n + 1,
                    todo.len()
                ));
            }
        }
        Ok(())
    })
}

fn make(
    pool: &TextPool,
    seed: u64,
    i: usize,
    emb: &(dyn Embedder + Sync),
    dims: usize,
) -> Result<Made> {
    let pages: Vec<ExtractedPage> = pdfgen::doc_text(pool, seed, i, 0)
        .into_iter()
        .enumerate()
        .map(|(p, lines)| ExtractedPage {
            number: p as u32 + 1,
            text: lines.join("\n"),
            ocr: false,
            has_images: false,
            tables: Vec::new(),
        })
        .collect();
    let chunks = split(&pages, emb, &SplitConfig::default())?;
    let vectors = chunks.iter().map(|c| stand_in(&c.text, dims)).collect();
    Ok(Made {
        path: library_path(i),
        pages,
        chunks,
        vectors,
    })
}

/// A chunk's stand-in vector: its analyzed terms hashed into `dims` signed
/// buckets (FNV-1a), at unit length.
fn stand_in(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0f32; dims.max(1)];
    let n = v.len() as u64;
    quire::text::analyzer::analyze(text, |t| {
        let h = t.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        v[(h % n) as usize] += sign;
    });
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v[0] = 1.0;
    }
    v
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "library search on {} (text written straight to the store; vectors are \
             stand-ins under {}'s name); milliseconds, the engine's search (fused, and \
             each retriever alone), then the store's BM25 ranking alone, now and before \
             MaxScore, with the median rows read",
            self.store, self.embedder
        )?;
        writeln!(
            f,
            "{:>6} {:>8} {:>9} {:>7} | {:>15} | {:>15} | {:>15} | {:>21} | {:>21}",
            "docs",
            "pages",
            "chunks",
            "write s",
            "fused p50/p99",
            "bm25 p50/p99",
            "vector p50/p99",
            "BM25 alone (rows)",
            "before MaxScore (rows)"
        )?;
        for r in &self.runs {
            let pair = |s: &SearchFigures| format!("{:.1} / {:.1}", s.p50_ms, s.p99_ms);
            let with_rows = |s: &Option<SearchFigures>, rows: Option<f64>| match (s, rows) {
                (Some(s), Some(rows)) => format!("{} ({rows:.0})", pair(s)),
                _ => "-".into(),
            };
            writeln!(
                f,
                "{:>6} {:>8} {:>9} {:>7.0} | {:>15} | {:>15} | {:>15} | {:>21} | {:>21}",
                r.docs,
                r.pages,
                r.chunks,
                r.fill_secs,
                pair(&r.fused),
                pair(&r.bm25),
                pair(&r.vector),
                with_rows(&r.maxscore_bm25, r.maxscore_rows_p50),
                with_rows(&r.exhaustive_bm25, r.exhaustive_rows_p50),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_path_gives_back_its_index() {
        assert_eq!(library_index(&library_path(0)), Some(0));
        assert_eq!(library_index(&library_path(9_999)), Some(9_999));
        assert_eq!(library_index("/elsewhere/lib-00001.pdf"), None);
        assert_eq!(library_index("/quire-bench/library/lib-00000.pdf"), None);
    }

    #[test]
    fn stand_in_vectors_are_unit_length_and_alike_for_alike_text() {
        let a = stand_in("the licensee may copy and distribute the program", 384);
        let b = stand_in(
            "the licensee may copy and distribute the program freely",
            384,
        );
        let c = stand_in("warranty of merchantability or fitness", 384);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert!(dot(&a, &b) > 0.8, "{}", dot(&a, &b));
        assert!(dot(&a, &c) < 0.5, "{}", dot(&a, &c));
        assert_eq!(
            stand_in("", 8),
            vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        );
    }
}
