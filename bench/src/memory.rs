//! `quire bench memory --chunks N`: the memory a library of N chunks costs the process
//! that holds it and searches it.
//!
//! A SQLite data directory is filled fast with N synthetic chunks, 200 to a document,
//! through the store's public insert API: each chunk's text is a window of about 200
//! words of real English (the corpus's pages through `pdftotext`, and
//! `/usr/share/common-licenses`), each vector one of a few hundred real windows
//! embedded once by the default embedding model, perturbed and normalized. Then a
//! child process (this binary, `memory --open`) opens the directory as the engine
//! does, builds the retrieval index through the engine's own path
//! (`Engine::retrieval_index`, timed) and runs the corpus questions through
//! `Engine::search` (vector + BM25, fused) a few hundred times; it reports its peak
//! resident memory (`VmHWM`, after the build and after the searches), its resident
//! memory split into anonymous and file-backed pages, and search p50/p99. The child
//! holds nothing of the fill, so its peak is the library's alone (with the embedding
//! model, which every searching process holds).

use crate::retrieval::percentile;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use quire::embed::Embedder;
use quire::engine::{Cancel, Engine, EngineConfig, RetrieveOptions};
use quire::store::NewDocument;
use quire::{Error, Result};
use serde::{Deserialize, Serialize};

/// Chunks per synthetic document (10,000 documents make 2M chunks).
pub const CHUNKS_PER_DOC: usize = 200;
/// Words per chunk.
const WORDS: usize = 200;

/// What the fill made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fill {
    pub chunks: usize,
    pub documents: usize,
    /// Distinct real windows embedded, whose perturbations are the vectors.
    pub base_vectors: usize,
    pub secs: f64,
    /// Size of the SQLite file, MiB.
    pub db_mb: f64,
}

/// What the child that opened the library and searched it measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Open {
    pub chunks: usize,
    /// Resident memory with the embedding model loaded, before the index, MiB.
    pub rss_before_build_mb: f64,
    /// What the vector and BM25 indexes say they hold (codes or rows, postings,
    /// per-row arrays), MiB.
    pub vector_mb: f64,
    pub bm25_mb: f64,
    /// Building the retrieval index through the engine, seconds.
    pub build_secs: f64,
    /// Peak resident memory after the build (`VmHWM`), MiB.
    pub peak_after_build_mb: f64,
    /// Peak resident memory after the searches, MiB.
    pub peak_mb: f64,
    /// Resident memory at the end, and its anonymous and file-backed parts, MiB.
    pub rss_mb: f64,
    pub rss_anon_mb: f64,
    pub rss_file_mb: f64,
    pub searches: usize,
    /// One `Engine::search` (query embedding, vector + BM25, fusion, sources' text).
    pub search_p50_ms: f64,
    pub search_p99_ms: f64,
}

/// The report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryReport {
    pub fill: Option<Fill>,
    pub open: Open,
}

/// A field of `/proc/self/status` (in KiB there), in MiB.
pub(crate) fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A xorshift generator: the same library for the same N.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in -1..1.
    fn signed(&mut self) -> f32 {
        (self.next() % 2_000_001) as f32 / 1_000_000.0 - 1.0
    }
}

/// The words of real English text: the PDFs of `pdfs` through `pdftotext`, and the
/// licences in `/usr/share/common-licenses`.
pub fn real_words(pdfs: &Path) -> Result<Vec<String>> {
    let mut text = String::new();
    for pdf in crate::pdfs(pdfs).unwrap_or_default() {
        if let Ok(pages) = crate::pdftotext::pages(&pdf, crate::pdftotext::Layout::Reading) {
            for p in pages {
                text.push_str(&p);
                text.push('\n');
            }
        }
    }
    let licenses = Path::new("/usr/share/common-licenses");
    if let Ok(dir) = std::fs::read_dir(licenses) {
        let mut files: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files {
            if let Ok(t) = std::fs::read_to_string(&f) {
                text.push_str(&t);
                text.push('\n');
            }
        }
    }
    let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    if words.len() < WORDS * 10 {
        return Err(Error::Invalid(format!(
            "only {} words of real text found (the corpus at {} and /usr/share/common-licenses)",
            words.len(),
            pdfs.display()
        )));
    }
    Ok(words)
}

