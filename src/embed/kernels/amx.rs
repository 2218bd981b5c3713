//! Dense layers on Intel AMX tiles in bf16 (f32 accumulation), for the BERT encoder.
//!
//! AMX (Sapphire Rapids and later Xeons) multiplies 16×32 by 32×16 bf16 tiles into a
//! 16×16 f32 tile in one instruction: an order of magnitude more arithmetic per cycle
//! than AVX-512 FMA. It is used only when the CPU has it, the OS has it enabled (XCR0)
//! and Linux grants the process the tile state (`arch_prctl`); otherwise
//! [`Amx::detect`](crate::cpu::Amx::detect) says no and the encoder keeps its f32 GEMMs. The instructions are
//! written as inline assembly, so no compiler target flag is needed and one binary
//! runs on any x86-64.
//!
//! Layout: activations are bf16, row-major, rows padded to a multiple of 32; weights
//! (`n × k`, out × in) are packed once at load into 16×16-pair tiles in the "VNNI"
//! order AMX reads (`B[k/2][n][k%2]`).

use rayon::prelude::*;

pub use crate::cpu::Amx;

/// Rows (and columns) of the output block one task computes: 2×2 tiles of 16×16.
pub const BLOCK: usize = 32;

/// Whether a `n × k` weight can go through [`linear`].
pub fn fits(n: usize, k: usize) -> bool {
    n.is_multiple_of(BLOCK) && k.is_multiple_of(BLOCK) && n > 0 && k > 0
}

/// f32 → bf16, rounding to nearest even (NaN stays NaN).
#[inline(always)]
pub fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// bf16 → f32 (exact; the tests' reference).
#[cfg(test)]
#[inline(always)]
pub fn f32_of(x: u16) -> f32 {
    f32::from_bits((x as u32) << 16)
}

/// A weight matrix `n × k` (out × in) packed into AMX B tiles.
pub struct PackedB {
    n: usize,
    k: usize,
    /// Tile (n/16 index `nt`, k/32 index `kt`) at `(nt·k/32 + kt)·512`: 16 rows (pairs
    /// of k) × 16 columns (n) × 2.
    data: Vec<u16>,
}

impl PackedB {
    /// Pack `w` (`n × k`, row-major); `fits(n, k)` must hold.
    pub fn pack(w: &[f32], n: usize, k: usize) -> Self {
        assert!(w.len() == n * k, "{n}×{k} weight: {} values", w.len());
        Self::pack_with(n, k, |j, t| w[j * k + t])
    }

    /// Pack the `n × k` matrix whose element (j, t) is `at(j, t)`; `fits(n, k)` must
    /// hold.
    pub fn pack_with(n: usize, k: usize, at: impl Fn(usize, usize) -> f32) -> Self {
        assert!(fits(n, k), "{n}×{k} matrix cannot be packed");
        let kt_n = k / 32;
        let mut data = vec![0u16; n * k];
        for nt in 0..n / 16 {
            for kt in 0..kt_n {
                let tile = &mut data[(nt * kt_n + kt) * 512..][..512];
                for r in 0..16 {
                    for c in 0..16 {
                        for e in 0..2 {
                            tile[r * 32 + c * 2 + e] = bf16(at(nt * 16 + c, kt * 32 + 2 * r + e));
                        }
                    }
                }
            }
        }
        Self { n, k, data }
    }

    /// The weight back in f32 (`n × k`), for tests.
    #[cfg(test)]
    pub fn unpack(&self) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        let mut w = vec![0f32; n * k];
        for nt in 0..n / 16 {
            for kt in 0..k / 32 {
                let tile = &self.data[(nt * (k / 32) + kt) * 512..][..512];
                for r in 0..16 {
                    for c in 0..16 {
                        for e in 0..2 {
                            w[(nt * 16 + c) * k + kt * 32 + 2 * r + e] =
                                f32_of(tile[r * 32 + c * 2 + e]);
                        }
                    }
                }
            }
        }
        w
    }
}

