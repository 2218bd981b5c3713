//! The steps of attention on 8-lane AVX2 registers (CPUs with AVX2, FMA and F16C
//! but no AVX-512): each of the portable code's 16-lane groups is two registers, its
//! lanes fused-multiply-added and summed in the same order, so the bits are those of
//! [`attention`](super::attention)'s portable code and of [`wide`](super::wide)'s
//! AVX-512 code. Without these, the 16-lane arrays of the portable code compile to
//! scalar loads and stores on AVX2, and attention takes most of a long prompt's time.
#![cfg(target_arch = "x86_64")]

use super::ops::expf as expf_scalar;
use std::arch::x86_64::*;

/// Sixteen lanes: lanes `0..8` and `8..16`.
type L16 = [__m256; 2];

/// [`reduce16`](super::attention::reduce16) of one 16-lane group: halves
/// (`a[i] + a[i + 8]`), quarters, pairs, then the last two, in that order.
#[inline(always)]
unsafe fn reduce16(a: L16) -> f32 {
    // SAFETY: AVX2 (callers).
    unsafe {
        let b = _mm256_add_ps(a[0], a[1]);
        let c = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps::<1>(b));
        let d = _mm_add_ps(c, _mm_movehl_ps(c, c));
        _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps::<0x55>(d, d)))
    }
}

#[inline(always)]
unsafe fn load16(p: *const f32) -> L16 {
    // SAFETY: 16 readable values at `p` (callers); AVX.
    unsafe { [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))] }
}

#[inline(always)]
unsafe fn fma16(x: L16, y: L16, acc: L16) -> L16 {
    // SAFETY: FMA (callers).
    unsafe {
        [
            _mm256_fmadd_ps(x[0], y[0], acc[0]),
            _mm256_fmadd_ps(x[1], y[1], acc[1]),
        ]
    }
}

#[inline(always)]
unsafe fn add16(a: L16, b: L16) -> L16 {
    // SAFETY: AVX (callers).
    unsafe { [_mm256_add_ps(a[0], b[0]), _mm256_add_ps(a[1], b[1])] }
}

/// `N` rows at `a` (`sa` apart) dotted with `M` rows at `b` (`sb` apart) over `len`
/// values (a multiple of 16): `[n][t]` is [`dot_lanes`](super::attention::dot_lanes)`(a_n, b_t)`,
/// each chunk of `b` loaded once for the `N` rows.
#[inline(always)]
unsafe fn dots_lanes<const N: usize, const M: usize>(
    a: *const f32,
    sa: usize,
    b: *const f32,
    sb: usize,
    len: usize,
) -> [[f32; M]; N] {
    // SAFETY: the rows are readable for `len` values (callers); AVX2 and FMA.
    unsafe {
        // No closures here: they would not inherit the target features, and the
        // intrinsics in them would be calls.
        let z = _mm256_setzero_ps();
        let mut acc = [[[z; 2]; M]; N];
        let mut y = [[z; 2]; M];
        for c in 0..len / 16 {
            for (t, yt) in y.iter_mut().enumerate() {
                *yt = load16(b.add(t * sb + c * 16));
            }
            for (n, row) in acc.iter_mut().enumerate() {
                let x = load16(a.add(n * sa + c * 16));
                for (t, at) in row.iter_mut().enumerate() {
                    *at = fma16(x, y[t], *at);
                }
            }
        }
        let mut out = [[0f32; M]; N];
        for n in 0..N {
            for t in 0..M {
                out[n][t] = reduce16(acc[n][t]);
            }
        }
        out
    }
}

/// `N` rows at `a` dotted with one row at `b` over `len` values (a multiple of 64)
/// in [`dot_vec`](super::attention::dot_vec)'s order: four 16-lane sums over 64-wide
/// steps, folded `(s0 + s2) + (s1 + s3)`, then summed.
#[inline(always)]
unsafe fn dots_vec<const N: usize>(
    a: *const f32,
    sa: usize,
    b: *const f32,
    len: usize,
) -> [f32; N] {
    // SAFETY: as `dots_lanes`.
    unsafe {
        let z = _mm256_setzero_ps();
        let mut s = [[[z; 2]; 4]; N];
        for c in 0..len / 64 {
            for j in 0..4 {
                let o = c * 64 + j * 16;
                let y = load16(b.add(o));
                for (n, sn) in s.iter_mut().enumerate() {
                    sn[j] = fma16(y, load16(a.add(n * sa + o)), sn[j]);
                }
            }
        }
        let mut out = [0f32; N];
        for (o, sn) in out.iter_mut().zip(&s) {
            *o = reduce16(add16(add16(sn[0], sn[2]), add16(sn[1], sn[3])));
        }
        out
    }
}

