//! AVX-512 VNNI kernels for [`plain`](super::plain), with the same bits as its
//! AVX2 ports of ggml's `ggml_vec_dot_*`.
//!
//! ggml's AVX2 kernels reduce each 32-value block to 8 integer lanes (lane `l` = the
//! products of values 4l..4l+4, by `maddubs` then `madd`), convert them to f32 and
//! accumulate `d_w·d_x · lanes` into 8 float lanes by FMA; the horizontal sum comes
//! last. `vpdpbusd` (u8 × i8, four products summed into each 32-bit lane) produces
//! exactly those integer lanes in one instruction, and an AVX-512 register holds two
//! activation rows' 8 lanes side by side, each half running ggml's sequence
//! unchanged. Signed weights (Q4_0's `q − 8`, Q8_0's bytes) go through the unsigned
//! operand as `q + c` with `c·Σy` taken off in the integer accumulator, which is
//! exact.

use std::arch::x86_64::*;

use super::q8::{Kind, Q8Block, QK};
use crate::cpu::f16_at;

/// Two activation rows' quantized block `b`, laid out for one 512-bit register each:
/// `qs` = row 0's 32 values then row 1's; `d` and `s` = each row's scale (and Q8_1
/// sum) repeated over its 8 lanes.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Pair {
    qs: [i8; 2 * QK],
    d: [f32; 16],
    s: [f32; 16],
}

/// `q` (`m` rows of `nb` blocks) as pairs of rows, block by block: `out[p·nb + b]`;
/// an odd last row is paired with itself.
pub(crate) fn pairs(q: &[Q8Block], m: usize, nb: usize, out: &mut Vec<Pair>) {
    out.clear();
    for p in 0..m.div_ceil(2) {
        let (r0, r1) = (2 * p, (2 * p + 1).min(m - 1));
        for b in 0..nb {
            let (y0, y1) = (&q[r0 * nb + b], &q[r1 * nb + b]);
            let mut pr = Pair {
                qs: [0; 2 * QK],
                d: [0.0; 16],
                s: [0.0; 16],
            };
            pr.qs[..QK].copy_from_slice(&y0.qs);
            pr.qs[QK..].copy_from_slice(&y1.qs);
            pr.d[..8].fill(y0.d);
            pr.d[8..].fill(y1.d);
            pr.s[..8].fill(y0.s);
            pr.s[8..].fill(y1.s);
            out.push(pr);
        }
    }
}

/// One weight row unpacked for [`rows`]: per block the 32 unsigned bytes the kernel
/// multiplies (twice, one copy per register half), the scale and Q4_1's minimum.
pub(crate) struct WeightRow {
    q: Vec<__m512i>,
    d: Vec<f32>,
    m: Vec<f32>,
    kind: Kind,
}

impl WeightRow {
    pub(crate) fn new(kind: Kind) -> Self {
        Self {
            q: Vec::new(),
            d: Vec::new(),
            m: Vec::new(),
            kind,
        }
    }

    /// Unpack `w`, one row of blocks of `kind`.
    pub(crate) fn load(&mut self, w: &[u8]) {
        self.q.clear();
        self.d.clear();
        self.m.clear();
        let bb = self.kind.block_bytes();
        for b in w.chunks_exact(bb) {
            let mut u = [0u8; 2 * QK];
            match self.kind {
                Kind::Q4_0 | Kind::Q4_1 => {
                    let off = if self.kind == Kind::Q4_1 { 4 } else { 2 };
                    for i in 0..16 {
                        u[i] = b[off + i] & 0xF;
                        u[i + 16] = b[off + i] >> 4;
                    }
                }
                // Signed bytes made unsigned: q + 128 (taken back off in `rows`).
                Kind::Q8_0 => {
                    for i in 0..QK {
                        u[i] = (b[2 + i] as i8 as i16 + 128) as u8;
                    }
                }
            }
            u.copy_within(..QK, QK);
            // SAFETY: 64 readable bytes.
            self.q
                .push(unsafe { _mm512_loadu_si512(u.as_ptr().cast()) });
            self.d.push(f16_at(b, 0));
            self.m.push(if self.kind == Kind::Q4_1 {
                f16_at(b, 2)
            } else {
                0.0
            });
        }
    }
}

/// `out[2p + h]` = the dot product of the weight row with row `h` of pair `p`, for
/// the pairs in `ps` (each `nb` blocks, `nb` = the row's blocks).
pub(crate) fn rows(w: &WeightRow, ps: &[Pair], out: &mut [f32]) {
    // SAFETY: `WeightRow`s and `Pair`s exist only where `cpu::has_vnni()` said yes
    // (see `plain`), so the CPU has every feature `rows_512` is compiled for.
    unsafe { rows_512(w, ps, out) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
unsafe fn rows_512(w: &WeightRow, ps: &[Pair], out: &mut [f32]) {
    let nb = w.q.len();
    let n_pairs = ps.len() / nb;
    // Added to the integer lanes first: −c·Σy for weights stored as q + c.
    let shift = match w.kind {
        Kind::Q4_1 => None,
        Kind::Q4_0 => Some(3),
        Kind::Q8_0 => Some(7),
    };
    let ones = _mm512_set1_epi8(1);
    let lanes = |wq: __m512i, y: __m512i| -> __m512 {
        let base = match shift {
            None => _mm512_setzero_si512(),
            Some(3) => _mm512_sub_epi32(
                _mm512_setzero_si512(),
                _mm512_slli_epi32::<3>(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, y)),
            ),
            Some(_) => _mm512_sub_epi32(
                _mm512_setzero_si512(),
                _mm512_slli_epi32::<7>(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, y)),
            ),
        };
        _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(base, wq, y))
    };
    let mut p = 0;
    // Several pairs at a time: each weight block loaded once for all, and as many
    // independent FMA chains in flight (each chain stays in ggml's order).
    while p + 4 <= n_pairs {
        // The last pair may hold an odd row twice: only `out`'s rows are kept.
        let mut eight = [0f32; 8];
        pairs_n::<4>(w, &ps[p * nb..(p + 4) * nb], &lanes, &mut eight);
        let end = (2 * p + 8).min(out.len());
        out[2 * p..end].copy_from_slice(&eight[..end - 2 * p]);
        p += 4;
    }
    while p < n_pairs {
        let mut two = [0f32; 2];
        pairs_n::<1>(w, &ps[p * nb..(p + 1) * nb], &lanes, &mut two);
        let end = (2 * p + 2).min(out.len());
        out[2 * p..end].copy_from_slice(&two[..end - 2 * p]);
        p += 1;
    }
}

