//! Attention's two products (`Q·Kᵀ` and `P·V`) with bf16 operands on AVX512-BF16:
//! `vdpbf16ps` multiplies 16 pairs of bf16 and adds both products into each of 16
//! f32 lanes, twice the products of an f32 FMA. The operands are rounded to bf16 (to
//! nearest, ties to even), the sums stay f32, the softmax between the products is
//! f32: the arithmetic the AMX path's attention has (`Head::on_amx`).
//!
//! The tile is [`sgemm`](super::sgemm)'s: 12 rows × 32 columns, 24 accumulators, two
//! registers of the packed operand and a broadcast of one input pair per step. Every
//! output is one task's sum in `k` order: the same bits at every pool width.

/// Output columns per panel (two registers of 16 f32).
const NR: usize = 32;
/// Rows per register tile: a caller's rows of pairs are padded to a multiple of it.
pub const MR: usize = 12;

/// An `n × k` matrix rounded to bf16 and packed for [`product`]: panel `p` holds
/// columns `32p..32p + 32` as `⌈k/2⌉` steps of 32 pairs (a `u32` each: input `2s`
/// in the low half, `2s + 1` in the high; zeros past `n` and past `k`).
pub struct PackedH {
    n: usize,
    k2: usize,
    data: Vec<u32>,
}

impl PackedH {
    /// The `n × k` matrix whose column `col` is the row `w[col·ld..][..k]` (an
    /// attention head's keys, rows `3h` apart in the fused Q/K/V output). Only where
    /// [`available`], as for every function here.
    pub fn pack_rows(w: &[f32], ld: usize, n: usize, k: usize) -> Self {
        assert!(
            n == 0 || w.len() >= (n - 1) * ld + k,
            "{n} rows of {k} values {ld} apart"
        );
        let k2 = k.div_ceil(2);
        let mut data = vec![0u32; n.div_ceil(NR) * k2 * NR];
        let mut row = vec![0u32; k2];
        for col in 0..n {
            pairs_of(&w[col * ld..col * ld + k], &mut row);
            let (panel, j) = (&mut data[col / NR * k2 * NR..][..k2 * NR], col % NR);
            for (s, &v) in row.iter().enumerate() {
                panel[s * NR + j] = v;
            }
        }
        Self { n, k2, data }
    }

    /// The `n × k` matrix whose input `kk` is the row `w[kk·ld..][..n]` (an attention
    /// head's values: value dimension `col` is output column `col`).
    pub fn pack_cols(w: &[f32], ld: usize, n: usize, k: usize) -> Self {
        assert!(
            k == 0 || w.len() >= (k - 1) * ld + n,
            "{k} rows of {n} values {ld} apart"
        );
        assert!(available(), "bf16 packing without AVX512-BF16");
        let k2 = k.div_ceil(2);
        let mut data = vec![0u32; n.div_ceil(NR) * k2 * NR];
        for (p, panel) in data.chunks_exact_mut(k2 * NR).enumerate() {
            let cols = NR.min(n - p * NR);
            for (s, dst) in panel.chunks_exact_mut(NR).enumerate() {
                let even = &w[2 * s * ld + p * NR..][..cols];
                let odd = (2 * s + 1 < k).then(|| &w[(2 * s + 1) * ld + p * NR..][..cols]);
                #[cfg(target_arch = "x86_64")]
                // SAFETY: AVX-512 F/BW/VL and BF16 are there (asserted).
                unsafe {
                    interleave_avx512(even, odd, dst)
                };
                #[cfg(not(target_arch = "x86_64"))]
                let _ = (even, odd, dst);
            }
        }
        Self { n, k2, data }
    }
}

/// `x` rounded to bf16 as pairs (`out[s]`: `x[2s]` low, `x[2s + 1]` high, zero past
/// the end): the layout of a row of [`product`]'s input. `out` holds `⌈len/2⌉`.
pub fn pairs_of(x: &[f32], out: &mut [u32]) {
    assert!(available(), "bf16 rounding without AVX512-BF16");
    assert!(out.len() >= x.len().div_ceil(2));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512 F/BW/VL and BF16 are there; lengths asserted.
    unsafe {
        pairs_avx512(x, out)
    };
}