/// Scores of the query heads in `q` (`dim` apart, already f16-rounded) against
/// keys `0..total/2·2` of `k` (`0..total` when `one_token`): head `h`'s
/// `dot(k_j, q_h) · scale` into `scores[h·ld + j]`, in [`dot_vec`](super::attention::dot_vec)'s
/// order when `one_token` (`dim` a multiple of 64), else
/// [`dot_lanes`](super::attention::dot_lanes)' (`dim` a multiple of 16), up to three
/// heads and two keys at a time. Returns the number of keys done.
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
    let keys = if one_token { total } else { total / 2 * 2 };
    if heads == 0 || keys == 0 {
        return keys;
    }
    assert!(k.len() >= total * dim);
    assert!(ld >= total && scores.len() >= (heads - 1) * ld + keys);
    assert!(dim.is_multiple_of(if one_token { 64 } else { 16 }));
    // SAFETY: reads keys `< keys ≤ total` of `k` and heads `< heads` of `q`; writes
    // `scores[h·ld + j]` for `j < keys ≤ ld` (asserted); AVX2, FMA.
    unsafe {
        let (qp, kp, out) = (q.as_ptr(), k.as_ptr(), scores.as_mut_ptr());
        if one_token {
            for h0 in (0..heads).step_by(2) {
                let n = (heads - h0).min(2);
                let qa = qp.add(h0 * dim);
                for j in 0..keys {
                    let kb = kp.add(j * dim);
                    let r: &[f32] = &match n {
                        1 => {
                            let [a] = dots_vec::<1>(qa, dim, kb, dim);
                            [a, 0.0]
                        }
                        _ => dots_vec::<2>(qa, dim, kb, dim),
                    };
                    for (i, v) in r.iter().enumerate().take(n) {
                        *out.add((h0 + i) * ld + j) = v * scale;
                    }
                }
            }
            return keys;
        }
        for h0 in (0..heads).step_by(3) {
            let n = (heads - h0).min(3);
            let qa = qp.add(h0 * dim);
            for j in (0..keys).step_by(2) {
                let kb = kp.add(j * dim);
                let r: [[f32; 2]; 3] = match n {
                    1 => {
                        let [a] = dots_lanes::<1, 2>(qa, dim, kb, dim, dim);
                        [a, [0.0; 2], [0.0; 2]]
                    }
                    2 => {
                        let [a, b] = dots_lanes::<2, 2>(qa, dim, kb, dim, dim);
                        [a, b, [0.0; 2]]
                    }
                    _ => dots_lanes::<3, 2>(qa, dim, kb, dim, dim),
                };
                for (i, pair) in r.iter().enumerate().take(n) {
                    *out.add((h0 + i) * ld + j) = pair[0] * scale;
                    *out.add((h0 + i) * ld + j + 1) = pair[1] * scale;
                }
            }
        }
        keys
    }
}

/// Output dimensions `0..dims/2·2` of `heads` heads: `out[h·ldo + d] = dot(vt_d, p_h)`
/// over `len` positions (a multiple of 64; `vt_d` at `vt[d·stride..]`, `p_h` at
/// `p[h·ldp..]`), in the order of [`scores_heads`]. Returns the number of dimensions
/// done.
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
    let dims = if one_token { dims } else { dims / 2 * 2 };
    if heads == 0 || dims == 0 {
        return dims;
    }
    assert!(len.is_multiple_of(64) && len <= stride && len <= ldp);
    assert!(p.len() >= (heads - 1) * ldp + len);
    assert!(vt.len() >= (dims - 1) * stride + len);
    assert!(ldo >= dims && out.len() >= (heads - 1) * ldo + dims);
    // SAFETY: reads rows `d < dims` of `vt` for `len` values and `len` values of each
    // head's `p`; writes `out[h·ldo + d]` for `d < dims` (asserted); AVX2, FMA.
    unsafe {
        let (pp, vp, o) = (p.as_ptr(), vt.as_ptr(), out.as_mut_ptr());
        if one_token {
            for h0 in (0..heads).step_by(2) {
                let n = (heads - h0).min(2);
                let pa = pp.add(h0 * ldp);
                for d in 0..dims {
                    let vb = vp.add(d * stride);
                    let r: [f32; 2] = match n {
                        1 => [dots_vec::<1>(pa, ldp, vb, len)[0], 0.0],
                        _ => dots_vec::<2>(pa, ldp, vb, len),
                    };
                    for (i, v) in r.iter().enumerate().take(n) {
                        *o.add((h0 + i) * ldo + d) = *v;
                    }
                }
            }
            return dims;
        }
        for h0 in (0..heads).step_by(3) {
            let n = (heads - h0).min(3);
            let pa = pp.add(h0 * ldp);
            for d in (0..dims).step_by(2) {
                let vb = vp.add(d * stride);
                let r: [[f32; 2]; 3] = match n {
                    1 => {
                        let [a] = dots_lanes::<1, 2>(pa, ldp, vb, stride, len);
                        [a, [0.0; 2], [0.0; 2]]
                    }
                    2 => {
                        let [a, b] = dots_lanes::<2, 2>(pa, ldp, vb, stride, len);
                        [a, b, [0.0; 2]]
                    }
                    _ => dots_lanes::<3, 2>(pa, ldp, vb, stride, len),
                };
                for (i, pair) in r.iter().enumerate().take(n) {
                    *o.add((h0 + i) * ldo + d) = pair[0];
                    *o.add((h0 + i) * ldo + d + 1) = pair[1];
                }
            }
        }
        dims
    }
}

