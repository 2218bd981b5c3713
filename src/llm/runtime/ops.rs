//! Element-wise operations of the forward pass computed exactly as llama.cpp's CPU
//! backend (ggml, built for x86-64 with AVX-512) computes them, operation for
//! operation and rounding for rounding: `ggml_v_expf`, SiLU/SwiGLU, RMS norm, rotary
//! embeddings, GELU from ggml's f16 table, f16 rounding.
//!
//! Where ggml uses SIMD code whose result depends on the lane order (its vectorized
//! `expf`, the horizontal sums of `_mm512_reduce_add_ps`), the same order is
//! reproduced here in portable Rust, with the AVX-512 forms in [`wide`](super::wide).
//! Matches llama.cpp's `ggml/src/ggml-cpu/{ops.cpp,vec.h,vec.cpp}`.

use half::f16;

use super::tables::{GELU_F16, LANES};
#[cfg(target_arch = "x86_64")]
use super::wide;
#[cfg(target_arch = "x86_64")]
use crate::cpu::{has_avx2_fma, has_avx512};

/// `ggml_v_expf` (AVX-512 variant): a polynomial with `_mm512_scalef_ps`.
#[inline(always)]
pub fn expf(x: f32) -> f32 {
    let r = f32::from_bits(0x4b40_0000); // 0x1.8p23
    let z = x.mul_add(f32::from_bits(0x3fb8_aa3b), r); // log2(e)
    let n = z - r;
    let b = (-n).mul_add(
        f32::from_bits(0x35bf_be8e),
        (-n).mul_add(f32::from_bits(0x3f31_7200), x),
    );
    let u = b * b;
    let j = f32::from_bits(0x3c07_2010)
        .mul_add(b, f32::from_bits(0x3d2b_9f17))
        .mul_add(
            u,
            f32::from_bits(0x3e2a_af33).mul_add(b, f32::from_bits(0x3eff_fedb)),
        )
        .mul_add(u, f32::from_bits(0x3f7f_fff6).mul_add(b, 1.0));
    if n.abs() > 192.0 {
        return if n <= 0.0 { 0.0 } else { f32::INFINITY };
    }
    if n.is_nan() {
        return f32::NAN;
    }
    // scalef: j · 2^n rounded once (the product is exact in f64).
    // 2^n is exact in f64 for |n| <= 192.
    (f64::from(j) * f64::from_bits(((n as i64 + 1023) as u64) << 52)) as f32
}

/// `ggml_v_silu`: x / (1 + e^(−x)).
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + expf(0.0 - x))
}

/// `ggml_vec_swiglu_f32`: silu(gate) · up; full 16-lane chunks use the vector
/// `expf`, the tail libm's, as ggml does.
#[inline(always)]
pub fn swiglu(gate: &[f32], up: &[f32], out: &mut [f32]) {
    let full = gate.len() / LANES * LANES;
    for i in 0..full {
        out[i] = silu(gate[i]) * up[i];
    }
    swiglu_tail(&gate[full..], &up[full..], &mut out[full..]);
}

/// `ggml_compute_forward_rms_norm_f32` fused with the weight: the sum of squares in
/// f64 of f32 squares, then `x · scale · w`.
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    use rayon::prelude::*;
    const R: usize = 8;
    let n = w.len();
    let scaled = |xr: &[f32], yr: &mut [f32], sum: f64| {
        let mean = (sum / n as f64) as f32;
        let scale = 1.0f32 / (mean + eps).sqrt();
        for ((y, &v), &wi) in yr.iter_mut().zip(xr).zip(w) {
            *y = v * scale * wi;
        }
    };
    // Each row's sum is one chain of f64 additions in order (ggml's); R rows at a
    // time run R independent chains, which the CPU overlaps.
    let block = |(xs, ys): (&[f32], &mut [f32])| {
        if xs.len() == R * n {
            let mut sums = [0f64; R];
            for i in 0..n {
                for (r, s) in sums.iter_mut().enumerate() {
                    let v = xs[r * n + i];
                    *s += f64::from(v * v);
                }
            }
            for ((xr, yr), sum) in xs.chunks_exact(n).zip(ys.chunks_exact_mut(n)).zip(sums) {
                scaled(xr, yr, sum);
            }
        } else {
            for (xr, yr) in xs.chunks_exact(n).zip(ys.chunks_exact_mut(n)) {
                let sum: f64 = xr.iter().map(|&v| f64::from(v * v)).sum();
                scaled(xr, yr, sum);
            }
        }
    };
    if x.len() > 2 * R * n {
        // Rows are independent: the same arithmetic on both cores.
        x.par_chunks(R * n)
            .zip(out.par_chunks_mut(R * n))
            .for_each(block);
    } else {
        x.chunks(R * n).zip(out.chunks_mut(R * n)).for_each(block);
    }
}

