//! `quire bench pipes`: how many 512-bit integer products (`vpdpbusd`) and float
//! fused multiply-adds (`vfmadd`) this CPU's cores issue a nanosecond, alone and
//! interleaved, on every core at once — and from that the fastest an exact product
//! can be here. llama.cpp's per-block order, which Quire's logits follow bit for bit,
//! makes a Q5_0 / Q8_0 weight's block of 32 values times 16 outputs cost 8 `vpdpbusd`
//! (one per 4-value lane) and 8 `vfmadd` (each lane's sum scaled into its own float
//! accumulator), and a key or value of attention one `vfmadd` per 16 of its f32
//! products. Where the two kinds share their units (Zen 4 runs both on the same two
//! 256-bit pipes), the interleaved time is the sum of the two alone, and the floor of
//! those products is that sum, whatever the kernel.

use serde::{Deserialize, Serialize};
#[cfg(target_arch = "x86_64")]
use std::time::Instant;

/// Independent accumulator chains per loop: enough to cover each instruction's
/// latency, so the loops measure issue rate.
#[cfg(target_arch = "x86_64")]
const CHAINS: usize = 16;

/// Iterations of each timed loop (each `CHAINS` instructions of a kind).
#[cfg(target_arch = "x86_64")]
const ITERS: usize = 20_000_000;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PipesReport {
    pub cpu: String,
    pub threads: usize,
    /// Nanoseconds per instruction on one core, every core running the loop.
    pub dpbusd_ns: f64,
    pub fma_ns: f64,
    /// One `vpdpbusd` and one `vfmadd`, interleaved.
    pub dpbusd_and_fma_ns: f64,
    /// `dpbusd_and_fma_ns` over the sum of the two alone: ~1 where they share units.
    pub shared: f64,
    /// The most GFLOP/s a Q5_0 / Q8_0 product in llama.cpp's order can reach on all
    /// cores: 2·512 operations per 8 interleaved pairs.
    pub q5_0_floor_gflops: f64,
    /// The most attention (scores and weighted values, f32) can reach: 32
    /// operations per `vfmadd`.
    pub attention_floor_gflops: f64,
}

impl std::fmt::Display for PipesReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} ({} threads, each core busy)", self.cpu, self.threads)?;
        writeln!(f, "vpdpbusd zmm            {:.3} ns", self.dpbusd_ns)?;
        writeln!(f, "vfmadd zmm              {:.3} ns", self.fma_ns)?;
        writeln!(
            f,
            "both, interleaved       {:.3} ns a pair ({:.2} of the two alone: {})",
            self.dpbusd_and_fma_ns,
            self.shared,
            if self.shared > 0.9 {
                "they share their units"
            } else {
                "they overlap"
            }
        )?;
        writeln!(
            f,
            "floor, Q5_0/Q8_0 product in llama.cpp's order: {:.0} GFLOP/s",
            self.q5_0_floor_gflops
        )?;
        writeln!(
            f,
            "floor, attention (f32 FMA):                    {:.0} GFLOP/s",
            self.attention_floor_gflops
        )
    }
}

/// The loops, run on `threads` threads at once; an error where the CPU lacks
/// AVX-512 VNNI (the kernels this measures the floor of run there only).
pub fn run(threads: usize) -> quire::Result<PipesReport> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vnni")
            && std::is_x86_feature_detected!("fma")
        {
            let threads = threads.max(1);
            let ns = |kind: Kind| per_op_ns(kind, threads);
            let (dp, fma, both) = (ns(Kind::Dpbusd), ns(Kind::Fma), ns(Kind::Both));
            let n = threads as f64;
            return Ok(PipesReport {
                cpu: crate::whole::cpu_name(),
                threads,
                dpbusd_ns: dp,
                fma_ns: fma,
                dpbusd_and_fma_ns: both,
                shared: both / (dp + fma),
                q5_0_floor_gflops: n * 1024.0 / (8.0 * both),
                attention_floor_gflops: n * 32.0 / fma,
            });
        }
    }
    let _ = threads;
    Err(quire::Error::Invalid(
        "quire bench pipes measures AVX-512 VNNI units; this CPU has none".into(),
    ))
}

#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dpbusd,
    Fma,
    Both,
}

/// Nanoseconds per instruction (per pair for `Both`) on one core, the slowest of
/// `threads` threads running the loop at once.
#[cfg(target_arch = "x86_64")]
fn per_op_ns(kind: Kind, threads: usize) -> f64 {
    let secs = std::thread::scope(|s| {
        let runs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let t = Instant::now();
                    // SAFETY: `run` checked AVX-512F, VNNI and FMA.
                    std::hint::black_box(unsafe { chains(kind, ITERS) });
                    t.elapsed().as_secs_f64()
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap_or(f64::INFINITY))
            .fold(0f64, f64::max)
    });
    secs * 1e9 / (ITERS * CHAINS) as f64
}

/// `iters` rounds of `CHAINS` independent instructions of `kind`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
unsafe fn chains(kind: Kind, iters: usize) -> f32 {
    use std::arch::x86_64::*;
    let x = _mm512_set1_epi8(std::hint::black_box(3));
    let y = _mm512_set1_epi8(std::hint::black_box(5));
    let m = _mm512_set1_ps(std::hint::black_box(0.999));
    let c = _mm512_set1_ps(std::hint::black_box(0.5));
    let mut a = [_mm512_setzero_si512(); CHAINS];
    let mut f = [_mm512_setzero_ps(); CHAINS];
    for _ in 0..iters {
        for i in 0..CHAINS {
            if kind != Kind::Fma {
                a[i] = _mm512_dpbusd_epi32(a[i], x, y);
            }
            if kind != Kind::Dpbusd {
                f[i] = _mm512_fmadd_ps(f[i], m, c);
            }
        }
    }
    let mut s = 0f32;
    for i in 0..CHAINS {
        s += _mm512_reduce_add_ps(f[i]) + _mm512_reduce_add_epi32(a[i]) as f32;
    }
    s
}