/// The softmax's numerators of a row of scores, as pairs: `e^{scale·(v − max)}` for
/// each `v` of `row`, rounded to bf16 into `out` ([`pairs_of`]'s layout, `⌈len/2⌉`),
/// and the sum of the f32 values, in one pass: the f32 numerators are never stored.
/// Within 4e-6 of [`ops::exp_scaled`]'s values (see [`exp2_lanes`]), where bf16's
/// rounding is up to 4e-3: a shorter exponential than `exp_scaled`'s, which keeps
/// 2 ulp.
///
/// [`ops::exp_scaled`]: super::ops::exp_scaled
pub fn exp_pairs(row: &[f32], scale: f32, out: &mut [u32]) -> f32 {
    assert!(available(), "bf16 rounding without AVX512-BF16");
    assert!(out.len() >= row.len().div_ceil(2));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512 F/BW/VL and BF16 are there; lengths asserted.
    unsafe {
        exp_pairs_avx512(row, scale, out)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AVX512-BF16 off x86-64")
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
fn exp_pairs_avx512(row: &[f32], scale: f32, out: &mut [u32]) -> f32 {
    use super::ops::scaled_max_avx512;
    use std::arch::x86_64::*;
    let n = row.len();
    let p = row.as_ptr();
    // SAFETY: the loads are masked to the lanes within `row`, the stores to `out`'s
    // `⌈n/2⌉` pairs.
    unsafe {
        let (sv, m) = scaled_max_avx512(row, scale);
        // In base 2: `2^{log2(e)·scale·v − log2(e)·scale·max}`.
        let l = _mm512_set1_ps(std::f32::consts::LOG2_E);
        let (sv, m) = (_mm512_mul_ps(sv, l), _mm512_mul_ps(m, l));
        // The lanes of `row` from `c` on, in a register.
        let lanes = |c: usize| {
            let v = crate::cpu::simd::load_lanes(p.add(c), n - c);
            exp2_lanes(
                crate::cpu::simd::lane_mask(n - c),
                _mm512_fmsub_ps(v, sv, m),
            )
        };
        // Two sums, so that neighbouring vectors do not wait on each other.
        let (mut sum0, mut sum1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut c = 0;
        while c < n {
            let lo = lanes(c);
            sum0 = _mm512_add_ps(sum0, lo);
            let hi = if c + 16 < n {
                let hi = lanes(c + 16);
                sum1 = _mm512_add_ps(sum1, hi);
                hi
            } else {
                _mm512_setzero_ps()
            };
            let v = std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo));
            let keep = crate::cpu::simd::lane_mask((n - c).div_ceil(2).min(16));
            _mm512_mask_storeu_epi32(out.as_mut_ptr().add(c / 2) as *mut i32, keep, v);
            c += 32;
        }
        _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1))
    }
}

/// `2^x` in the lanes of `k` (zero in the others), within 4e-6 relative: `x = t + f`
/// with `t` an integer and `|f| ≤ 1/2`, `2^f` by a degree-4 polynomial (fitted here
/// for relative error on that interval: 2.7e-6 at most), `2^t` put in by
/// `vscalefps` (which also takes an underflow to 0). Nine operations where
/// [`exp_lanes`](super::ops::exp_lanes)' 2-ulp `e^x` takes thirteen; the softmax's
/// numerators are rounded to bf16 (up to 2^-8) right after, and this took ~5% of indexing.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn exp2_lanes(
    k: std::arch::x86_64::__mmask16,
    x: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = |v: f32| _mm512_set1_ps(v);
    let t = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x);
    let f = _mm512_sub_ps(x, t);
    let mut y = _mm512_fmadd_ps(c(9.570_1e-3), f, c(5.591_786_3e-2));
    y = _mm512_fmadd_ps(y, f, c(2.402_474_4e-1));
    y = _mm512_fmadd_ps(y, f, c(6.931_218e-1));
    y = _mm512_fmadd_ps(y, f, c(9.999_993e-1));
    _mm512_maskz_scalef_ps(k, y, t)
}

