//! The encoder's element-wise work: residual + layer norm, GELU, softmax, and the
//! f32 → bf16 conversion, written so that the compiler vectorizes them (no branches,
//! no libm calls, independent lanes), and each compiled twice: for AVX-512 when the
//! CPU has it (chosen at run time, so one binary runs on any x86-64) and for the
//! baseline target. Both copies compute the same bits: Rust never reassociates or
//! contracts floating-point operations.

use rayon::prelude::*;

use super::amx::bf16;

/// `fn name(args) body`, compiled for AVX-512 as well, that copy chosen at run time.
macro_rules! wide_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($a:ident: $t:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        $vis fn $name($($a: $t),*) {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
            unsafe fn wide($($a: $t),*) $body
            #[inline(always)]
            fn plain($($a: $t),*) $body
            #[cfg(target_arch = "x86_64")]
            if $crate::cpu::has_avx512_bw_vl() {
                // SAFETY: the CPU has the features `wide` is compiled for (checked).
                return unsafe { wide($($a),*) };
            }
            plain($($a),*)
        }
    };
}

/// Lanes of the independent accumulators (one AVX-512 register of f32).
const L: usize = 16;

/// Sum of `xs` in `L` lanes (so that it vectorizes), then the lanes in order.
#[inline(always)]
fn lane_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; L];
    let mut chunks = xs.chunks_exact(L);
    for c in &mut chunks {
        for l in 0..L {
            acc[l] += f(c[l]);
        }
    }
    let mut s: f32 = acc.iter().sum();
    for &v in chunks.remainder() {
        s += f(v);
    }
    s
}

wide_fn! {
    /// One row: `y = layer_norm(y + x) · w + b`, and its bf16 copy in `y16` when given
    /// (the next GEMM's input).
    pub fn residual_norm_row(y: &mut [f32], x: &[f32], w: &[f32], b: &[f32], eps: f32, y16: Option<&mut [u16]>) {
        let h = y.len();
        if !x.is_empty() {
            y.iter_mut().zip(x).for_each(|(y, x)| *y += x);
        }
        let mean = lane_sum(y, |v| v) / h as f32;
        let var = lane_sum(y, |v| (v - mean) * (v - mean)) / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, w), b) in y.iter_mut().zip(w).zip(b) {
            *v = (*v - mean) * inv * w + b;
        }
        if let Some(y16) = y16 {
            y16.iter_mut().zip(y.iter()).for_each(|(d, s)| *d = bf16(*s));
        }
    }
}

/// Each row of `y` (rows as long as `w`): `y = layer_norm(y + x) · w + b` (`x` empty:
/// no residual), on all cores; `y16` gets the bf16 copy when not empty.
pub fn residual_norm(y: &mut [f32], x: &[f32], w: &[f32], b: &[f32], eps: f32, y16: &mut [u16]) {
    let h = w.len();
    let rows = y.len() / h;
    let x_rows = |i: usize| {
        if x.is_empty() {
            &x[..0]
        } else {
            &x[i * h..(i + 1) * h]
        }
    };
    if y16.is_empty() {
        y.par_chunks_mut(h)
            .enumerate()
            .for_each(|(i, row)| residual_norm_row(row, x_rows(i), w, b, eps, None));
    } else {
        y.par_chunks_mut(h)
            .zip(y16[..rows * h].par_chunks_mut(h))
            .enumerate()
            .for_each(|(i, (row, r16))| residual_norm_row(row, x_rows(i), w, b, eps, Some(r16)));
    }
}

wide_fn! {
    /// GEMM epilogue for a block of rows (`c`, rows as long as `bias`): `c + bias`
    /// added to the residual rows `x`, layer-normed into `x` and its bf16 copy `x16`.
    pub fn bias_residual_norm(c: &mut [f32], bias: &[f32], x: &mut [f32], w: &[f32], b: &[f32], eps: f32, x16: &mut [u16]) {
        let h = bias.len();
        for ((cr, xr), x16r) in c.chunks_exact_mut(h).zip(x.chunks_exact_mut(h)).zip(x16.chunks_exact_mut(h)) {
            cr.iter_mut().zip(bias).for_each(|(c, b)| *c += b);
            residual_norm_row(cr, xr, w, b, eps, Some(x16r));
            xr.copy_from_slice(cr);
        }
    }
}

