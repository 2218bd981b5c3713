//! The encoder's dense layers in int8 on AVX-512 VNNI: `y ≈ x · wᵀ + b` with
//! `vpdpbusd`, which multiplies 64 unsigned by signed byte pairs and adds them four
//! at a time into 16 int32 lanes: four times the products per instruction of an f32
//! FMA.
//!
//! - **Weights** are quantized once at load, per output column and per group of
//!   [`G`] inputs, symmetric: `w[j][k] ≈ sw[g][j] · qw[j][k]`, codes in −127..=127 (one
//!   scale per whole column loses too much where a column has a few large weights).
//!   They are packed into panels of 32 columns as `k/4` steps of 32 × 4 bytes (two
//!   registers), the order `vpdpbusd` reads.
//! - **Activations** are quantized per row before each layer, asymmetric (GELU's
//!   output is mostly ≥ 0): `x[r][k] ≈ sx[r] · (qx[r][k] − z[r])`, codes in 0..=255.
//! - **Outliers stay in f32.** BERT's hidden states have a few channels tens of times
//!   larger than the rest (MiniLM's channel 99 reaches 30 where the median is 0.3);
//!   in a row's int8 scale they would leave the other channels a handful of codes.
//!   So per row, the values above [`OUTLIER`] times the row's mean magnitude (at most
//!   [`MAX_OUTLIERS`], the largest) are taken out before quantizing and multiplied in
//!   f32 against the weight's column, as LLM.int8() does. Which values are outliers
//!   depends on the row alone, so a text gets the same vector alone or in a batch.
//! - Each group's int32 sum `Σ qx·qw` is exact; it is scaled by `sw[g][j]` into f32
//!   accumulators, so `y[r][j] = sx[r]·(Σ_g sw[g][j]·Σ qx·qw − z[r]·C[j]) + b[j]` with
//!   `C[j] = Σ_g sw[g][j]·Σ qw` kept from the packing. Rows are split between threads,
//!   never a sum: the same bits at every pool width.
//!
//! The tile is [`sgemm`](super::sgemm)'s: 12 rows × 32 columns, 24 accumulators, two
//! weight registers and a broadcast of four input bytes per step.

use rayon::prelude::*;

use crate::cpu::scratch::with_scratch;

/// Output columns per panel (two registers of 16 int32).
const NR: usize = 32;
/// Rows per register tile.
const MR: usize = 12;
/// Rows per parallel task (a multiple of `MR`).
const MB: usize = 8 * MR;
/// Inputs per weight scale.
pub const G: usize = 128;
/// A value is an outlier above this many times its row's mean magnitude: in the
/// inputs of Q|K|V, of the attention output's projection and of the FFN's first
/// layer (a layer norm's or attention's output, where a few channels are tens of
/// times the rest: under one outlier per row on the corpus).
pub const OUTLIER: f32 = 6.0;
/// The same in GELU's output, the input of the FFN's second layer. It is one-sided
/// with a long tail: at 6× the mean magnitude nearly every row had the cap of
/// [`MAX_OUTLIERS`] (7.9 per row on `../shared/corpus`), whose f32 products took ~7%
/// of indexing. At 16×, 0.8 per row, and the vectors moved no farther from the f32
/// ones (`quire-bench embed`: lowest cosine 0.99949 against 0.99950 at 6×).
pub const GELU_OUTLIER: f32 = 16.0;
/// At most this many outliers per row (the largest).
pub const MAX_OUTLIERS: usize = 8;
/// [`quantize_row`] keeps the outliers' masks of a row of up to 32 times this many
/// values on the stack.
const STACK_MASKS: usize = 128;

/// A dense layer's `n × k` weight (out × in) in int8, packed for [`linear`].
pub struct PackedI8 {
    n: usize,
    k: usize,
    /// Panel `p`: `k/4` groups of columns `32p..32p + 32`, each 4 consecutive `k`.
    data: Vec<i8>,
    /// Per panel, per group of `G` inputs: the 32 columns' scales.
    scale: Vec<f32>,
    /// Per column: `Σ_g scale · (sum of the group's codes)`.
    sum: Vec<f32>,
    /// The f32 weight transposed (`k × n`), for the outliers.
    wt: Vec<f32>,
    /// Outliers are above this many times their row's mean magnitude ([`OUTLIER`]).
    outlier: f32,
}

impl PackedI8 {
    /// Quantize and pack the row-major `n × k` weight `w` (`k` a multiple of [`G`],
    /// see [`fits`]).
    pub fn pack(w: &[f32], n: usize, k: usize) -> Self {
        assert_eq!(w.len(), n * k, "weight is not {n} × {k}");
        assert!(fits(n, k), "int8 layer of {n} × {k}");
        let groups = k / G;
        let panels = n.div_ceil(NR);
        let mut codes = vec![0i8; n * k];
        let mut scale = vec![0f32; panels * groups * NR];
        let mut sum = vec![0f32; n];
        for j in 0..n {
            for g in 0..groups {
                let span = j * k + g * G..j * k + (g + 1) * G;
                let max = w[span.clone()].iter().fold(0f32, |m, v| m.max(v.abs()));
                let s = if max > 0.0 { max / 127.0 } else { 1.0 };
                let inv = 1.0 / s;
                let mut total = 0i32;
                for (c, &v) in codes[span.clone()].iter_mut().zip(&w[span]) {
                    *c = (v * inv).round().clamp(-127.0, 127.0) as i8;
                    total += *c as i32;
                }
                scale[((j / NR) * groups + g) * NR + j % NR] = s;
                sum[j] += s * total as f32;
            }
        }
        let mut data = vec![0i8; panels * k * NR];
        for (p, panel) in data.chunks_exact_mut(k * NR).enumerate() {
            for (g, group) in panel.chunks_exact_mut(4 * NR).enumerate() {
                for c in 0..NR {
                    let col = p * NR + c;
                    if col < n {
                        for t in 0..4 {
                            group[c * 4 + t] = codes[col * k + g * 4 + t];
                        }
                    }
                }
            }
        }
        let mut wt = vec![0f32; k * n];
        for j in 0..n {
            for kk in 0..k {
                wt[kk * n + j] = w[j * k + kk];
            }
        }
        Self {
            n,
            k,
            data,
            scale,
            sum,
            wt,
            outlier: OUTLIER,
        }
    }

