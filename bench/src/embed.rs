//! `quire bench embed`: embedding throughput on the same workload as
//! sentence-transformers' reference figure (256 chunks of 200 words, batch 32).
//!
//! With `busy` (`--load N`), measured quiet, then beside N busy processes; with a peer
//! (a Python with sentence-transformers), sentence-transformers is measured in the
//! same run under the same load by `scripts/st_speed.py`.

use std::path::{Path, PathBuf};
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
    /// sentence-transformers' median from the reference file, or run here.
    pub reference_chunks_per_s: Option<f64>,
    /// Ours over theirs.
    pub ratio: Option<f64>,
    /// Busy processes beside the figures above (0: quiet).
    pub busy: usize,
    /// With `busy`: the quiet median of the same run, loaded / quiet, and the peer's
    /// quiet figure of the same run.
    pub quiet_chunks_per_s: Option<f64>,
    pub kept: Option<f64>,
    pub reference_quiet_chunks_per_s: Option<f64>,
    /// Where the peer's figure comes from.
    pub reference_source: Option<String>,
    /// The thread pool after the run.
    pub pool: quire::cpu::pool::PoolState,
    /// What ran: "own CPU kernels, int8 VNNI", "candle on cuda:0 bf16", ….
    pub runtime: String,
    /// Where the dense layers are not f32: the cosine of each chunk's vector to the
    /// f32 kernels' vector of the same chunk, the lowest and the mean.
    pub cosine_vs_f32: Option<Agreement>,
}

/// How close two embedders' vectors of the same chunks are.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Agreement {
    pub min: f64,
    pub mean: f64,
}

/// The cosine of `a[i]` to `b[i]`, lowest and mean (in f64).
pub fn agreement(a: &[Vec<f32>], b: &[Vec<f32>]) -> Agreement {
    let cos: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| {
            let dot: f64 = x.iter().zip(y).map(|(p, q)| *p as f64 * *q as f64).sum();
            let nx = x.iter().map(|p| (*p as f64).powi(2)).sum::<f64>().sqrt();
            let ny = y.iter().map(|q| (*q as f64).powi(2)).sum::<f64>().sqrt();
            dot / (nx * ny).max(1e-30)
        })
        .collect();
    Agreement {
        min: cos.iter().copied().fold(f64::INFINITY, f64::min),
        mean: cos.iter().sum::<f64>() / cos.len().max(1) as f64,
    }
}

/// The conditions of a run: busy processes beside it, and a peer to run here.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    pub busy: usize,
    /// (a Python with sentence-transformers, the model's folder).
    pub peer: Option<(PathBuf, PathBuf)>,
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
    cond: &Conditions,
) -> Result<EmbedBench> {
    let texts: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let mut tokens = 0usize;
    for t in &texts {
        tokens += embedder.count_tokens(t)?.min(embedder.max_tokens());
    }
    // One warm-up batch: page in the weights, fill the allocator.
    embedder.embed(&texts[..texts.len().min(BATCH_SIZE)])?;
    let measure = || -> Result<Vec<f64>> {
        let mut rates = Vec::new();
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            embedder.embed(&texts)?;
            rates.push(texts.len() as f64 / t.elapsed().as_secs_f64());
        }
        Ok(rates)
    };
    let peer = |what: &str| -> Result<Option<f64>> {
        match &cond.peer {
            Some((py, dir)) => {
                eprintln!("sentence-transformers ({what}) ...");
                run_peer(py, dir).map(Some)
            }
            None => Ok(None),
        }
    };
    let (quiet, quiet_peer) = if cond.busy > 0 {
        (Some(median_of(measure()?)), peer("quiet")?)
    } else {
        (None, None)
    };
    let (rates, loaded_peer) = {
        let _busy = crate::load::Busy::start(cond.busy)?;
        let rates = measure()?;
        (
            rates,
            peer(&format!("beside {} busy processes", cond.busy))?,
        )
    };
    let median = median_of(rates.clone());
    // A recorded figure is a quiet one: beside it only a quiet run.
    let (reference_chunks_per_s, reference_source) = match (loaded_peer, reference) {
        (Some(r), _) => (Some(r), Some("sentence-transformers, run here".to_string())),
        (None, Some(p)) if cond.busy == 0 => {
            (Some(reference_rate(p)?), Some(p.display().to_string()))
        }
        _ => (None, None),
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
        busy: cond.busy,
        quiet_chunks_per_s: quiet.map(round1),
        kept: quiet.map(|q| (median / q * 100.0).round() / 100.0),
        reference_quiet_chunks_per_s: quiet_peer,
        reference_source,
        pool: quire::cpu::pool::state(),
        runtime: String::new(),
        cosine_vs_f32: None,
    })
}

fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// sentence-transformers' chunks/s by `scripts/st_speed.py` in `python`, on the model
/// in `dir`, under whatever load runs now.
fn run_peer(python: &Path, dir: &Path) -> Result<f64> {
    let v = crate::load::run_peer_script(python, "st_speed.py", &[dir], "sentence-transformers")?;
    v["chunks_per_s_median"]
        .as_f64()
        .ok_or_else(|| Error::Invalid("st_speed.py printed no speed".into()))
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
        writeln!(f, "embedder: {}", self.runtime)?;
        if let Some(a) = self.cosine_vs_f32 {
            writeln!(
                f,
                "cosine to the f32 kernels' vectors: lowest {:.6}, mean {:.6}",
                a.min, a.mean
            )?;
        }
        writeln!(f, "{:<28} {:>10}", "engine", "chunks/s")?;
        writeln!(
            f,
            "{:<28} {:>10.1}   runs {:?}",
            "quire", self.chunks_per_s_median, self.runs
        )?;
        if let (Some(r), Some(x)) = (self.reference_chunks_per_s, self.ratio) {
            writeln!(f, "{:<28} {:>10.1}", "sentence-transformers", r)?;
            writeln!(f, "ratio {x:.2}x")?;
        }
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
        if self.busy > 0 {
            writeln!(
                f,
                "beside {} busy processes; quiet in the same run: quire {} chunks/s (kept {}), \
                 sentence-transformers {}",
                self.busy,
                opt(self.quiet_chunks_per_s),
                self.kept.map_or("-".to_string(), |k| format!("{k:.2}")),
                opt(self.reference_quiet_chunks_per_s)
            )?;
        }
        writeln!(
            f,
            "pool: {} of {} workers (adaptive {}, narrowed {}x, widened {}x); peer from {}",
            self.pool.embed,
            self.pool.max,
            self.pool.adaptive,
            self.pool.narrowed,
            self.pool.widened,
            self.reference_source.as_deref().unwrap_or("-")
        )
    }
}