wide_fn! {
    /// GEMM epilogue for a block of rows (`c`, rows as long as `bias`): GELU of
    /// `c + bias`, in bf16 into `out16` (the next GEMM's input).
    pub fn bias_gelu_bf16(c: &mut [f32], bias: &[f32], out16: &mut [u16]) {
        let n = bias.len();
        for (cr, or) in c.chunks_exact_mut(n).zip(out16.chunks_exact_mut(n)) {
            cr.iter_mut().zip(bias).for_each(|(c, b)| *c += b);
            gelu_slice(cr, Some(or));
        }
    }
}

/// GELU in place over a slice, and its bf16 copy in `y16` when given.
pub fn gelu_slice(y: &mut [f32], y16: Option<&mut [u16]>) {
    gelu_in_place(y);
    if let Some(y16) = y16 {
        to_bf16_seq(y, y16);
    }
}

fn gelu_in_place(y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx512_bw_vl() {
        // SAFETY: the CPU has AVX-512 F (checked).
        return unsafe { gelu_avx512(y) };
    }
    y.iter_mut().for_each(|v| *v = gelu(*v));
}

/// [`gelu`] 16 values at a time, with [`erf`]'s coefficients in fused multiply-adds
/// and its division as a reciprocal estimate and one Newton step: the plain version's
/// mul-then-add chains and `vdivps` took 3.8% of indexing's samples, this 3.3%. Within
/// 1e-6 of the plain version (see the test); it feeds the FFN's int8 layer, whose
/// codes are 1/255 of a row's range apart.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gelu_avx512(y: &mut [f32]) {
    let n = y.len();
    for i in (0..n).step_by(L) {
        // SAFETY: the load and the store are of the lanes within `y`.
        unsafe {
            let at = y.as_mut_ptr().add(i);
            crate::cpu::simd::store_lanes(
                at,
                n - i,
                gelu_lanes(crate::cpu::simd::load_lanes(at, n - i)),
            );
        }
    }
}

/// [`gelu_avx512`] of one vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn gelu_lanes(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = |v: f32| _mm512_set1_ps(v);
    let u = _mm512_mul_ps(x, c(std::f32::consts::FRAC_1_SQRT_2));
    let u = _mm512_min_ps(_mm512_max_ps(u, c(-4.0)), c(4.0));
    let x2 = _mm512_mul_ps(u, u);
    let mut p = _mm512_fmadd_ps(x2, c(ERF_P[0]), c(ERF_P[1]));
    for &e in &ERF_P[2..] {
        p = _mm512_fmadd_ps(x2, p, c(e));
    }
    let mut q = _mm512_fmadd_ps(x2, c(ERF_Q[0]), c(ERF_Q[1]));
    for &e in &ERF_Q[2..] {
        q = _mm512_fmadd_ps(x2, q, c(e));
    }
    // 1/q (q ≤ −1.4e-2: never zero): 14 bits, then 28 after a Newton step.
    let r = _mm512_rcp14_ps(q);
    let r = _mm512_fmadd_ps(_mm512_fnmadd_ps(q, r, c(1.0)), r, r);
    let erf = _mm512_mul_ps(_mm512_mul_ps(u, p), r);
    let h = _mm512_mul_ps(x, c(0.5));
    _mm512_fmadd_ps(h, erf, h)
}

wide_fn! {
    /// `dst = bf16(src)` on this thread.
    fn to_bf16_seq(src: &[f32], dst: &mut [u16]) {
        dst.iter_mut().zip(src).for_each(|(d, s)| *d = bf16(*s));
    }
}

/// `dst = bf16(src)`, on all cores.
pub fn to_bf16(src: &[f32], dst: &mut [u16]) {
    dst.par_chunks_mut(8192)
        .zip(src.par_chunks(8192))
        .for_each(|(d, s)| to_bf16_seq(s, d));
}

