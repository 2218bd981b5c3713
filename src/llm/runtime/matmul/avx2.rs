//! AVX2 Q4_0 / Q4_1 / Q8_0 kernels: llama.cpp's AVX2 `ggml_vec_dot_q4_0_q8_0`,
//! `ggml_vec_dot_q4_1_q8_1` and `ggml_vec_dot_q8_0_q8_0` (`ggml-cpu/arch/x86/quants.c`),
//! one activation row or four at once.
#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use super::q8::Q8Block;
use crate::cpu::f16_at;

#[inline]
#[target_feature(enable = "avx2,fma")]
fn hsum(x: __m256) -> f32 {
    let r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    let r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    let r = _mm_add_ss(r, _mm_movehdup_ps(r));
    _mm_cvtss_f32(r)
}

/// u8 × i8 products summed in pairs, then in fours, as 8 floats.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn mul_sum_us8(ax: __m256i, sy: __m256i) -> __m256 {
    let dot = _mm256_maddubs_epi16(ax, sy);
    _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_set1_epi16(1), dot))
}

#[inline]
#[target_feature(enable = "avx2,fma")]
fn mul_sum_i8(x: __m256i, y: __m256i) -> __m256 {
    mul_sum_us8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x))
}

/// 16 bytes of nibbles → 32 bytes: low nibbles first, then high nibbles.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn nibbles(b: &[u8]) -> __m256i {
    debug_assert!(b.len() >= 16);
    // SAFETY: `b` holds at least 16 bytes (checked by the callers' block sizes).
    let tmp = unsafe { _mm_loadu_si128(b.as_ptr().cast()) };
    let both = _mm256_insertf128_si256::<1>(_mm256_castsi128_si256(tmp), _mm_srli_epi16(tmp, 4));
    _mm256_and_si256(_mm256_set1_epi8(0xF), both)
}

#[inline]
#[target_feature(enable = "avx2,fma")]
fn load32(q: &[i8; 32]) -> __m256i {
    // SAFETY: 32 readable bytes.
    unsafe { _mm256_loadu_si256(q.as_ptr().cast()) }
}

#[target_feature(enable = "avx2,fma")]
fn q4_0(w: &[u8], ys: &[Q8Block]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    for (b, y) in w.chunks_exact(18).zip(ys) {
        let d = _mm256_set1_ps(f16_at(b, 0) * y.d);
        let qx = _mm256_sub_epi8(nibbles(&b[2..]), _mm256_set1_epi8(8));
        acc = _mm256_fmadd_ps(d, mul_sum_i8(qx, load32(&y.qs)), acc);
    }
    hsum(acc)
}

#[target_feature(enable = "avx2,fma")]
fn q4_1(w: &[u8], ys: &[Q8Block]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    let mut summs = 0f32;
    for (b, y) in w.chunks_exact(20).zip(ys) {
        summs += f16_at(b, 2) * y.s;
        let d = _mm256_set1_ps(f16_at(b, 0) * y.d);
        acc = _mm256_fmadd_ps(d, mul_sum_us8(nibbles(&b[4..]), load32(&y.qs)), acc);
    }
    hsum(acc) + summs
}

#[target_feature(enable = "avx2,fma")]
fn q8_0(w: &[u8], ys: &[Q8Block]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    for (b, y) in w.chunks_exact(34).zip(ys) {
        let d = _mm256_set1_ps(f16_at(b, 0) * y.d);
        // SAFETY: a Q8_0 block has 32 bytes after its scale.
        let qx = unsafe { _mm256_loadu_si256(b[2..34].as_ptr().cast()) };
        acc = _mm256_fmadd_ps(d, mul_sum_i8(qx, load32(&y.qs)), acc);
    }
    hsum(acc)
}

// Four activation rows against one weight row: the weight's blocks are unpacked
// once for the four, and each output is computed with exactly the operations of
// the one-row kernel above, so the bits are the same.

#[target_feature(enable = "avx2,fma")]
fn q4_0_x4(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
    let mut acc = [_mm256_setzero_ps(); 4];
    for (i, b) in w.chunks_exact(18).enumerate() {
        let dw = f16_at(b, 0);
        let qx = _mm256_sub_epi8(nibbles(&b[2..]), _mm256_set1_epi8(8));
        for r in 0..4 {
            let y = &ys[r][i];
            let d = _mm256_set1_ps(dw * y.d);
            acc[r] = _mm256_fmadd_ps(d, mul_sum_i8(qx, load32(&y.qs)), acc[r]);
        }
    }
    for r in 0..4 {
        out[r] = hsum(acc[r]);
    }
}

#[target_feature(enable = "avx2,fma")]
fn q4_1_x4(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut summs = [0f32; 4];
    for (i, b) in w.chunks_exact(20).enumerate() {
        let (dw, mw) = (f16_at(b, 0), f16_at(b, 2));
        let qx = nibbles(&b[4..]);
        for r in 0..4 {
            let y = &ys[r][i];
            summs[r] += mw * y.s;
            let d = _mm256_set1_ps(dw * y.d);
            acc[r] = _mm256_fmadd_ps(d, mul_sum_us8(qx, load32(&y.qs)), acc[r]);
        }
    }
    for r in 0..4 {
        out[r] = hsum(acc[r]) + summs[r];
    }
}

#[target_feature(enable = "avx2,fma")]
fn q8_0_x4(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
    let mut acc = [_mm256_setzero_ps(); 4];
    for (i, b) in w.chunks_exact(34).enumerate() {
        let dw = f16_at(b, 0);
        // SAFETY: a Q8_0 block has 32 bytes after its scale.
        let qx = unsafe { _mm256_loadu_si256(b[2..34].as_ptr().cast()) };
        for r in 0..4 {
            let y = &ys[r][i];
            let d = _mm256_set1_ps(dw * y.d);
            acc[r] = _mm256_fmadd_ps(d, mul_sum_i8(qx, load32(&y.qs)), acc[r]);
        }
    }
    for r in 0..4 {
        out[r] = hsum(acc[r]);
    }
}

// Safe entry points: `kernel()` hands these out only after detecting AVX2 and FMA.
pub fn dot4_q4_0(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
    // SAFETY: only reachable when the CPU has AVX2 and FMA (see `kernel4`).
    unsafe { q4_0_x4(w, ys, out) }
}
pub fn dot4_q4_1(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
    // SAFETY: as above.
    unsafe { q4_1_x4(w, ys, out) }
}
pub fn dot4_q8_0(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
    // SAFETY: as above.
    unsafe { q8_0_x4(w, ys, out) }
}
pub fn dot_q4_0(w: &[u8], ys: &[Q8Block]) -> f32 {
    // SAFETY: only reachable when the CPU has AVX2 and FMA (see `kernel`).
    unsafe { q4_0(w, ys) }
}
pub fn dot_q4_1(w: &[u8], ys: &[Q8Block]) -> f32 {
    // SAFETY: as above.
    unsafe { q4_1(w, ys) }
}
pub fn dot_q8_0(w: &[u8], ys: &[Q8Block]) -> f32 {
    // SAFETY: as above.
    unsafe { q8_0(w, ys) }
}
