//! AVX2 Q4_0 / Q4_1 / Q8_0 kernels: llama.cpp's AVX2 `ggml_vec_dot_q4_0_q8_0`,
//! `ggml_vec_dot_q4_1_q8_1` and `ggml_vec_dot_q8_0_q8_0` (`ggml-cpu/arch/x86/quants.c`),
//! one activation row, or several weight rows against several activation rows at once
//! ([`dot_2x4`]; for Q8_0 [`dot_q8_0_4x2`], its loop in assembly).
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

/// `W` weight rows against `R` activation rows: `W·R` outputs, each computed with
/// exactly the operations of the one-row kernel of its type ([`q4_0`], [`q4_1`],
/// [`q8_0`]), so the bits are the same. Each weight block is unpacked once for the
/// `R` rows, and each activation block is loaded once for the `W` weight rows.
// `i` walks all `W + R` rows at once.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx2,fma")]
fn block_rows<const KIND: u8, const W: usize, const R: usize>(
    w: [&[u8]; W],
    ys: [&[Q8Block]; R],
    out: &mut [[f32; R]; W],
) {
    let kind = [Kind::Q4_0, Kind::Q4_1, Kind::Q8_0][usize::from(KIND)];
    let table: &[f32; 1 << 16] = f16_table().try_into().expect("a table of every f16");
    let bytes = kind.block_bytes();
    let nb = w[0].len() / bytes;
    assert!(w.iter().all(|w| w.len() == nb * bytes) && ys.iter().all(|y| y.len() >= nb));
    let mut acc = [[_mm256_setzero_ps(); R]; W];
    let mut summs = [[0f32; R]; W];
    let mut dw = [0f32; W];
    let mut mw = [0f32; W];
    let mut qx = [_mm256_setzero_si256(); W];
    for i in 0..nb {
        let at = i * bytes;
        for c in 0..W {
            let b = &w[c][at..at + bytes];
            dw[c] = table[usize::from(u16::from_le_bytes([b[0], b[1]]))];
            qx[c] = match kind {
                Kind::Q4_0 => _mm256_sub_epi8(nibbles(&b[2..]), _mm256_set1_epi8(8)),
                Kind::Q4_1 => {
                    mw[c] = table[usize::from(u16::from_le_bytes([b[2], b[3]]))];
                    nibbles(&b[4..])
                }
                // SAFETY: a Q8_0 block has 32 bytes after its scale.
                Kind::Q8_0 => unsafe { _mm256_loadu_si256(b[2..34].as_ptr().cast()) },
            };
        }
        for r in 0..R {
            let y = &ys[r][i];
            let qy = load32(&y.qs);
            for c in 0..W {
                let d = _mm256_set1_ps(dw[c] * y.d);
                let p = if kind == Kind::Q4_1 {
                    summs[c][r] += mw[c] * y.s;
                    mul_sum_us8(qx[c], qy)
                } else {
                    mul_sum_us8(_mm256_sign_epi8(qx[c], qx[c]), _mm256_sign_epi8(qy, qx[c]))
                };
                acc[c][r] = _mm256_fmadd_ps(d, p, acc[c][r]);
            }
        }
    }
    for c in 0..W {
        for r in 0..R {
            out[c][r] = hsum(acc[c][r]);
            if kind == Kind::Q4_1 {
                out[c][r] += summs[c][r];
            }
        }
    }
}

/// One weight row's Q8_0 block (`w*`) against the two activation blocks, inside
/// [`q8_0_4x2`]: `|qx|`, then for each activation row the operations of [`q8_0`] in
/// its order: `sign`, `maddubs`, `madd` with ones, `cvt`, and `fma` with the scale
/// `dw · y.d` (computed for the block's eight pairs at once, at `{d}`) into the sum.
macro_rules! q8_0_col {
    ($w:literal, $c:literal, $acc0:literal, $acc1:literal) => {
        concat!(
            "vmovdqu {t0}, ymmword ptr [{",
            $w,
            "} + 2]\n",
            "vpsignb {t1}, {t0}, {t0}\n",
            "vpsignb {t2}, {qy0}, {t0}\n",
            "vpmaddubsw {t2}, {t1}, {t2}\n",
            "vpmaddwd {t2}, {ones}, {t2}\n",
            "vcvtdq2ps {t2}, {t2}\n",
            "vbroadcastss {t3}, dword ptr [{d} + 4*",
            $c,
            "]\n",
            "vfmadd231ps {",
            $acc0,
            "}, {t3}, {t2}\n",
            "vpsignb {t2}, {qy1}, {t0}\n",
            "vpmaddubsw {t2}, {t1}, {t2}\n",
            "vpmaddwd {t2}, {ones}, {t2}\n",
            "vcvtdq2ps {t2}, {t2}\n",
            "vbroadcastss {t3}, dword ptr [{d} + 4*(4+",
            $c,
            ")]\n",
            "vfmadd231ps {",
            $acc1,
            "}, {t3}, {t2}\n",
        )
    };
}

