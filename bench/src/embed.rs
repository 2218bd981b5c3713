//! `quire bench embed`: embedding throughput on the same workload as
//! sentence-transformers' reference figure (256 chunks of 200 words, batch 32).

use std::path::Path;
use std::time::Instant;

use quire::embed::bert::BATCH_SIZE;
use quire::embed::Embedder;
use quire::{Error, Result};
use serde::Serialize;

/// The figures of one benchmark run.
#[derive(Debug, Clone, Serialize)]
pub struct EmbedBench {
    pub model: String,
    pub chunks: usize,
    pub words_per_chunk: usize,
    pub mean_tokens_per_chunk: f64,
    pub batch_size: usize,
    pub threads: usize,
    /// Chunks per second of each run.
    pub runs: Vec<f64>,
    pub chunks_per_s_median: f64,
    /// sentence-transformers' median from the reference file, if given.
    pub reference_chunks_per_s: Option<f64>,
    /// Ours over theirs.
    pub ratio: Option<f64>,
}

/// `n` chunks of `words` words cut from `text` (repeated as needed), as the
/// reference script `st_speed.py` does.
pub fn chunks_of_words(text: &str, n: usize, words: usize) -> Vec<String> {
    let all: Vec<&str> = text.split_whitespace().collect();
    if all.is_empty() {
        return Vec::new();
    }
    let stream: Vec<&str> = all.iter().copied().cycle().take(n * words).collect();
    stream.chunks(words).map(|c| c.join(" ")).collect()
}

/// Time `embedder` on `chunks`, `runs` times; `reference` is the `speed.json` of
/// sentence-transformers (its `embeddings.chunks_per_s_median` is compared).
pub fn run(
    embedder: &dyn Embedder,
    model: &str,
    chunks: &[String],
    words_per_chunk: usize,
    runs: usize,
    reference: Option<&Path>,
) -> Result<EmbedBench> {
    let texts: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let mut tokens = 0usize;
    for t in &texts {
        tokens += embedder.count_tokens(t)?.min(embedder.max_tokens());
    }
    // One warm-up batch: page in the weights, fill the allocator.
    embedder.embed(&texts[..texts.len().min(BATCH_SIZE)])?;
    let mut rates = Vec::new();
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        embedder.embed(&texts)?;
        rates.push(texts.len() as f64 / t.elapsed().as_secs_f64());
    }
    let mut sorted = rates.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let reference_chunks_per_s = match reference {
        Some(p) => Some(reference_rate(p)?),
        None => None,
    };
    Ok(EmbedBench {
        model: model.to_string(),
        chunks: texts.len(),
        words_per_chunk,
        mean_tokens_per_chunk: tokens as f64 / texts.len().max(1) as f64,
        batch_size: BATCH_SIZE,
        threads: crate::llm::threads(),
        runs: rates.iter().map(|r| round1(*r)).collect(),
        chunks_per_s_median: round1(median),
        reference_chunks_per_s,
        ratio: reference_chunks_per_s.map(|r| (median / r * 100.0).round() / 100.0),
    })
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn reference_rate(path: &Path) -> Result<f64> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
    v["embeddings"]["chunks_per_s_median"]
        .as_f64()
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{}: no embeddings.chunks_per_s_median",
                path.display()
            ))
        })
}

impl std::fmt::Display for EmbedBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}: {} chunks of {} words ({:.0} tokens on average), batch {}, {} threads",
            self.model,
            self.chunks,
            self.words_per_chunk,
            self.mean_tokens_per_chunk,
            self.batch_size,
            self.threads
        )?;
        writeln!(f, "{:<28} {:>10}", "engine", "chunks/s")?;
        writeln!(
            f,
            "{:<28} {:>10.1}   runs {:?}",
            "quire", self.chunks_per_s_median, self.runs
        )?;
        if let (Some(r), Some(x)) = (self.reference_chunks_per_s, self.ratio) {
            writeln!(f, "{:<28} {:>10.1}", "sentence-transformers (ref)", r)?;
            writeln!(f, "ratio {x:.2}x")?;
        }
        Ok(())
    }
}