    /// For a layer whose input is GELU's output: outliers above [`GELU_OUTLIER`].
    pub fn after_gelu(mut self) -> Self {
        self.outlier = GELU_OUTLIER;
        self
    }
}

/// Whether a `n × k` weight can go through [`linear`] (`k` a multiple of [`G`]).
pub fn fits(n: usize, k: usize) -> bool {
    n > 0 && k > 0 && k.is_multiple_of(G)
}

/// Whether this CPU runs these kernels (AVX-512 F/BW/VL and VNNI; `QUIRE_NO_VNNI`
/// unset).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::has_vnni()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// One row's codes (`k` bytes, `k` a multiple of 16, at least 64), its scale and zero point,
/// `x ≈ s · (q − z)`, with its outliers (channel, value) appended to `out` and coded
/// as zero (an outlier: above `outlier` times the row's mean magnitude). Two or three
/// passes over the row: its mean magnitude, largest magnitude and range; where some
/// value is an outlier, the outliers (marked in masks during the pass, listed in
/// channel order after it) and the range of the rest; the codes. Each pass keeps two
/// sets of accumulators, so that neighbouring vectors do not wait on each other.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn quantize_row(x: &[f32], outlier: f32, q: &mut [u8], out: &mut Vec<(u32, f32)>) -> (f32, i32) {
    use std::arch::x86_64::*;
    let k = x.len();
    assert!(k >= 64 && k.is_multiple_of(16) && q.len() >= k);
    // SAFETY: every load and store is within `x` or `q` (`k` values, asserted).
    unsafe {
        // A macro, not a closure: a closure has no target features, and was not inlined.
        macro_rules! load {
            ($c:expr) => {
                _mm512_loadu_ps(x.as_ptr().add($c))
            };
        }
        // Pass 1: Σ|v| (four sums), max |v|, and the whole row's range.
        let zero = _mm512_setzero_ps();
        let (mut s0, mut s1, mut s2, mut s3) = (zero, zero, zero, zero);
        let (mut top0, mut top1) = (zero, zero);
        let (mut lo0, mut hi0, mut lo1, mut hi1) = (zero, zero, zero, zero);
        // Two vectors at a time, vector `c / 16` into sum `(c / 16) % 4`; an odd last
        // one beside zeros (which change no sum, no maximum and no range: zero is in
        // the range).
        for c in (0..k).step_by(32) {
            let v0 = load!(c);
            let v1 = if c + 16 < k { load!(c + 16) } else { zero };
            let (a0, a1) = (_mm512_abs_ps(v0), _mm512_abs_ps(v1));
            if c % 64 == 0 {
                s0 = _mm512_add_ps(s0, a0);
                s1 = _mm512_add_ps(s1, a1);
            } else {
                s2 = _mm512_add_ps(s2, a0);
                s3 = _mm512_add_ps(s3, a1);
            }
            top0 = _mm512_max_ps(top0, a0);
            top1 = _mm512_max_ps(top1, a1);
            lo0 = _mm512_min_ps(lo0, v0);
            lo1 = _mm512_min_ps(lo1, v1);
            hi0 = _mm512_max_ps(hi0, v0);
            hi1 = _mm512_max_ps(hi1, v1);
        }
        let sum = _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
        let cut = outlier * _mm512_reduce_add_ps(sum) / k as f32;
        let top = _mm512_reduce_max_ps(_mm512_max_ps(top0, top1));
        let first = out.len();
        // The range of the row without its outliers (zero included: an outlier is
        // coded as zero).
        let (mut lo, mut hi);
        if cut > 0.0 && top > cut {
            let cutv = _mm512_set1_ps(cut);
            let (mut lo0, mut hi0, mut lo1, mut hi1) = (zero, zero, zero, zero);
            // Each 32 values' outliers as a mask, listed after the loop: a push in the
            // loop (a call where the list grows) made the compiler keep the loop's
            // registers on the stack.
            let mut stack = [0u32; STACK_MASKS];
            let mut heap = Vec::new();
            let masks: &mut [u32] = if k.div_ceil(32) <= STACK_MASKS {
                &mut stack
            } else {
                heap.resize(k.div_ceil(32), 0);
                &mut heap
            };
            for (c, mask) in (0..k).step_by(32).zip(masks.iter_mut()) {
                // Two vectors (one where `k` is an odd number of them).
                let (v0, m0) = {
                    let v = load!(c);
                    (v, _mm512_cmp_ps_mask::<_CMP_GT_OQ>(_mm512_abs_ps(v), cutv))
                };
                lo0 = _mm512_mask_min_ps(lo0, !m0, lo0, v0);
                hi0 = _mm512_mask_max_ps(hi0, !m0, hi0, v0);
                let m1 = if c + 16 < k {
                    let v1 = load!(c + 16);
                    let m1 = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(_mm512_abs_ps(v1), cutv);
                    lo1 = _mm512_mask_min_ps(lo1, !m1, lo1, v1);
                    hi1 = _mm512_mask_max_ps(hi1, !m1, hi1, v1);
                    m1
                } else {
                    0
                };
                *mask = m0 as u32 | (m1 as u32) << 16;
            }
            // Before the list grows: vector registers do not live across a call.
            lo = _mm512_reduce_min_ps(_mm512_min_ps(lo0, lo1));
            hi = _mm512_reduce_max_ps(_mm512_max_ps(hi0, hi1));
            for (i, &m) in masks[..k.div_ceil(32)].iter().enumerate() {
                let mut m = m;
                while m != 0 {
                    let c = 32 * i + m.trailing_zeros() as usize;
                    out.push((c as u32, x[c]));
                    m &= m - 1;
                }
            }
        } else {
            lo = _mm512_reduce_min_ps(_mm512_min_ps(lo0, lo1));
            hi = _mm512_reduce_max_ps(_mm512_max_ps(hi0, hi1));
        }
        if out.len() - first > MAX_OUTLIERS {
            // The largest (ties: the lower channel), in channel order; the others are
            // back in the row's range.
            out[first..].select_nth_unstable_by(MAX_OUTLIERS - 1, |a, b| {
                b.1.abs().total_cmp(&a.1.abs()).then(a.0.cmp(&b.0))
            });
            for &(_, v) in &out[first + MAX_OUTLIERS..] {
                (lo, hi) = (lo.min(v), hi.max(v));
            }
            out.truncate(first + MAX_OUTLIERS);
            out[first..].sort_unstable_by_key(|o| o.0);
        }
        let s = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
        let z = (-lo / s).round().clamp(0.0, 255.0);
        let (inv, zv) = (_mm512_set1_ps(1.0 / s), _mm512_set1_ps(z));
        for c in (0..k).step_by(16) {
            // Rounded to nearest (even), then clamped to 0..=255.
            let t = _mm512_fmadd_ps(load!(c), inv, zv);
            let i = _mm512_max_epi32(_mm512_cvtps_epi32(t), _mm512_setzero_si512());
            _mm_storeu_si128(
                q.as_mut_ptr().add(c) as *mut __m128i,
                _mm512_cvtusepi32_epi8(i),
            );
        }
        for &(c, _) in &out[first..] {
            q[c as usize] = z as u8;
        }
        (s, z as i32)
    }
}