wide_fn! {
    /// `row = softmax(scale · row)` in place; `row16` gets the bf16 copy when given.
    pub fn softmax_scaled(row: &mut [f32], scale: f32, row16: Option<&mut [u16]>) {
        let inv = 1.0 / exp_scaled(row, scale);
        row.iter_mut().for_each(|v| *v *= inv);
        if let Some(row16) = row16 {
            row16.iter_mut().zip(row.iter()).for_each(|(d, s)| *d = bf16(*s));
        }
    }
}

/// `row = e^(scale·row − max)` in place, returning the row's sum: a softmax whose
/// division is left to the caller (done on the attention output, `d` values per row
/// instead of `n`).
pub fn exp_scaled(row: &mut [f32], scale: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx512_bw_vl() {
        // SAFETY: the CPU has AVX-512 F (checked).
        return unsafe { exp_scaled_avx512(row, scale) };
    }
    let mut sum = 0.0;
    exp_scaled_into(row, scale, &mut sum);
    sum
}

/// [`exp_scaled`] in AVX-512 intrinsics: a row's last values in a masked register
/// rather than one by one (a row of 200 scores has 8 of them), the polynomial in fused
/// multiply-adds, and `2^n` put in by `vscalefps` (which also takes an underflow to 0,
/// so no clamp). Within 2 ulp of `exp`, like [`exp`] (see the test), not its bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn exp_scaled_avx512(row: &mut [f32], scale: f32) -> f32 {
    use std::arch::x86_64::*;
    let n = row.len();
    let mask = |c: usize| crate::cpu::simd::lane_mask(n - c);
    let p = row.as_mut_ptr();
    // SAFETY: each load and store is masked to the lanes within `row`.
    unsafe {
        let (sv, m) = scaled_max_avx512(row, scale);
        let mut sum = _mm512_setzero_ps();
        for i in (0..n).step_by(L) {
            let k = mask(i);
            let x = _mm512_fmsub_ps(_mm512_maskz_loadu_ps(k, p.add(i)), sv, m);
            let e = exp_lanes(k, x);
            _mm512_mask_storeu_ps(p.add(i), k, e);
            sum = _mm512_add_ps(sum, e);
        }
        _mm512_reduce_add_ps(sum)
    }
}

/// `scale` and `scale · max(row)` in every lane (`scale` positive): the shift of
/// [`exp_scaled`]'s exponents.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn scaled_max_avx512(
    row: &[f32],
    scale: f32,
) -> (std::arch::x86_64::__m512, std::arch::x86_64::__m512) {
    use std::arch::x86_64::*;
    let n = row.len();
    // SAFETY: the whole vectors are within `row`, the last one's load is masked to
    // the lanes within it.
    unsafe {
        // Two maxima, so that neighbouring vectors do not wait on each other; whole
        // vectors unmasked (masked loads cost more here).
        let (mut m0, mut m1) = (
            _mm512_set1_ps(f32::NEG_INFINITY),
            _mm512_set1_ps(f32::NEG_INFINITY),
        );
        let whole = n / L * L;
        let mut c = 0;
        while c + 2 * L <= whole {
            m0 = _mm512_max_ps(m0, _mm512_loadu_ps(row.as_ptr().add(c)));
            m1 = _mm512_max_ps(m1, _mm512_loadu_ps(row.as_ptr().add(c + L)));
            c += 2 * L;
        }
        if c < whole {
            m0 = _mm512_max_ps(m0, _mm512_loadu_ps(row.as_ptr().add(c)));
        }
        if whole < n {
            let k = crate::cpu::simd::lane_mask(n - whole);
            let v = _mm512_maskz_loadu_ps(k, row.as_ptr().add(whole));
            m1 = _mm512_mask_max_ps(m1, k, m1, v);
        }
        let mx = _mm512_max_ps(m0, m1);
        let sv = _mm512_set1_ps(scale);
        // max(scale·x) = scale·max(x): `scale` is positive.
        (
            sv,
            _mm512_mul_ps(_mm512_set1_ps(_mm512_reduce_max_ps(mx)), sv),
        )
    }
}