// The layout the assembly below reads: 32 quants, then the scale `d`; 64 bytes.
const _: () =
    assert!(std::mem::offset_of!(Q8Block, d) == 32 && std::mem::size_of::<Q8Block>() == 64);

/// [`block_rows`] for Q8_0 at 4 × 2 (llama.cpp's `tinyBLAS_Q0_AVX::gemm4xN<2>`
/// shape), its loop written out in assembly. Compiled from intrinsics, the eight sums
/// were spilled and moved between registers every block; and a `vmulss` +
/// `vbroadcastss` per output for its scale cost ~20% (measured): here the block's 8
/// scale products come from one `vmulps` and are broadcast from memory. The
/// operations and their order are those of [`q8_0`], so the bits are the same.
#[target_feature(enable = "avx2,fma,f16c")]
fn q8_0_4x2(w: [&[u8]; 4], ys: [&[Q8Block]; 2], out: &mut [[f32; 2]; 4]) {
    const BYTES: usize = 34;
    let nb = w[0].len() / BYTES;
    assert!(w.iter().all(|w| w.len() == nb * BYTES) && ys.iter().all(|y| y.len() >= nb));
    let mut a = [_mm256_setzero_ps(); 8];
    if nb > 0 {
        let [mut w0, mut w1, mut w2, mut w3] = w.map(<[u8]>::as_ptr);
        let [mut y0, mut y1] = ys.map(<[Q8Block]>::as_ptr);
        let mut n = nb;
        let mut d = [0f32; 8];
        // SAFETY: the four weight rows hold `nb` blocks of 34 bytes and the two
        // activation rows at least `nb` blocks (asserted above); the loop reads block
        // by block, `nb` times. The only memory it writes is `d`, 8 floats. It does
        // not touch the stack, and F16C is enabled for this function.
        unsafe {
            std::arch::asm!(
                "2:",
                // The four weight scales (f16, widened exactly by F16C) times each
                // activation row's scale: lanes c (row 0) and 4 + c (row 1), to `{d}`.
                "movzx {s:e}, word ptr [{w0}]",
                "vmovd {t1:x}, {s:e}",
                "vpinsrw {t1:x}, {t1:x}, word ptr [{w1}], 1",
                "vpinsrw {t1:x}, {t1:x}, word ptr [{w2}], 2",
                "vpinsrw {t1:x}, {t1:x}, word ptr [{w3}], 3",
                "vcvtph2ps {t1:x}, {t1:x}",
                "vinsertf128 {t1}, {t1}, {t1:x}, 1",
                "vbroadcastss {t3:x}, dword ptr [{y0} + 32]",
                "vbroadcastss {t2:x}, dword ptr [{y1} + 32]",
                "vinsertf128 {t3}, {t3}, {t2:x}, 1",
                "vmulps {t1}, {t1}, {t3}",
                "vmovups ymmword ptr [{d}], {t1}",
                "vmovdqu {qy0}, ymmword ptr [{y0}]",
                "vmovdqu {qy1}, ymmword ptr [{y1}]",
                q8_0_col!("w0", "0", "a0", "a4"),
                q8_0_col!("w1", "1", "a1", "a5"),
                q8_0_col!("w2", "2", "a2", "a6"),
                q8_0_col!("w3", "3", "a3", "a7"),
                "add {w0}, 34",
                "add {w1}, 34",
                "add {w2}, 34",
                "add {w3}, 34",
                "add {y0}, 64",
                "add {y1}, 64",
                "dec {n}",
                "jnz 2b",
                w0 = inout(reg) w0,
                w1 = inout(reg) w1,
                w2 = inout(reg) w2,
                w3 = inout(reg) w3,
                y0 = inout(reg) y0,
                y1 = inout(reg) y1,
                n = inout(reg) n,
                d = in(reg) d.as_mut_ptr(),
                s = out(reg) _,
                ones = in(ymm_reg) _mm256_set1_epi16(1),
                t0 = out(ymm_reg) _,
                t1 = out(ymm_reg) _,
                t2 = out(ymm_reg) _,
                t3 = out(ymm_reg) _,
                qy0 = out(ymm_reg) _,
                qy1 = out(ymm_reg) _,
                a0 = inout(ymm_reg) a[0],
                a1 = inout(ymm_reg) a[1],
                a2 = inout(ymm_reg) a[2],
                a3 = inout(ymm_reg) a[3],
                a4 = inout(ymm_reg) a[4],
                a5 = inout(ymm_reg) a[5],
                a6 = inout(ymm_reg) a[6],
                a7 = inout(ymm_reg) a[7],
                options(nostack),
            );
        }
        let _ = (w0, w1, w2, w3, y0, y1, n);
    }
    for c in 0..4 {
        out[c] = [hsum(a[c]), hsum(a[4 + c])];
    }
}

