//! The element-wise steps of attention and of the feed-forward on 16-lane AVX-512
//! registers (only where the CPU has AVX-512): the same lanes as the portable code in
//! [`ops`](super::ops) and [`attention`](super::attention), so the same bits. These are
//! the AVX-512 forms of llama.cpp's `ggml-cpu/vec.h` (`ggml_v_expf`, the f16 round
//! trips) and of tinyBLAS' f16 dot products (`ggml-cpu/llamafile/sgemm.cpp`).
#![cfg(target_arch = "x86_64")]

use super::tables::{GELU_F32, LANES};
use std::arch::x86_64::*;

/// `ggml_v_expf` (AVX-512), the original of the scalar [`expf`](super::ops::expf).
#[inline(always)]
unsafe fn expf(x: __m512) -> __m512 {
    // SAFETY: callers run with AVX-512F.
    unsafe {
        let c = |b: u32| _mm512_set1_ps(f32::from_bits(b));
        let r = c(0x4b40_0000);
        let z = _mm512_fmadd_ps(x, c(0x3fb8_aa3b), r);
        let n = _mm512_sub_ps(z, r);
        let b = _mm512_fnmadd_ps(n, c(0x35bf_be8e), _mm512_fnmadd_ps(n, c(0x3f31_7200), x));
        let d = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(_mm512_abs_ps(n), _mm512_set1_ps(192.0));
        let u = _mm512_mul_ps(b, b);
        let j = _mm512_fmadd_ps(
            _mm512_fmadd_ps(
                _mm512_fmadd_ps(c(0x3c07_2010), b, c(0x3d2b_9f17)),
                u,
                _mm512_fmadd_ps(c(0x3e2a_af33), b, c(0x3eff_fedb)),
            ),
            u,
            _mm512_fmadd_ps(c(0x3f7f_fff6), b, _mm512_set1_ps(1.0)),
        );
        let res = _mm512_scalef_ps(j, n);
        if d == 0 {
            return res;
        }
        let le = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(n, _mm512_setzero_ps());
        let alt = _mm512_mask_blend_ps(le, _mm512_set1_ps(f32::INFINITY), _mm512_setzero_ps());
        _mm512_mask_blend_ps(d, res, alt)
    }
}

/// [`reduce16`](super::attention::reduce16) of 16 registers at once: lane `t` of the result is the
/// horizontal sum of `x[t]`, with the same pairs added in the same order
/// (halves, quarters, pairs, then the last two), done across registers.
#[inline(always)]
pub(crate) unsafe fn reduce16x16(x: &[__m512; 16]) -> __m512 {
    // SAFETY: AVX-512F (callers).
    unsafe {
        // a[i] + a[i + 8]: two keys per register, eight sums each.
        let b: [__m512; 8] = core::array::from_fn(|p| {
            let (a0, a1) = (x[2 * p], x[2 * p + 1]);
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0x44>(a0, a1),
                _mm512_shuffle_f32x4::<0xEE>(a0, a1),
            )
        });
        // b[i] + b[i + 4]: four keys per register, one per 128-bit chunk.
        let c: [__m512; 4] = core::array::from_fn(|q| {
            let (p0, p1) = (b[2 * q], b[2 * q + 1]);
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0x88>(p0, p1),
                _mm512_shuffle_f32x4::<0xDD>(p0, p1),
            )
        });
        // [c0 + c2, c1 + c3] per key.
        let d: [__m512; 2] = core::array::from_fn(|r| {
            let (r0, r1) = (c[2 * r], c[2 * r + 1]);
            _mm512_add_ps(
                _mm512_shuffle_ps::<0x44>(r0, r1),
                _mm512_shuffle_ps::<0xEE>(r0, r1),
            )
        });
        // d0 + d1; lane 4k + m now holds key 4m + k.
        let e = _mm512_add_ps(
            _mm512_shuffle_ps::<0x88>(d[0], d[1]),
            _mm512_shuffle_ps::<0xDD>(d[0], d[1]),
        );
        let idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        _mm512_permutexvar_ps(idx, e)
    }
}