/// `e^x` in the lanes of `k` (zero in the others), `x ≤ 0`: `x = n·ln 2 + r`,
/// `|r| ≤ ln 2 / 2`, `e^r` by Cephes' polynomial, `2^n` put in by `vscalefps` (which
/// also takes an underflow to 0, so no clamp).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn exp_lanes(
    k: std::arch::x86_64::__mmask16,
    x: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let c = |v: f32| _mm512_set1_ps(v);
    let t = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, c(std::f32::consts::LOG2_E)),
    );
    let r = _mm512_fnmadd_ps(t, c(0.693_359_4), x);
    let r = _mm512_fnmadd_ps(t, c(-2.121_944_4e-4), r);
    let mut y = _mm512_fmadd_ps(c(1.987_569_1e-4), r, c(1.398_199_9e-3));
    y = _mm512_fmadd_ps(y, r, c(8.333_452e-3));
    y = _mm512_fmadd_ps(y, r, c(4.166_579_6e-2));
    y = _mm512_fmadd_ps(y, r, c(1.666_666_5e-1));
    y = _mm512_fmadd_ps(y, r, c(0.5));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, c(1.0)));
    _mm512_maskz_scalef_ps(k, y, t)
}

wide_fn! {
    fn exp_scaled_into(row: &mut [f32], scale: f32, total: &mut f32) {
        let mut mx = [f32::NEG_INFINITY; L];
        let mut chunks = row.chunks_exact(L);
        for c in &mut chunks {
            for l in 0..L {
                mx[l] = mx[l].max(c[l] * scale);
            }
        }
        let m = chunks.remainder().iter().fold(
            mx.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)),
            |a, &b| a.max(b * scale),
        );
        let mut sums = [0f32; L];
        let body = row.len() / L * L;
        for c in row[..body].chunks_exact_mut(L) {
            for l in 0..L {
                c[l] = exp(c[l] * scale - m);
                sums[l] += c[l];
            }
        }
        let mut sum: f32 = sums.iter().sum();
        for v in &mut row[body..] {
            *v = exp(*v * scale - m);
            sum += *v;
        }
        *total = sum;
    }
}

/// `out = bf16(e^(scale·x − max))` over the row, returning the sum of the f32 values:
/// a softmax whose division is left to the caller (done on the attention output,
/// `d` values per row instead of `n`).
pub fn exp_bf16(row: &[f32], scale: f32, out: &mut [u16]) -> f32 {
    let mut sum = 0.0;
    exp_bf16_into(row, scale, out, &mut sum);
    sum
}

wide_fn! {
    fn exp_bf16_into(row: &[f32], scale: f32, out: &mut [u16], total: &mut f32) {
        let mut mx = [f32::NEG_INFINITY; L];
        let mut chunks = row.chunks_exact(L);
        for c in &mut chunks {
            for l in 0..L {
                mx[l] = mx[l].max(c[l] * scale);
            }
        }
        let m = chunks.remainder().iter().fold(
            mx.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)),
            |a, &b| a.max(b * scale),
        );
        let mut sums = [0f32; L];
        let body = row.len() / L * L;
        for (c, o) in row[..body].chunks_exact(L).zip(out[..body].chunks_exact_mut(L)) {
            for l in 0..L {
                let e = exp(c[l] * scale - m);
                sums[l] += e;
                o[l] = bf16(e);
            }
        }
        let mut sum: f32 = sums.iter().sum();
        for (v, o) in row[body..].iter().zip(&mut out[body..]) {
            let e = exp(*v * scale - m);
            sum += e;
            *o = bf16(e);
        }
        *total = sum;
    }
}

