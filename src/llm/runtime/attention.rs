//! Attention of one layer computed exactly as llama.cpp's CPU backend computes it:
//! scores by tinyBLAS' f16 dot products (AVX-512 lanes) for prompts and by
//! `ggml_vec_dot_f16` for one token, the softmax with ggml's vectorized `expf` and
//! f16 rounding, the values weighted in the same lane order; past 256 keys one token's
//! attention can run in three exact steps split across cores.
//! Matches llama.cpp's `ggml/src/ggml-cpu/{ops.cpp,vec.h,vec.cpp,llamafile/sgemm.cpp}`.

use super::kv_cache::HeadKv;
use super::ops::{expf, round_f16, to_f16};
use super::tables::LANES;
#[cfg(target_arch = "x86_64")]
use super::wide;
#[cfg(target_arch = "x86_64")]
use super::wide_avx2;
#[cfg(target_arch = "x86_64")]
use crate::cpu::{has_avx2_fma, has_avx512};

/// Which code the steps are compiled for (`W`): the portable code, AVX2 (with FMA
/// and F16C: [`wide_avx2`]) or AVX-512 ([`wide`]). The same bits on each.
const PORTABLE: u8 = 0;
#[cfg(target_arch = "x86_64")]
const AVX2: u8 = 1;
#[cfg(target_arch = "x86_64")]
const AVX512: u8 = 2;

/// `_mm512_reduce_add_ps` as GCC expands it: halves, then quarters, then pairs.
fn reduce16(a: &[f32; LANES]) -> f32 {
    let b: [f32; 8] = std::array::from_fn(|i| a[i] + a[i + 8]);
    let c: [f32; 4] = std::array::from_fn(|i| b[i] + b[i + 4]);
    let d = [c[0] + c[2], c[1] + c[3]];
    d[0] + d[1]
}

/// tinyBLAS' dot product of f16 vectors (AVX-512), on their f32 values: per lane
/// a chain of fused multiply-adds over 16-wide chunks, then the horizontal sum.
/// Lengths are multiples of 16 (callers pad with zeros, as llama.cpp pads its cache).
#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    for (x, y) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] = x[l].mul_add(y[l], acc[l]);
        }
    }
    reduce16(&acc)
}

/// [`dot_lanes`] of `N` rows with the same `b` at once: the same chains per row,
/// interleaved so that they run in parallel.
#[inline(always)]
fn dot_lanes_n<const N: usize>(rows: [&[f32]; N], b: &[f32]) -> [f32; N] {
    let mut acc = [[0f32; LANES]; N];
    for (c, y) in b.chunks_exact(LANES).enumerate() {
        for (a, row) in acc.iter_mut().zip(&rows) {
            let x = &row[c * LANES..(c + 1) * LANES];
            for l in 0..LANES {
                a[l] = x[l].mul_add(y[l], a[l]);
            }
        }
    }
    acc.map(|a| reduce16(&a))
}

/// [`dot_vec`] of `N` rows with the same `b` at once (lengths a multiple of 64).
#[inline(always)]
fn dot_vec_n<const N: usize>(rows: [&[f32]; N], b: &[f32]) -> [f32; N] {
    let mut sums = [[[0f32; LANES]; 4]; N];
    for (c, y) in b.chunks_exact(64).enumerate() {
        for (s, row) in sums.iter_mut().zip(&rows) {
            let x = &row[c * 64..(c + 1) * 64];
            for (j, acc) in s.iter_mut().enumerate() {
                for l in 0..LANES {
                    acc[l] = x[j * LANES + l].mul_add(y[j * LANES + l], acc[l]);
                }
            }
        }
    }
    sums.map(|s| {
        let x0: [f32; LANES] = std::array::from_fn(|l| s[0][l] + s[2][l]);
        let x1: [f32; LANES] = std::array::from_fn(|l| s[1][l] + s[3][l]);
        let x: [f32; LANES] = std::array::from_fn(|l| x0[l] + x1[l]);
        (f64::from(reduce16(&x))) as f32
    })
}

