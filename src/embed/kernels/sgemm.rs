//! The encoder's dense layers in f32 on AVX-512: `y = x · wᵀ + b` with the weights
//! packed once at load into panels of 32 output columns (`k` rows of 32 values, two
//! registers), and a 12 × 32 register tile: 24 accumulators, two weight registers and
//! one broadcast of the input live in the 32 vector registers, so each step of `k`
//! is 24 fused multiply-adds against 14 loads, and the loop runs at the CPU's FMA rate.
//! The `gemm` crate's kernels on stable Rust stop at AVX2 (8 lanes), half of this.
//!
//! Every output value is the bias plus the products in `k` order, whatever the number
//! of threads (the rows are split between them, never a sum), so embeddings are the
//! same bits at every pool width.

use rayon::prelude::*;

/// Output columns per panel (two AVX-512 registers of f32).
const NR: usize = 32;
/// Rows per register tile.
const MR: usize = 12;
/// Rows per parallel task (a multiple of `MR`).
const MB: usize = 8 * MR;

/// A dense layer's `n × k` weight (out × in), packed: panel `p` holds columns
/// `32p..32p + 32` as `k` rows of 32 values (zeros past `n`).
pub struct PackedW {
    n: usize,
    k: usize,
    data: Vec<f32>,
}

impl PackedW {
    /// Pack the row-major `n × k` weight `w`.
    pub fn pack(w: &[f32], n: usize, k: usize) -> Self {
        assert_eq!(w.len(), n * k, "weight is not {n} × {k}");
        Self::pack_rows(w, k, n, k)
    }

    /// Pack the `n × k` matrix whose column `col` is the row `w[col·ld..][..k]` (the
    /// keys of an attention head, rows `3h` apart in the fused Q/K/V output).
    pub fn pack_rows(w: &[f32], ld: usize, n: usize, k: usize) -> Self {
        assert!(
            n == 0 || w.len() >= (n - 1) * ld + k,
            "{n} rows of {k} values {ld} apart"
        );
        let mut data = vec![0f32; n.div_ceil(NR) * k * NR];
        for (col, src) in (0..n).map(|c| (c, &w[c * ld..c * ld + k])) {
            let (panel, j) = (&mut data[col / NR * k * NR..][..k * NR], col % NR);
            for (dst, &v) in panel.chunks_exact_mut(NR).zip(src) {
                dst[j] = v;
            }
        }
        Self { n, k, data }
    }

    /// Pack the `n × k` matrix whose input `kk` is the row `w[kk·ld..][..n]` (the
    /// values of an attention head: value dimension `col` is output column `col`).
    pub fn pack_cols(w: &[f32], ld: usize, n: usize, k: usize) -> Self {
        assert!(
            k == 0 || w.len() >= (k - 1) * ld + n,
            "{k} rows of {n} values {ld} apart"
        );
        let mut data = vec![0f32; n.div_ceil(NR) * k * NR];
        for (p, panel) in data.chunks_exact_mut(k * NR).enumerate() {
            let cols = NR.min(n - p * NR);
            for (kk, dst) in panel.chunks_exact_mut(NR).enumerate() {
                dst[..cols].copy_from_slice(&w[kk * ld + p * NR..][..cols]);
            }
        }
        Self { n, k, data }
    }
}

/// Whether this CPU runs these kernels (AVX-512 F).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::cpu::has_avx512()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `y[m × n] = x[m × k] · wᵀ + b`, on the current rayon pool. Only where
/// [`available`].
pub fn linear(x: &[f32], m: usize, w: &PackedW, b: &[f32], y: &mut [f32]) {
    let (n, k) = (w.n, w.k);
    assert!(x.len() >= m * k && b.len() == n && y.len() >= m * n);
    y[..m * n]
        .par_chunks_mut(MB * n)
        .enumerate()
        .for_each(|(i, yb)| {
            let rows = yb.len() / n;
            product(&x[i * MB * k..], k, rows, w, Some(b), yb, n);
        });
}

/// `y[r][j] = b[j] + Σₖ x[r·lda + kk] · w[j][kk]` for `rows` rows (`y` rows `ldy`
/// apart), on this thread: `x` may be a column block of a wider matrix. Only where
/// [`available`].
pub fn product(
    x: &[f32],
    lda: usize,
    rows: usize,
    w: &PackedW,
    b: Option<&[f32]>,
    y: &mut [f32],
    ldy: usize,
) {
    let (n, k) = (w.n, w.k);
    assert!(available(), "sgemm without AVX-512");
    assert!(rows == 0 || (x.len() >= (rows - 1) * lda + k && y.len() >= (rows - 1) * ldy + n));
    assert!(lda >= k && ldy >= n && b.is_none_or(|b| b.len() == n));
    // SAFETY: AVX-512 F is there (asserted), and the slices are as long as `rows` rows
    // of `k` inputs `lda` apart and of `n` outputs `ldy` apart (asserted).
    #[cfg(target_arch = "x86_64")]
    unsafe {
        block(x, lda, rows, w, b, y, ldy)
    }
}