/// Rotary embedding tables as `ggml_rope_cache_init` builds them for one position:
/// θ starts at the position and is multiplied by `theta_scale` for each pair; each
/// angle is `freq_scale · θ / factor` (`rope_yarn` without extrapolation), `factor`
/// the pair's frequency factor where the model has them (`ggml_rope_ext`'s
/// `freq_factors`: Llama 3's `rope_freqs`, Phi-3's short/long factors), else 1; cos
/// and sin are multiplied by `mscale` (the attention factor, usually 1).
pub fn rope_cache(
    pos: usize,
    pairs: usize,
    theta_scale: f32,
    freq_scale: f32,
    factors: Option<&[f32]>,
    mscale: f32,
    out: &mut Vec<(f32, f32)>,
) {
    out.clear();
    let mut theta = pos as f32;
    for i in 0..pairs {
        let ff = factors.map_or(1.0, |f| f[i]);
        let t = freq_scale * (theta / ff);
        out.push((t.cos() * mscale, t.sin() * mscale));
        theta *= theta_scale;
    }
}

/// `rotate_pairs` for `GGML_ROPE_TYPE_NEOX`: pairs `(i, i + n/2)` of the first
/// `n = 2·cache.len()` values of `x`.
pub fn rope_neox(x: &mut [f32], cache: &[(f32, f32)]) {
    rope::<true>(x, cache);
}

/// `rotate_pairs` for `GGML_ROPE_TYPE_NORM` (adjacent pairs) on the first
/// `2·cache.len()` values of `x`.
pub fn rope_norm(x: &mut [f32], cache: &[(f32, f32)]) {
    rope::<false>(x, cache);
}

/// [`rope_neox`] (`NEOX`) or [`rope_norm`], with the fused multiply-adds in hardware
/// where the CPU has them (the same bits as the library's `fmaf`, many times faster;
/// this crate is built for plain x86-64, where `mul_add` is a library call).
fn rope<const NEOX: bool>(x: &mut [f32], cache: &[(f32, f32)]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU has the features `rope_fma` is compiled for.
        unsafe { rope_fma::<NEOX>(x, cache) };
        return;
    }
    rope_impl::<NEOX>(x, cache);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rope_fma<const NEOX: bool>(x: &mut [f32], cache: &[(f32, f32)]) {
    rope_impl::<NEOX>(x, cache);
}

#[inline(always)]
fn rope_impl<const NEOX: bool>(x: &mut [f32], cache: &[(f32, f32)]) {
    let half = cache.len();
    for (i, &(c, s)) in cache.iter().enumerate() {
        // NEOX pairs `(i, i + n/2)`, NORM adjacent pairs.
        let (a, b) = if NEOX {
            (i, i + half)
        } else {
            (2 * i, 2 * i + 1)
        };
        let (x0, x1) = (x[a], x[b]);
        // GCC contracts these (-ffp-contract=fast) into fused multiply-adds.
        x[a] = x0.mul_add(c, -(x1 * s));
        x[b] = x0.mul_add(s, x1 * c);
    }
}

/// `ggml_vec_geglu_f32` (with `GGML_GELU_FP16`): `gelu(gate) · up`, GELU read from
/// the f16 table at the gate rounded to f16; 0 at or below −10, the gate itself at
/// or above 10.
pub fn geglu(gate: &[f32], up: &[f32], out: &mut [f32]) {
    let mut full = 0;
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512 F/BW/VL (checked).
        full = unsafe { wide::geglu(gate, up, out) };
    }
    geglu_scalar(&gate[full..], &up[full..], &mut out[full..]);
}

