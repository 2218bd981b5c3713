//! `quire bench matmul`: the quantized matrix products of real models' widths timed
//! one by one (`quire::llm::runtime::matmul::timing`), so that a slow shape shows
//! without a model around it. Per hidden width `h` and feed-forward width `f`, the
//! three products a layer makes: `h × h` (attention output), `f × h` (gate, up) and
//! `h × f` (down), each at a prompt's batch of rows and at one row (generation), in
//! GFLOP/s (2·n·k·m per product). With `--peer-ops BIN` (llama.cpp's own
//! `test-backend-ops`, built by `scripts/llamacpp_ops.sh`), llama.cpp's figure for
//! the same product at the same thread count goes beside each, and the ratio.

use std::fmt;
use std::path::Path;
use std::process::Command;

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
    /// llama.cpp's `test-backend-ops perf` on the same product, where asked for.
    pub llamacpp_gflops: Option<f64>,
    /// `gflops / llamacpp_gflops`.
    pub ratio: Option<f64>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct MatmulReport {
    pub cpu: String,
    pub threads: usize,
    /// The peer binary, where one was given.
    pub peer: Option<String>,
    pub shapes: Vec<Shape>,
    /// Shapes left out: their inner width is not a whole number of the type's
    /// blocks (a GGUF file holds such a weight in another type, e.g. Qwen2.5-0.5B's
    /// 896-wide products in a K-quant file).
    pub skipped: Vec<String>,
}

/// `widths`: `h:f` pairs; `types`: GGUF type names (`q4_k`, `q6_k`, `q8_0`, …);
/// `rows`: activation rows per product (a prompt batch; 1 is generation).
/// `peer_ops`: llama.cpp's `test-backend-ops`, run on the same products.
pub fn run(
    widths: &[String],
    types: &[String],
    rows: &[usize],
    reps: usize,
    peer_ops: Option<&Path>,
) -> Result<MatmulReport> {
    let mut shapes = Vec::new();
    let mut skipped = Vec::new();
    for t in types {
        let dtype = timing::dtype(t).ok_or_else(|| {
            Error::Invalid(format!(
                "--types {t:?}: q4_0, q4_1, q5_0, q8_0, q4_k, q5_k or q6_k"
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
                        llamacpp_gflops: None,
                        ratio: None,
                    });
                }
            }
        }
    }
    let threads = quire::cpu::pool::max_threads();
    if let Some(bin) = peer_ops {
        let peer = peer_figures(bin, &shapes, threads)?;
        for s in &mut shapes {
            let got = peer
                .iter()
                .find(|p| p.dtype == ggml_name(&s.dtype) && (p.n, p.k, p.m) == (s.n, s.k, s.m));
            let Some(p) = got else {
                return Err(Error::Invalid(format!(
                    "{}: no figure for {} {}x{} at {} rows",
                    bin.display(),
                    s.dtype,
                    s.n,
                    s.k,
                    s.m
                )));
            };
            let g = 2.0 * (s.n * s.k * s.m) as f64 / (p.us * 1e3);
            s.llamacpp_gflops = Some(g);
            s.ratio = Some(s.gflops / g);
        }
    }
    Ok(MatmulReport {
        cpu: crate::whole::cpu_name(),
        threads,
        peer: peer_ops.map(|p| p.display().to_string()),
        shapes,
        skipped,
    })
}

/// ggml's name of a type (`q4_k` → `q4_K`).
fn ggml_name(t: &str) -> String {
    match t.strip_suffix("_k") {
        Some(base) => format!("{base}_K"),
        None => t.to_owned(),
    }
}

/// One product as `test-backend-ops perf` reported it: microseconds a run.
#[derive(Debug, Clone, PartialEq)]
struct PeerFigure {
    dtype: String,
    n: usize,
    k: usize,
    m: usize,
    us: f64,
}