/// Every panel, then every tile of `MR` rows (the last, short one from a copy padded
/// with zero rows).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn block(
    x: &[f32],
    lda: usize,
    rows: usize,
    w: &PackedW,
    b: Option<&[f32]>,
    y: &mut [f32],
    ldy: usize,
) {
    let (n, k) = (w.n, w.k);
    let full = rows / MR * MR;
    // The short last tile's rows, padded with zero rows (none when the tiles are whole).
    let mut pad = Vec::new();
    if full < rows {
        pad = vec![0f32; MR * k];
        for r in 0..rows - full {
            pad[r * k..(r + 1) * k].copy_from_slice(&x[(full + r) * lda..(full + r) * lda + k]);
        }
    }
    let zeros = [0f32; NR];
    let mut spare = [0f32; MR * NR];
    for (p, panel) in w.data.chunks_exact(k * NR).enumerate() {
        let j0 = p * NR;
        let cols = NR.min(n - j0);
        let bias = b.map_or(zeros.as_ptr(), |b| b[j0..].as_ptr());
        // SAFETY: the caller's (see `product`); a tile reads `MR` rows of `k` from `a`
        // (whole tiles of `x`, or `pad`) and writes `MR` rows of `cols` from `out`
        // (whole tiles of `y`, or `spare`, copied out after).
        unsafe {
            for i in (0..full).step_by(MR) {
                tile(
                    x.as_ptr().add(i * lda),
                    lda,
                    k,
                    panel.as_ptr(),
                    bias,
                    cols,
                    y.as_mut_ptr().add(i * ldy + j0),
                    ldy,
                );
            }
            if full < rows {
                tile(
                    pad.as_ptr(),
                    k,
                    k,
                    panel.as_ptr(),
                    bias,
                    cols,
                    spare.as_mut_ptr(),
                    NR,
                );
                for r in 0..rows - full {
                    y[(full + r) * ldy + j0..(full + r) * ldy + j0 + cols]
                        .copy_from_slice(&spare[r * NR..r * NR + cols]);
                }
            }
        }
    }
}