/// [`pairs_of`] 32 values at a time: `vcvtne2ps2bf16` rounds two registers into one
/// of 32 bf16 in order, which is the pairs' layout.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
fn pairs_avx512(x: &[f32], out: &mut [u32]) {
    use std::arch::x86_64::*;
    let n = x.len();
    let mut c = 0;
    // SAFETY (both loops): the loads are within `x` (whole, or masked to its
    // length) and the stores within `out`'s `⌈n/2⌉` pairs.
    while c + 32 <= n {
        unsafe {
            let lo = _mm512_loadu_ps(x.as_ptr().add(c));
            let hi = _mm512_loadu_ps(x.as_ptr().add(c + 16));
            let p = std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo));
            _mm512_storeu_si512(out.as_mut_ptr().add(c / 2) as *mut _, p);
        }
        c += 32;
    }
    if c < n {
        let count = n - c;
        let (m0, m1) = crate::cpu::simd::col_masks(count);
        unsafe {
            let lo = _mm512_maskz_loadu_ps(m0, x.as_ptr().add(c));
            let hi = _mm512_maskz_loadu_ps(m1, x.as_ptr().add(c + 16));
            let p: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
            let keep = crate::cpu::simd::lane_mask(count.div_ceil(2));
            _mm512_mask_storeu_epi32(out.as_mut_ptr().add(c / 2) as *mut i32, keep, p);
        }
    }
}

/// Two rows of up to 32 values (inputs `2s` and `2s + 1` of 32 columns) as the 32
/// columns' pairs, into `dst`: each rounded by `vcvtne2ps2bf16`, then interleaved.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
fn interleave_avx512(even: &[f32], odd: Option<&[f32]>, dst: &mut [u32]) {
    use std::arch::x86_64::*;
    let cols = even.len();
    assert!(cols <= 32 && dst.len() >= cols && odd.is_none_or(|o| o.len() == cols));
    let (m0, m1) = crate::cpu::simd::col_masks(cols);
    // SAFETY: masked loads within the rows, masked stores within `dst` (asserted).
    unsafe {
        let row = |r: &[f32]| -> __m512i {
            let lo = _mm512_maskz_loadu_ps(m0, r.as_ptr());
            let hi = _mm512_maskz_loadu_ps(m1, r.as_ptr().add(16));
            std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo))
        };
        let e = row(even);
        let o = odd.map_or(_mm512_setzero_si512(), row);
        // Word i of e, then word i of o: columns 0..16, then 16..32.
        let first = _mm512_set_epi16(
            47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36,
            4, 35, 3, 34, 2, 33, 1, 32, 0,
        );
        let second = _mm512_set_epi16(
            63, 31, 62, 30, 61, 29, 60, 28, 59, 27, 58, 26, 57, 25, 56, 24, 55, 23, 54, 22, 53, 21,
            52, 20, 51, 19, 50, 18, 49, 17, 48, 16,
        );
        let d = dst.as_mut_ptr() as *mut i32;
        _mm512_mask_storeu_epi32(d, m0, _mm512_permutex2var_epi16(e, first, o));
        _mm512_mask_storeu_epi32(d.add(16), m1, _mm512_permutex2var_epi16(e, second, o));
    }
}