/// Fill the data directory `dir` (a new one) with `chunks` synthetic chunks; `base`
/// real windows are embedded for the vectors.
pub fn fill(
    dir: &Path,
    chunks: usize,
    base: usize,
    words: &[String],
    mut progress: impl FnMut(&str),
) -> Result<Fill> {
    if chunks == 0 || base == 0 {
        return Err(Error::Invalid("--chunks and --base must be above 0".into()));
    }
    let started = Instant::now();
    let engine = Engine::open(EngineConfig::new(Some(dir.to_path_buf()))?)?;
    if !engine.store().documents()?.is_empty() {
        return Err(Error::Invalid(format!(
            "{} already holds documents: give the benchmark a new folder",
            dir.display()
        )));
    }
    let model = engine.embedder_name();
    let embedder = engine.embedder()?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ chunks as u64);
    let window = |rng: &mut Rng| -> String {
        let start = (rng.next() % (words.len() - WORDS) as u64) as usize;
        words[start..start + WORDS].join(" ")
    };
    progress(&format!("embedding {base} real windows with {model}"));
    let texts: Vec<String> = (0..base).map(|_| window(&mut rng)).collect();
    let mut vectors = Vec::with_capacity(base);
    for batch in texts.chunks(32) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        vectors.extend(embedder.embed(&refs)?);
    }
    let dims = embedder.dims();
    drop(embedder);
    let docs = chunks.div_ceil(CHUNKS_PER_DOC);
    let mut written = 0usize;
    for d in 0..docs {
        let n = CHUNKS_PER_DOC.min(chunks - written);
        let mut split = Vec::with_capacity(n);
        let mut embs = Vec::with_capacity(n);
        for k in 0..n {
            split.push(quire::ingest::split::Chunk {
                text: window(&mut rng),
                page_start: (k / 4 + 1) as u32,
                page_end: (k / 4 + 1) as u32,
                char_start: 0,
                char_end: 0,
                tokens: WORDS,
            });
            // A real vector, moved by noise of about half its length, normalized.
            let b = &vectors[(rng.next() % base as u64) as usize];
            let scale = 0.5 / (dims as f32).sqrt() * 3f32.sqrt();
            let mut v: Vec<f32> = b.iter().map(|x| x + scale * rng.signed()).collect();
            let norm = v
                .iter()
                .map(|x| x * x)
                .sum::<f32>()
                .sqrt()
                .max(f32::MIN_POSITIVE);
            v.iter_mut().for_each(|x| *x /= norm);
            embs.push(v);
        }
        let path = format!("/bench/memory/doc{d:06}.pdf");
        engine.store().insert_document(&NewDocument {
            path: &path,
            hash: &format!("{d:064x}"),
            bytes: 1,
            title: None,
            pages: &[],
            chunks: &split,
            embeddings: &embs,
            model: &model,
        })?;
        written += n;
        if d % 500 == 499 {
            progress(&format!(
                "{written} of {chunks} chunks written ({:.0} s)",
                started.elapsed().as_secs_f64()
            ));
        }
    }
    drop(engine);
    let db_mb = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("sqlite"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len() as f64 / (1024.0 * 1024.0))
        .sum();
    Ok(Fill {
        chunks,
        documents: docs,
        base_vectors: base,
        secs: started.elapsed().as_secs_f64(),
        db_mb,
    })
}

/// Open the library in `dir` as the engine does, build its index, and run each of
/// `questions` `reps` times (the child's side).
pub fn open(dir: &Path, questions: &[String], reps: usize) -> Result<Open> {
    if questions.is_empty() || reps == 0 {
        return Err(Error::Invalid("no questions to search".into()));
    }
    let engine = Engine::open(EngineConfig::new(Some(dir.to_path_buf()))?)?;
    // The embedding model first, so the build's figures are the index's alone.
    engine.embedder()?;
    let rss_before_build_mb = status_mb("VmRSS:");
    let t = Instant::now();
    let index = engine.retrieval_index()?;
    let build_secs = t.elapsed().as_secs_f64();
    let chunks = index.len();
    let (vector_mb, bm25_mb) = (
        index.vector.bytes() as f64 / (1024.0 * 1024.0),
        index.bm25.bytes() as f64 / (1024.0 * 1024.0),
    );
    drop(index);
    let peak_after_build_mb = status_mb("VmHWM:");
    let opts = RetrieveOptions::default();
    let mut times = Vec::with_capacity(questions.len() * reps);
    for _ in 0..reps {
        for q in questions {
            let t = Instant::now();
            let r = engine.search(q, &opts, &Cancel::new())?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            if r.nodes
                .iter()
                .any(|n| n.chunk.as_ref().is_none_or(|c| c.text.is_empty()))
            {
                return Err(Error::Invalid(format!(
                    "a source of {q:?} came without its text"
                )));
            }
        }
    }
    Ok(Open {
        chunks,
        rss_before_build_mb,
        vector_mb,
        bm25_mb,
        build_secs,
        peak_after_build_mb,
        peak_mb: status_mb("VmHWM:"),
        rss_mb: status_mb("VmRSS:"),
        rss_anon_mb: status_mb("RssAnon:"),
        rss_file_mb: status_mb("RssFile:"),
        searches: times.len(),
        search_p50_ms: percentile(&mut times, 0.5),
        search_p99_ms: percentile(&mut times, 0.99),
    })
}

impl fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(fill) = &self.fill {
            writeln!(
                f,
                "fill: {} chunks in {} documents ({} real vectors perturbed), {:.0} s, database {:.0} MiB",
                fill.chunks, fill.documents, fill.base_vectors, fill.secs, fill.db_mb
            )?;
        }
        let o = &self.open;
        writeln!(f, "open + search ({} chunks), one process:", o.chunks)?;
        writeln!(
            f,
            "  RSS before the index {:>9.0} MiB (the embedding model)",
            o.rss_before_build_mb
        )?;
        writeln!(f, "  index build          {:>9.1} s", o.build_secs)?;
        writeln!(
            f,
            "  index holds          {:>9.0} MiB vectors, {:.0} MiB BM25",
            o.vector_mb, o.bm25_mb
        )?;
        writeln!(
            f,
            "  peak RSS after build {:>9.0} MiB",
            o.peak_after_build_mb
        )?;
        writeln!(f, "  peak RSS (VmHWM)     {:>9.0} MiB", o.peak_mb)?;
        writeln!(
            f,
            "  RSS at the end       {:>9.0} MiB (anonymous {:.0}, file-backed {:.0})",
            o.rss_mb, o.rss_anon_mb, o.rss_file_mb
        )?;
        writeln!(
            f,
            "  search p50 / p99     {:>9.1} / {:.1} ms over {} searches",
            o.search_p50_ms, o.search_p99_ms, o.searches
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let mut xs = vec![5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&mut xs, 0.5), 3.0);
        assert_eq!(percentile(&mut xs, 0.99), 5.0);
        assert_eq!(percentile(&mut [], 0.5), 0.0);
    }

    #[test]
    fn the_generator_stays_in_range() {
        let mut r = Rng(42);
        for _ in 0..10_000 {
            let x = r.signed();
            assert!((-1.0..=1.0).contains(&x));
        }
    }
}