/// Lanes `4n..4n + 4` of `r`.
#[inline(always)]
unsafe fn quarter(r: __m512, n: usize) -> __m128 {
    // SAFETY: AVX-512F (callers).
    unsafe {
        match n {
            0 => _mm512_extractf32x4_ps::<0>(r),
            1 => _mm512_extractf32x4_ps::<1>(r),
            2 => _mm512_extractf32x4_ps::<2>(r),
            _ => _mm512_extractf32x4_ps::<3>(r),
        }
    }
}

/// `N` (at most 4) rows of `dim` values at `a` (rows `sa` apart) dotted with 4 rows
/// at `b` (rows `sb` apart) over `len` values: lane `4n + t` of the result is
/// `dot(a_n, b_t)`, in [`dot_vec`](super::attention::dot_vec)'s order when `vec` (`len` a multiple of
/// 64), else [`dot_lanes`](super::attention::dot_lanes)' (`len` a multiple of 16), each `b` chunk loaded
/// once for the `N` rows.
#[inline(always)]
unsafe fn dots_n_by_4<const N: usize>(
    vec: bool,
    a: *const f32,
    sa: usize,
    b: *const f32,
    sb: usize,
    len: usize,
) -> __m512 {
    // SAFETY: the rows are readable for `len` values (callers); AVX-512F.
    unsafe {
        let mut x = [_mm512_setzero_ps(); 16];
        if vec {
            for t in 0..4 {
                let bt = b.add(t * sb);
                let mut s = [[_mm512_setzero_ps(); 4]; N];
                for c in 0..len / 64 {
                    for j in 0..4 {
                        let o = c * 64 + j * 16;
                        let y = _mm512_loadu_ps(bt.add(o));
                        for (n, sn) in s.iter_mut().enumerate() {
                            let xa = _mm512_loadu_ps(a.add(n * sa + o));
                            sn[j] = _mm512_fmadd_ps(y, xa, sn[j]);
                        }
                    }
                }
                for (n, sn) in s.iter().enumerate() {
                    x[4 * n + t] =
                        _mm512_add_ps(_mm512_add_ps(sn[0], sn[2]), _mm512_add_ps(sn[1], sn[3]));
                }
            }
        } else {
            for c in 0..len / 16 {
                let y: [__m512; 4] =
                    core::array::from_fn(|t| _mm512_loadu_ps(b.add(t * sb + c * 16)));
                for n in 0..N {
                    let xa = _mm512_loadu_ps(a.add(n * sa + c * 16));
                    for t in 0..4 {
                        x[4 * n + t] = _mm512_fmadd_ps(y[t], xa, x[4 * n + t]);
                    }
                }
            }
        }
        reduce16x16(&x)
    }
}

/// [`dots_n_by_4`] for `n` (1 to 4) rows at `a`.
#[inline(always)]
unsafe fn dots_by_4(
    n: usize,
    vec: bool,
    a: *const f32,
    sa: usize,
    b: *const f32,
    sb: usize,
    len: usize,
) -> __m512 {
    // SAFETY: as `dots_n_by_4` (callers).
    unsafe {
        match n {
            1 => dots_n_by_4::<1>(vec, a, sa, b, sb, len),
            2 => dots_n_by_4::<2>(vec, a, sa, b, sb, len),
            3 => dots_n_by_4::<3>(vec, a, sa, b, sb, len),
            _ => dots_n_by_4::<4>(vec, a, sa, b, sb, len),
        }
    }
}