/// Whether this CPU runs [`product`] (AVX-512 F/BW/VL and BF16; `QUIRE_NO_BF16`
/// unset).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::has_avx512_bf16()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `y[r][j] = Σₖ a[r][k] · w[j][k]` for `rows` rows (`y` rows `ldy` apart), on this
/// thread: `a` is rows of `w`'s `⌈k/2⌉` pairs ([`pairs_of`]), at least `rows` rounded
/// up to [`MR`] of them (the padding rows' values are never stored). Only where
/// [`available`].
pub fn product(a: &[u32], rows: usize, w: &PackedH, y: &mut [f32], ldy: usize) {
    let (n, k2) = (w.n, w.k2);
    assert!(available(), "bf16 products without AVX512-BF16");
    let tiles = rows.div_ceil(MR);
    assert!(a.len() >= tiles * MR * k2 && ldy >= n);
    assert!(rows == 0 || y.len() >= (rows - 1) * ldy + n);
    if k2 == 0 {
        for r in 0..rows {
            y[r * ldy..r * ldy + n].fill(0.0);
        }
        return;
    }
    for (p, panel) in w.data.chunks_exact(k2 * NR).enumerate() {
        let j0 = p * NR;
        let cols = NR.min(n - j0);
        for t in 0..tiles {
            // SAFETY: BF16 is there (asserted); the tile reads `MR` rows of `k2` pairs
            // (`a` holds whole tiles, asserted) and `k2 × 32` panel values, and
            // writes its first `rows - t·MR` rows (at most `MR`) of `cols` columns
            // within `y` (asserted).
            #[cfg(target_arch = "x86_64")]
            unsafe {
                tile(
                    a.as_ptr().add(t * MR * k2),
                    k2,
                    panel.as_ptr(),
                    (rows - t * MR).min(MR),
                    cols,
                    y.as_mut_ptr().add(t * MR * ldy + j0),
                    ldy,
                );
            }
        }
    }
}