/// llama.cpp's time for each of `shapes`, from one run of `bin perf -o MUL_MAT -b CPU`
/// (`QUIRE_MUL_MAT_SHAPES` lists them; its `m` is the weight's rows, its `n` the
/// activation rows) at `threads` threads.
fn peer_figures(bin: &Path, shapes: &[Shape], threads: usize) -> Result<Vec<PeerFigure>> {
    let mut list: Vec<String> = shapes
        .iter()
        .map(|s| format!("{}:{}:{}:{}", ggml_name(&s.dtype), s.n, s.m, s.k))
        .collect();
    list.dedup();
    let out = Command::new(bin)
        .args(["perf", "-o", "MUL_MAT", "-b", "CPU"])
        .env("QUIRE_MUL_MAT_SHAPES", list.join(","))
        .env("QUIRE_OPS_THREADS", threads.to_string())
        .output()
        .map_err(|e| {
            Error::Invalid(format!(
                "{}: {e} (build it with scripts/llamacpp_ops.sh DIR)",
                bin.display()
            ))
        })?;
    if !out.status.success() {
        return Err(Error::Invalid(format!(
            "{} failed ({}): {}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(parse_peer(&String::from_utf8_lossy(&out.stdout)))
}

/// The `MUL_MAT(type_a=…,m=…,n=…,k=…,…): N runs - T us/run - …` lines of a perf run.
fn parse_peer(text: &str) -> Vec<PeerFigure> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("MUL_MAT(")?;
            let (params, tail) = rest.split_once("):")?;
            let field = |name: &str| {
                params
                    .split(',')
                    .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            };
            let num = |name: &str| field(name)?.parse::<usize>().ok();
            let us = tail
                .split(" - ")
                .find_map(|part| part.trim().strip_suffix(" us/run"))?
                .trim()
                .parse::<f64>()
                .ok()?;
            Some(PeerFigure {
                dtype: field("type_a")?.to_owned(),
                n: num("m")?,
                k: num("k")?,
                m: num("n")?,
                us,
            })
        })
        .collect()
}

impl fmt::Display for MatmulReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}, {} threads; best of the timed runs",
            self.cpu, self.threads
        )?;
        if let Some(p) = &self.peer {
            writeln!(f, "llama.cpp: {p} perf, same threads")?;
        }
        writeln!(
            f,
            "{:<6} {:>6} {:>6} {:>5} {:>10} {:>8} {:>10} {:>6}",
            "type", "n", "k", "m", "ms", "GFLOP/s", "llama.cpp", "×"
        )?;
        for s in &self.shapes {
            let peer = s.llamacpp_gflops.map_or("-".into(), |g| format!("{g:.1}"));
            let ratio = s.ratio.map_or("-".into(), |r| format!("{r:.2}"));
            writeln!(
                f,
                "{:<6} {:>6} {:>6} {:>5} {:>10.3} {:>8.1} {:>10} {:>6}",
                s.dtype, s.n, s.k, s.m, s.best_ms, s.gflops, peer, ratio
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_test_backend_ops_perf_lines() {
        let text = "Testing 1 devices\n\nBackend 1/1: CPU\n  Device description: Intel\n  \
MUL_MAT(type_a=q5_K,type_b=f32,m=8960,n=512,k=1536,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1):\
                 20 runs - 51234.50 us/run -  14.09 GFLOP/run - \u{1b}[1;34m275.00 GFLOPS\u{1b}[0m\n  \
MUL_MAT(type_a=q8_0,type_b=f32,m=1536,n=1,k=1536,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1):  \
          not supported\n  Backend CPU: OK\n";
        assert_eq!(
            parse_peer(text),
            vec![PeerFigure {
                dtype: "q5_K".into(),
                n: 8960,
                k: 1536,
                m: 512,
                us: 51234.5
            }]
        );
        assert_eq!(ggml_name("q6_k"), "q6_K");
        assert_eq!(ggml_name("q8_0"), "q8_0");
    }
}