/// `y[m × n] = bias + a[m × k] · wᵀ`: `a` bf16 row-major, `m` a multiple of
/// [`BLOCK`], `w` packed; blocks of 32 rows on all cores.
pub fn linear(amx: Amx, a: &[u16], m: usize, w: &PackedB, bias: &[f32], y: &mut [f32]) {
    let n = w.n;
    assert!(
        y.len() >= m * n && bias.len() == n,
        "AMX linear: bad shapes"
    );
    linear_blocks(
        amx,
        a,
        m,
        w,
        y[..m * n].par_chunks_mut(BLOCK * n),
        |c, yb| {
            for ((yr, cr), _) in yb.chunks_exact_mut(n).zip(c.chunks_exact(n)).zip(0..BLOCK) {
                for ((y, c), b) in yr.iter_mut().zip(cr).zip(bias) {
                    *y = c + b;
                }
            }
        },
    );
}

/// For each block of [`BLOCK`] rows of `a` (`m × k` bf16, `m` a multiple of
/// [`BLOCK`]): `c = a_block · wᵀ` (`BLOCK × n` f32), handed to `epi` with the block's
/// item of `outs` (one per block, in order); blocks on all cores. The epilogue adds
/// the bias and does the element-wise work while the block is in cache.
pub fn linear_blocks<O: Send>(
    _amx: Amx,
    a: &[u16],
    m: usize,
    w: &PackedB,
    outs: impl IndexedParallelIterator<Item = O>,
    epi: impl Fn(&mut [f32], O) + Sync + Send,
) {
    let (n, k) = (w.n, w.k);
    assert!(
        m.is_multiple_of(BLOCK) && a.len() >= m * k,
        "AMX linear: bad shapes"
    );
    a[..m * k].par_chunks(BLOCK * k).zip(outs).for_each_init(
        || vec![0f32; BLOCK * n],
        |c, (ab, o)| {
            // SAFETY: `Amx` proves the tile state is enabled for this process; `ab`
            // holds 32 rows of k bf16, `c` 32 rows of n f32, and `w.data` every
            // (n/16)·(k/32) tile of 512 bf16 the loop reads.
            unsafe { platform::block(ab.as_ptr(), k, w.data.as_ptr(), n, c.as_mut_ptr()) };
            epi(c, o);
        },
    );
}