/// `P` pairs (`ps`, `P·nb` blocks) against the weight row: `out[2P]`.
#[inline(always)]
fn pairs_n<const P: usize>(
    w: &WeightRow,
    ps: &[Pair],
    lanes: &impl Fn(__m512i, __m512i) -> __m512,
    out: &mut [f32],
) {
    let nb = w.q.len();
    // SAFETY (all intrinsics below): only reached from `rows_512`, compiled with the
    // features they need; `Pair` is 64-byte aligned with 64-byte fields.
    unsafe {
        let mut acc = [_mm512_setzero_ps(); P];
        let mut sm = [_mm512_setzero_ps(); P];
        for i in 0..nb {
            let (wq, dw, mw) = (w.q[i], _mm512_set1_ps(w.d[i]), _mm512_set1_ps(w.m[i]));
            for t in 0..P {
                let y = &ps[t * nb + i];
                let q = _mm512_load_si512(y.qs.as_ptr().cast());
                let d = _mm512_load_ps(y.d.as_ptr());
                acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, d), lanes(wq, q), acc[t]);
                if w.kind == Kind::Q4_1 {
                    sm[t] = _mm512_add_ps(sm[t], _mm512_mul_ps(mw, _mm512_load_ps(y.s.as_ptr())));
                }
            }
        }
        for t in 0..P {
            finish(acc[t], sm[t], &mut out[2 * t..2 * t + 2]);
        }
    }
}

/// Each half's 8 lanes summed in the order of ggml's `hsum_float_8`, plus the Q8_1
/// minimum term (lane 0 / lane 8 of `sm`).
#[inline(always)]
fn finish(acc: __m512, sm: __m512, out: &mut [f32]) {
    let mut a = [0f32; 16];
    let mut s = [0f32; 16];
    // SAFETY: 16 writable floats each.
    unsafe {
        _mm512_storeu_ps(a.as_mut_ptr(), acc);
        _mm512_storeu_ps(s.as_mut_ptr(), sm);
    }
    for (h, o) in out.iter_mut().enumerate().take(2) {
        let l = &a[8 * h..8 * h + 8];
        let r: [f32; 4] = std::array::from_fn(|i| l[i + 4] + l[i]);
        *o = ((r[0] + r[2]) + (r[1] + r[3])) + s[8 * h];
    }
}

/// One activation row (generation): the dot product of a weight row of `kind`
/// (raw blocks) with `ys`, 8 lanes per block as ggml.
pub(crate) fn row(kind: Kind, w: &[u8], ys: &[Q8Block]) -> f32 {
    // SAFETY: only called where `cpu::has_vnni()` said yes (see `plain`).
    unsafe { row_256(kind, w, ys) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
unsafe fn row_256(kind: Kind, w: &[u8], ys: &[Q8Block]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    let mut summs = 0f32;
    let low = _mm256_set1_epi8(0xF);
    let ones = _mm256_set1_epi8(1);
    for (b, y) in w.chunks_exact(kind.block_bytes()).zip(ys) {
        // SAFETY: 32 readable bytes.
        let qy = unsafe { _mm256_loadu_si256(y.qs.as_ptr().cast()) };
        let nib = |off: usize| -> __m256i {
            // SAFETY: a Q4 block has 16 nibble bytes at `off`.
            let t = unsafe { _mm_loadu_si128(b[off..off + 16].as_ptr().cast()) };
            let both =
                _mm256_insertf128_si256::<1>(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4));
            _mm256_and_si256(low, both)
        };
        let lanes = match kind {
            Kind::Q4_1 => {
                summs += f16_at(b, 2) * y.s;
                _mm256_dpbusd_epi32(_mm256_setzero_si256(), nib(4), qy)
            }
            Kind::Q4_0 => {
                let sy = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, qy);
                let base = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32::<3>(sy));
                _mm256_dpbusd_epi32(base, nib(2), qy)
            }
            Kind::Q8_0 => {
                // SAFETY: a Q8_0 block has 32 bytes after its scale.
                let q = unsafe { _mm256_loadu_si256(b[2..34].as_ptr().cast()) };
                let u = _mm256_add_epi8(q, _mm256_set1_epi8(-128));
                let sy = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, qy);
                let base = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32::<7>(sy));
                _mm256_dpbusd_epi32(base, u, qy)
            }
        };
        let d = _mm256_set1_ps(f16_at(b, 0) * y.d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes), acc);
    }
    let mut a = [0f32; 8];
    // SAFETY: 8 writable floats.
    unsafe { _mm256_storeu_ps(a.as_mut_ptr(), acc) };
    let r: [f32; 4] = std::array::from_fn(|i| a[i + 4] + a[i]);
    ((r[0] + r[2]) + (r[1] + r[3])) + summs
}