/// `e^x` without branches or libm (Cephes' expf: range reduction by ln 2, a degree-5
/// polynomial, the exponent put in by bits), so loops over it vectorize; within
/// 2 ulp of `exp` over the range a softmax uses (see the test); 0 below −87.
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // Round x·log2(e) to the nearest integer with the 1.5·2^23 trick.
    let t = x * std::f32::consts::LOG2_E + 12_582_912.0;
    let n = t - 12_582_912.0;
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4 * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    // Wrapping: the same bits, and no overflow check (a debug build's would keep the
    // loop scalar).
    let e = (t.to_bits() as i32)
        .wrapping_sub(0x4b40_0000)
        .wrapping_add(127)
        .wrapping_shl(23);
    y * f32::from_bits(e as u32)
}

/// BERT's GELU: `x · Φ(x)` with the error function.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function as a rational function of `x` (Eigen's fast erf for f32, the
/// one TensorFlow uses too): no branches, no `exp` and no `mul_add` (a libm call
/// without FMA at compile time), so the compiler vectorizes the GELU loop; within
/// 1e-6 of `erf` (see the test).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * ERF_P[0] + ERF_P[1];
    for &c in &ERF_P[2..] {
        p = x2 * p + c;
    }
    let mut q = x2 * ERF_Q[0] + ERF_Q[1];
    for &c in &ERF_Q[2..] {
        q = x2 * q + c;
    }
    x * p / q
}

/// [`erf`]'s numerator and denominator, polynomials in `x²`, highest power first.
const ERF_P: [f32; 7] = [
    -2.726_142_3e-10,
    2.770_681_4e-8,
    -2.101_024e-6,
    -5.692_506_4e-5,
    -7.349_906e-4,
    -2.954_600_2e-3,
    -1.609_603_3e-2,
];
const ERF_Q: [f32; 5] = [
    -1.456_607_2e-5,
    -2.133_740_6e-4,
    -1.682_827e-3,
    -7.373_329_3e-3,
    -1.426_474e-2,
];

#[cfg(test)]
mod tests {
    #[test]
    fn fast_exp_is_within_two_ulp() {
        let mut worst = 0f64;
        for i in -870_000..=880_000 {
            let x = i as f32 / 10_000.0;
            let (got, want) = (super::exp(x) as f64, (x as f64).exp());
            worst = worst.max((got - want).abs() / want);
        }
        assert!(worst < 2.5e-7, "worst relative error {worst}");
        assert_eq!(super::exp(-200.0), super::exp(-87.0));
        assert!(super::exp(-87.0) < 2e-38);
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_the_order() {
        let mut row: Vec<f32> = (0..37).map(|i| (i as f32 * 0.7).sin() * 9.0).collect();
        let orig = row.clone();
        let mut row16 = vec![0u16; 37];
        super::softmax_scaled(&mut row, 0.5, Some(&mut row16));
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "{sum}");
        let m = orig.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let z: f64 = orig.iter().map(|v| ((v - m) as f64 * 0.5).exp()).sum();
        for ((p, v), p16) in row.iter().zip(&orig).zip(&row16) {
            let want = ((v - m) as f64 * 0.5).exp() / z;
            assert!((*p as f64 - want).abs() < 1e-6, "{p} vs {want}");
            assert_eq!(*p16, crate::embed::kernels::amx::bf16(*p));
        }
    }

    #[test]
    fn exp_bf16_is_the_softmax_before_its_division() {
        let row: Vec<f32> = (0..41).map(|i| (i as f32 * 0.3).cos() * 7.0).collect();
        let mut p = row.clone();
        super::softmax_scaled(&mut p, 0.25, None);
        let mut e16 = vec![0u16; 41];
        let sum = super::exp_bf16(&row, 0.25, &mut e16);
        for (pi, ei) in p.iter().zip(&e16) {
            let e = crate::embed::kernels::amx::f32_of(*ei) / sum;
            assert!((e - pi).abs() <= pi * 1e-2 + 1e-7, "{e} vs {pi}");
        }
        let mut e = row.clone();
        let sum = super::exp_scaled(&mut e, 0.25);
        for (pi, ei) in p.iter().zip(&e) {
            assert_eq!((ei * (1.0 / sum)).to_bits(), pi.to_bits());
        }
    }