/// 12 rows × 32 columns of `Σ a·panel`, stored for the first `rows` rows and `cols`
/// columns.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn tile(
    a: *const u32,
    k2: usize,
    panel: *const u32,
    rows: usize,
    cols: usize,
    out: *mut f32,
    ldo: usize,
) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's: 12 rows of `k2` pairs at `a`, `k2 × 32` at `panel`,
    // `rows` rows of `cols` outputs `ldo` apart at `out`.
    unsafe {
        let mut c = [_mm512_setzero_ps(); 2 * MR];
        for s in 0..k2 {
            let w0: __m512bh =
                std::mem::transmute(_mm512_loadu_si512(panel.add(s * NR) as *const _));
            let w1: __m512bh =
                std::mem::transmute(_mm512_loadu_si512(panel.add(s * NR + 16) as *const _));
            for r in 0..MR {
                let v: __m512bh = std::mem::transmute(_mm512_set1_epi32(*a.add(r * k2 + s) as i32));
                c[2 * r] = _mm512_dpbf16_ps(c[2 * r], v, w0);
                c[2 * r + 1] = _mm512_dpbf16_ps(c[2 * r + 1], v, w1);
            }
        }
        let (m0, m1) = crate::cpu::simd::col_masks(cols);
        for r in 0..rows {
            _mm512_mask_storeu_ps(out.add(r * ldo), m0, c[2 * r]);
            _mm512_mask_storeu_ps(out.add(r * ldo + 16), m1, c[2 * r + 1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::embed::test_values as values;

    /// f32 → bf16, rounded to nearest even: [`amx::bf16`](super::amx::bf16)'s
    /// bits, which are `vcvtne2ps2bf16`'s for every value but subnormals (which it
    /// flushes to zero; these tests have none).
    fn bf16(x: f32) -> u32 {
        crate::embed::kernels::amx::bf16(x) as u32
    }

    fn f32_of(b: u32) -> f64 {
        f32::from_bits(b << 16) as f64
    }

    /// Where this CPU has BF16 it must be used (or turned off on purpose).
    fn bf16_here() -> bool {
        assert!(
            available()
                || !crate::cpu::avx512_bf16_in_cpu()
                || std::env::var_os("QUIRE_NO_BF16").is_some(),
            "AVX512-BF16 in the CPU but not used"
        );
        available()
    }

    /// The vector rounding is the scalar one, ragged lengths and odd ones included.
    #[test]
    fn pairs_are_the_scalar_rounding() {
        if !bf16_here() {
            return; // this CPU runs attention in f32 (tested in encoder.rs)
        }
        for len in [1usize, 2, 15, 31, 32, 33, 64, 190] {
            let x: Vec<f32> = values(len, len as u32).iter().map(|v| v * 37.0).collect();
            let mut got = vec![7u32; len.div_ceil(2) + 1];
            pairs_of(&x, &mut got);
            for s in 0..len.div_ceil(2) {
                let hi = if 2 * s + 1 < len {
                    bf16(x[2 * s + 1])
                } else {
                    0
                };
                assert_eq!(got[s], bf16(x[2 * s]) | hi << 16, "len {len}, pair {s}");
            }
            assert_eq!(got[len.div_ceil(2)], 7, "len {len}: wrote past its pairs");
        }
    }

    /// The fused softmax numerators are `exp_scaled`'s values, within its shorter
    /// exponential's 4e-6 then bf16's rounding: the pairs and the sum, at lengths
    /// around every vector boundary, and nothing written past the pairs.
    #[test]
    fn exp_pairs_is_exp_scaled_then_pairs_of() {
        if !bf16_here() {
            return; // this CPU runs attention in f32 (tested in encoder.rs)
        }
        let bf = |b: u32| f32::from_bits(b << 16);
        for len in (1usize..=70).chain([95, 96, 97, 190, 256]) {
            let row: Vec<f32> = values(len, 3 * len as u32)
                .iter()
                .map(|v| v * 9.0)
                .collect();
            let mut got = vec![7u32; len.div_ceil(2) + 1];
            let sum = exp_pairs(&row, 0.17, &mut got);
            let mut e = row.clone();
            let want_sum = crate::embed::kernels::ops::exp_scaled(&mut e, 0.17);
            assert!(
                (sum - want_sum).abs() <= 4e-6 * want_sum,
                "len {len}: sum {sum} vs {want_sum}"
            );
            let mut largest = 0f32;
            for (i, &want) in e.iter().enumerate() {
                let pair = got[i / 2];
                let v = bf(if i % 2 == 0 {
                    pair & 0xffff
                } else {
                    pair >> 16
                });
                largest = largest.max(v);
                // bf16 keeps 8 significant bits: half a step is at most 2^-8 of the value.
                assert!(
                    (v - want).abs() <= want * (2f32.powi(-8) + 4e-6),
                    "len {len}, [{i}]: {v} vs {want}"
                );
            }
            assert_eq!(
                largest, 1.0,
                "len {len}: the largest score's numerator is 1"
            );
            if len % 2 == 1 {
                assert_eq!(got[len / 2] >> 16, 0, "len {len}: a last pair's high half");
            }
            assert_eq!(got[len.div_ceil(2)], 7, "len {len}: wrote past its pairs");
        }
    }

    /// Both packings against the f64 sums of the same bf16 values, at ragged sizes
    /// (rows short of a tile, columns short of a panel, odd `k`).
    #[test]
    fn products_are_the_sums_of_the_rounded_values() {
        if !bf16_here() {
            return; // this CPU runs attention in f32 (tested in encoder.rs)
        }
        for &(m, n, k) in &[
            (1, 1, 1),
            (5, 33, 32),
            (13, 190, 32),
            (25, 32, 191),
            (12, 70, 64),
        ] {
            let x = values(m * k, 3 + m as u32);
            let w = values(n * k, 5 + n as u32);
            let k2 = k.div_ceil(2);
            let mut a = vec![0u32; m.div_ceil(MR) * MR * k2];
            for r in 0..m {
                pairs_of(&x[r * k..(r + 1) * k], &mut a[r * k2..(r + 1) * k2]);
            }
            // The same matrix both ways: w as n rows of k, and as its transpose.
            let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
            for (how, p) in [
                ("rows", PackedH::pack_rows(&w, k, n, k)),
                ("cols", PackedH::pack_cols(&wt, n, n, k)),
            ] {
                let ldy = n + 3;
                let mut y = vec![f32::NAN; m * ldy];
                product(&a, m, &p, &mut y, ldy);
                for r in 0..m {
                    for j in 0..n {
                        let want: f64 = (0..k)
                            .map(|kk| f32_of(bf16(x[r * k + kk])) * f32_of(bf16(w[j * k + kk])))
                            .sum();
                        let got = y[r * ldy + j] as f64;
                        assert!(
                            (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                            "{how} {m}×{n}×{k} [{r}][{j}]: {got} vs {want}"
                        );
                    }
                    assert!(y[r * ldy + n..(r + 1) * ldy].iter().all(|v| v.is_nan()));
                }
            }
        }
    }
}