// Safe entry points: `plain` hands these out only after detecting AVX2 and FMA
// (and F16C for [`dot_q8_0_4x2`]).
/// Two weight rows against four activation rows ([`block_rows`]).
pub fn dot_2x4(kind: Kind, w: [&[u8]; 2], ys: [&[Q8Block]; 4], out: &mut [[f32; 4]; 2]) {
    // SAFETY: only reachable when the CPU has AVX2 and FMA.
    unsafe {
        match kind {
            Kind::Q4_0 => block_rows::<0, 2, 4>(w, ys, out),
            Kind::Q4_1 => block_rows::<1, 2, 4>(w, ys, out),
            Kind::Q8_0 => block_rows::<2, 2, 4>(w, ys, out),
        }
    }
}
/// Four Q8_0 weight rows against two activation rows ([`q8_0_4x2`]).
pub fn dot_q8_0_4x2(w: [&[u8]; 4], ys: [&[Q8Block]; 2], out: &mut [[f32; 2]; 4]) {
    assert!(crate::cpu::has_f16c(), "the Q8_0 4x2 kernel needs F16C");
    // SAFETY: only reachable when the CPU has AVX2 and FMA; F16C is checked.
    unsafe { q8_0_4x2(w, ys, out) }
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::needless_range_loop)]
mod tests {
    use super::super::portable;
    use super::*;

    /// Bytes of every value, the same for every run (from the module's test floats).
    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        super::super::tests::rnd(n, seed)
            .iter()
            .map(|v| ((v + 1.0) * 127.99) as u8)
            .collect()
    }

    /// Raw blocks of `kind` with random quants (every byte value, -128 included) and
    /// scales drawn from f16s of ordinary size, tiny (subnormal) ones and -0.0.
    fn weight_row(kind: Kind, nb: usize, seed: u64) -> Vec<u8> {
        let mut w = bytes(nb * kind.block_bytes(), seed);
        let scales = [0x2E66u16, 0xA8F5, 0x0003, 0x8000, 0x1C00, 0x3555];
        for (i, b) in w.chunks_exact_mut(kind.block_bytes()).enumerate() {
            b[..2].copy_from_slice(&scales[i % scales.len()].to_le_bytes());
            if kind == Kind::Q4_1 {
                b[2..4].copy_from_slice(&scales[(i + 3) % scales.len()].to_le_bytes());
            }
        }
        w
    }

    fn activation_row(nb: usize, seed: u64) -> Vec<Q8Block> {
        let q = bytes(nb * QK_BLOCK, seed);
        let table = f16_table();
        (0..nb)
            .map(|i| {
                let mut b = Q8Block::default();
                for (v, r) in b.qs.iter_mut().zip(&q[i * QK_BLOCK..]) {
                    // Activations are quantized to -127..=127.
                    *v = (*r as i8).max(-127);
                }
                b.d = table[usize::from(0x2000u16 + (i as u16 * 37) % 0x1000)];
                b.s = table[usize::from(0x2400u16 + (i as u16 * 11) % 0x800)];
                b
            })
            .collect()
    }
    const QK_BLOCK: usize = 32;

    /// The many-row kernels give each output the bits of the portable one-row loop
    /// (itself llama.cpp's AVX2 order): every kind at 2 × 4, Q8_0 at 4 × 2 (the
    /// assembly), over several lengths.
    #[test]
    fn block_kernels_have_the_bits_of_the_one_row_loop() {
        assert!(
            crate::cpu::has_avx2_fma() && crate::cpu::has_f16c(),
            "these kernels are for CPUs with AVX2, FMA and F16C"
        );
        for nb in [1, 2, 7, 28, 48] {
            let ys: Vec<Vec<Q8Block>> = (0..4).map(|r| activation_row(nb, 100 + r)).collect();
            for kind in [Kind::Q4_0, Kind::Q4_1, Kind::Q8_0] {
                let ws: Vec<Vec<u8>> = (0..4).map(|c| weight_row(kind, nb, 7 + c)).collect();
                let one = |c: usize, r: usize| match kind {
                    Kind::Q4_0 => portable::dot_q4_0(&ws[c], &ys[r]),
                    Kind::Q4_1 => portable::dot_q4_1(&ws[c], &ys[r]),
                    Kind::Q8_0 => portable::dot_q8_0(&ws[c], &ys[r]),
                };
                let mut out = [[0f32; 4]; 2];
                dot_2x4(
                    kind,
                    [&ws[0], &ws[1]],
                    std::array::from_fn(|r| &ys[r][..]),
                    &mut out,
                );
                for c in 0..2 {
                    for r in 0..4 {
                        assert_eq!(
                            out[c][r].to_bits(),
                            one(c, r).to_bits(),
                            "{kind:?} 2x4 {nb}"
                        );
                    }
                }
                if kind == Kind::Q8_0 {
                    let mut out = [[0f32; 2]; 4];
                    dot_q8_0_4x2(
                        std::array::from_fn(|c| &ws[c][..]),
                        [&ys[0], &ys[1]],
                        &mut out,
                    );
                    for c in 0..4 {
                        for r in 0..2 {
                            let want = one(c, r);
                            assert_eq!(out[c][r].to_bits(), want.to_bits(), "Q8_0 4x2 {nb}");
                            assert!(want.is_finite() && want != 0.0);
                        }
                    }
                }
            }
        }
    }
}
