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
        Self::pack_with(n, k, |col, kk| w[col * k + kk])
    }

    /// Pack the `n × k` matrix whose value at (`col`, `kk`) is `at(col, kk)`.
    pub fn pack_with(n: usize, k: usize, at: impl Fn(usize, usize) -> f32) -> Self {
        let panels = n.div_ceil(NR);
        let mut data = vec![0f32; panels * k * NR];
        for (p, panel) in data.chunks_exact_mut(k * NR).enumerate() {
            for (kk, row) in panel.chunks_exact_mut(NR).enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    let col = p * NR + j;
                    if col < n {
                        *v = at(col, kk);
                    }
                }
            }
        }
        Self { n, k, data }
    }

    pub fn n(&self) -> usize {
        self.n
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
    let mut pad = vec![0f32; MR * k];
    for r in 0..rows - full {
        pad[r * k..(r + 1) * k].copy_from_slice(&x[(full + r) * lda..(full + r) * lda + k]);
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
        let m0: __mmask16 = if cols >= 16 {
            0xffff
        } else {
            ((1u32 << cols) - 1) as u16
        };
        let m1: __mmask16 = if cols >= NR {
            0xffff
        } else if cols > 16 {
            ((1u32 << (cols - 16)) - 1) as u16
        } else {
            0
        };
        let b0 = _mm512_maskz_loadu_ps(m0, bias);
        let b1 = _mm512_maskz_loadu_ps(m1, bias.add(16));
        macro_rules! tile {
            ($($r:literal: $c0:ident $c1:ident),*) => {
                $(let mut $c0 = b0; let mut $c1 = b1;)*
                let mut w = panel;
                let mut row = a;
                for _ in 0..k {
                    let w0 = _mm512_loadu_ps(w);
                    let w1 = _mm512_loadu_ps(w.add(16));
                    $(
                        let v = _mm512_set1_ps(*row.add($r * lda));
                        $c0 = _mm512_fmadd_ps(v, w0, $c0);
                        $c1 = _mm512_fmadd_ps(v, w1, $c1);
                    )*
                    w = w.add(NR);
                    row = row.add(1);
                }
                $(
                    _mm512_mask_storeu_ps(out.add($r * ldo), m0, $c0);
                    _mm512_mask_storeu_ps(out.add($r * ldo + 16), m1, $c1);
                )*
            };
        }
        tile!(0: c00 c01, 1: c10 c11, 2: c20 c21, 3: c30 c31, 4: c40 c41, 5: c50 c51,
              6: c60 c61, 7: c70 c71, 8: c80 c81, 9: c90 c91, 10: ca0 ca1, 11: cb0 cb1);
    }
}