/// [`geglu`] value by value.
fn geglu_scalar(gate: &[f32], up: &[f32], out: &mut [f32]) {
    let table = &*GELU_F16;
    for ((o, &x), &g) in out.iter_mut().zip(gate).zip(up) {
        *o = if x <= -10.0 {
            0.0
        } else if x >= 10.0 {
            x * g
        } else {
            table[usize::from(to_f16(x).to_bits())].to_f32() * g
        };
    }
}

/// f32 → f16 bits, rounding to nearest even (`_cvtss_sh`).
pub fn to_f16(x: f32) -> f16 {
    f16::from_f32(x)
}

/// Each value rounded to f16 and widened back (`to_f16(v).to_f32()`), in place.
pub fn round_f16(x: &mut [f32]) {
    let mut full = 0;
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512 F/BW/VL (checked).
        full = unsafe { wide::round_f16(x) };
    }
    for v in &mut x[full..] {
        *v = to_f16(*v).to_f32();
    }
}

/// `swiglu` with fused multiply-adds in hardware where the CPU has them, 16 lanes
/// at a time on AVX-512 (as ggml's `ggml_v_silu`; the same bits).
pub fn swiglu_fast(gate: &[f32], up: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features `swiglu_512` is compiled for.
            unsafe { swiglu_512(gate, up, out) };
            return;
        }
        if has_avx2_fma() {
            // SAFETY: the CPU has the features `swiglu_fma` is compiled for.
            unsafe { swiglu_fma(gate, up, out) };
            return;
        }
    }
    swiglu(gate, up, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
fn swiglu_512(gate: &[f32], up: &[f32], out: &mut [f32]) {
    // SAFETY: compiled for AVX-512F; bounds checked inside.
    let full = unsafe { wide::swiglu16(gate, up, out) };
    swiglu_tail(&gate[full..], &up[full..], &mut out[full..]);
}

/// The libm tail of [`swiglu`] (fewer than 16 values).
fn swiglu_tail(gate: &[f32], up: &[f32], out: &mut [f32]) {
    for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
        *o = g / (1.0 + (-g).exp()) * u;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn swiglu_fma(gate: &[f32], up: &[f32], out: &mut [f32]) {
    swiglu(gate, up, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_expf_is_close_to_libm_and_handles_the_ends() {
        for i in -1000..=1000 {
            let x = i as f32 * 0.0871;
            let (a, b) = (expf(x), x.exp());
            assert!(((a - b) / b).abs() < 4e-7, "expf({x}) = {a}, libm {b}");
        }
        assert_eq!(expf(f32::NEG_INFINITY), 0.0);
        assert_eq!(expf(-200.0), 0.0);
        assert_eq!(expf(200.0), f32::INFINITY);
        assert_eq!(expf(0.0), 1.0);
    }

    #[test]
    fn rms_norm_matches_its_definition() {
        let x = [1.0f32, -2.0, 3.0, 0.5];
        let w = [1.0f32, 2.0, 0.5, 1.0];
        let mut y = [0f32; 4];
        rms_norm(&x, &w, 1e-5, &mut y);
        let ms = (1.0 + 4.0 + 9.0 + 0.25) / 4.0;
        let s = 1.0 / (ms + 1e-5f32).sqrt();
        for i in 0..4 {
            assert!((y[i] - x[i] * s * w[i]).abs() < 1e-6);
        }
    }

    #[test]
    fn rms_norm_of_many_rows_is_each_row_alone() {
        let n = 96;
        // Magnitudes over many octaves, so that another order of the f64 sum
        // would round differently.
        let x: Vec<f32> = (0..40 * n)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 2f32.powi((i % 37) as i32 - 18))
            .collect();
        let w: Vec<f32> = (0..n).map(|i| 0.5 + i as f32 / 97.0).collect();
        for rows in [1, 7, 8, 9, 17, 40] {
            let mut y = vec![0f32; rows * n];
            rms_norm(&x[..rows * n], &w, 1e-6, &mut y);
            for r in 0..rows {
                let xr = &x[r * n..(r + 1) * n];
                let sum: f64 = xr.iter().map(|&v| f64::from(v * v)).sum();
                let scale = 1.0f32 / ((sum / n as f64) as f32 + 1e-6).sqrt();
                for i in 0..n {
                    assert_eq!(
                        y[r * n + i].to_bits(),
                        (xr[i] * scale * w[i]).to_bits(),
                        "{rows} rows, row {r}"
                    );
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn wide_exp_and_f16_rounding_are_the_scalar_ones() {
        if !has_avx512() {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        let xs: Vec<f32> = (0..4000)
            .map(|i| (i as f32 - 3000.0) * 0.0731)
            .chain([-1e30, -300.0, -104.0, -87.5, 0.0, -0.0, 88.0, 89.0, 200.0])
            .collect();
        for chunk in xs.chunks(16) {
            for valid in [chunk.len(), chunk.len() / 2] {
                let mut v = [7.0f32; 16];
                v[..chunk.len()].copy_from_slice(chunk);
                let mut w = v;
                // SAFETY: AVX-512 checked above.
                unsafe { wide::exp_minus_sum(&mut v, 0, valid, 1.5) };
                for i in 0..16 {
                    let want = if i < valid { expf(w[i] - 1.5) } else { w[i] };
                    assert_eq!(v[i].to_bits(), want.to_bits(), "exp({} - 1.5)", w[i]);
                }
                // SAFETY: as above.
                unsafe { wide::scale_to_f16(&mut w, valid, 0.37) };
                for i in 0..valid {
                    let x = if i < chunk.len() { chunk[i] } else { 7.0 };
                    assert_eq!(w[i].to_bits(), to_f16(x * 0.37).to_f32().to_bits());
                }
            }
        }
    }

    #[test]
    fn swiglu_on_registers_is_the_scalar_one() {
        let gate: Vec<f32> = (0..1000)
            .map(|i| (i as f32 - 600.0) * 0.173)
            .chain([-1e30, -200.0, -88.5, -0.0, 0.0, 88.5, 1e30])
            .collect();
        let up: Vec<f32> = (0..gate.len()).map(|i| (i % 7) as f32 - 2.5).collect();
        let mut want = vec![0f32; gate.len()];
        let mut got = vec![0f32; gate.len()];
        swiglu(&gate, &up, &mut want);
        swiglu_fast(&gate, &up, &mut got);
        for i in 0..gate.len() {
            assert_eq!(
                got[i].to_bits(),
                want[i].to_bits(),
                "silu({}) · {}",
                gate[i],
                up[i]
            );
        }
    }

    #[test]
    fn geglu_and_f16_rounding_on_registers_are_the_scalar_ones() {
        let gate: Vec<f32> = (0..4000)
            .map(|i| (i as f32 - 2000.0) * 0.0061)
            .chain([
                -1e30, -10.0, -9.999, 9.999, 10.0, 65504.0, 70000.0, -0.0, 0.0, 1e-8,
            ])
            .collect();
        let up: Vec<f32> = (0..gate.len()).map(|i| (i % 7) as f32 - 2.5).collect();
        let mut want = vec![0f32; gate.len()];
        let mut got = vec![0f32; gate.len()];
        geglu_scalar(&gate, &up, &mut want);
        geglu(&gate, &up, &mut got);
        for i in 0..gate.len() {
            assert_eq!(
                got[i].to_bits(),
                want[i].to_bits(),
                "gelu({}) · {}",
                gate[i],
                up[i]
            );
        }
        let mut r = gate.clone();
        round_f16(&mut r);
        for (x, y) in gate.iter().zip(&r) {
            assert_eq!(y.to_bits(), to_f16(*x).to_f32().to_bits(), "{x}");
        }
        let cache: Vec<(f32, f32)> = (0..8)
            .map(|i| ((i as f32).cos(), (i as f32).sin()))
            .collect();
        let x: Vec<f32> = (0..16).map(|i| i as f32 * 0.37 - 2.0).collect();
        let (mut a, mut b) = (x.clone(), x.clone());
        rope_neox(&mut a, &cache);
        rope_impl::<true>(&mut b, &cache);
        assert_eq!(a, b);
        let (mut a, mut b) = (x.clone(), x);
        rope_norm(&mut a, &cache);
        rope_impl::<false>(&mut b, &cache);
        assert_eq!(a, b);
    }
}