/// Scores of the query heads in `q` (`dim` apart, already f16-rounded) against
/// keys `0..total/4·4` of `k`, four keys and up to four heads at a time: head `h`'s
/// `dot(k_j, q_h) · scale` into `scores[h·ld + j]`, in [`dot_vec`](super::attention::dot_vec)'s order
/// when `one_token`, else [`dot_lanes`](super::attention::dot_lanes)'. Returns the number of keys done.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn scores_heads(
    one_token: bool,
    k: &[f32],
    dim: usize,
    total: usize,
    q: &[f32],
    scale: f32,
    scores: &mut [f32],
    ld: usize,
) -> usize {
    let heads = q.len() / dim;
    let keys = total / 4 * 4;
    if heads == 0 || keys == 0 {
        return keys;
    }
    assert!(k.len() >= total * dim);
    assert!(ld >= total && scores.len() >= (heads - 1) * ld + keys);
    assert!(dim.is_multiple_of(if one_token { 64 } else { 16 }));
    // SAFETY: reads keys `< keys ≤ total` of `k` and heads `< heads` of `q`;
    // writes `scores[h·ld + j]` for `j < keys ≤ ld` (asserted); AVX-512F.
    unsafe {
        let sc = _mm512_set1_ps(scale);
        for h0 in (0..heads).step_by(4) {
            let n = (heads - h0).min(4);
            let qa = q.as_ptr().add(h0 * dim);
            for j in (0..keys).step_by(4) {
                let kb = k.as_ptr().add(j * dim);
                let r = dots_by_4(n, one_token, qa, dim, kb, dim, dim);
                let v = _mm512_mul_ps(r, sc);
                for i in 0..n {
                    let at = scores.as_mut_ptr().add((h0 + i) * ld + j);
                    _mm_storeu_ps(at, quarter(v, i));
                }
            }
        }
        keys
    }
}

/// Output dimensions `0..dims/4·4` of `heads` heads, four dimensions and up to four
/// heads at a time: `out[h·ldo + d] = dot(vt_d, p_h)` over `len` positions (a
/// multiple of 64; `vt_d` at `vt[d·stride..]`, `p_h` at `p[h·ldp..]`), in the same
/// order as [`scores_heads`]. Returns the number of dimensions done.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn values_heads(
    one_token: bool,
    vt: &[f32],
    stride: usize,
    p: &[f32],
    ldp: usize,
    len: usize,
    heads: usize,
    dims: usize,
    out: &mut [f32],
    ldo: usize,
) -> usize {
    let dims = dims / 4 * 4;
    if heads == 0 || dims == 0 {
        return dims;
    }
    assert!(len.is_multiple_of(64) && len <= stride && len <= ldp);
    assert!(p.len() >= (heads - 1) * ldp + len);
    assert!(vt.len() >= (dims - 1) * stride + len);
    assert!(ldo >= dims && out.len() >= (heads - 1) * ldo + dims);
    // SAFETY: reads rows `d < dims` of `vt` for `len` values and `len` values of
    // each head's `p`, writes `out[h·ldo + d]` for `d < dims` (asserted); AVX-512F.
    unsafe {
        for h0 in (0..heads).step_by(4) {
            let n = (heads - h0).min(4);
            let pa = p.as_ptr().add(h0 * ldp);
            for d in (0..dims).step_by(4) {
                let vb = vt.as_ptr().add(d * stride);
                let r = dots_by_4(n, one_token, pa, ldp, vb, stride, len);
                for i in 0..n {
                    _mm_storeu_ps(out.as_mut_ptr().add((h0 + i) * ldo + d), quarter(r, i));
                }
            }
        }
        dims
    }
}

/// `ggml_vec_swiglu_f32`'s 16-lane chunks: `silu(g) · u` with
/// `silu(x) = x / (1 + expf(0 − x))`. Returns how many values it did.
#[inline(always)]
pub(crate) unsafe fn swiglu16(gate: &[f32], up: &[f32], out: &mut [f32]) -> usize {
    let full = gate.len().min(up.len()).min(out.len()) / 16 * 16;
    // SAFETY: 16 values at each `i < full` in all three slices; AVX-512F (callers).
    unsafe {
        for i in (0..full).step_by(16) {
            let x = _mm512_loadu_ps(gate.as_ptr().add(i));
            let e = expf(_mm512_sub_ps(_mm512_setzero_ps(), x));
            let silu = _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0), e));
            let y = _mm512_mul_ps(silu, _mm512_loadu_ps(up.as_ptr().add(i)));
            _mm512_storeu_ps(out.as_mut_ptr().add(i), y);
        }
    }
    full
}