/// [`dot_vec_n`] (`one_token`) or [`dot_lanes_n`]. (On AVX-512 the head-group
/// kernels of `wide` take every full group of keys and dimensions instead.)
#[inline(always)]
fn dot_n<const N: usize>(one_token: bool, rows: [&[f32]; N], b: &[f32]) -> [f32; N] {
    if one_token {
        dot_vec_n(rows, b)
    } else {
        dot_lanes_n(rows, b)
    }
}

/// `ggml_vec_dot_f16` (AVX-512): four 16-lane accumulators over 64-wide steps,
/// folded pairwise, the horizontal sum, then the tail in f64. llama.cpp takes this
/// path instead of tinyBLAS when one token is processed.
#[inline(always)]
fn dot_vec(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [[0f32; LANES]; 4];
    let np = a.len() / 64 * 64;
    for (x, y) in a[..np].chunks_exact(64).zip(b[..np].chunks_exact(64)) {
        for (j, acc) in sums.iter_mut().enumerate() {
            for l in 0..LANES {
                acc[l] = x[j * LANES + l].mul_add(y[j * LANES + l], acc[l]);
            }
        }
    }
    let x0: [f32; LANES] = std::array::from_fn(|l| sums[0][l] + sums[2][l]);
    let x1: [f32; LANES] = std::array::from_fn(|l| sums[1][l] + sums[3][l]);
    let x: [f32; LANES] = std::array::from_fn(|l| x0[l] + x1[l]);
    let mut sum = f64::from(reduce16(&x));
    for (x, y) in a[np..].iter().zip(&b[np..]) {
        sum += f64::from(x * y);
    }
    sum as f32
}

/// Scratch for one attention call.
#[derive(Default)]
pub struct AttnScratch {
    q: Vec<f32>,
    scores: Vec<f32>,
}

/// Attention of the query heads in `q` (each `kv.dim` values, all of one row, all
/// sharing the KV head `kv`) over positions `0..total` of `kv` (`total` at most the
/// positions `kv` holds), as llama.cpp's non-flash path computes it: KQ with Q
/// rounded to f16 (tinyBLAS), `soft_max_ext` (scale, causal mask, vector `expf`,
/// f64 sum of 16-lane sums), the probabilities rounded to f16, then KQV (tinyBLAS).
/// With `one_token` (a single position processed) both products take
/// `ggml_vec_dot_f16`'s order, as llama.cpp's do. `out` (as long as `q`) gets each
/// head's dimensions. The heads are computed together so that each key and value is
/// read once for all of them (the same bits as one by one). Keys before `first` are
/// masked out (a sliding window), as llama.cpp's `-inf` mask does: they take no
/// part in the maximum and their probabilities are zero.
#[allow(clippy::too_many_arguments)]
pub fn attend(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    first: usize,
    total: usize,
    scale: f32,
    s: &mut AttnScratch,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features `attend_512` is compiled for.
            unsafe { attend_512(one_token, q, kv, first, total, scale, s, out) };
            return;
        }
        if has_avx2_fma() && std::is_x86_feature_detected!("f16c") {
            // SAFETY: the CPU has the features `attend_fma` is compiled for.
            unsafe { attend_fma(one_token, q, kv, first, total, scale, s, out) };
            return;
        }
    }
    attend_impl::<PORTABLE>(one_token, q, kv, first, total, scale, s, out);
}

/// Whether [`attend_scores`], [`attend_softmax`] and [`attend_values`] run on vector
/// code here: AVX-512 on x86-64 (elsewhere on x86-64 only [`attend`] has its AVX2
/// build; the steps' fused multiply-adds would be library calls), any other target.
pub fn attend_steps_are_fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx512()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

/// [`attend`]'s first step, for splitting one token's attention across cores: the
/// scores of the query heads in `q` (already f16-rounded, see [`round_f16`]) for
/// keys `ja..jb`, head `h`'s at `out[h·(jb − ja)..]`.
pub fn attend_scores(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    ja: usize,
    jb: usize,
    scale: f32,
    out: &mut [f32],
) {
    let ld = jb.saturating_sub(ja);
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { steps_512::scores(one_token, q, kv, ja, jb, scale, out, ld) };
            return;
        }
    }
    scores_impl::<PORTABLE>(one_token, q, kv, ja, jb, scale, out, ld);
}