/// `y[m × n] ≈ x[m × k] · wᵀ + b`, on the current rayon pool. Only where
/// [`available`].
pub fn linear(x: &[f32], m: usize, w: &PackedI8, b: &[f32], y: &mut [f32]) {
    let (n, k) = (w.n, w.k);
    assert!(x.len() >= m * k && y.len() >= m * n);
    y[..m * n]
        .par_chunks_mut(MB * n)
        .enumerate()
        .for_each(|(i, yb)| block_rows(&x[i * MB * k..], yb.len() / n, w, b, yb));
}

/// [`linear`] on this thread (for a caller that splits the rows itself), [`MB`] rows
/// at a time: a block's codes stay in L1 while every panel of the weight passes
/// (a whole sequence's did not: 180 rows of 384 codes are 69 KB).
pub fn linear_seq(x: &[f32], m: usize, w: &PackedI8, b: &[f32], y: &mut [f32]) {
    let (n, k) = (w.n, w.k);
    assert!(x.len() >= m * k && y.len() >= m * n);
    for (i, yb) in y[..m * n].chunks_mut(MB * n).enumerate() {
        block_rows(&x[i * MB * k..], yb.len() / n, w, b, yb);
    }
}

/// [`linear_seq`] for at most [`MB`] rows.
fn block_rows(x: &[f32], m: usize, w: &PackedI8, b: &[f32], y: &mut [f32]) {
    let (n, k) = (w.n, w.k);
    assert!(available(), "igemm without AVX-512 VNNI");
    assert!(x.len() >= m * k && b.len() == n && y.len() >= m * n);
    // The rows in codes, padded to whole tiles (the padding rows' outputs are never
    // stored, so their codes are whatever the buffer held).
    let tiles = m.div_ceil(MR) * MR;
    let mut sz = vec![(1f32, 0i32); tiles];
    let mut outliers = Vec::new();
    // Row r's outliers are `outliers[ends[r]..ends[r + 1]]`.
    let mut ends = Vec::with_capacity(m + 1);
    ends.push(0);
    with_scratch(&CODES, tiles * k, |q| {
        // SAFETY: VNNI is there (asserted); `q` holds `tiles` rows of `k` codes, `y`
        // `m` rows of `n` outputs; every outlier's channel is below `k` (a position
        // in its row), so its row of `wt` is there.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            for r in 0..m {
                let codes = &mut q[r * k..(r + 1) * k];
                sz[r] = quantize_row(&x[r * k..(r + 1) * k], w.outlier, codes, &mut outliers);
                ends.push(outliers.len());
            }
            assert!(outliers.iter().all(|&(c, _)| (c as usize) < k));
            block(q, &sz, m, w, b, y);
            add_outliers(m, w, &outliers, &ends, y);
        }
    });
}