    #[test]
    fn exp_scaled_is_within_two_ulp_at_every_length() {
        for n in [1, 15, 16, 17, 200, 256] {
            let row: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 60.0).collect();
            let mut e = row.clone();
            let sum = super::exp_scaled(&mut e, 0.5);
            let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64 * 0.5;
            let mut want_sum = 0f64;
            for (&x, &got) in row.iter().zip(&e) {
                // The exponent as the kernel has it: `scale·x − max` rounded once to f32.
                let want = ((x as f64 * 0.5 - m) as f32 as f64).exp();
                want_sum += want;
                let err = (got as f64 - want).abs();
                assert!(
                    err <= want * 2.5e-7 || (want < 1e-37 && got < 2e-38),
                    "{got} vs {want}"
                );
            }
            assert!(
                (sum as f64 - want_sum).abs() <= want_sum * 1e-6,
                "{sum} vs {want_sum}"
            );
        }
    }

    #[test]
    fn residual_norm_matches_the_formula() {
        let h = 40;
        let mut y: Vec<f32> = (0..2 * h).map(|i| (i as f32 * 0.37).cos()).collect();
        let x: Vec<f32> = (0..2 * h).map(|i| (i as f32 * 0.11).sin()).collect();
        let w: Vec<f32> = (0..h).map(|i| 1.0 + i as f32 / 100.0).collect();
        let b: Vec<f32> = (0..h).map(|i| i as f32 / 50.0).collect();
        let want: Vec<f64> = y
            .chunks(h)
            .zip(x.chunks(h))
            .flat_map(|(yr, xr)| {
                let s: Vec<f64> = yr.iter().zip(xr).map(|(a, b)| (a + b) as f64).collect();
                let mean = s.iter().sum::<f64>() / h as f64;
                let var = s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / h as f64;
                let inv = 1.0 / (var + 1e-12).sqrt();
                s.iter()
                    .enumerate()
                    .map(|(j, v)| (v - mean) * inv * w[j] as f64 + b[j] as f64)
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut y16 = vec![0u16; 2 * h];
        super::residual_norm(&mut y, &x, &w, &b, 1e-12, &mut y16);
        for (i, (g, w)) in y.iter().zip(&want).enumerate() {
            assert!((*g as f64 - w).abs() < 1e-5, "{i}: {g} vs {w}");
            assert_eq!(y16[i], crate::embed::kernels::amx::bf16(*g));
        }
    }

    /// The AVX-512 GELU against the plain one (and so the exact one), over the
    /// range where GELU is not yet 0 or `x`, at ragged lengths.
    #[test]
    fn gelu_slice_is_the_plain_gelu() {
        for n in [1usize, 15, 16, 17, 100, 1536] {
            let x: Vec<f32> = (0..n)
                .map(|i| (i as f32 * 0.731).sin() * 6.0 + (i % 7) as f32 * 0.01)
                .collect();
            let mut y = x.clone();
            let mut y16 = vec![0u16; n];
            super::gelu_slice(&mut y, Some(&mut y16));
            for (i, (&g, &v)) in y.iter().zip(&x).enumerate() {
                let want = super::gelu(v);
                assert!(
                    (g - want).abs() <= 1e-6 * (1.0 + v.abs()),
                    "{n}/{i}: gelu({v}) {g} vs {want}"
                );
                assert_eq!(y16[i], crate::embed::kernels::amx::bf16(g));
            }
        }
        // Past the clamp: 0 far below, `x` far above.
        let mut far = vec![-30.0f32, -5.0, 0.0, 5.0, 30.0];
        super::gelu_slice(&mut far, None);
        for (g, want) in far.iter().zip([0.0f32, 0.0, 0.0, 5.0, 30.0]) {
            assert!((g - want).abs() < 1e-5, "{far:?}");
        }
    }

    #[test]
    fn fast_erf_matches_the_exact_one() {
        let mut worst = 0f32;
        for i in -80_000..=80_000 {
            let x = i as f32 / 10_000.0;
            let d = (super::erf(x) - candle_core::cpu::erf::erf_f32(x)).abs();
            worst = worst.max(d);
        }
        assert!(worst < 1e-6, "worst error {worst}");
    }
}