/// 12 rows × 32 columns: `out[r][j] = bias[j] + Σₖ a[r][k] · panel[k][j]` for the
/// first `cols` columns, the 24 accumulators named (so that they stay in registers).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile(
    a: *const f32,
    lda: usize,
    k: usize,
    panel: *const f32,
    bias: *const f32,
    cols: usize,
    out: *mut f32,
    ldo: usize,
) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's: 12 rows of `k` inputs `lda` apart at `a`, 12 rows of
    // `cols` outputs `ldo` apart at `out`, `k × 32` panel values, `cols` bias values.
    unsafe {
        let (m0, m1) = crate::cpu::simd::col_masks(cols);
        if k == 0 {
            // No products: the bias alone (the loop below runs at least once).
            let (b0, b1) = (
                _mm512_maskz_loadu_ps(m0, bias),
                _mm512_maskz_loadu_ps(m1, bias.add(16)),
            );
            for r in 0..MR {
                _mm512_mask_storeu_ps(out.add(r * ldo), m0, b0);
                _mm512_mask_storeu_ps(out.add(r * ldo + 16), m1, b1);
            }
            return;
        }
        let b0 = _mm512_maskz_loadu_ps(m0, bias);
        let b1 = _mm512_maskz_loadu_ps(m1, bias.add(16));
        let (mut c00, mut c01) = (b0, b1);
        let (mut c10, mut c11) = (b0, b1);
        let (mut c20, mut c21) = (b0, b1);
        let (mut c30, mut c31) = (b0, b1);
        let (mut c40, mut c41) = (b0, b1);
        let (mut c50, mut c51) = (b0, b1);
        let (mut c60, mut c61) = (b0, b1);
        let (mut c70, mut c71) = (b0, b1);
        let (mut c80, mut c81) = (b0, b1);
        let (mut c90, mut c91) = (b0, b1);
        let (mut ca0, mut ca1) = (b0, b1);
        let (mut cb0, mut cb1) = (b0, b1);
        // The loop in assembly: the 24 accumulators stay in registers, and no check a
        // debug build adds to loads (they would halve its speed) gets in. Rows are
        // read from four bases, 3 rows apart, and the row stride (the x86 scales
        // are 1, 2, 4 and 8).
        debug_assert!(k > 0);
        let ld = lda * 4;
        std::arch::asm!(
            "2:",
            "vmovups {w0}, zmmword ptr [{w}]",
            "vmovups {w1}, zmmword ptr [{w} + 64]",
            "vbroadcastss {v0}, dword ptr [{a0} ]",
            "vfmadd231ps {c00}, {v0}, {w0}",
            "vfmadd231ps {c01}, {v0}, {w1}",
            "vbroadcastss {v1}, dword ptr [{a0} + {ld}]",
            "vfmadd231ps {c10}, {v1}, {w0}",
            "vfmadd231ps {c11}, {v1}, {w1}",
            "vbroadcastss {v0}, dword ptr [{a0} + {ld}*2]",
            "vfmadd231ps {c20}, {v0}, {w0}",
            "vfmadd231ps {c21}, {v0}, {w1}",
            "vbroadcastss {v1}, dword ptr [{a3} ]",
            "vfmadd231ps {c30}, {v1}, {w0}",
            "vfmadd231ps {c31}, {v1}, {w1}",
            "vbroadcastss {v0}, dword ptr [{a3} + {ld}]",
            "vfmadd231ps {c40}, {v0}, {w0}",
            "vfmadd231ps {c41}, {v0}, {w1}",
            "vbroadcastss {v1}, dword ptr [{a3} + {ld}*2]",
            "vfmadd231ps {c50}, {v1}, {w0}",
            "vfmadd231ps {c51}, {v1}, {w1}",
            "vbroadcastss {v0}, dword ptr [{a6} ]",
            "vfmadd231ps {c60}, {v0}, {w0}",
            "vfmadd231ps {c61}, {v0}, {w1}",
            "vbroadcastss {v1}, dword ptr [{a6} + {ld}]",
            "vfmadd231ps {c70}, {v1}, {w0}",
            "vfmadd231ps {c71}, {v1}, {w1}",
            "vbroadcastss {v0}, dword ptr [{a6} + {ld}*2]",
            "vfmadd231ps {c80}, {v0}, {w0}",
            "vfmadd231ps {c81}, {v0}, {w1}",
            "vbroadcastss {v1}, dword ptr [{a9} ]",
            "vfmadd231ps {c90}, {v1}, {w0}",
            "vfmadd231ps {c91}, {v1}, {w1}",
            "vbroadcastss {v0}, dword ptr [{a9} + {ld}]",
            "vfmadd231ps {ca0}, {v0}, {w0}",
            "vfmadd231ps {ca1}, {v0}, {w1}",
            "vbroadcastss {v1}, dword ptr [{a9} + {ld}*2]",
            "vfmadd231ps {cb0}, {v1}, {w0}",
            "vfmadd231ps {cb1}, {v1}, {w1}",
            "add {w}, 128",
            "add {a0}, 4",
            "add {a3}, 4",
            "add {a6}, 4",
            "add {a9}, 4",
            "dec {n}",
            "jnz 2b",
            w = inout(reg) panel => _,
            a0 = inout(reg) a => _,
            a3 = inout(reg) a.add(3 * lda) => _,
            a6 = inout(reg) a.add(6 * lda) => _,
            a9 = inout(reg) a.add(9 * lda) => _,
            ld = in(reg) ld,
            n = inout(reg) k => _,
            w0 = out(zmm_reg) _,
            w1 = out(zmm_reg) _,
            v0 = out(zmm_reg) _,
            v1 = out(zmm_reg) _,
            c00 = inout(zmm_reg) c00,
            c01 = inout(zmm_reg) c01,
            c10 = inout(zmm_reg) c10,
            c11 = inout(zmm_reg) c11,
            c20 = inout(zmm_reg) c20,
            c21 = inout(zmm_reg) c21,
            c30 = inout(zmm_reg) c30,
            c31 = inout(zmm_reg) c31,
            c40 = inout(zmm_reg) c40,
            c41 = inout(zmm_reg) c41,
            c50 = inout(zmm_reg) c50,
            c51 = inout(zmm_reg) c51,
            c60 = inout(zmm_reg) c60,
            c61 = inout(zmm_reg) c61,
            c70 = inout(zmm_reg) c70,
            c71 = inout(zmm_reg) c71,
            c80 = inout(zmm_reg) c80,
            c81 = inout(zmm_reg) c81,
            c90 = inout(zmm_reg) c90,
            c91 = inout(zmm_reg) c91,
            ca0 = inout(zmm_reg) ca0,
            ca1 = inout(zmm_reg) ca1,
            cb0 = inout(zmm_reg) cb0,
            cb1 = inout(zmm_reg) cb1,
            options(nostack, readonly),
        );
        let tile = [
            [c00, c01],
            [c10, c11],
            [c20, c21],
            [c30, c31],
            [c40, c41],
            [c50, c51],
            [c60, c61],
            [c70, c71],
            [c80, c81],
            [c90, c91],
            [ca0, ca1],
            [cb0, cb1],
        ];
        for (r, [lo, hi]) in tile.into_iter().enumerate() {
            _mm512_mask_storeu_ps(out.add(r * ldo), m0, lo);
            _mm512_mask_storeu_ps(out.add(r * ldo + 16), m1, hi);
        }
    }
}