thread_local! {
    /// Each worker's activation codes, kept from call to call (rows × `k` bytes).
    static CODES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Every panel, then every tile of `MR` rows, each row's outputs scaled and the bias
/// added while they are in registers: `s·(a − z·C) + b`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn block(q: &[u8], sz: &[(f32, i32)], rows: usize, w: &PackedI8, b: &[f32], y: &mut [f32]) {
    use std::arch::x86_64::*;
    let (n, k) = (w.n, w.k);
    let groups = k / G;
    let mut acc = [0f32; MR * NR];
    for (p, panel) in w.data.chunks_exact(k * NR).enumerate() {
        let j0 = p * NR;
        let cols = NR.min(n - j0);
        let (m0, m1) = crate::cpu::simd::col_masks(cols);
        // SAFETY: the caller's; the column vectors read `cols` values at `j0`.
        unsafe {
            let scales = w.scale.as_ptr().add(p * groups * NR);
            let (cs0, cs1) = (
                _mm512_maskz_loadu_ps(m0, w.sum.as_ptr().add(j0)),
                _mm512_maskz_loadu_ps(m1, w.sum.as_ptr().add(j0 + 16)),
            );
            let (b0, b1) = (
                _mm512_maskz_loadu_ps(m0, b.as_ptr().add(j0)),
                _mm512_maskz_loadu_ps(m1, b.as_ptr().add(j0 + 16)),
            );
            for i in (0..rows).step_by(MR) {
                tile(
                    q.as_ptr().add(i * k),
                    k,
                    panel.as_ptr(),
                    scales,
                    acc.as_mut_ptr(),
                );
                for r in 0..MR.min(rows - i) {
                    let (s, z) = sz[i + r];
                    let zv = _mm512_set1_ps(z as f32);
                    let sv = _mm512_set1_ps(s);
                    let a0 = _mm512_loadu_ps(acc.as_ptr().add(r * NR));
                    let a1 = _mm512_loadu_ps(acc.as_ptr().add(r * NR + 16));
                    // s·(a − z·C) + b
                    let y0 = _mm512_fmadd_ps(_mm512_fnmadd_ps(zv, cs0, a0), sv, b0);
                    let y1 = _mm512_fmadd_ps(_mm512_fnmadd_ps(zv, cs1, a1), sv, b1);
                    let out = y.as_mut_ptr().add((i + r) * n + j0);
                    _mm512_mask_storeu_ps(out, m0, y0);
                    _mm512_mask_storeu_ps(out.add(16), m1, y1);
                }
            }
        }
    }
}

/// Each row's outliers' f32 products added to its outputs, `y[r] += v · wt[c]` in
/// channel order, a whole row of `wt` at a time, once the int8 products are stored.
/// In the tiles' epilogues (a loop per row whose length changed from row to row, over
/// 32 columns of weight rows scattered in memory) they cost more: removing them made
/// embedding ~7% faster, moving them here ~2–3%. Each output gets the same fused
/// multiply-adds in the same order as it did in registers: the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn add_outliers(
    rows: usize,
    w: &PackedI8,
    outliers: &[(u32, f32)],
    ends: &[usize],
    y: &mut [f32],
) {
    use std::arch::x86_64::*;
    let n = w.n;
    for r in 0..rows {
        let yr = &mut y[r * n..(r + 1) * n];
        for &(c, v) in &outliers[ends[r]..ends[r + 1]] {
            let wr = &w.wt[c as usize * n..(c as usize + 1) * n];
            let vv = _mm512_set1_ps(v);
            // SAFETY: `yr` and `wr` hold `n` values; each vector reads and writes the
            // 16 at `j` (the last only the `n % 16` left, masked).
            unsafe {
                // The whole vectors in a loop of their own: a test per vector (as
                // `load_lanes` has) measured ~9% slower here.
                let whole = n / 16 * 16;
                for j in (0..whole).step_by(16) {
                    let wv = _mm512_loadu_ps(wr.as_ptr().add(j));
                    let yv = _mm512_loadu_ps(yr.as_ptr().add(j));
                    _mm512_storeu_ps(yr.as_mut_ptr().add(j), _mm512_fmadd_ps(vv, wv, yv));
                }
                if whole < n {
                    let wv = crate::cpu::simd::load_lanes(wr.as_ptr().add(whole), n - whole);
                    let yv = crate::cpu::simd::load_lanes(yr.as_ptr().add(whole), n - whole);
                    let y = _mm512_fmadd_ps(vv, wv, yv);
                    crate::cpu::simd::store_lanes(yr.as_mut_ptr().add(whole), n - whole, y);
                }
            }
        }
    }
}

/// What the first group of [`tile`] adds its sums to, so that `acc` needs no zeroing
/// (a `memset` per tile took ~1% of embedding).
static ZEROS: [f32; MR * NR] = [0.0; MR * NR];