/// `y[m × n] = a[m × k] · wᵀ` on this thread only (for work already split across
/// cores): `m` a multiple of [`BLOCK`].
pub fn matmul(_amx: Amx, a: &[u16], m: usize, w: &PackedB, y: &mut [f32]) {
    let (n, k) = (w.n, w.k);
    assert!(
        m.is_multiple_of(BLOCK) && a.len() >= m * k && y.len() >= m * n,
        "AMX matmul: bad shapes"
    );
    for (yb, ab) in y[..m * n]
        .chunks_mut(BLOCK * n)
        .zip(a[..m * k].chunks(BLOCK * k))
    {
        // SAFETY: as in `linear`.
        unsafe { platform::block(ab.as_ptr(), k, w.data.as_ptr(), n, yb.as_mut_ptr()) };
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod platform {
    use std::arch::asm;

    /// Palette 1, all eight tiles 16 rows × 64 bytes.
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    const CONFIG: Config = {
        let mut c = [0u8; 64];
        c[0] = 1;
        let mut t = 0;
        while t < 8 {
            c[16 + 2 * t] = 64; // colsb, little-endian u16
            c[48 + t] = 16; // rows
            t += 1;
        }
        Config(c)
    };

    /// One 32-row block: `y[32 × n] = a[32 × k] · wᵀ`.
    ///
    /// # Safety
    /// AMX enabled ([`Amx::detect`] said yes); `a` 32·k bf16, `y` 32·n f32, `w` the
    /// packed tiles of an `n × k` weight; n and k multiples of 32.
    pub unsafe fn block(a: *const u16, k: usize, w: *const u16, n: usize, y: *mut f32) {
        let cfg = &CONFIG;
        let (sa, sy, sw) = (k * 2, n * 4, 64usize);
        let kt_n = k / 32;
        unsafe {
            asm!("ldtilecfg [{}]", in(reg) cfg as *const Config, options(nostack, readonly));
            for nb in 0..n / 32 {
                let c0 = y.add(nb * 32);
                let c1 = c0.add(16);
                let c2 = c0.add(16 * n);
                let c3 = c2.add(16);
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    options(nostack, nomem)
                );
                let b0 = w.add(nb * 2 * kt_n * 512);
                let b1 = b0.add(kt_n * 512);
                for kt in 0..kt_n {
                    let a0 = a.add(kt * 32);
                    let a1 = a0.add(16 * k);
                    asm!(
                        "tileloadd tmm4, [{a0} + {sa}*1]",
                        "tileloadd tmm5, [{a1} + {sa}*1]",
                        "tileloadd tmm6, [{b0} + {sw}*1]",
                        "tileloadd tmm7, [{b1} + {sw}*1]",
                        "tdpbf16ps tmm0, tmm4, tmm6",
                        "tdpbf16ps tmm1, tmm4, tmm7",
                        "tdpbf16ps tmm2, tmm5, tmm6",
                        "tdpbf16ps tmm3, tmm5, tmm7",
                        a0 = in(reg) a0, a1 = in(reg) a1,
                        b0 = in(reg) b0.add(kt * 512), b1 = in(reg) b1.add(kt * 512),
                        sa = in(reg) sa, sw = in(reg) sw, options(nostack, readonly)
                    );
                }
                asm!(
                    "tilestored [{c0} + {s}*1], tmm0",
                    "tilestored [{c1} + {s}*1], tmm1",
                    "tilestored [{c2} + {s}*1], tmm2",
                    "tilestored [{c3} + {s}*1], tmm3",
                    c0 = in(reg) c0, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3,
                    s = in(reg) sy, options(nostack)
                );
            }
            asm!("tilerelease", options(nostack, nomem));
        }
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod platform {
    pub unsafe fn block(_: *const u16, _: usize, _: *const u16, _: usize, _: *mut f32) {
        unreachable!("AMX is never detected on this platform")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(seed: u64) -> impl FnMut() -> f32 {
        let mut s = seed;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        }
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bf16(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: even (1.0) wins.
        assert_eq!(bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(f32_of(bf16(-2.5)), -2.5);
        assert!(f32_of(bf16(f32::NAN)).is_nan());
    }

    #[test]
    fn packing_keeps_every_weight() {
        let (n, k) = (64, 96);
        let mut r = uniform(3);
        let w: Vec<f32> = (0..n * k).map(|_| r()).collect();
        let back = PackedB::pack(&w, n, k).unpack();
        for (a, b) in w.iter().zip(&back) {
            assert_eq!(f32_of(bf16(*a)), *b);
        }
    }

    /// The AMX product equals the product of the bf16-rounded inputs computed in f64,
    /// up to f32 accumulation error. Runs only where AMX is usable.
    #[test]
    fn amx_linear_is_the_bf16_product() {
        let Some(amx) = Amx::detect() else {
            eprintln!("no AMX here: skipped");
            return;
        };
        let (m, n, k) = (64, 96, 160);
        let mut r = uniform(7);
        let x: Vec<f32> = (0..m * k).map(|_| r()).collect();
        let w: Vec<f32> = (0..n * k).map(|_| r()).collect();
        let bias: Vec<f32> = (0..n).map(|_| r()).collect();
        let a: Vec<u16> = x.iter().map(|v| bf16(*v)).collect();
        let packed = PackedB::pack(&w, n, k);
        let mut y = vec![0f32; m * n];
        linear(amx, &a, m, &packed, &bias, &mut y);
        for i in 0..m {
            for j in 0..n {
                let want: f64 = bias[j] as f64
                    + (0..k)
                        .map(|t| f32_of(a[i * k + t]) as f64 * f32_of(bf16(w[j * k + t])) as f64)
                        .sum::<f64>();
                let got = y[i * n + j] as f64;
                assert!((got - want).abs() < 1e-4, "({i},{j}): {got} vs {want}");
            }
        }
    }
}
