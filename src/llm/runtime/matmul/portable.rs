//! Portable Q4_0 / Q4_1 / Q8_0 kernels with the same arithmetic as the AVX2 ones: per
//! block an exact integer dot product, accumulated in 8 f32 lanes by fused
//! multiply-add (llama.cpp's AVX2 `ggml_vec_dot_q4_0_q8_0` and siblings, written out).

use super::q8::{Q8Block, QK};
use crate::cpu::f16_at;

/// Partial integer sums in the lane order of ggml's AVX2 reduction: lane `l` holds
/// the products of values 4l..4l+4 (maddubs pairs, then madd pairs).
fn lanes(xq: &[i32; QK], y: &[i8; QK]) -> [f32; 8] {
    let mut l = [0f32; 8];
    for (lane, out) in l.iter_mut().enumerate() {
        let s: i32 = (0..4)
            .map(|t| xq[lane * 4 + t] * i32::from(y[lane * 4 + t]))
            .sum();
        *out = s as f32;
    }
    l
}

fn hsum(acc: &[f32; 8]) -> f32 {
    // _mm256_extractf128 + add, movehl + add, movehdup + add_ss
    let a: [f32; 4] = std::array::from_fn(|i| acc[i] + acc[i + 4]);
    let b = [a[0] + a[2], a[1] + a[3]];
    b[0] + b[1]
}

fn fma_lanes(acc: &mut [f32; 8], d: f32, l: &[f32; 8]) {
    for (a, v) in acc.iter_mut().zip(l) {
        *a = d.mul_add(*v, *a);
    }
}

pub fn dot_q4_0(w: &[u8], ys: &[Q8Block]) -> f32 {
    let mut acc = [0f32; 8];
    for (b, y) in w.chunks_exact(18).zip(ys) {
        let mut xq = [0i32; QK];
        for i in 0..16 {
            xq[i] = i32::from(b[2 + i] & 0xF) - 8;
            xq[i + 16] = i32::from(b[2 + i] >> 4) - 8;
        }
        fma_lanes(&mut acc, f16_at(b, 0) * y.d, &lanes(&xq, &y.qs));
    }
    hsum(&acc)
}

pub fn dot_q4_1(w: &[u8], ys: &[Q8Block]) -> f32 {
    let mut acc = [0f32; 8];
    let mut summs = 0f32;
    for (b, y) in w.chunks_exact(20).zip(ys) {
        summs += f16_at(b, 2) * y.s;
        let mut xq = [0i32; QK];
        for i in 0..16 {
            xq[i] = i32::from(b[4 + i] & 0xF);
            xq[i + 16] = i32::from(b[4 + i] >> 4);
        }
        fma_lanes(&mut acc, f16_at(b, 0) * y.d, &lanes(&xq, &y.qs));
    }
    hsum(&acc) + summs
}

pub fn dot_q8_0(w: &[u8], ys: &[Q8Block]) -> f32 {
    let mut acc = [0f32; 8];
    for (b, y) in w.chunks_exact(34).zip(ys) {
        let xq: [i32; QK] = std::array::from_fn(|i| i32::from(b[2 + i] as i8));
        fma_lanes(&mut acc, f16_at(b, 0) * y.d, &lanes(&xq, &y.qs));
    }
    hsum(&acc)
}
