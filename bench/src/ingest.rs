//! `quire bench ingest DIR`: the whole indexing pipeline over a folder of PDFs, as the
//! app runs it (extraction in child processes two at a time, ahead of splitting and
//! embedding, then the index's write), on a fresh index: pages/s, chunks/s, peak
//! memory, and the time of each stage, beside LlamaIndex's figure for the same work.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use quire::engine::{Engine, EngineConfig, IndexEvent};
use quire::ingest::pdf::{Extractor, EXE_ENV};
use quire::ingest::split::SplitConfig;
use quire::llm::Cancel;
use quire::Result;
use serde::Serialize;

/// LlamaIndex's figure, as measured for issue 23 on another machine (PyMuPDF →
/// SentenceSplitter → MiniLM through sentence-transformers, 2 threads, chunk size
/// 512): about 600 s for 5,000 pages. Shown when LlamaIndex is not run here
/// (`--peer`).
pub const LLAMAINDEX_PAGES_PER_SEC: f64 = 5000.0 / 600.0;

/// LlamaIndex run here on the same folder (`scripts/llamaindex_ingest.py`).
#[derive(Debug, Clone, Serialize)]
pub struct Peer {
    pub engine: String,
    /// How it split the pages.
    pub chunking: PeerChunks,
    /// Its splitter, in words (`SentenceSplitter(chunk_size=512)`, …).
    pub splitter: String,
    pub pages: u64,
    pub chunks: u64,
    /// Tokens the model saw, as [`IngestReport::embedded_tokens`].
    pub embedded_tokens: u64,
    pub secs: f64,
    pub pages_per_sec: f64,
    pub chunks_per_sec: f64,
    pub extract_secs: f64,
    pub embed_secs: f64,
    pub peak_rss_mb: f64,
}

/// How LlamaIndex splits the pages in [`peer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerChunks {
    /// As a LlamaIndex user gets it: `SentenceSplitter(chunk_size=512)`, its default
    /// overlap, sizes in its own (tiktoken) tokens; the model truncates each chunk to
    /// its 256 tokens, so part of the text is never embedded.
    Default,
    /// Quire's chunks: the sizes and overlap of Quire's splitter
    /// ([`SplitConfig::default`]) counted in the embedding model's own tokens, so both
    /// embed all of the text, in chunks of the same size: the same work.
    Same,
}

/// Run LlamaIndex's ingestion of `dir` with `python` (which has llama-index-core,
/// llama-index-embeddings-huggingface and pymupdf), with the default embedding model.
pub fn peer(python: &Path, dir: &Path, chunks: PeerChunks) -> Result<Peer> {
    let model = quire::models::default_embedder()?;
    let envs = match chunks {
        PeerChunks::Default => Vec::new(),
        PeerChunks::Same => {
            let c = SplitConfig::default();
            vec![(
                "QUIRE_PEER_CHUNKS",
                format!("{},{}", c.chunk_tokens, c.overlap_tokens),
            )]
        }
    };
    let v = crate::load::run_peer_script_with(
        python,
        "llamaindex_ingest.py",
        &[&model, dir],
        &envs,
        "llama-index-core, llama-index-embeddings-huggingface and pymupdf",
    )?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Ok(Peer {
        engine: v["engine"].as_str().unwrap_or("LlamaIndex").to_string(),
        chunking: chunks,
        splitter: v["splitter"].as_str().unwrap_or("").to_string(),
        pages: v["pages"].as_u64().unwrap_or(0),
        chunks: v["chunks"].as_u64().unwrap_or(0),
        embedded_tokens: v["embedded_tokens"].as_u64().unwrap_or(0),
        secs: f("secs"),
        pages_per_sec: f("pages_per_sec"),
        chunks_per_sec: f("chunks_per_sec"),
        extract_secs: f("extract_secs"),
        embed_secs: f("embed_secs"),
        peak_rss_mb: f("peak_rss_mb"),
    })
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    /// Busy processes (`yes`) that ran beside both (`--load`; 0: a quiet machine).
    pub busy: usize,
    pub files: usize,
    pub indexed: usize,
    pub failed: usize,
    pub pages: u64,
    pub chunks: u64,
    /// Tokens the model saw (special tokens included, each chunk at most the model's
    /// maximum), summed over the chunks.
    pub embedded_tokens: u64,
    /// Wall time of the whole pipeline, seconds.
    pub secs: f64,
    pub pages_per_sec: f64,
    pub chunks_per_sec: f64,
    /// Whether extraction ran in child processes, as the app runs it: the `quire`
    /// binary was found beside this one (or named by `QUIRE_EXE`). Where not, the
    /// pipeline extracts in this process, and `extract_secs` is NaN.
    pub isolated: bool,
    /// Extraction alone, every file in turn in a child process, seconds (the pipeline
    /// overlaps it with embedding).
    pub extract_secs: f64,
    /// Embedding and writing (from a file's start to its end on the pipeline's main
    /// thread; the extraction threads split it into chunks ahead of that), summed over
    /// the files, seconds.
    pub embed_write_secs: f64,
    /// Peak resident memory of this process (the pipeline's parent), MB.
    pub peak_rss_mb: f64,
    /// LlamaIndex's pages/s: run here on the same folder when `peer` is there, else
    /// quoted ([`LLAMAINDEX_PAGES_PER_SEC`]).
    pub llamaindex_pages_per_sec: f64,
    /// LlamaIndex run here on the same folder, in the same run.
    pub peer: Option<Peer>,
}