/// [`attend`]'s second step: one head's scores (all keys up to `total`, padded with
/// zeros to a multiple of 64) into its probabilities, keys before `first` masked.
pub fn attend_softmax(row: &mut [f32], first: usize, total: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: as above.
            unsafe { steps_512::softmax(row, first, total) };
            return;
        }
    }
    softmax_impl::<PORTABLE>(row, first, total);
}

/// [`attend`]'s third step: output dimensions `da..db` of each head from its
/// probabilities (`p`, rows of `ld`, a multiple of 64), head `h`'s at
/// `out[h·(db − da)..]`.
#[allow(clippy::too_many_arguments)]
pub fn attend_values(
    one_token: bool,
    kv: &HeadKv,
    p: &[f32],
    ld: usize,
    first: usize,
    da: usize,
    db: usize,
    out: &mut [f32],
) {
    let heads = p.len() / ld.max(1);
    let ldo = db.saturating_sub(da);
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: as above.
            unsafe { steps_512::values(one_token, kv, p, ld, heads, first, da, db, out, ldo) };
            return;
        }
    }
    values_impl::<PORTABLE>(one_token, kv, p, ld, heads, first, da, db, out, ldo);
}

/// The steps compiled for AVX-512 (the same lanes, so the same bits).
#[cfg(target_arch = "x86_64")]
mod steps_512 {
    use super::HeadKv;

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scores(
        one_token: bool,
        q: &[f32],
        kv: &HeadKv,
        ja: usize,
        jb: usize,
        scale: f32,
        out: &mut [f32],
        ld: usize,
    ) {
        super::scores_impl::<{ super::AVX512 }>(one_token, q, kv, ja, jb, scale, out, ld);
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    pub(super) fn softmax(row: &mut [f32], first: usize, total: usize) {
        super::softmax_impl::<{ super::AVX512 }>(row, first, total);
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn values(
        one_token: bool,
        kv: &HeadKv,
        p: &[f32],
        ld: usize,
        heads: usize,
        first: usize,
        da: usize,
        db: usize,
        out: &mut [f32],
        ldo: usize,
    ) {
        super::values_impl::<{ super::AVX512 }>(
            one_token, kv, p, ld, heads, first, da, db, out, ldo,
        );
    }
}

/// The same code on 16-lane registers (the lanes are the same, so are the bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
#[allow(clippy::too_many_arguments)]
fn attend_512(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    first: usize,
    total: usize,
    scale: f32,
    s: &mut AttnScratch,
    out: &mut [f32],
) {
    attend_impl::<AVX512>(one_token, q, kv, first, total, scale, s, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
fn attend_fma(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    first: usize,
    total: usize,
    scale: f32,
    s: &mut AttnScratch,
    out: &mut [f32],
) {
    attend_impl::<AVX2>(one_token, q, kv, first, total, scale, s, out);
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attend_impl<const W: u8>(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    first: usize,
    total: usize,
    scale: f32,
    s: &mut AttnScratch,
    out: &mut [f32],
) {
    let dim = kv.dim;
    assert!(dim > 0 && q.len().is_multiple_of(dim) && out.len() == q.len());
    let heads = q.len() / dim;
    let total = total.min(kv.total);
    let first = first.min(total);
    // Padded to 64 so both dot orders see whole steps; the zeros add nothing.
    let padded = total.div_ceil(64) * 64;
    s.q.clear();
    s.q.extend_from_slice(q);
    round_f16(&mut s.q);
    s.scores.clear();
    s.scores.resize(heads * padded, 0.0);
    scores_impl::<W>(
        one_token,
        &s.q,
        kv,
        first,
        total,
        scale,
        &mut s.scores[first..],
        padded,
    );
    for row in s.scores.chunks_exact_mut(padded) {
        softmax_impl::<W>(row, first, total);
    }
    values_impl::<W>(
        one_token, kv, &s.scores, padded, heads, first, 0, dim, out, dim,
    );
}

/// Step 1 of [`attend`]: the scores `dot(k_j, q_h) · scale` of the query heads in `q`
/// (f16-rounded, `kv.dim` apart) for keys `ja..jb`, at `out[h·ld + j − ja]`. Keys
/// before a sliding window's start need none: the mask zeroes them.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scores_impl<const W: u8>(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    ja: usize,
    jb: usize,
    scale: f32,
    out: &mut [f32],
    ld: usize,
) {
    let dim = kv.dim;
    let heads = q.len() / dim;
    let n = jb.saturating_sub(ja);
    if n == 0 || heads == 0 {
        return;
    }
    let k = &kv.k[ja * dim..jb * dim];
    assert!(ld >= n && out.len() >= (heads - 1) * ld + n);
    let batched = if one_token {
        dim.is_multiple_of(64)
    } else {
        dim.is_multiple_of(LANES)
    };
    // The query heads sharing this KV head, four keys at a time, on registers.
    let mut j0 = 0;
    #[cfg(target_arch = "x86_64")]
    if W == AVX512 && batched {
        // SAFETY: `W` only from AVX-512F code; bounds checked inside.
        j0 = unsafe { wide::scores_heads(one_token, k, dim, n, q, scale, out, ld) };
    } else if W == AVX2 && batched {
        // SAFETY: `W` only from AVX2, FMA and F16C code; bounds checked inside.
        j0 = unsafe { wide_avx2::scores_heads(one_token, k, dim, n, q, scale, out, ld) };
    }
    for h in 0..heads {
        let qh = &q[h * dim..(h + 1) * dim];
        let row = &mut out[h * ld..h * ld + n];
        let mut j = j0;
        // Eight keys at a time where the width allows (each key's chain unchanged).
        if batched {
            while j + 8 <= n {
                let rows: [&[f32]; 8] =
                    std::array::from_fn(|t| &k[(j + t) * dim..(j + t + 1) * dim]);
                let dots = dot_n::<8>(one_token, rows, qh);
                for (t, dot) in dots.iter().enumerate() {
                    row[j + t] = dot * scale;
                }
                j += 8;
            }
        }
        for (j, krow) in k.chunks_exact(dim).enumerate().take(n).skip(j) {
            let dot = if one_token || !dim.is_multiple_of(LANES) {
                dot_vec(krow, qh)
            } else {
                dot_lanes(krow, qh)
            };
            row[j] = dot * scale;
        }
    }
}

/// Step 2 of [`attend`]: one head's scores (`row`, padded with zeros to a multiple of
/// 64) into f16-rounded probabilities, keys before `first` masked. Whole 16-value
/// chunks before `first` are zeros that add zero to the sum: skipped.
#[inline(always)]
fn softmax_impl<const W: u8>(row: &mut [f32], first: usize, total: usize) {
    let max = row[first..total]
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let skip = first / LANES * LANES;
    row[..skip].fill(0.0);
    softmax_f16::<W>(&mut row[skip..], first - skip, total - skip, max);
}

/// Step 3 of [`attend`]: output dimensions `da..db` of `heads` heads, `dot(v_d, p_h)`
/// at `out[h·ldo + d − da]`, with head `h`'s probabilities at `p[h·ld..]` (`ld` a
/// multiple of 64, at most the cache's stride; zero before `first`). Positions before
/// `first`'s 64-value step are skipped: their products are zeros added to
/// accumulators that are still zero, which changes no bit.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn values_impl<const W: u8>(
    one_token: bool,
    kv: &HeadKv,
    p: &[f32],
    ld: usize,
    heads: usize,
    first: usize,
    da: usize,
    db: usize,
    out: &mut [f32],
    ldo: usize,
) {
    let from = first / 64 * 64;
    let len = ld - from;
    assert!(ld.is_multiple_of(64) && (ld == 0 || ld <= kv.stride));
    assert!(da <= db && db <= kv.dim && p.len() >= heads * ld);
    assert!(ldo >= db - da && out.len() >= heads.saturating_sub(1) * ldo + (db - da));
    // Four dimensions at a time for all heads on registers, then per head.
    let mut d0 = da;
    #[cfg(target_arch = "x86_64")]
    if W != PORTABLE && len > 0 {
        // The register code for `W`, on the rows from `from`'s step.
        macro_rules! values_heads {
            ($f:path) => {
                $f(
                    one_token,
                    &kv.vt[da * kv.stride + from..],
                    kv.stride,
                    &p[from..],
                    ld,
                    len,
                    heads,
                    db - da,
                    out,
                    ldo,
                )
            };
        }
        // SAFETY: `W` is AVX2 only in AVX2, FMA and F16C code, AVX512 only in
        // AVX-512F code; bounds are checked inside.
        d0 += unsafe {
            if W == AVX2 {
                values_heads!(wide_avx2::values_heads)
            } else {
                values_heads!(wide::values_heads)
            }
        };
    }
    let vrow = |d: usize| &kv.vt[d * kv.stride + from..d * kv.stride + ld];
    for h in 0..heads {
        let ph = &p[h * ld + from..(h + 1) * ld];
        let out = &mut out[h * ldo..h * ldo + (db - da)];
        let mut d = d0;
        // Four or eight output dimensions at a time (each one's chain unchanged).
        if one_token {
            // Four at a time: `dot_vec` keeps four accumulators per dimension.
            while d + 4 <= db {
                let rows: [&[f32]; 4] = std::array::from_fn(|t| vrow(d + t));
                out[d - da..d - da + 4].copy_from_slice(&dot_n::<4>(true, rows, ph));
                d += 4;
            }
        } else {
            while d + 8 <= db {
                let rows: [&[f32]; 8] = std::array::from_fn(|t| vrow(d + t));
                out[d - da..d - da + 8].copy_from_slice(&dot_n::<8>(false, rows, ph));
                d += 8;
            }
        }
        for d in d..db {
            out[d - da] = if one_token {
                dot_vec(vrow(d), ph)
            } else {
                dot_lanes(vrow(d), ph)
            };
        }
    }
}

/// `soft_max_ext` of one row of scores (the first `total` of `x`, the rest zero) with
/// its maximum: vector `expf`, the f64 sum of 16-lane sums, then the probabilities
/// rounded to f16 (KQV's input type). Values before `first` are masked: zero
/// after the exponential, as `expf(-inf)` makes them.
#[inline(always)]
fn softmax_f16<const W: u8>(x: &mut [f32], first: usize, total: usize, max: f32) {
    #[cfg(target_arch = "x86_64")]
    if W == AVX2 {
        // SAFETY: `W` is AVX2 only in AVX2, FMA and F16C code.
        let sum = unsafe { wide_avx2::exp_minus_sum(x, first, total, max) };
        // SAFETY: as above.
        unsafe { wide_avx2::scale_to_f16(x, total, (1.0 / sum) as f32) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if W == AVX512 {
        // SAFETY: `W` is set only by AVX-512 F/BW/VL code.
        let sum = unsafe { wide::exp_minus_sum(x, first, total, max) };
        let inv = (1.0 / sum) as f32;
        for (c, chunk) in x.chunks_exact_mut(LANES).enumerate() {
            let valid = total.saturating_sub(c * LANES).min(LANES);
            // SAFETY: as above.
            unsafe { wide::scale_to_f16(chunk, valid, inv) };
        }
        return;
    }
    let mut sum = 0f64;
    for (c, chunk) in x.chunks_exact_mut(LANES).enumerate() {
        let valid = total.saturating_sub(c * LANES).min(LANES);
        let masked = first.saturating_sub(c * LANES).min(LANES);
        for x in chunk[..valid].iter_mut() {
            *x = expf(*x - max);
        }
        chunk[..masked].fill(0.0);
        let lanes: &[f32; LANES] = (&*chunk).try_into().unwrap_or(&[0.0; LANES]);
        sum += f64::from(reduce16(lanes));
    }
    let inv = (1.0 / sum) as f32;
    for x in x[..total].iter_mut() {
        *x = to_f16(*x * inv).to_f32();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::runtime::kv_cache::KvCache;

    #[test]
    fn batched_dots_keep_each_rows_order() {
        let row = |r: usize| -> Vec<f32> {
            (0..192)
                .map(|i| ((i * 31 + r * 17) % 97) as f32 / 7.0 - 6.5)
                .collect()
        };
        let rows: Vec<Vec<f32>> = (0..8).map(row).collect();
        let b: Vec<f32> = (0..192)
            .map(|i| ((i * 13) % 89) as f32 / 11.0 - 4.0)
            .collect();
        let refs: [&[f32]; 8] = std::array::from_fn(|t| rows[t].as_slice());
        let lanes = dot_lanes_n(refs, &b);
        let vec = dot_vec_n(refs, &b);
        for t in 0..8 {
            assert_eq!(lanes[t].to_bits(), dot_lanes(&rows[t], &b).to_bits());
            assert_eq!(vec[t].to_bits(), dot_vec(&rows[t], &b).to_bits());
        }
        // The two orders differ somewhere (so the test can tell them apart).
        assert!((0..8).any(|t| lanes[t] != vec[t]));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn wide_attention_is_the_portable_one_bit_for_bit() {
        if !has_avx512() {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        // Sixteen sums at once pair the same lanes as one at a time.
        let mut rnd = xorshift(0x9e37_79b9_u32);
        let regs: Vec<[f32; 16]> = (0..16).map(|_| std::array::from_fn(|_| rnd())).collect();
        let mut sums = [0f32; 16];
        // SAFETY: AVX-512 checked above.
        unsafe {
            use std::arch::x86_64::*;
            let x: [__m512; 16] = std::array::from_fn(|t| _mm512_loadu_ps(regs[t].as_ptr()));
            _mm512_storeu_ps(sums.as_mut_ptr(), wide::reduce16x16(&x));
        }
        for t in 0..16 {
            assert_eq!(
                sums[t].to_bits(),
                reduce16(&regs[t]).to_bits(),
                "register {t}"
            );
        }
        // Whole attention rows, 1 to 6 query heads on one KV head (head groups of 4
        // and their remainders), against the portable code one head at a time: every
        // count of keys around the 4-, 16- and 64-wide steps; a width the one-token
        // key step does not take (80).
        let checked = heads_match_portable(
            attend,
            &mut rnd,
            &[(64, 0.3), (80, 0.3)],
            6,
            &[1, 3, 4, 7, 15, 16, 17, 33, 64, 65, 130, 255, 300],
        );
        assert_eq!(checked, 2 * 21 * 13 * 4);
    }

    /// Values in -10..10 from a xorshift generator started at `seed`.
    fn xorshift(mut seed: u32) -> impl FnMut() -> f32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed % 20_011) as f32 / 1_000.0 - 10.0
        }
    }

    /// `attend` as a function pointer.
    type AttendFn = fn(bool, &[f32], &HeadKv, usize, usize, f32, &mut AttnScratch, &mut [f32]);

    /// `f` over 1 to `max_heads` query heads on one KV head against the portable code
    /// one head at a time, bit for bit, for each width and spread of values (keys and
    /// queries scaled by it), each count of keys in `totals`, with and without a
    /// window hiding the first third, one token and many. Returns the heads checked.
    fn heads_match_portable(
        f: AttendFn,
        rnd: &mut impl FnMut() -> f32,
        widths: &[(usize, f32)],
        max_heads: usize,
        totals: &[usize],
    ) -> usize {
        let n = totals.iter().copied().max().unwrap_or(0);
        let mut checked = 0;
        for &(dim, spread) in widths {
            let mut c = KvCache::new(1, dim);
            let k: Vec<f32> = (0..n * dim).map(|_| rnd() * spread).collect();
            let v: Vec<f32> = (0..n * dim).map(|_| rnd()).collect();
            c.store(0, &k, &v);
            for heads in 1..=max_heads {
                let q: Vec<f32> = (0..heads * dim).map(|_| rnd() * spread).collect();
                for &total in totals {
                    for (one_token, first) in
                        [(false, 0), (true, 0), (false, total / 3), (true, total / 3)]
                    {
                        let mut s = AttnScratch::default();
                        let mut got = vec![0f32; heads * dim];
                        f(
                            one_token,
                            &q,
                            c.head(0),
                            first,
                            total,
                            0.125,
                            &mut s,
                            &mut got,
                        );
                        for h in 0..heads {
                            let mut want = vec![0f32; dim];
                            let qh = &q[h * dim..(h + 1) * dim];
                            attend_impl::<PORTABLE>(
                                one_token,
                                qh,
                                c.head(0),
                                first,
                                total,
                                0.125,
                                &mut s,
                                &mut want,
                            );
                            for d in 0..dim {
                                assert_eq!(
                                    got[h * dim + d].to_bits(),
                                    want[d].to_bits(),
                                    "dim {dim}, spread {spread}, heads {heads}, total {total}, \
                                     first {first}, one_token {one_token}, head {h}, dim {d}"
                                );
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        checked
    }

    /// The AVX2 build (two 8-lane registers per 16-lane group) against the portable
    /// code one head at a time, bit for bit: 1 to 7 query heads on one KV head (groups
    /// of 3 and 2 and their remainders), key counts around the 2-, 16- and 64-wide
    /// steps, with and without a window, one token and many; widths of 64, 80 (not a
    /// one-token step) and 16; and scores spread far enough that some exponentials
    /// leave the vector range (the scalar code takes those chunks).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_attention_is_the_portable_one_bit_for_bit() {
        if !(has_avx2_fma() && std::is_x86_feature_detected!("f16c")) {
            eprintln!("skipped: no AVX2, FMA and F16C here");
            return;
        }
        let mut rnd = xorshift(0x2545_f491_u32);
        let avx2: AttendFn = |one_token, q, kv, first, total, scale, s, out| {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked above).
            unsafe { attend_fma(one_token, q, kv, first, total, scale, s, out) }
        };
        let checked = heads_match_portable(
            avx2,
            &mut rnd,
            &[(64, 0.3), (80, 0.3), (16, 0.3), (64, 6.0)],
            7,
            &[1, 2, 3, 15, 16, 17, 63, 64, 65, 130, 300],
        );
        assert_eq!(checked, 4 * 28 * 11 * 4);
    }

    /// llama.cpp's attention as written, every key and every position: the scores of
    /// all keys, the mask, the softmax of the whole row, then each output dimension
    /// over the whole padded row.
    fn attend_reference(
        one_token: bool,
        q: &[f32],
        kv: &HeadKv,
        first: usize,
        total: usize,
        scale: f32,
    ) -> Vec<f32> {
        let dim = kv.dim;
        let total = total.min(kv.total);
        let first = first.min(total);
        let padded = total.div_ceil(64) * 64;
        let dot = |a: &[f32], b: &[f32]| {
            if one_token || !dim.is_multiple_of(LANES) {
                dot_vec(a, b)
            } else {
                dot_lanes(a, b)
            }
        };
        let mut qr = q.to_vec();
        round_f16(&mut qr);
        let mut out = Vec::new();
        for qh in qr.chunks_exact(dim) {
            let mut row = vec![0f32; padded];
            for (j, r) in row.iter_mut().enumerate().take(total) {
                *r = dot(&kv.k[j * dim..(j + 1) * dim], qh) * scale;
            }
            let max = row[first..total]
                .iter()
                .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            softmax_f16::<PORTABLE>(&mut row, first, total, max);
            for d in 0..dim {
                let v = &kv.vt[d * kv.stride..d * kv.stride + padded];
                out.push(if one_token {
                    dot_vec(v, &row)
                } else {
                    dot_lanes(v, &row)
                });
            }
        }
        out
    }

    /// Attention skips the keys and positions a window masks, and can run in
    /// pieces (key ranges, then dimension ranges): the bits of the whole computation.
    #[test]
    fn attention_in_pieces_and_windows_is_the_whole_computation() {
        let mut seed = 0x2545_f491_u32;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed % 20_011) as f32 / 1_000.0 - 10.0
        };
        let n = 300;
        for dim in [64, 80, 128] {
            let mut c = KvCache::new(1, dim);
            let k: Vec<f32> = (0..n * dim).map(|_| rnd() * 0.3).collect();
            let v: Vec<f32> = (0..n * dim).map(|_| rnd()).collect();
            c.store(0, &k, &v);
            let kv = c.head(0);
            for heads in [1, 3, 4] {
                let q: Vec<f32> = (0..heads * dim).map(|_| rnd() * 0.3).collect();
                for total in [1usize, 17, 64, 65, 130, 255, 300] {
                    for first in [0, total / 3, total.saturating_sub(70), total - 1] {
                        for one_token in [false, true] {
                            let want = attend_reference(one_token, &q, kv, first, total, 0.125);
                            let mut got = vec![0f32; heads * dim];
                            let mut s = AttnScratch::default();
                            attend(one_token, &q, kv, first, total, 0.125, &mut s, &mut got);
                            let same = got
                                .iter()
                                .zip(&want)
                                .all(|(a, b)| a.to_bits() == b.to_bits());
                            assert!(same, "whole: dim {dim} heads {heads} total {total} first {first} one_token {one_token}");
                            // In pieces: keys in three ranges, then dimensions in two.
                            let mut qr = q.clone();
                            round_f16(&mut qr);
                            let padded = total.div_ceil(64) * 64;
                            let mut p = vec![0f32; heads * padded];
                            let cut = [
                                first,
                                first + (total - first) / 3,
                                total - (total - first) / 4,
                                total,
                            ];
                            for w in cut.windows(2) {
                                let mut part = vec![0f32; heads * (w[1] - w[0])];
                                attend_scores(one_token, &qr, kv, w[0], w[1], 0.125, &mut part);
                                for h in 0..heads {
                                    let len = w[1] - w[0];
                                    p[h * padded + w[0]..h * padded + w[1]]
                                        .copy_from_slice(&part[h * len..(h + 1) * len]);
                                }
                            }
                            for row in p.chunks_exact_mut(padded) {
                                attend_softmax(row, first, total);
                            }
                            let mut pieces = vec![0f32; heads * dim];
                            let half = dim / 2 + 4;
                            for (da, db) in [(0, half), (half, dim)] {
                                let mut part = vec![0f32; heads * (db - da)];
                                attend_values(one_token, kv, &p, padded, first, da, db, &mut part);
                                for h in 0..heads {
                                    pieces[h * dim + da..h * dim + db]
                                        .copy_from_slice(&part[h * (db - da)..(h + 1) * (db - da)]);
                                }
                            }
                            let same = pieces
                                .iter()
                                .zip(&want)
                                .all(|(a, b)| a.to_bits() == b.to_bits());
                            assert!(same, "pieces: dim {dim} heads {heads} total {total} first {first} one_token {one_token}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn attention_is_a_softmax_weighted_mean_of_values() {
        let (hd, n) = (16, 3);
        let mut c = KvCache::new(1, hd);
        let k: Vec<f32> = (0..n * hd).map(|i| ((i * 7) % 5) as f32 * 0.25).collect();
        let v: Vec<f32> = (0..n * hd)
            .map(|i| (i % hd) as f32 + (i / hd) as f32)
            .collect();
        c.store(0, &k, &v);
        let q: Vec<f32> = (0..hd).map(|i| (i % 3) as f32 * 0.5).collect();
        let kv = c.head(0).clone();
        type Attend = fn(bool, &[f32], &HeadKv, usize, usize, f32, &mut AttnScratch, &mut [f32]);
        let run_from = |f: Attend, one_token: bool, first: usize| {
            let mut out = vec![0f32; hd];
            f(
                one_token,
                &q,
                &kv,
                first,
                n,
                0.25,
                &mut AttnScratch::default(),
                &mut out,
            );
            out
        };
        let run = |f: Attend, one_token: bool| run_from(f, one_token, 0);
        let out = run(attend, false);
        let one = run(attend, true);
        let portable = run(attend_impl::<PORTABLE>, false);
        assert_eq!(
            portable, out,
            "the FMA build and the portable one agree bit for bit"
        );
        for d in 0..hd {
            assert!((one[d] - out[d]).abs() < 1e-3);
        }
        let sc: Vec<f32> = (0..n)
            .map(|j| (0..hd).map(|i| k[j * hd + i] * q[i]).sum::<f32>() * 0.25)
            .collect();
        // With a window from key `first` on, the keys before it take no part.
        for first in [0, 1, 2] {
            let out = run_from(attend, false, first);
            let m = sc[first..].iter().cloned().fold(f32::MIN, f32::max);
            let e: Vec<f32> = sc.iter().map(|s| (s - m).exp()).collect();
            let z: f32 = e[first..].iter().sum();
            for d in 0..hd {
                let want: f32 = (first..n).map(|j| e[j] / z * v[j * hd + d]).sum();
                assert!(
                    (out[d] - want).abs() < 0.02,
                    "first {first}, dim {d}: {} vs {want}",
                    out[d]
                );
            }
        }
    }
}