/// [`expf`](super::ops::expf) of eight lanes, where every lane's power of two
/// `n` is within ±125: then `j · 2^n` is a product by a normal power of two with a
/// normal result, exact, as the scalar code's f64 product rounded once is. `None`
/// otherwise (the caller takes the scalar code).
#[inline(always)]
unsafe fn expf8(x: __m256) -> Option<__m256> {
    // SAFETY: AVX2 and FMA (callers).
    unsafe {
        let c = |b: u32| _mm256_set1_ps(f32::from_bits(b));
        let r = c(0x4b40_0000);
        let z = _mm256_fmadd_ps(x, c(0x3fb8_aa3b), r);
        let n = _mm256_sub_ps(z, r);
        let b = _mm256_fnmadd_ps(n, c(0x35bf_be8e), _mm256_fnmadd_ps(n, c(0x3f31_7200), x));
        // |n| ≤ 125 (false for NaN).
        let abs = _mm256_andnot_ps(_mm256_set1_ps(-0.0), n);
        let ok = _mm256_cmp_ps::<_CMP_LE_OQ>(abs, _mm256_set1_ps(125.0));
        if _mm256_movemask_ps(ok) != 0xff {
            return None;
        }
        let u = _mm256_mul_ps(b, b);
        let j = _mm256_fmadd_ps(
            _mm256_fmadd_ps(
                _mm256_fmadd_ps(c(0x3c07_2010), b, c(0x3d2b_9f17)),
                u,
                _mm256_fmadd_ps(c(0x3e2a_af33), b, c(0x3eff_fedb)),
            ),
            u,
            _mm256_fmadd_ps(c(0x3f7f_fff6), b, _mm256_set1_ps(1.0)),
        );
        let e = _mm256_slli_epi32::<23>(_mm256_add_epi32(
            _mm256_cvtps_epi32(n),
            _mm256_set1_epi32(127),
        ));
        Some(_mm256_mul_ps(j, _mm256_castsi256_ps(e)))
    }
}

/// The exponentials of a softmax row, as the portable `softmax_f16` takes them: per
/// 16-value chunk of `x` (its length a multiple of 16), `x − max` exponentiated for
/// values `< total`, values before `first` zeroed, and the f64 sum of each chunk's
/// 16-lane sum, in chunk order.
#[inline(always)]
pub(crate) unsafe fn exp_minus_sum(x: &mut [f32], first: usize, total: usize, max: f32) -> f64 {
    let mut sum = 0f64;
    // SAFETY: each chunk is 16 values of `x`; AVX2 and FMA (callers).
    unsafe {
        let m = _mm256_set1_ps(max);
        for (c, chunk) in x.chunks_exact_mut(16).enumerate() {
            let valid = total.saturating_sub(c * 16).min(16);
            let masked = first.saturating_sub(c * 16).min(16);
            let p = chunk.as_mut_ptr();
            let mut done = false;
            if valid == 16 {
                let v = load16(p);
                if let (Some(a), Some(b)) =
                    (expf8(_mm256_sub_ps(v[0], m)), expf8(_mm256_sub_ps(v[1], m)))
                {
                    _mm256_storeu_ps(p, a);
                    _mm256_storeu_ps(p.add(8), b);
                    done = true;
                }
            }
            if !done {
                for v in chunk[..valid].iter_mut() {
                    *v = expf_scalar(*v - max);
                }
            }
            chunk[..masked].fill(0.0);
            sum += f64::from(reduce16(load16(chunk.as_ptr())));
        }
    }
    sum
}

/// `x[i] = f16(x[i] · inv)` widened back, for the first `total` values of `x`.
#[inline(always)]
pub(crate) unsafe fn scale_to_f16(x: &mut [f32], total: usize, inv: f32) {
    let full = total.min(x.len()) / 8 * 8;
    // SAFETY: 8 values at each `i < full`; F16C (callers).
    unsafe {
        let s = _mm256_set1_ps(inv);
        for i in (0..full).step_by(8) {
            let p = x.as_mut_ptr().add(i);
            let v = _mm256_mul_ps(_mm256_loadu_ps(p), s);
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
            _mm256_storeu_ps(p, _mm256_cvtph_ps(h));
        }
    }
    for v in x[full..total].iter_mut() {
        *v = super::ops::to_f16(*v * inv).to_f32();
    }
}
