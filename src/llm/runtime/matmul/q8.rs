//! The 8-bit activation blocks every own kernel reads, and the weight block layouts
//! they share: ggml's x86 `quantize_row_q8_1` / `quantize_row_q8_0` (round half to
//! even, `127/amax`, the block sum through f16), and Q5_0 weights rewritten as the
//! Q8_0 blocks of the same values (what `ggml_vec_dot_q5_0_q8_0` computes).
//! Matches llama.cpp's `ggml/src/ggml-cpu/arch/x86/quants.c`.

use half::f16;

#[cfg(target_arch = "x86_64")]
use crate::cpu::{has_avx2_fma, has_avx512};

/// Values per quantization block (all types here).
pub(crate) const QK: usize = 32;

/// Weight block layouts (bytes): Q4_0 = d + 16 nibble bytes; Q4_1 = d, m + 16;
/// Q8_0 = d + 32 signed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Q4_0,
    Q4_1,
    Q8_0,
}

impl Kind {
    pub(crate) fn block_bytes(self) -> usize {
        match self {
            Kind::Q4_0 => 18,
            Kind::Q4_1 => 20,
            Kind::Q8_0 => 34,
        }
    }
}

/// Bytes of a Q5_0 block: the f16 scale, 32 high bits, 16 bytes of low nibbles.
pub(super) const Q5_0_BYTES: usize = 22;

/// Q5_0 blocks rewritten as Q8_0 blocks of the same values (`q = (nibble | high
/// bit << 4) − 16`, the same scale): lossless, and the same arithmetic, since
/// llama.cpp's `ggml_vec_dot_q5_0_q8_0` expands each block to exactly these signed
/// bytes and then runs `ggml_vec_dot_q8_0_q8_0`'s steps (per block `d = dx·dy`,
/// 8 lanes of 4 products, `acc = fma(d, lanes, acc)`, `hsum_float_8`).
pub(super) fn q5_0_as_q8_0(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / Q5_0_BYTES * 34);
    for b in data.chunks_exact(Q5_0_BYTES) {
        let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        out.extend_from_slice(&b[0..2]);
        for i in 0..QK {
            let nib = if i < 16 {
                b[6 + i] & 0xF
            } else {
                b[6 + i - 16] >> 4
            };
            let hi = ((qh >> i) & 1) as u8;
            out.push(((nib | (hi << 4)) as i8 - 16) as u8);
        }
    }
    out
}

/// An activation block quantized to 8 bits: scale `d`, for Q8_1 also `s = d·Σq`
/// (both as f16 values widened to f32, as ggml stores them), and the 32 values.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
pub(crate) struct Q8Block {
    pub(crate) qs: [i8; QK],
    pub(crate) d: f32,
    pub(crate) s: f32,
}

impl Default for Q8Block {
    fn default() -> Self {
        Self {
            qs: [0; QK],
            d: 0.0,
            s: 0.0,
        }
    }
}

/// Quantize `x` (a multiple of 32 long) into `out` as ggml's x86 `quantize_row_q8_1`
/// does (which for `d` and `qs` is also `quantize_row_q8_0`).
pub(crate) fn quantize_row_q8(x: &[f32], out: &mut [Q8Block]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512 F/BW/VL (checked).
        unsafe { quantize_row_q8_512(x, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked).
        unsafe { quantize_row_q8_avx2(x, out) };
        return;
    }
    quantize_row_q8_body(x, out);
}

/// The same arithmetic on AVX-512 registers, a block (two registers) at a time:
/// the maximum is order-free, each value is scaled and rounded to even alone, the
/// integer sum is exact.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn quantize_row_q8_512(x: &[f32], out: &mut [Q8Block]) {
    use std::arch::x86_64::*;
    for (xb, y) in x.chunks_exact(QK).zip(out.iter_mut()) {
        // SAFETY: 32 readable floats in `xb`, 32 writable bytes in `y.qs`.
        unsafe {
            let a = _mm512_loadu_ps(xb.as_ptr());
            let b = _mm512_loadu_ps(xb.as_ptr().add(16));
            let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
            let d = amax / 127.0;
            let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
            let m = _mm512_set1_ps(id);
            let round = |v: __m512| {
                _mm512_cvtps_epi32(_mm512_roundscale_ps::<
                    { _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC },
                >(_mm512_mul_ps(v, m)))
            };
            let (qa, qb) = (round(a), round(b));
            let sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
            _mm_storeu_si128(y.qs.as_mut_ptr().cast(), _mm512_cvtepi32_epi8(qa));
            _mm_storeu_si128(y.qs.as_mut_ptr().add(16).cast(), _mm512_cvtepi32_epi8(qb));
            y.d = f16::from_f32(d).to_f32();
            y.s = f16::from_f32(d * sum as f32).to_f32();
        }
    }
}

/// The same code compiled with AVX2 (`round_ties_even` becomes one instruction
/// instead of a libm call); the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quantize_row_q8_avx2(x: &[f32], out: &mut [Q8Block]) {
    quantize_row_q8_body(x, out)
}

#[inline(always)]
fn quantize_row_q8_body(x: &[f32], out: &mut [Q8Block]) {
    for (xb, y) in x.chunks_exact(QK).zip(out.iter_mut()) {
        let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
        let mut sum = 0i32;
        for (q, &v) in y.qs.iter_mut().zip(xb) {
            // Round half to even, as `_mm256_round_ps(_MM_ROUND_NEAREST)`.
            let r = (v * id).round_ties_even() as i32;
            *q = r as i8;
            sum += r;
        }
        y.d = f16::from_f32(d).to_f32();
        y.s = f16::from_f32(d * sum as f32).to_f32();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_quantization_is_the_scalar_one() {
        use super::{quantize_row_q8, quantize_row_q8_body, Q8Block};
        let mut x: Vec<f32> = (0..32 * 40)
            .map(|i| ((i * 7919) % 2003) as f32 / 37.0 - 27.0)
            .collect();
        x[32..64].fill(0.0); // an all-zero block
        x[64..96].iter_mut().for_each(|v| *v *= 1e-30); // tiny values
        for (i, v) in x[96..128].iter_mut().enumerate() {
            *v = (i as f32 - 16.0) * 0.5 * 127.0 / 8.0; // exact halves: ties
        }
        let mut a = vec![Q8Block::default(); 40];
        let mut b = vec![Q8Block::default(); 40];
        quantize_row_q8(&x, &mut a);
        quantize_row_q8_body(&x, &mut b);
        for (i, (p, q)) in a.iter().zip(&b).enumerate() {
            assert_eq!(p.qs, q.qs, "block {i}");
            assert_eq!(p.d.to_bits(), q.d.to_bits(), "block {i}");
            assert_eq!(p.s.to_bits(), q.s.to_bits(), "block {i}");
        }
    }

    #[test]
    fn activation_quantization_rounds_half_to_even_and_keeps_the_block_sum() {
        let mut x = vec![0f32; 32];
        x[0] = 127.0; // d = 1, id = 1
        x[1] = 2.5;
        x[2] = -3.5;
        x[3] = 0.5;
        let mut q = [Q8Block::default()];
        quantize_row_q8(&x, &mut q);
        assert_eq!(&q[0].qs[..4], &[127, 2, -4, 0]);
        assert_eq!(q[0].d, 1.0);
        assert_eq!(q[0].s, 125.0);
        let mut z = [Q8Block::default()];
        quantize_row_q8(&[0f32; 32], &mut z);
        assert_eq!((z[0].d, z[0].s, z[0].qs), (0.0, 0.0, [0; 32]));
    }
}
