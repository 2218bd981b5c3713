//! AVX2 Q4_0 / Q4_1 / Q8_0 kernels: llama.cpp's AVX2 `ggml_vec_dot_q4_0_q8_0`,
//! `ggml_vec_dot_q4_1_q8_1` and `ggml_vec_dot_q8_0_q8_0` (`ggml-cpu/arch/x86/quants.c`),
//! one activation row, or two weight rows against [`ROWS`] activation rows at once.
#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use super::q8::{Kind, Q8Block};
use crate::cpu::{f16_at, f16_table};

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

/// The scale of the Q4_0 / Q4_1 / Q8_0 block at `b` (`b[0..2]`), read from `table`.
#[inline(always)]
fn scale(table: &[f32], b: &[u8]) -> f32 {
    table[usize::from(u16::from_le_bytes([b[0], b[1]]))]
}

/// Two weight rows against `R` activation rows: `2·R` outputs, each computed with
/// exactly the operations of the one-row kernel of its type ([`q4_0`], [`q4_1`],
/// [`q8_0`]), so the bits are the same. Each weight block is unpacked once for the
/// `R` rows, and each activation block is loaded once for the two weight rows.
#[target_feature(enable = "avx2,fma")]
fn pair_rows<const KIND: u8, const R: usize>(
    w: [&[u8]; 2],
    ys: [&[Q8Block]; R],
    out: &mut [[f32; R]; 2],
) {
    let kind = [Kind::Q4_0, Kind::Q4_1, Kind::Q8_0][usize::from(KIND)];
    let table = f16_table();
    let bytes = kind.block_bytes();
    let nb = w[0].len() / bytes;
    assert!(w[1].len() == nb * bytes && ys.iter().all(|y| y.len() >= nb));
    let mut acc = [[_mm256_setzero_ps(); R]; 2];
    let mut summs = [[0f32; R]; 2];
    for i in 0..nb {
        let b = [
            &w[0][i * bytes..(i + 1) * bytes],
            &w[1][i * bytes..(i + 1) * bytes],
        ];
        let dw = [scale(table, b[0]), scale(table, b[1])];
        match kind {
            Kind::Q4_1 => {
                let mw = [scale(table, &b[0][2..]), scale(table, &b[1][2..])];
                let qx = [nibbles(&b[0][4..]), nibbles(&b[1][4..])];
                for r in 0..R {
                    let y = &ys[r][i];
                    let qy = load32(&y.qs);
                    for c in 0..2 {
                        summs[c][r] += mw[c] * y.s;
                        let d = _mm256_set1_ps(dw[c] * y.d);
                        acc[c][r] = _mm256_fmadd_ps(d, mul_sum_us8(qx[c], qy), acc[c][r]);
                    }
                }
            }
            Kind::Q4_0 | Kind::Q8_0 => {
                let qx = if kind == Kind::Q4_0 {
                    let eight = _mm256_set1_epi8(8);
                    [
                        _mm256_sub_epi8(nibbles(&b[0][2..]), eight),
                        _mm256_sub_epi8(nibbles(&b[1][2..]), eight),
                    ]
                } else {
                    // SAFETY: a Q8_0 block has 32 bytes after its scale.
                    unsafe {
                        [
                            _mm256_loadu_si256(b[0][2..34].as_ptr().cast()),
                            _mm256_loadu_si256(b[1][2..34].as_ptr().cast()),
                        ]
                    }
                };
                let ax = [
                    _mm256_sign_epi8(qx[0], qx[0]),
                    _mm256_sign_epi8(qx[1], qx[1]),
                ];
                for r in 0..R {
                    let y = &ys[r][i];
                    let qy = load32(&y.qs);
                    for c in 0..2 {
                        let d = _mm256_set1_ps(dw[c] * y.d);
                        let p = mul_sum_us8(ax[c], _mm256_sign_epi8(qy, qx[c]));
                        acc[c][r] = _mm256_fmadd_ps(d, p, acc[c][r]);
                    }
                }
            }
        }
    }
    for c in 0..2 {
        for r in 0..R {
            out[c][r] = hsum(acc[c][r]);
            if kind == Kind::Q4_1 {
                out[c][r] += summs[c][r];
            }
        }
    }
}

/// Activation rows of [`dot_pair`].
pub const ROWS: usize = 4;

// Safe entry points: `kernel()` hands these out only after detecting AVX2 and FMA.
pub fn dot_pair(kind: Kind, w: [&[u8]; 2], ys: [&[Q8Block]; ROWS], out: &mut [[f32; ROWS]; 2]) {
    // SAFETY: as above.
    unsafe {
        match kind {
            Kind::Q4_0 => pair_rows::<0, ROWS>(w, ys, out),
            Kind::Q4_1 => pair_rows::<1, ROWS>(w, ys, out),
            Kind::Q8_0 => pair_rows::<2, ROWS>(w, ys, out),
        }
    }
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
