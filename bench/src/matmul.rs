//! `quire bench matmul`: the quantized matrix products of real models' widths timed
//! one by one (`quire::llm::runtime::matmul::timing`), so that a slow shape shows
//! without a model around it. Per hidden width `h` and feed-forward width `f`, the
//! three products a layer makes: `h × h` (attention output), `f × h` (gate, up) and
//! `h × f` (down), each at a prompt's batch of rows and at one row (generation), in
//! GFLOP/s (2·n·k·m per product).

use std::fmt;

use quire::llm::runtime::matmul::timing;
use quire::{Error, Result};
use serde::Serialize;

/// One product, timed.
#[derive(Debug, Clone, Serialize)]
pub struct Shape {
    pub dtype: String,
    /// Output rows (the weight's rows) and inner width.
    pub n: usize,
    pub k: usize,
    /// Activation rows.
    pub m: usize,
    pub best_ms: f64,
    pub gflops: f64,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct MatmulReport {
    pub cpu: String,
    pub threads: usize,
    pub shapes: Vec<Shape>,
    /// Shapes left out: their inner width is not a whole number of the type's
    /// blocks (a GGUF file holds such a weight in another type, e.g. Qwen2.5-0.5B's
    /// 896-wide products in a K-quant file).
    pub skipped: Vec<String>,
}

/// `widths`: `h:f` pairs; `types`: GGUF type names (`q4_k`, `q6_k`, `q8_0`, …);
/// `rows`: activation rows per product (a prompt batch; 1 is generation).
pub fn run(
    widths: &[String],
    types: &[String],
    rows: &[usize],
    reps: usize,
) -> Result<MatmulReport> {
    let mut shapes = Vec::new();
    let mut skipped = Vec::new();
    for t in types {
        let dtype = timing::dtype(t).ok_or_else(|| {
            Error::Invalid(format!(
                "--types {t:?}: q4_0, q4_1, q8_0, q4_k, q5_k or q6_k"
            ))
        })?;
        for w in widths {
            let (h, f) = w
                .split_once(':')
                .and_then(|(h, f)| Some((h.parse::<usize>().ok()?, f.parse::<usize>().ok()?)))
                .ok_or_else(|| {
                    Error::Invalid(format!("--widths {w:?}: hidden:ffn, e.g. 1536:8960"))
                })?;
            for (n, k) in [(h, h), (f, h), (h, f)] {
                if k % dtype.block_size() != 0 {
                    skipped.push(format!("{t} {n}x{k}"));
                    continue;
                }
                for &m in rows {
                    let secs = timing::best_secs(dtype, n, k, m, m > 1, reps)
                        .map_err(|e| Error::Invalid(format!("{t} {n}x{k}: {e}")))?;
                    shapes.push(Shape {
                        dtype: t.to_ascii_lowercase(),
                        n,
                        k,
                        m,
                        best_ms: secs * 1e3,
                        gflops: 2.0 * (n * k * m) as f64 / secs / 1e9,
                    });
                }
            }
        }
    }
    Ok(MatmulReport {
        cpu: crate::whole::cpu_name(),
        threads: quire::cpu::pool::max_threads(),
        shapes,
        skipped,
    })
}

impl fmt::Display for MatmulReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}, {} threads; best of the timed runs",
            self.cpu, self.threads
        )?;
        writeln!(
            f,
            "{:<6} {:>6} {:>6} {:>5} {:>10} {:>8}",
            "type", "n", "k", "m", "ms", "GFLOP/s"
        )?;
        for s in &self.shapes {
            writeln!(
                f,
                "{:<6} {:>6} {:>6} {:>5} {:>10.3} {:>8.1}",
                s.dtype, s.n, s.k, s.m, s.best_ms, s.gflops
            )?;
        }
        if !self.skipped.is_empty() {
            writeln!(
                f,
                "left out (inner width not a whole number of blocks): {}",
                self.skipped.join(", ")
            )?;
        }
        Ok(())
    }
}