/// 12 rows × 32 columns: `acc[r][j] = Σ_g scales[g][j] · Σ_{k in g} a[r][k] ·
/// panel[k][j]` (rows `k` bytes apart, `k` a multiple of [`G`]): per group, the 24
/// int32 accumulators in registers, then scaled into `acc`'s f32 (the first group
/// onto [`ZEROS`]: what `acc` held before is never read).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile(a: *const u8, k: usize, panel: *const i8, scales: *const f32, acc: *mut f32) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's: 12 rows of `k` codes at `a`, `k × 32` panel bytes, `k/G`
    // × 32 scales, 12 × 32 f32 at `acc`.
    unsafe {
        debug_assert!(k >= G && k.is_multiple_of(G));
        let z = _mm512_setzero_si512();
        let (c00, c01, c10, c11, c20, c21) = (z, z, z, z, z, z);
        let (c30, c31, c40, c41, c50, c51) = (z, z, z, z, z, z);
        let (c60, c61, c70, c71, c80, c81) = (z, z, z, z, z, z);
        let (c90, c91, ca0, ca1, cb0, cb1) = (z, z, z, z, z, z);
        std::arch::asm!(
            "3:",
            "mov {n}, {steps}",
            "2:",
            "vmovdqu8 {w0}, zmmword ptr [{w}]",
            "vmovdqu8 {w1}, zmmword ptr [{w} + 64]",
            "vpbroadcastd {v0}, dword ptr [{a0} ]",
            "vpdpbusd {c00}, {v0}, {w0}",
            "vpdpbusd {c01}, {v0}, {w1}",
            "vpbroadcastd {v1}, dword ptr [{a0} + {ld}]",
            "vpdpbusd {c10}, {v1}, {w0}",
            "vpdpbusd {c11}, {v1}, {w1}",
            "vpbroadcastd {v0}, dword ptr [{a0} + {ld}*2]",
            "vpdpbusd {c20}, {v0}, {w0}",
            "vpdpbusd {c21}, {v0}, {w1}",
            "vpbroadcastd {v1}, dword ptr [{a3} ]",
            "vpdpbusd {c30}, {v1}, {w0}",
            "vpdpbusd {c31}, {v1}, {w1}",
            "vpbroadcastd {v0}, dword ptr [{a3} + {ld}]",
            "vpdpbusd {c40}, {v0}, {w0}",
            "vpdpbusd {c41}, {v0}, {w1}",
            "vpbroadcastd {v1}, dword ptr [{a3} + {ld}*2]",
            "vpdpbusd {c50}, {v1}, {w0}",
            "vpdpbusd {c51}, {v1}, {w1}",
            "vpbroadcastd {v0}, dword ptr [{a6} ]",
            "vpdpbusd {c60}, {v0}, {w0}",
            "vpdpbusd {c61}, {v0}, {w1}",
            "vpbroadcastd {v1}, dword ptr [{a6} + {ld}]",
            "vpdpbusd {c70}, {v1}, {w0}",
            "vpdpbusd {c71}, {v1}, {w1}",
            "vpbroadcastd {v0}, dword ptr [{a6} + {ld}*2]",
            "vpdpbusd {c80}, {v0}, {w0}",
            "vpdpbusd {c81}, {v0}, {w1}",
            "vpbroadcastd {v1}, dword ptr [{a9} ]",
            "vpdpbusd {c90}, {v1}, {w0}",
            "vpdpbusd {c91}, {v1}, {w1}",
            "vpbroadcastd {v0}, dword ptr [{a9} + {ld}]",
            "vpdpbusd {ca0}, {v0}, {w0}",
            "vpdpbusd {ca1}, {v0}, {w1}",
            "vpbroadcastd {v1}, dword ptr [{a9} + {ld}*2]",
            "vpdpbusd {cb0}, {v1}, {w0}",
            "vpdpbusd {cb1}, {v1}, {w1}",
            "add {w}, 128",
            "add {a0}, 4",
            "add {a3}, 4",
            "add {a6}, 4",
            "add {a9}, 4",
            "dec {n}",
            "jnz 2b",
            // The group's sums, scaled into the f32 accumulators; the int32 ones zeroed.
            "vmovups {w0}, zmmword ptr [{sc}]",
            "vmovups {w1}, zmmword ptr [{sc} + 64]",
            "add {sc}, 128",
            "vcvtdq2ps {c00}, {c00}", "vfmadd213ps {c00}, {w0}, zmmword ptr [{src} + 0]", "vmovups zmmword ptr [{f} + 0], {c00}", "vpxord {c00}, {c00}, {c00}",
            "vcvtdq2ps {c01}, {c01}", "vfmadd213ps {c01}, {w1}, zmmword ptr [{src} + 64]", "vmovups zmmword ptr [{f} + 64], {c01}", "vpxord {c01}, {c01}, {c01}",
            "vcvtdq2ps {c10}, {c10}", "vfmadd213ps {c10}, {w0}, zmmword ptr [{src} + 128]", "vmovups zmmword ptr [{f} + 128], {c10}", "vpxord {c10}, {c10}, {c10}",
            "vcvtdq2ps {c11}, {c11}", "vfmadd213ps {c11}, {w1}, zmmword ptr [{src} + 192]", "vmovups zmmword ptr [{f} + 192], {c11}", "vpxord {c11}, {c11}, {c11}",
            "vcvtdq2ps {c20}, {c20}", "vfmadd213ps {c20}, {w0}, zmmword ptr [{src} + 256]", "vmovups zmmword ptr [{f} + 256], {c20}", "vpxord {c20}, {c20}, {c20}",
            "vcvtdq2ps {c21}, {c21}", "vfmadd213ps {c21}, {w1}, zmmword ptr [{src} + 320]", "vmovups zmmword ptr [{f} + 320], {c21}", "vpxord {c21}, {c21}, {c21}",
            "vcvtdq2ps {c30}, {c30}", "vfmadd213ps {c30}, {w0}, zmmword ptr [{src} + 384]", "vmovups zmmword ptr [{f} + 384], {c30}", "vpxord {c30}, {c30}, {c30}",
            "vcvtdq2ps {c31}, {c31}", "vfmadd213ps {c31}, {w1}, zmmword ptr [{src} + 448]", "vmovups zmmword ptr [{f} + 448], {c31}", "vpxord {c31}, {c31}, {c31}",
            "vcvtdq2ps {c40}, {c40}", "vfmadd213ps {c40}, {w0}, zmmword ptr [{src} + 512]", "vmovups zmmword ptr [{f} + 512], {c40}", "vpxord {c40}, {c40}, {c40}",
            "vcvtdq2ps {c41}, {c41}", "vfmadd213ps {c41}, {w1}, zmmword ptr [{src} + 576]", "vmovups zmmword ptr [{f} + 576], {c41}", "vpxord {c41}, {c41}, {c41}",
            "vcvtdq2ps {c50}, {c50}", "vfmadd213ps {c50}, {w0}, zmmword ptr [{src} + 640]", "vmovups zmmword ptr [{f} + 640], {c50}", "vpxord {c50}, {c50}, {c50}",
            "vcvtdq2ps {c51}, {c51}", "vfmadd213ps {c51}, {w1}, zmmword ptr [{src} + 704]", "vmovups zmmword ptr [{f} + 704], {c51}", "vpxord {c51}, {c51}, {c51}",
            "vcvtdq2ps {c60}, {c60}", "vfmadd213ps {c60}, {w0}, zmmword ptr [{src} + 768]", "vmovups zmmword ptr [{f} + 768], {c60}", "vpxord {c60}, {c60}, {c60}",
            "vcvtdq2ps {c61}, {c61}", "vfmadd213ps {c61}, {w1}, zmmword ptr [{src} + 832]", "vmovups zmmword ptr [{f} + 832], {c61}", "vpxord {c61}, {c61}, {c61}",
            "vcvtdq2ps {c70}, {c70}", "vfmadd213ps {c70}, {w0}, zmmword ptr [{src} + 896]", "vmovups zmmword ptr [{f} + 896], {c70}", "vpxord {c70}, {c70}, {c70}",
            "vcvtdq2ps {c71}, {c71}", "vfmadd213ps {c71}, {w1}, zmmword ptr [{src} + 960]", "vmovups zmmword ptr [{f} + 960], {c71}", "vpxord {c71}, {c71}, {c71}",
            "vcvtdq2ps {c80}, {c80}", "vfmadd213ps {c80}, {w0}, zmmword ptr [{src} + 1024]", "vmovups zmmword ptr [{f} + 1024], {c80}", "vpxord {c80}, {c80}, {c80}",
            "vcvtdq2ps {c81}, {c81}", "vfmadd213ps {c81}, {w1}, zmmword ptr [{src} + 1088]", "vmovups zmmword ptr [{f} + 1088], {c81}", "vpxord {c81}, {c81}, {c81}",
            "vcvtdq2ps {c90}, {c90}", "vfmadd213ps {c90}, {w0}, zmmword ptr [{src} + 1152]", "vmovups zmmword ptr [{f} + 1152], {c90}", "vpxord {c90}, {c90}, {c90}",
            "vcvtdq2ps {c91}, {c91}", "vfmadd213ps {c91}, {w1}, zmmword ptr [{src} + 1216]", "vmovups zmmword ptr [{f} + 1216], {c91}", "vpxord {c91}, {c91}, {c91}",
            "vcvtdq2ps {ca0}, {ca0}", "vfmadd213ps {ca0}, {w0}, zmmword ptr [{src} + 1280]", "vmovups zmmword ptr [{f} + 1280], {ca0}", "vpxord {ca0}, {ca0}, {ca0}",
            "vcvtdq2ps {ca1}, {ca1}", "vfmadd213ps {ca1}, {w1}, zmmword ptr [{src} + 1344]", "vmovups zmmword ptr [{f} + 1344], {ca1}", "vpxord {ca1}, {ca1}, {ca1}",
            "vcvtdq2ps {cb0}, {cb0}", "vfmadd213ps {cb0}, {w0}, zmmword ptr [{src} + 1408]", "vmovups zmmword ptr [{f} + 1408], {cb0}", "vpxord {cb0}, {cb0}, {cb0}",
            "vcvtdq2ps {cb1}, {cb1}", "vfmadd213ps {cb1}, {w1}, zmmword ptr [{src} + 1472]", "vmovups zmmword ptr [{f} + 1472], {cb1}", "vpxord {cb1}, {cb1}, {cb1}",
            // The next groups add to what this one stored.
            "mov {src}, {f}",
            "dec {g}",
            "jnz 3b",
            w = inout(reg) panel => _,
            a0 = inout(reg) a => _,
            a3 = inout(reg) a.add(3 * k) => _,
            a6 = inout(reg) a.add(6 * k) => _,
            a9 = inout(reg) a.add(9 * k) => _,
            ld = in(reg) k,
            sc = inout(reg) scales => _,
            f = in(reg) acc,
            src = inout(reg) ZEROS.as_ptr() => _,
            steps = in(reg) G / 4,
            g = inout(reg) k / G => _,
            n = out(reg) _,
            w0 = out(zmm_reg) _,
            w1 = out(zmm_reg) _,
            v0 = out(zmm_reg) _,
            v1 = out(zmm_reg) _,
            c00 = inout(zmm_reg) c00 => _,
            c01 = inout(zmm_reg) c01 => _,
            c10 = inout(zmm_reg) c10 => _,
            c11 = inout(zmm_reg) c11 => _,
            c20 = inout(zmm_reg) c20 => _,
            c21 = inout(zmm_reg) c21 => _,
            c30 = inout(zmm_reg) c30 => _,
            c31 = inout(zmm_reg) c31 => _,
            c40 = inout(zmm_reg) c40 => _,
            c41 = inout(zmm_reg) c41 => _,
            c50 = inout(zmm_reg) c50 => _,
            c51 = inout(zmm_reg) c51 => _,
            c60 = inout(zmm_reg) c60 => _,
            c61 = inout(zmm_reg) c61 => _,
            c70 = inout(zmm_reg) c70 => _,
            c71 = inout(zmm_reg) c71 => _,
            c80 = inout(zmm_reg) c80 => _,
            c81 = inout(zmm_reg) c81 => _,
            c90 = inout(zmm_reg) c90 => _,
            c91 = inout(zmm_reg) c91 => _,
            ca0 = inout(zmm_reg) ca0 => _,
            ca1 = inout(zmm_reg) ca1 => _,
            cb0 = inout(zmm_reg) cb0 => _,
            cb1 = inout(zmm_reg) cb1 => _,
            options(nostack),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::embed::test_values as values;

    /// Whether the int8 kernels run here; a CPU with VNNI must run them.
    fn vnni() -> bool {
        assert!(
            available()
                || !crate::cpu::vnni_in_cpu()
                || std::env::var_os("QUIRE_NO_VNNI").is_some(),
            "VNNI in the CPU but not used"
        );
        available()
    }

    /// Against the f64 product of the same quantized values (exact up to f32
    /// rounding of the epilogue), and close to the f32 product, at ragged sizes and
    /// every pool width, the same bits at each.
    #[test]
    fn int8_layers_are_the_product_of_their_codes_at_every_width() {
        if !vnni() {
            return; // this CPU runs the f32 kernels (tested in encoder.rs)
        }
        for &(m, n, k) in &[
            (1, 1, 128),
            (13, 33, 256),
            (25, 384, 384),
            (97, 70, 1536),
            (12, 32, 128),
        ] {
            let x = values(m * k, 7 + m as u32);
            let w = values(n * k, 11 + n as u32);
            let b = values(n, 3);
            let p = PackedI8::pack(&w, n, k);
            let mut first: Option<Vec<f32>> = None;
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("pool");
                let mut y = vec![0f32; m * n];
                pool.install(|| linear(&x, m, &p, &b, &mut y));
                for r in 0..m {
                    let mut q = vec![0u8; k];
                    let mut out = Vec::new();
                    // SAFETY: VNNI (and so AVX-512 BW) is there.
                    let (s, z) =
                        unsafe { quantize_row(&x[r * k..(r + 1) * k], OUTLIER, &mut q, &mut out) };
                    assert!(out.is_empty(), "uniform values have no outliers");
                    for j in 0..n {
                        let groups = k / G;
                        let sw = |kk: usize| p.scale[((j / NR) * groups + kk / G) * NR + j % NR];
                        let codes =
                            |kk: usize| (w[j * k + kk] / sw(kk)).round().clamp(-127.0, 127.0);
                        let want: f64 = b[j] as f64
                            + (0..k)
                                .map(|kk| {
                                    (s as f64)
                                        * (q[kk] as f64 - z as f64)
                                        * sw(kk) as f64
                                        * codes(kk) as f64
                                })
                                .sum::<f64>();
                        let exact: f64 = b[j] as f64
                            + (0..k)
                                .map(|kk| x[r * k + kk] as f64 * w[j * k + kk] as f64)
                                .sum::<f64>();
                        let got = y[r * n + j] as f64;
                        assert!(
                            (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                            "{m}×{n}×{k} [{r}][{j}]: {got} vs {want}"
                        );
                        // Quantization error: a few hundredths of the values' scale.
                        assert!(
                            (got - exact).abs() <= 0.02 * (k as f64).sqrt(),
                            "{m}×{n}×{k} [{r}][{j}]: {got} vs exact {exact}"
                        );
                    }
                }
                match &first {
                    None => first = Some(y),
                    Some(f) => assert!(
                        f.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{threads} threads"
                    ),
                }
            }
        }
    }

    /// A row's codes, (scale, zero point) and outliers.
    type Quantized = (Vec<u8>, (f32, i32), Vec<(u32, f32)>);

    /// The row's quantization, written plainly: outliers above `outlier` × the mean
    /// magnitude (the largest [`MAX_OUTLIERS`], ties to the lower channel), the range
    /// of the rest with zero, codes rounded to nearest even.
    fn quantize_plain(x: &[f32], outlier: f32) -> Quantized {
        let k = x.len();
        // The kernel's order of summation: four sums over 16-lane vectors.
        let mut lanes = [[0f32; 16]; 4];
        for (i, v) in x.iter().enumerate() {
            lanes[(i / 16) % 4][i % 16] += v.abs();
        }
        let red = |l: &[f32; 16]| {
            // _mm512_reduce_add_ps: halves added pairwise.
            let mut v = l.to_vec();
            while v.len() > 1 {
                let h = v.len() / 2;
                v = (0..h).map(|i| v[i] + v[i + h]).collect();
            }
            v[0]
        };
        let mut sum = [0f32; 16];
        for (i, s) in sum.iter_mut().enumerate() {
            *s = (lanes[0][i] + lanes[1][i]) + (lanes[2][i] + lanes[3][i]);
        }
        let cut = outlier * red(&sum) / k as f32;
        let mut out: Vec<(u32, f32)> = (0..k)
            .filter(|&i| cut > 0.0 && x[i].abs() > cut)
            .map(|i| (i as u32, x[i]))
            .collect();
        out.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then(a.0.cmp(&b.0)));
        out.truncate(MAX_OUTLIERS);
        out.sort_by_key(|o| o.0);
        let is_out = |i: usize| out.iter().any(|o| o.0 as usize == i);
        let (mut lo, mut hi) = (0f32, 0f32);
        for (i, &v) in x.iter().enumerate() {
            if !is_out(i) {
                (lo, hi) = (lo.min(v), hi.max(v));
            }
        }
        let s = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
        let z = (-lo / s).round().clamp(0.0, 255.0);
        let codes = (0..k)
            .map(|i| {
                if is_out(i) {
                    z as u8
                } else {
                    x[i].mul_add(1.0 / s, z).round_ties_even().clamp(0.0, 255.0) as u8
                }
            })
            .collect();
        (codes, (s, z as i32), out)
    }

    /// The kernel's codes, scale, zero point and outliers are the plain version's,
    /// bit for bit: rows without outliers, with a few, with more than the cap, an odd
    /// number of vectors, at both thresholds.
    #[test]
    fn quantize_row_is_the_plain_quantization() {
        if !vnni() {
            return;
        }
        // 4160: more than 32 × STACK_MASKS values (the masks on the heap).
        for (case, &k) in [64usize, 80, 128, 384, 1536, 4160].iter().enumerate() {
            for planted in [0usize, 2, 5, 20] {
                let mut x = values(k, 31 + case as u32 * 7 + planted as u32);
                for p in 0..planted {
                    let i = (p * 37 + 11) % k;
                    x[i] = if p % 2 == 0 {
                        9.0 + p as f32
                    } else {
                        -7.0 - p as f32 * 0.5
                    };
                }
                for outlier in [OUTLIER, GELU_OUTLIER] {
                    let mut q = vec![0u8; k];
                    let mut out = vec![(999, 1.0)];
                    // SAFETY: VNNI (and so AVX-512 BW) is there.
                    let sz = unsafe { quantize_row(&x, outlier, &mut q, &mut out) };
                    let (codes, want_sz, want_out) = quantize_plain(&x, outlier);
                    let what = format!("k {k}, {planted} planted, threshold {outlier}");
                    assert_eq!(out[0], (999, 1.0), "{what}: earlier rows' outliers kept");
                    assert_eq!(&out[1..], &want_out[..], "{what}: outliers");
                    assert_eq!(sz.0.to_bits(), want_sz.0.to_bits(), "{what}: scale");
                    assert_eq!(sz.1, want_sz.1, "{what}: zero point");
                    assert_eq!(q, codes, "{what}: codes");
                    if planted > MAX_OUTLIERS && outlier == OUTLIER && k >= 384 {
                        assert_eq!(out.len() - 1, MAX_OUTLIERS, "{what}: the cap");
                    }
                }
            }
        }
    }

    /// A channel tens of times larger than the rest is multiplied in f32: the rest of
    /// the row keeps its resolution, and the product stays as close as without it.
    #[test]
    fn outliers_are_multiplied_in_f32() {
        if !vnni() {
            return;
        }
        let (m, n, k) = (5, 40, 128);
        let mut x = values(m * k, 5);
        for r in 0..m {
            x[r * k + 7] = 40.0 + r as f32;
            x[r * k + 30] = -25.0;
        }
        let w = values(n * k, 9);
        let b = vec![0f32; n];
        let p = PackedI8::pack(&w, n, k);
        let mut y = vec![0f32; m * n];
        linear(&x, m, &p, &b, &mut y);
        let mut q = vec![0u8; k];
        let mut out = Vec::new();
        // SAFETY: VNNI (and so AVX-512 BW) is there.
        unsafe { quantize_row(&x[..k], OUTLIER, &mut q, &mut out) };
        assert_eq!(out, vec![(7, 40.0), (30, -25.0)]);
        for r in 0..m {
            for j in 0..n {
                let exact: f64 = (0..k)
                    .map(|kk| x[r * k + kk] as f64 * w[j * k + kk] as f64)
                    .sum();
                let got = y[r * n + j] as f64;
                assert!(
                    (got - exact).abs() <= 0.02 * (k as f64).sqrt(),
                    "[{r}][{j}]: {got} vs exact {exact}"
                );
            }
        }
    }
}
