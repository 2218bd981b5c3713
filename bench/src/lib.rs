//! Quire's benchmarks: measurements that print numbers, built on the public API of the
//! `quire` library only. The `quire-bench` binary (and `quire bench`, which runs it)
//! prints each one as a table, or as one JSON object with `--json`.
//!
//! One module per benchmark: [`embed`] (embedding throughput), [`llm`] (prompt and
//! generation speed; [`matmul`]: its matrix products one shape at a time), [`extract`] (PDF text against `pdftotext -layout`),
//! [`ingest`] (the whole indexing pipeline: pages/s, chunks/s, peak memory, stages),
//! [`retrieval`] (quality over the corpus, latency at scale) and [`answer`] (answers
//! per response mode through the engine, and tree_summarize batched),
//! [`conversations`] (follow-up questions: retrieval with and without condensing and
//! reranking), [`not_found`] (the "not found" threshold's calibration), [`serving`]
//! (`quire serve` under concurrent asks while a batch indexes); [`pdftotext`]
//! is the one runner of poppler's `pdftotext` that extract and retrieval share.
//! [`library`] (a library of N generated PDFs, [`pdfgen`], indexed into each store:
//! throughput, ETA accuracy, memory, index size, search, sync after a change).
//! [`memory`] is the peak memory of a process holding a library of N chunks and
//! searching it. [`whole`] is whole-document questions: the router's accuracy, their
//! answers by search and by reading every page, and a summary's first and cached time. [`margins`] is a diagnostic: how near llama.cpp's greedy tokens are to ties in
//! Quire's logits; [`pipes`] another: the floor exact products have on this CPU.

pub mod answer;
pub mod conversations;
pub mod draft;
pub mod embed;
pub mod extract;
pub mod ingest;
pub mod library;
pub mod library_search;
pub mod llm;
pub mod load;
pub mod margins;
pub mod matmul;
pub mod memory;
pub mod not_found;
pub mod pdfgen;
pub mod pdftotext;
pub mod pipes;
pub mod retrieval;
pub mod rows;
pub mod serving;
pub mod store;
pub mod support;
pub mod tables;
pub mod whole;

use std::path::{Path, PathBuf};

use quire::{Error, Result};

/// The shared folder of references and corpora: `$QUIRE_SHARED` or `../shared`.
pub fn shared() -> PathBuf {
    std::env::var_os("QUIRE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared"))
}

/// The PDFs of `dir` (not its subfolders), sorted by name.
pub fn pdfs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pdf")))
        .collect();
    files.sort();
    Ok(files)
}

/// The shared corpus of PDFs: `$QUIRE_SHARED/corpus/pdfs`, else `../shared/corpus/pdfs`
/// from the current folder, else next to the source checkout.
pub fn default_corpus() -> PathBuf {
    if let Some(d) = std::env::var_os("QUIRE_SHARED") {
        return PathBuf::from(d).join("corpus/pdfs");
    }
    let here = PathBuf::from("../shared/corpus/pdfs");
    if here.is_dir() {
        return here;
    }
    // This package's folder is `bench/` in the checkout.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/pdfs")
}