/// The first half of [`softmax_f16`](super::attention::softmax_f16) over a row of
/// 16-value chunks: `x[i] = expf(x[i] − max)` for `i < total`, zero before `first`,
/// and the f64 sum of each chunk's 16-lane sum, in chunk order. Sixteen chunks' lane
/// sums are taken at once ([`reduce16x16`]: the same pairs in the same order), then
/// added one by one, so the sum has the bits of one chunk at a time.
#[inline(always)]
pub(crate) unsafe fn exp_minus_sum(x: &mut [f32], first: usize, total: usize, max: f32) -> f64 {
    let chunks = x.len() / 16;
    let mut sum = 0f64;
    // SAFETY: chunk `c < chunks` is 16 values of `x`; AVX-512F (callers).
    unsafe {
        let m = _mm512_set1_ps(max);
        let mut c = 0;
        while c < chunks {
            let n = (chunks - c).min(16);
            let mut regs = [_mm512_setzero_ps(); 16];
            for (t, reg) in regs.iter_mut().enumerate().take(n) {
                let base = (c + t) * 16;
                let valid = total.saturating_sub(base).min(16);
                let masked = first.saturating_sub(base).min(16);
                let keep: __mmask16 = ((1u32 << valid) - 1) as u16;
                let zero: __mmask16 = ((1u32 << masked) - 1) as u16;
                let at = x.as_mut_ptr().add(base);
                let v = _mm512_loadu_ps(at);
                let e = _mm512_mask_blend_ps(keep, v, expf(_mm512_sub_ps(v, m)));
                let r = _mm512_maskz_mov_ps(!zero, e);
                _mm512_storeu_ps(at, r);
                *reg = r;
            }
            let mut lane = [0f32; 16];
            _mm512_storeu_ps(lane.as_mut_ptr(), reduce16x16(&regs));
            for s in &lane[..n] {
                sum += f64::from(*s);
            }
            c += n;
        }
    }
    sum
}

/// [`round_f16`](super::ops::round_f16) of the whole 16-value chunks of `x`; returns
/// how many values it did.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
pub(crate) unsafe fn round_f16(x: &mut [f32]) -> usize {
    let full = x.len() / LANES * LANES;
    for c in x[..full].chunks_exact_mut(LANES) {
        // SAFETY: 16 values.
        unsafe {
            let v = _mm512_loadu_ps(c.as_ptr());
            let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
            _mm512_storeu_ps(c.as_mut_ptr(), _mm512_cvtph_ps(h));
        }
    }
    full
}

/// [`geglu`](super::ops::geglu) of the whole 16-value chunks: the gate rounded to f16
/// indexes the widened GELU table (a gather), then the same cut-offs.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
pub(crate) unsafe fn geglu(gate: &[f32], up: &[f32], out: &mut [f32]) -> usize {
    let table = &*GELU_F32;
    let n = gate.len().min(up.len()).min(out.len());
    let full = n / LANES * LANES;
    let (lo, hi) = (_mm512_set1_ps(-10.0), _mm512_set1_ps(10.0));
    for i in (0..full).step_by(LANES) {
        // SAFETY: 16 values of each from `i < full`; the indices are u16 values,
        // within the 65536-entry table.
        unsafe {
            let x = _mm512_loadu_ps(gate.as_ptr().add(i));
            let g = _mm512_loadu_ps(up.as_ptr().add(i));
            let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x);
            let t = _mm512_i32gather_ps::<4>(_mm512_cvtepu16_epi32(h), table.as_ptr().cast());
            let mut r = _mm512_mul_ps(t, g);
            r = _mm512_mask_mov_ps(
                r,
                _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, hi),
                _mm512_mul_ps(x, g),
            );
            r = _mm512_mask_mov_ps(
                r,
                _mm512_cmp_ps_mask::<_CMP_LE_OQ>(x, lo),
                _mm512_setzero_ps(),
            );
            _mm512_storeu_ps(out.as_mut_ptr().add(i), r);
        }
    }
    full
}

/// `x[i] = f16(x[i] · inv)` widened back, for the first `valid` of 16 values.
#[inline(always)]
pub(crate) unsafe fn scale_to_f16(x: &mut [f32], valid: usize, inv: f32) {
    debug_assert!(x.len() >= 16 && valid <= 16);
    // SAFETY: as above; F16C conversions are part of AVX-512F.
    unsafe {
        let k: __mmask16 = ((1u32 << valid) - 1) as u16;
        let v = _mm512_mul_ps(_mm512_loadu_ps(x.as_ptr()), _mm512_set1_ps(inv));
        let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
        _mm512_mask_storeu_ps(x.as_mut_ptr(), k, _mm512_cvtph_ps(h));
    }
}