impl IngestReport {
    /// A table for a terminal.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let mut row = |k: &str, v: String| s.push_str(&format!("{k:<34}{v}\n"));
        row(
            "files (indexed / failed)",
            format!("{} ({} / {})", self.files, self.indexed, self.failed),
        );
        row(
            "pages, chunks, tokens embedded",
            format!("{}, {}, {}", self.pages, self.chunks, self.embedded_tokens),
        );
        if self.busy > 0 {
            row("beside busy processes", self.busy.to_string());
        }
        row("wall time", format!("{:.1} s", self.secs));
        row("pages/s", format!("{:.2}", self.pages_per_sec));
        row("chunks/s", format!("{:.2}", self.chunks_per_sec));
        row(
            "stage: extraction (alone)",
            if self.isolated {
                format!("{:.1} s, in child processes", self.extract_secs)
            } else {
                format!("in this process: no quire binary beside this one (set {EXE_ENV})")
            },
        );
        row(
            "stage: embed + write",
            format!("{:.1} s", self.embed_write_secs),
        );
        row("peak RSS (parent)", format!("{:.0} MB", self.peak_rss_mb));
        match &self.peer {
            Some(p) => {
                row("LlamaIndex, run here", p.engine.clone());
                row("  splitter", p.splitter.clone());
                row(
                    "  pages, chunks, tokens embedded",
                    format!("{}, {}, {}", p.pages, p.chunks, p.embedded_tokens),
                );
                row(
                    "  wall time",
                    format!(
                        "{:.1} s (extraction {:.1} s, embedding {:.1} s)",
                        p.secs, p.extract_secs, p.embed_secs
                    ),
                );
                row("  peak RSS", format!("{:.0} MB", p.peak_rss_mb));
                row(
                    "  pages/s",
                    format!(
                        "{:.2} (Quire x{:.2})",
                        p.pages_per_sec,
                        self.pages_per_sec / p.pages_per_sec
                    ),
                );
            }
            None => row(
                "LlamaIndex (quoted) pages/s",
                format!(
                    "{:.2} (Quire x{:.2})",
                    self.llamaindex_pages_per_sec,
                    self.pages_per_sec / self.llamaindex_pages_per_sec
                ),
            ),
        }
        s
    }
}

/// Peak resident memory of this process in MB (Linux's VmHWM; 0 elsewhere).
fn peak_rss_mb() -> f64 {
    crate::memory::status_mb("VmHWM:")
}

/// The tokens the model saw, over every chunk of the index at `db` (special tokens
/// included, each chunk at most the model's maximum): the work embedding did, to set
/// beside LlamaIndex's. Counted after the run, outside its time.
fn embedded_tokens(db: &Path) -> Result<u64> {
    use quire::embed::Embedder;
    let model = quire::embed::bert::BertEmbedder::open(quire::models::default_embedder()?)?;
    let store = quire::store::Store::open(db)?;
    let mut n = 0;
    for c in store.load_chunks()? {
        n += model.count_tokens(&c.text)?.min(model.max_tokens()) as u64;
    }
    Ok(n)
}

/// Index the PDFs of `dir` into a fresh index in a temporary folder; then, with
/// `peer`, LlamaIndex's ingestion of the same folder; both beside `busy` busy
/// processes (`--load`).
pub fn bench(
    dir: &Path,
    peer_python: Option<&Path>,
    peer_chunks: PeerChunks,
    busy: usize,
) -> Result<IngestReport> {
    let files = crate::pdfs(dir)?;
    let _busy = crate::load::Busy::start(busy)?;
    // Extraction alone, as the pipeline's children run it (where it finds the binary
    // that serves them, as the pipeline does).
    let (isolated, extract_secs) = match Extractor::from_env() {
        Ok(ex) => {
            let t = Instant::now();
            for f in &files {
                let _ = ex.extract(f);
            }
            (true, t.elapsed().as_secs_f64())
        }
        Err(_) => (false, f64::NAN),
    };
    let data = std::env::temp_dir().join(format!("quire-bench-ingest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let engine = Engine::open(EngineConfig::new(Some(data.clone()))?)?;
    let mut started: HashMap<String, Instant> = HashMap::new();
    let mut embed_write_secs = 0.0;
    let t = Instant::now();
    let summary = engine.index_summary(&[dir.to_path_buf()], &Cancel::new(), &mut |ev| {
        match ev {
            IndexEvent::File { path, .. } => {
                started.insert(path, Instant::now());
            }
            IndexEvent::FileDone { path, .. } | IndexEvent::FileFailed { path, .. } => {
                if let Some(s) = started.remove(&path) {
                    embed_write_secs += s.elapsed().as_secs_f64();
                }
            }
            _ => {}
        }
        true
    })?;
    let secs = t.elapsed().as_secs_f64();
    let docs = engine.documents()?;
    let pages: u64 = docs
        .iter()
        .filter(|d| d.status == quire::engine::DocStatus::Done)
        .map(|d| d.pages as u64)
        .sum();
    let chunks: u64 = docs.iter().map(|d| d.chunks as u64).sum();
    drop(engine);
    // The pipeline's peak, before the count below loads the model again.
    let peak_rss_mb = peak_rss_mb();
    let embedded_tokens = embedded_tokens(&data.join("index.sqlite"))?;
    let _ = std::fs::remove_dir_all(&data);
    let peer = peer_python
        .map(|py| peer(py, dir, peer_chunks))
        .transpose()?;
    Ok(IngestReport {
        busy,
        files: files.len(),
        indexed: summary.indexed,
        failed: summary.failed.len(),
        pages,
        chunks,
        embedded_tokens,
        secs,
        pages_per_sec: pages as f64 / secs.max(1e-9),
        chunks_per_sec: chunks as f64 / secs.max(1e-9),
        isolated,
        extract_secs,
        embed_write_secs,
        peak_rss_mb,
        llamaindex_pages_per_sec: peer
            .as_ref()
            .map_or(LLAMAINDEX_PAGES_PER_SEC, |p| p.pages_per_sec),
        peer,
    })
}
