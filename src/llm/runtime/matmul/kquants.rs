//! Q4_K, Q5_K and Q6_K weights (super-blocks of 256 values) times activations
//! quantized to Q8_K, computed the way llama.cpp's CPU backend computes them
//! (`quantize_row_q8_K_ref`, then the AVX2 `ggml_vec_dot_q4_K_q8_K` /
//! `_q5_K_q8_K` / `_q6_K_q8_K`, which its AVX-512 builds also run).
//!
//! Those kernels reduce each super-block to 8 integer lanes — lane `l` holds the
//! scaled products of the values at `4l..4l+4` of every 32-value run — convert them to
//! f32 and accumulate `d_w·d_x · lanes` into 8 float lanes by FMA (Q4_K also keeps 4
//! lanes of `−dmin·d_x · Σ min·bsum`, Q5_K one float, the same products summed as
//! integers, by FMA; Q6_K takes its offset of 32 off each lane as
//! `32·Σ bsum·scale` of two 16-value runs); the horizontal sums come last. The integer
//! lanes are exact, so any way of computing them gives the same bits: the AVX-512
//! kernel here forms them with `vpmaddubsw` and `vpdpwssd` (the scale multiply and the
//! add in one instruction), 64 values per register, and folds the two halves.
//!
//! A batch of 8 or more rows of one sequence (a prompt) takes llama.cpp's other
//! arithmetic for these types, its tiled matmul (`ggml-cpu/tiled`, on by default, for
//! batches of at least 8): per super-block the exact integer sums `s1 = Σ scale·raw`
//! (Q6_K: `raw − 32·bsum`) and `s2 = Σ min·bsum`, then `r = fma(−dmin, s2, s1·d)` and
//! `out = fma(r, d_x, out)`, super-block after super-block ([`Arith::Tiled`]); Q5_K is
//! Q4_K's instantiation of it with values of 5 bits.
//!
//! [`portable`] is the reference (both arithmetics written out). Where the CPU has
//! AVX-512 VNNI, [`avx512`] runs the lanes (a weight row against up to 8 activation
//! rows) and [`banded`] the tiled sums with 16 activation rows in the lanes of a
//! register, laid out as llama.cpp's tiled kernel lays them out ([`Bands`]); else,
//! where it has AVX2 and FMA, [`avx2`] runs both: the lanes with `vpmaddubsw` and
//! `vpmaddwd`, a weight row against up to 8 activation rows, and the tiled sums over
//! the same [`Bands`], a band's 16 rows as two registers, the pair sums of a run's
//! groups added as i16 before one multiply by the run's scale; all give the
//! reference's bits (tested).

use rayon::prelude::*;

use crate::cpu::f16_at;
use crate::cpu::split::{column_tasks, Columns};
// Which kernels compute the products, the CPU's (`Isa::here()`): AVX-512 VNNI
// (`avx512` for the lanes, `banded` for the tiled sums; unless `QUIRE_NO_VNNI` turns it
// off), else AVX2 + FMA (`avx2` for both arithmetics), else `portable`.
use crate::cpu::Kernels as Isa;

/// Values per super-block.
pub(crate) const QK_K: usize = 256;

/// Which K-quant a weight is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KKind {
    /// `d`, `dmin` (f16), 12 bytes of 6-bit scales and mins, 128 bytes of nibbles.
    Q4K,
    /// Q4_K's fields with 32 bytes of fifth bits between the scales and the nibbles.
    Q5K,
    /// 128 bytes of low nibbles, 64 of high bit pairs, 16 signed scales, `d` (f16).
    Q6K,
}

impl KKind {
    /// Bytes of a ggml block.
    pub(crate) fn block_bytes(self) -> usize {
        match self {
            KKind::Q4K => 144,
            KKind::Q5K => 176,
            KKind::Q6K => 210,
        }
    }

    /// Bytes of a repacked block.
    fn packed_bytes(self) -> usize {
        match self {
            KKind::Q4K => Q4K_PACKED,
            KKind::Q5K => Q5K_PACKED,
            KKind::Q6K => Q6K_PACKED,
        }
    }
}

/// An activation super-block quantized as ggml's `block_q8_K`: 256 values, the f32
/// scale, and the sums of each 16 values.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Q8K {
    pub(crate) qs: [i8; QK_K],
    pub(crate) d: f32,
    pub(crate) bsums: [i16; 16],
}

impl Default for Q8K {
    fn default() -> Self {
        Self {
            qs: [0; QK_K],
            d: 0.0,
            bsums: [0; 16],
        }
    }
}

/// ggml's `nearest_int`: round to nearest, ties to even, through the float's bits.
#[inline(always)]
fn nearest_int(f: f32) -> i32 {
    let val = f + 12_582_912.0;
    (val.to_bits() as i32 & 0x007f_ffff) - 0x0040_0000
}

/// `quantize_row_q8_K_ref`: the scale from the value of largest magnitude (the first
/// one if several), `−127/max`, values rounded by [`nearest_int`] and capped at 127.
pub(crate) fn quantize_row_q8k(x: &[f32], out: &mut [Q8K]) {
    for (xb, y) in x.chunks_exact(QK_K).zip(out.iter_mut()) {
        // The largest magnitude over 16 lanes (a maximum: exact in any order), then
        // the first value of that magnitude.
        let mut lanes = [0f32; 16];
        for c in xb.chunks_exact(16) {
            for (l, &v) in lanes.iter_mut().zip(c) {
                *l = if v.abs() > *l { v.abs() } else { *l };
            }
        }
        let amax = lanes.iter().fold(0f32, |a, &l| if l > a { l } else { a });
        if amax == 0.0 {
            *y = Q8K::default();
            continue;
        }
        let max = xb.iter().copied().find(|v| v.abs() == amax).unwrap_or(amax);
        let iscale = -127.0 / max;
        for (q, &v) in y.qs.iter_mut().zip(xb) {
            *q = nearest_int(iscale * v).min(127) as i8;
        }
        for (s, q) in y.bsums.iter_mut().zip(y.qs.chunks_exact(16)) {
            *s = q.iter().map(|&v| i16::from(v)).sum();
        }
        y.d = 1.0 / iscale;
    }
}

/// Q4_K's eight 6-bit scales and eight 6-bit mins (`get_scale_min_k4`).
fn q4k_scales(q: &[u8]) -> ([u8; 8], [u8; 8]) {
    let mut sc = [0u8; 8];
    let mut mn = [0u8; 8];
    for j in 0..8 {
        if j < 4 {
            sc[j] = q[j] & 63;
            mn[j] = q[j + 4] & 63;
        } else {
            sc[j] = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
            mn[j] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
        }
    }
    (sc, mn)
}

/// Q6_K's 256 unsigned 6-bit values of block `b`, in value order.
fn q6k_values(b: &[u8], out: &mut [u8]) {
    let (ql, qh) = (&b[..128], &b[128..192]);
    for half in 0..2 {
        let (ql, qh) = (&ql[64 * half..], &qh[32 * half..]);
        let o = &mut out[128 * half..128 * (half + 1)];
        for t in 0..32 {
            let h = qh[t];
            o[t] = (ql[t] & 0xF) | ((h & 3) << 4);
            o[32 + t] = (ql[32 + t] & 0xF) | (((h >> 2) & 3) << 4);
            o[64 + t] = (ql[t] >> 4) | (((h >> 4) & 3) << 4);
            o[96 + t] = (ql[32 + t] >> 4) | (((h >> 6) & 3) << 4);
        }
    }
}

// Super-blocks are repacked at load so that the kernels read them without bit
// fiddling (the same values; the f16 scales widened exactly):
// Q4_K: d, dmin (f32), the 8 scales, the 8 mins, then the 128 bytes of nibbles as
// two groups of 64 bytes, byte `i` of group `p` holding value `128p + i` in its low
// nibble and value `128p + 64 + i` in its high one (so one 64-byte load gives the
// values of two registers, [`q4k_value`]);
// Q5_K: Q4_K's layout (the low 4 bits of each value), then ggml's 32 bytes of fifth
// bits as they are: bit `r` of byte `t` is that of value `32r + t` ([`q5k_value`]);
// Q6_K: d (f32), the 16 signed scales, the 256 values (0..63) in value order.
const Q4K_PACKED: usize = 152;
const Q5K_PACKED: usize = 184;
const Q6K_PACKED: usize = 276;

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Value `v` (0..256, unsigned 4-bit) of a repacked Q4_K block.
#[inline(always)]
fn q4k_value(b: &[u8], v: usize) -> u8 {
    let byte = b[24 + 64 * (v / 128) + v % 64];
    if v % 128 >= 64 {
        byte >> 4
    } else {
        byte & 0xF
    }
}

/// Value `v` (0..256, unsigned 5-bit) of a repacked Q5_K block.
#[inline(always)]
fn q5k_value(b: &[u8], v: usize) -> u8 {
    q4k_value(b, v) | (((b[Q4K_PACKED + v % 32] >> (v / 32)) & 1) << 4)
}

/// The repacked value `v` of `kind` (Q4_K, Q5_K).
#[inline(always)]
fn q45_value(five: bool, b: &[u8], v: usize) -> u8 {
    if five {
        q5k_value(b, v)
    } else {
        q4k_value(b, v)
    }
}

/// ggml's blocks of `kind` in the layout above.
fn repack(kind: KKind, raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() / kind.block_bytes() * kind.packed_bytes());
    for b in raw.chunks_exact(kind.block_bytes()) {
        match kind {
            KKind::Q4K | KKind::Q5K => {
                let (sc, mn) = q4k_scales(&b[4..16]);
                out.extend(f16_at(b, 0).to_le_bytes());
                out.extend(f16_at(b, 2).to_le_bytes());
                out.extend(sc);
                out.extend(mn);
                // Q5_K's nibbles follow its 32 bytes of fifth bits.
                let qs = if kind == KKind::Q5K { 48 } else { 16 };
                // ggml's byte `32j + t`: value `64j + t` low, `64j + 32 + t` high.
                let ggml = |v: usize| {
                    let byte = b[qs + 32 * (v / 64) + v % 32];
                    if v % 64 >= 32 {
                        byte >> 4
                    } else {
                        byte & 0xF
                    }
                };
                out.extend((0..128).map(|i| {
                    let (p, i) = (i / 64, i % 64);
                    ggml(128 * p + i) | (ggml(128 * p + 64 + i) << 4)
                }));
                if kind == KKind::Q5K {
                    out.extend(&b[16..48]);
                }
            }
            KKind::Q6K => {
                out.extend(f16_at(b, 208).to_le_bytes());
                out.extend(&b[192..208]);
                let at = out.len();
                out.resize(at + QK_K, 0);
                q6k_values(b, &mut out[at..]);
            }
        }
    }
    out
}

/// `hsum_float_8`.
#[inline(always)]
fn hsum8(acc: &[f32; 8]) -> f32 {
    let a: [f32; 4] = std::array::from_fn(|i| acc[i] + acc[i + 4]);
    (a[0] + a[2]) + (a[1] + a[3])
}

/// The 4 lanes of Q4_K's min terms, summed as ggml does (movehl, then movehdup).
#[inline(always)]
fn hsum4(m: &[f32; 4]) -> f32 {
    (m[0] + m[2]) + (m[1] + m[3])
}

/// Which of llama.cpp's two arithmetics for K-quant products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arith {
    /// `ggml_vec_dot_*_q8_K`: 8 float lanes (batches under 8 rows, generation).
    Lanes,
    /// The tiled matmul: a float epilogue per super-block (batches of 8 rows or more).
    Tiled,
}

/// Rows of one batch from which llama.cpp takes its tiled matmul (`ggml_tiled_min_batch`).
pub(crate) const TILED_MIN_ROWS: usize = 8;

/// The tiled epilogue of one super-block: `out = fma(fma(−dmin, s2, s1·d), d_x, out)`
/// (the kernel's `add(out, mul(r, d_x))` is contracted into one FMA by GCC).
#[inline(always)]
fn tiled_step(out: f32, s1: i32, s2: i32, d: f32, dmin: f32, dx: f32) -> f32 {
    (-dmin).mul_add(s2 as f32, s1 as f32 * d).mul_add(dx, out)
}

/// The reference: ggml's lanes (and the tiled sums) written out, on repacked blocks.
pub(crate) mod portable {
    use super::*;

    /// The 32-value sums of the activation (`_mm_hadd_epi16` of the bsums).
    fn sums32(y: &Q8K, i: usize) -> i32 {
        i32::from(y.bsums[2 * i]) + i32::from(y.bsums[2 * i + 1])
    }

    pub(crate) fn dot_q4k(arith: Arith, w: &[u8], ys: &[Q8K]) -> f32 {
        dot_q45(false, arith, w, ys)
    }

    /// Q5_K: Q4_K's arithmetic on 5-bit values, except that the lanes arithmetic sums
    /// the min terms as one integer per super-block, accumulated by FMA into one float.
    pub(crate) fn dot_q5k(arith: Arith, w: &[u8], ys: &[Q8K]) -> f32 {
        dot_q45(true, arith, w, ys)
    }

    fn dot_q45(five: bool, arith: Arith, w: &[u8], ys: &[Q8K]) -> f32 {
        let bytes = if five { Q5K_PACKED } else { Q4K_PACKED };
        if arith == Arith::Tiled {
            let mut out = 0f32;
            for (b, y) in w.chunks_exact(bytes).zip(ys) {
                let (sc, mn) = (&b[8..16], &b[16..24]);
                let mut s1 = 0i32;
                let mut s2 = 0i32;
                for (s, (&scale, &min)) in sc.iter().zip(mn).enumerate() {
                    let raw: i32 = (32 * s..32 * (s + 1))
                        .map(|v| i32::from(q45_value(five, b, v)) * i32::from(y.qs[v]))
                        .sum();
                    s1 += i32::from(scale) * raw;
                    s2 += i32::from(min) * sums32(y, s);
                }
                out = tiled_step(out, s1, s2, f32_at(b, 0), f32_at(b, 4), y.d);
            }
            return out;
        }
        let mut acc = [0f32; 8];
        let mut acc_m = [0f32; 4];
        let mut summs = 0f32;
        for (b, y) in w.chunks_exact(bytes).zip(ys) {
            let d = y.d * f32_at(b, 0);
            let dmin = -y.d * f32_at(b, 4);
            let (sc, mn) = (&b[8..16], &b[16..24]);
            // `prod[i] = min[2i]·S[2i] + min[2i+1]·S[2i+1]`.
            let s = |i: usize| sums32(y, i);
            let prod = |i: usize| {
                i32::from(mn[2 * i]) * s(2 * i) + i32::from(mn[2 * i + 1]) * s(2 * i + 1)
            };
            if five {
                let all: i32 = (0..4).map(prod).sum();
                summs = dmin.mul_add(all as f32, summs);
            } else {
                for (i, a) in acc_m.iter_mut().enumerate() {
                    *a = dmin.mul_add(prod(i) as f32, *a);
                }
            }
            let mut sumi = [0i32; 8];
            for v in 0..QK_K {
                let p = i32::from(q45_value(five, b, v)) * i32::from(y.qs[v]);
                sumi[(v % 32) / 4] += i32::from(sc[v / 32]) * p;
            }
            for (a, s) in acc.iter_mut().zip(sumi) {
                *a = d.mul_add(s as f32, *a);
            }
        }
        if five {
            hsum8(&acc) + summs
        } else {
            hsum8(&acc) + hsum4(&acc_m)
        }
    }

    pub(crate) fn dot_q6k(arith: Arith, w: &[u8], ys: &[Q8K]) -> f32 {
        if arith == Arith::Tiled {
            let mut out = 0f32;
            for (b, y) in w.chunks_exact(Q6K_PACKED).zip(ys) {
                let q = &b[20..20 + QK_K];
                let mut s1 = 0i32;
                for s in 0..16 {
                    let raw: i32 = (16 * s..16 * (s + 1))
                        .map(|v| i32::from(q[v]) * i32::from(y.qs[v]))
                        .sum();
                    s1 += i32::from(b[4 + s] as i8) * (raw - 32 * i32::from(y.bsums[s]));
                }
                out = tiled_step(out, s1, 0, f32_at(b, 0), 0.0, y.d);
            }
            return out;
        }
        let mut acc = [0f32; 8];
        for (b, y) in w.chunks_exact(Q6K_PACKED).zip(ys) {
            let d = y.d * f32_at(b, 0);
            let q = &b[20..20 + QK_K];
            let sc = |i: usize| i32::from(b[4 + i] as i8);
            let mut sumi = [0i32; 8];
            for v in 0..QK_K {
                sumi[(v % 32) / 4] += sc(v / 16) * i32::from(q[v]) * i32::from(y.qs[v]);
            }
            // The offset of 32, from the bsums: lane `l` takes that of the 16-value
            // runs `2l` and `2l + 1`.
            for (l, s) in sumi.iter_mut().enumerate() {
                let bs = |i: usize| i32::from(y.bsums[i]) * sc(i);
                *s -= (bs(2 * l) + bs(2 * l + 1)) << 5;
            }
            for (a, s) in acc.iter_mut().zip(sumi) {
                *a = d.mul_add(s as f32, *a);
            }
        }
        hsum8(&acc)
    }
}

/// Super-blocks ahead that generation prefetches (~2-4 KB: measured in generation,
/// 4 left the K-quant matmuls ~5-10% slower than 12-14).
#[cfg(target_arch = "x86_64")]
const PREFETCH: usize = 12;

/// The same lanes on AVX-512 registers: a weight row against up to [`ROWS`]
/// activation rows at once, each super-block unpacked once for them.
const ROWS: usize = 8;

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::*;
    use std::arch::x86_64::*;

    /// 16 i32 lanes (two runs of 32 values side by side) → ggml's 8 lanes.
    #[inline]
    #[target_feature(enable = "avx512f,avx2")]
    fn fold(acc: __m512i) -> __m256i {
        _mm256_add_epi32(
            _mm512_castsi512_si256(acc),
            _mm512_extracti64x4_epi64::<1>(acc),
        )
    }

    /// The unsigned weight values `wq` (64 per register) times the activation block
    /// `y`, pairs summed and multiplied by the i16 scales `ws`, into 16 i32 lanes; and
    /// `y`'s 16 bsums.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2")]
    fn scaled_sums(wq: &[__m512i; 4], ws: &[__m512i; 4], y: &Q8K) -> (__m512i, __m256i) {
        let mut sumi = _mm512_setzero_si512();
        for (c, (w, s)) in wq.iter().zip(ws).enumerate() {
            // SAFETY: 256 activation bytes per block.
            let a = unsafe { _mm512_loadu_si512(y.qs.as_ptr().add(64 * c).cast()) };
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(*w, a), *s);
        }
        // SAFETY: 16 bsums.
        let bs = unsafe { _mm256_loadu_si256(y.bsums.as_ptr().cast()) };
        (sumi, bs)
    }

    /// The `vpermw` indices that spread i16 values `N·c .. N·c + N` over the 32 lanes
    /// of a register, each over `32 / N` adjacent lanes, for `c` in 0..4 (built at
    /// compile time).
    const fn spread<const N: usize>() -> [[i16; 32]; 4] {
        let mut idx = [[0i16; 32]; 4];
        let mut c = 0;
        while c < 4 {
            let mut e = 0;
            while e < 32 {
                idx[c][e] = (N * c + e / (32 / N)) as i16;
                e += 1;
            }
            c += 1;
        }
        idx
    }

    /// Q4_K's scale registers (two runs of 32 values per register) and Q6_K's (four
    /// runs of 16).
    static SPREAD_Q4K: [[i16; 32]; 4] = spread::<2>();
    static SPREAD_Q6K: [[i16; 32]; 4] = spread::<4>();

    /// The indices of `table` as registers.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn indices(table: &[[i16; 32]; 4]) -> [__m512i; 4] {
        // SAFETY: 64 readable bytes each.
        std::array::from_fn(|c| unsafe { _mm512_loadu_si512(table[c].as_ptr().cast()) })
    }

    /// `out[r] = w · ys[r]` for the rows given (1..=ROWS); `w` one repacked Q4_K row.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,avx2")]
    pub(super) fn q4k(w: &[u8], ys: &[&[Q8K]], out: &mut [f32]) {
        q45::<false>(w, ys, out)
    }

    /// `out[r] = w · ys[r]` for the rows given (1..=ROWS); `w` one repacked Q5_K row.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,avx2")]
    pub(super) fn q5k(w: &[u8], ys: &[&[Q8K]], out: &mut [f32]) {
        q45::<true>(w, ys, out)
    }

    /// Q4_K, or Q5_K if `FIVE`: the fifth bits added where set (a masked byte add of
    /// 16), and the min terms summed as one integer per super-block into one float.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,avx2")]
    fn q45<const FIVE: bool>(w: &[u8], ys: &[&[Q8K]], out: &mut [f32]) {
        let rows = ys.len().min(ROWS);
        let bytes = if FIVE { Q5K_PACKED } else { Q4K_PACKED };
        let mut acc = [_mm256_setzero_ps(); ROWS];
        let mut acc_m = [_mm_setzero_ps(); ROWS];
        let mut summs = [0f32; ROWS];
        let m4 = _mm512_set1_epi8(0xF);
        let sixteen = _mm512_set1_epi8(16);
        // Register `c` holds runs `2c` (low 32 bytes) and `2c + 1`: their fifth bits
        // are bits `2c` and `2c + 1` of the 32 bytes of fifth bits.
        let bit: [__m512i; 4] = std::array::from_fn(|c| {
            _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm256_set1_epi8(1 << (2 * c))),
                _mm256_set1_epi8((1u8 << (2 * c + 1)) as i8),
            )
        });
        let idx = indices(&SPREAD_Q4K);
        for (bi, b) in w.chunks_exact(bytes).enumerate() {
            // Generation streams the weight once per token, for one row or a few: fetch
            // a few blocks ahead (a hint; past the end of the row it is harmless).
            let ahead = w.as_ptr().wrapping_add((bi + PREFETCH) * bytes);
            for line in (0..bytes).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(line).cast());
            }
            let (dw, mw) = (f32_at(b, 0), f32_at(b, 4));
            // SAFETY: 8 bytes of scales at 8, of mins at 16, 128 bytes of nibbles at 24.
            let (scales, mins) = unsafe {
                (
                    _mm_cvtepu8_epi16(_mm_loadl_epi64(b.as_ptr().add(8).cast())),
                    _mm_cvtepu8_epi16(_mm_loadl_epi64(b.as_ptr().add(16).cast())),
                )
            };
            let mut wq = [_mm512_setzero_si512(); 4];
            for p in 0..2 {
                // SAFETY: as above.
                let v = unsafe { _mm512_loadu_si512(b.as_ptr().add(24 + 64 * p).cast()) };
                wq[2 * p] = _mm512_and_si512(v, m4);
                wq[2 * p + 1] = _mm512_and_si512(_mm512_srli_epi16::<4>(v), m4);
            }
            if FIVE {
                // SAFETY: 32 bytes of fifth bits at 152 in a repacked Q5_K block.
                let h = unsafe { _mm256_loadu_si256(b.as_ptr().add(Q4K_PACKED).cast()) };
                let h = _mm512_broadcast_i64x4(h);
                for (q, bit) in wq.iter_mut().zip(&bit) {
                    *q = _mm512_mask_add_epi8(*q, _mm512_test_epi8_mask(h, *bit), *q, sixteen);
                }
            }
            // Register `c`: the scale of run `2c` over its first 16 i16 lanes, of run
            // `2c + 1` over the rest.
            let s = _mm512_castsi128_si512(scales);
            let ws: [__m512i; 4] = std::array::from_fn(|c| _mm512_permutexvar_epi16(idx[c], s));
            for r in 0..rows {
                let y = &ys[r][bi];
                let (sumi, bs) = scaled_sums(&wq, &ws, y);
                let q8s = _mm_hadd_epi16(
                    _mm256_castsi256_si128(bs),
                    _mm256_extracti128_si256::<1>(bs),
                );
                let prod = _mm_madd_epi16(mins, q8s);
                let d = _mm256_set1_ps(y.d * dw);
                acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(fold(sumi)), acc[r]);
                if FIVE {
                    let h = _mm_hadd_epi32(prod, prod);
                    let all = _mm_cvtsi128_si32(_mm_hadd_epi32(h, h));
                    summs[r] = (-y.d * mw).mul_add(all as f32, summs[r]);
                } else {
                    acc_m[r] =
                        _mm_fmadd_ps(_mm_set1_ps(-y.d * mw), _mm_cvtepi32_ps(prod), acc_m[r]);
                }
            }
        }
        for r in 0..rows {
            let mut lanes = [0f32; 8];
            let mut m = [0f32; 4];
            // SAFETY: 8 and 4 writable floats.
            unsafe {
                _mm256_storeu_ps(lanes.as_mut_ptr(), acc[r]);
                _mm_storeu_ps(m.as_mut_ptr(), acc_m[r]);
            }
            out[r] = if FIVE {
                hsum8(&lanes) + summs[r]
            } else {
                hsum8(&lanes) + hsum4(&m)
            };
        }
    }

    /// `out[r] = w · ys[r]` for the rows given (1..=ROWS); `w` one repacked Q6_K row.
    /// The unsigned values times the scales, less `32·Σ bsum·scale` per lane pair of
    /// runs, as ggml takes the offset off.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,avx2")]
    pub(super) fn q6k(w: &[u8], ys: &[&[Q8K]], out: &mut [f32]) {
        let rows = ys.len().min(ROWS);
        let mut acc = [_mm256_setzero_ps(); ROWS];
        let idx = indices(&SPREAD_Q6K);
        for (bi, b) in w.chunks_exact(Q6K_PACKED).enumerate() {
            // As in `q45`: one row or a few, the weight streams from memory.
            let ahead = w.as_ptr().wrapping_add((bi + PREFETCH) * Q6K_PACKED);
            for line in (0..Q6K_PACKED).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(line).cast());
            }
            let dw = f32_at(b, 0);
            // SAFETY: 16 scale bytes at 4.
            let scales16 =
                _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(b.as_ptr().add(4).cast()) });
            // SAFETY: 256 values at 20.
            let wq: [__m512i; 4] = std::array::from_fn(|c| unsafe {
                _mm512_loadu_si512(b.as_ptr().add(20 + 64 * c).cast())
            });
            // Register `c`: the scales of runs `4c..4c + 4`, each over 8 i16 lanes.
            let s = _mm512_castsi256_si512(scales16);
            let ws: [__m512i; 4] = std::array::from_fn(|c| _mm512_permutexvar_epi16(idx[c], s));
            for r in 0..rows {
                let y = &ys[r][bi];
                let (sumi, bs) = scaled_sums(&wq, &ws, y);
                let sub = _mm256_slli_epi32::<5>(_mm256_madd_epi16(bs, scales16));
                let sumi = _mm256_sub_epi32(fold(sumi), sub);
                let d = _mm256_set1_ps(y.d * dw);
                acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc[r]);
            }
        }
        for r in 0..rows {
            let mut lanes = [0f32; 8];
            // SAFETY: 8 writable floats.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[r]) };
            out[r] = hsum8(&lanes);
        }
    }
}

/// Weight rows the tiled arithmetic on AVX-512 computes at once ([`banded::rows`]).
#[cfg(target_arch = "x86_64")]
const BANDED_WEIGHT_ROWS: usize = 4;

/// Weight rows the tiled arithmetic on AVX2 computes at once ([`avx2::banded`]): with
/// a band's two registers of codes, its i16 and i32 sums fill 14 of the 16 registers.
#[cfg(target_arch = "x86_64")]
const AVX2_BANDED_WEIGHT_ROWS: usize = 2;

/// Activation rows laid out for the tiled arithmetic on AVX-512, as llama.cpp's
/// tiled kernel lays them out: bands of 16 rows; per band and super-block, the 256
/// codes as 64 groups of 4 bytes with the 16 rows side by side (one register per
/// group) and the rows' scales. The bsums come as pairs of i16 per i32 lane, for
/// `vpdpwssd` against a pair of the weight's scales: for Q4_K, the sums of each
/// 32-value run (two bsums), runs `2c` and `2c + 1` in register `c` (4 registers);
/// for Q6_K, the 16-value runs `2c` and `2c + 1` in register `c` (8 registers).
/// Rows past `m` in the last band are zero.
#[cfg(target_arch = "x86_64")]
#[derive(Default)]
struct Bands {
    nb: usize,
    codes: Vec<i32>,
    d: Vec<f32>,
    /// Per band and super-block, 4 registers × 16 lanes.
    q4k_runs: Vec<i32>,
    /// Per band and super-block, 8 registers × 16 lanes.
    q6k_runs: Vec<i32>,
}

/// Two i16 values in one i32 lane, `lo` in the low half (as `vpdpwssd` reads them).
#[cfg(target_arch = "x86_64")]
fn pair(lo: i32, hi: i32) -> i32 {
    (u32::from(lo as i16 as u16) | (u32::from(hi as i16 as u16) << 16)) as i32
}

#[cfg(target_arch = "x86_64")]
impl Bands {
    const ROWS: usize = 16;

    /// Lay out the `m` rows of `q` (`nb` super-blocks each), reusing the buffers.
    fn fill(&mut self, q: &[Q8K], m: usize, nb: usize) {
        const R: usize = Bands::ROWS;
        let bands = m.div_ceil(R);
        self.nb = nb;
        // Every value is written below (rows past `m` with zeros): no clearing.
        self.codes.resize(bands * nb * 64 * R, 0);
        self.d.resize(bands * nb * R, 0.0);
        self.q4k_runs.resize(bands * nb * 4 * R, 0);
        self.q6k_runs.resize(bands * nb * 8 * R, 0);
        self.codes[..bands * nb * 64 * R]
            .par_chunks_mut(nb * 64 * R)
            .zip(self.d[..bands * nb * R].par_chunks_mut(nb * R))
            .zip(self.q4k_runs[..bands * nb * 4 * R].par_chunks_mut(nb * 4 * R))
            .zip(self.q6k_runs[..bands * nb * 8 * R].par_chunks_mut(nb * 8 * R))
            .enumerate()
            .for_each(|(band, (((codes, d), q4), q6))| {
                for r in 0..R {
                    let row = band * R + r;
                    for bi in 0..nb {
                        let Some(y) = (row < m).then(|| &q[row * nb + bi]) else {
                            for g in 0..64 {
                                codes[(bi * 64 + g) * R + r] = 0;
                            }
                            d[bi * R + r] = 0.0;
                            for c in 0..4 {
                                q4[(bi * 4 + c) * R + r] = 0;
                            }
                            for c in 0..8 {
                                q6[(bi * 8 + c) * R + r] = 0;
                            }
                            continue;
                        };
                        for (g, c) in y.qs.chunks_exact(4).enumerate() {
                            codes[(bi * 64 + g) * R + r] = i32::from_le_bytes([
                                c[0] as u8, c[1] as u8, c[2] as u8, c[3] as u8,
                            ]);
                        }
                        d[bi * R + r] = y.d;
                        let bs = |t: usize| i32::from(y.bsums[t]);
                        for c in 0..4 {
                            q4[(bi * 4 + c) * R + r] =
                                pair(bs(4 * c) + bs(4 * c + 1), bs(4 * c + 2) + bs(4 * c + 3));
                        }
                        for c in 0..8 {
                            q6[(bi * 8 + c) * R + r] = pair(bs(2 * c), bs(2 * c + 1));
                        }
                    }
                }
            });
    }
}

thread_local! {
    /// The last product's activation rows, quantized, on this thread: the buffer is
    /// reused (a prompt's is megabytes; a fresh one costs page faults every product).
    static QROWS: std::cell::RefCell<Vec<Q8K>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    /// The last product's activation layout on this thread, its buffers reused: a
    /// prompt's are megabytes, and fresh ones cost page faults on every product.
    static BANDS: std::cell::RefCell<Bands> = std::cell::RefCell::new(Bands::default());
}

/// The tiled arithmetic with the 16 rows of a band in the lanes of a register: one
/// weight row times one band, both K-quants.
#[cfg(target_arch = "x86_64")]
mod banded {
    use super::*;
    use std::arch::x86_64::*;

    /// The weight row's super-block `b` (repacked) as 256 unsigned values in order.
    pub(super) fn values(kind: KKind, b: &[u8], out: &mut [u8]) {
        match kind {
            KKind::Q4K => {
                // [`q4k_value`] for 128 values at a time (a loop the compiler vectorizes).
                for (p, o) in out.chunks_exact_mut(128).enumerate() {
                    let bytes = &b[24 + 64 * p..24 + 64 * (p + 1)];
                    let (lo, hi) = o.split_at_mut(64);
                    for ((l, h), &byte) in lo.iter_mut().zip(hi).zip(bytes) {
                        (*l, *h) = (byte & 0xF, byte >> 4);
                    }
                }
            }
            KKind::Q5K => {
                values(KKind::Q4K, b, out);
                let fifth = &b[Q4K_PACKED..Q4K_PACKED + 32];
                for (r, o) in out.chunks_exact_mut(32).enumerate() {
                    for (o, &h) in o.iter_mut().zip(fifth) {
                        *o |= ((h >> r) & 1) << 4;
                    }
                }
            }
            KKind::Q6K => out.copy_from_slice(&b[20..20 + QK_K]),
        }
    }

    /// `w[i] · rows` for the 16 rows of each of the `B` bands from `band`, for `N`
    /// weight rows at once: `out[i][b]` holds weight row `i`'s 16 products with band
    /// `band + b` in its lanes. `vals[i]`: the row's values, [`values`] of each
    /// super-block. Each register of activation codes is loaded once for the `N`
    /// weight rows and each weight broadcast once for the `B` bands (instead of two
    /// loads per product register), and the integer sums are the same integers as one
    /// row and band at a time: the float epilogue, in the same order, gives the same
    /// bits. With `N` = 4 and `dst` (a block of the output: its first value and row
    /// stride, `B` bands of 16 rows × 4 columns), the products go there instead of
    /// `out`, and it says so (`true`).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,avx2")]
    pub(super) fn rows<const N: usize, const B: usize>(
        kind: KKind,
        w: [&[u8]; N],
        vals: [&[u8]; N],
        bands: &Bands,
        band: usize,
        out: &mut [[[f32; Bands::ROWS]; B]; N],
        dst: Option<(*mut f32, usize)>,
    ) -> bool {
        const R: usize = Bands::ROWS;
        let nb = bands.nb;
        let pb = kind.packed_bytes();
        let mut acc = [[_mm512_setzero_ps(); B]; N];
        for bi in 0..nb {
            let at: [usize; B] = std::array::from_fn(|b| (band + b) * nb + bi);
            let codes: [*const i32; B] =
                std::array::from_fn(|b| bands.codes[at[b] * 64 * R..].as_ptr());
            let q4k_runs: [*const i32; B] =
                std::array::from_fn(|b| bands.q4k_runs[at[b] * 4 * R..].as_ptr());
            let q6k_runs: [*const i32; B] =
                std::array::from_fn(|b| bands.q6k_runs[at[b] * 8 * R..].as_ptr());
            let blk: [*const u8; N] = std::array::from_fn(|i| w[i][bi * pb..].as_ptr());
            let q: [*const u8; N] = std::array::from_fn(|i| vals[i][bi * QK_K..].as_ptr());
            // (Macros, not closures: a closure does not inherit the target features,
            // and its intrinsics then become calls.)
            // SAFETY (loads below): each band's `codes` holds 64 groups × 16 lanes, its
            // runs 4 (Q4_K) or 8 (Q6_K) registers × 16 lanes, each `q[i]` 256 bytes and `blk[i]` a repacked
            // super-block; every offset stays inside.
            macro_rules! group {
                ($b:expr, $g:expr) => {
                    unsafe { _mm512_loadu_si512(codes[$b].add($g * R).cast()) }
                };
            }
            macro_rules! runs {
                ($which:ident, $b:expr, $c:expr) => {
                    unsafe { _mm512_loadu_si512($which[$b].add($c * R).cast()) }
                };
            }
            // Two of the weight's scale bytes at `at` as a pair of i16 (`signed`: i8).
            macro_rules! scales2 {
                ($i:expr, $at:expr, $ty:ty) => {
                    _mm512_set1_epi32(pair(
                        i32::from(byte!($i, $at) as $ty),
                        i32::from(byte!($i, $at + 1) as $ty),
                    ))
                };
            }
            macro_rules! weight4 {
                ($i:expr, $g:expr) => {
                    _mm512_set1_epi32(unsafe {
                        std::ptr::read_unaligned(q[$i].add(4 * $g).cast::<i32>())
                    })
                };
            }
            macro_rules! byte {
                ($i:expr, $at:expr) => {
                    unsafe { *blk[$i].add($at) }
                };
            }
            macro_rules! scale {
                ($i:expr, $at:expr) => {
                    // SAFETY: as above.
                    f32::from_le_bytes(unsafe { std::ptr::read_unaligned(blk[$i].add($at).cast()) })
                };
            }
            // Σ over `$runs` runs of `$per` groups: the run's dpbusd sum times its
            // scale byte (at `$at + run`, read as `$ty`), per weight row and band.
            macro_rules! scaled_runs {
                ($runs:expr, $per:expr, $at:expr, $ty:ty) => {{
                    let mut s1 = [[_mm512_setzero_si512(); B]; N];
                    for s in 0..$runs {
                        let mut raw = [[_mm512_setzero_si512(); B]; N];
                        for g in $per * s..$per * (s + 1) {
                            let mut c = [_mm512_setzero_si512(); B];
                            for b in 0..B {
                                c[b] = group!(b, g);
                            }
                            for i in 0..N {
                                let wv = weight4!(i, g);
                                for b in 0..B {
                                    raw[i][b] = _mm512_dpbusd_epi32(raw[i][b], wv, c[b]);
                                }
                            }
                        }
                        for i in 0..N {
                            let sc = _mm512_set1_epi32(i32::from(byte!(i, $at + s) as $ty));
                            for b in 0..B {
                                s1[i][b] =
                                    _mm512_add_epi32(s1[i][b], _mm512_mullo_epi32(raw[i][b], sc));
                            }
                        }
                    }
                    s1
                }};
            }
            // Σ over `$count` registers of `$which` run pairs times the weight's pair of
            // scale bytes at `$at + 2c` (as `$ty`), one `vpdpwssd` per pair: the same
            // integer as one product per run.
            macro_rules! paired_runs {
                ($which:ident, $count:expr, $at:expr, $ty:ty) => {{
                    let mut acc = [[_mm512_setzero_si512(); B]; N];
                    for c in 0..$count {
                        let mut p = [_mm512_setzero_si512(); B];
                        for b in 0..B {
                            p[b] = runs!($which, b, c);
                        }
                        for i in 0..N {
                            let sc = scales2!(i, $at + 2 * c, $ty);
                            for b in 0..B {
                                acc[i][b] = _mm512_dpwssd_epi32(acc[i][b], p[b], sc);
                            }
                        }
                    }
                    acc
                }};
            }
            let mut r = [[_mm512_setzero_ps(); B]; N];
            match kind {
                // Q5_K: llama.cpp's tiled kernel for Q4_K on 5-bit values.
                KKind::Q4K | KKind::Q5K => {
                    let s1 = scaled_runs!(8, 8, 8, u8);
                    // Σ min·(the 32-value run's two bsums).
                    let s2 = paired_runs!(q4k_runs, 4, 16, u8);
                    for i in 0..N {
                        let (d, dmin) =
                            (_mm512_set1_ps(scale!(i, 0)), _mm512_set1_ps(scale!(i, 4)));
                        for b in 0..B {
                            let f1 = _mm512_mul_ps(_mm512_cvtepi32_ps(s1[i][b]), d);
                            r[i][b] = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(s2[i][b]), f1);
                        }
                    }
                }
                KKind::Q6K => {
                    let s1 = scaled_runs!(16, 4, 4, i8);
                    // ggml takes 32·bsum off each run before its scale; the same
                    // integer (modulo 2³²) is Σ scale·raw − 32·Σ scale·bsum.
                    let off = paired_runs!(q6k_runs, 8, 4, i8);
                    for i in 0..N {
                        let d = _mm512_set1_ps(scale!(i, 0));
                        for b in 0..B {
                            let s1 = _mm512_sub_epi32(s1[i][b], _mm512_slli_epi32::<5>(off[i][b]));
                            r[i][b] = _mm512_mul_ps(_mm512_cvtepi32_ps(s1), d);
                        }
                    }
                }
            }
            for b in 0..B {
                // SAFETY: 16 scales per band and super-block.
                let dx = unsafe { _mm512_loadu_ps(bands.d.as_ptr().add(at[b] * R)) };
                for i in 0..N {
                    acc[i][b] = _mm512_fmadd_ps(r[i][b], dx, acc[i][b]);
                }
            }
        }
        if let (4, Some((dst, stride))) = (N, dst) {
            // Straight into the output: each band's four registers (a weight row's 16
            // products each) transposed 4 × 4 within their 128-bit lanes, so that
            // lane `l` of register `t` holds output row `4l + t`'s four columns. (Put
            // through `out` and written one float at a time, a 1536-wide product
            // spent ~8% of its time here.)
            #[allow(clippy::needless_range_loop)] // `b` also places the band's rows
            for b in 0..B {
                let (a0, a1, a2, a3) = (acc[0][b], acc[1][b], acc[2][b], acc[3][b]);
                let (t0, t1) = (_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
                let (t2, t3) = (_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
                let rows = [
                    _mm512_shuffle_ps::<0x44>(t0, t2),
                    _mm512_shuffle_ps::<0xEE>(t0, t2),
                    _mm512_shuffle_ps::<0x44>(t1, t3),
                    _mm512_shuffle_ps::<0xEE>(t1, t3),
                ];
                for (t, r) in rows.into_iter().enumerate() {
                    // SAFETY: the caller's block holds `B` bands of 16 rows × 4 columns,
                    // rows `stride` apart.
                    unsafe {
                        let at = |l: usize| dst.add(((b * R) + 4 * l + t) * stride);
                        _mm_storeu_ps(at(0), _mm512_castps512_ps128(r));
                        _mm_storeu_ps(at(1), _mm512_extractf32x4_ps::<1>(r));
                        _mm_storeu_ps(at(2), _mm512_extractf32x4_ps::<2>(r));
                        _mm_storeu_ps(at(3), _mm512_extractf32x4_ps::<3>(r));
                    }
                }
            }
            return true;
        }
        for i in 0..N {
            for b in 0..B {
                // SAFETY: 16 writable floats.
                unsafe { _mm512_storeu_ps(out[i][b].as_mut_ptr(), acc[i][b]) };
            }
        }
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[path = "kquants_avx2.rs"]
mod avx2;

/// Weight rows `jj..jj + N` of a task (`w(jj)`: the row's repacked bytes, `v(jj)`:
/// its values) times bands `band..band + B`, into the task's columns of the `m` rows,
/// by the kernels of `isa` ([`banded::rows`] or [`avx2::banded`]).
///
/// # Safety
/// Only where the CPU has `isa`: AVX-512 F/BW/VL/VNNI and FMA (`Isa::Avx512Vnni`), or AVX2
/// and FMA (`Isa::Avx2`).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<'a, const N: usize, const B: usize>(
    isa: Isa,
    kind: KKind,
    w: &impl Fn(usize) -> &'a [u8],
    v: &impl Fn(usize) -> &'a [u8],
    bands: &Bands,
    band: usize,
    jj: usize,
    m: usize,
    out: &mut Columns<'_>,
) {
    let mut lanes = [[[0f32; Bands::ROWS]; B]; N];
    let (w, v) = (
        std::array::from_fn(|i| w(jj + i)),
        std::array::from_fn(|i| v(jj + i)),
    );
    // SAFETY: the caller's.
    unsafe {
        // Whole bands of the kernel's weight rows (four on AVX-512, two on AVX2) go
        // straight into the output.
        let whole = if isa == Isa::Avx2 { 2 } else { 4 };
        let dst = (N == whole)
            .then(|| out.block(band * Bands::ROWS, jj, B * Bands::ROWS, N))
            .flatten();
        let direct = if isa == Isa::Avx2 {
            avx2::banded(kind, w, v, bands, band, &mut lanes, dst)
        } else {
            banded::rows(kind, w, v, bands, band, &mut lanes, dst)
        };
        if direct {
            return;
        }
    };
    for (i, li) in lanes.iter().enumerate() {
        for (b, l) in li.iter().enumerate() {
            let first = (band + b) * Bands::ROWS;
            let live = Bands::ROWS.min(m - first);
            for (r, x) in l[..live].iter().enumerate() {
                out.set(first + r, jj + i, *x);
            }
        }
    }
}

/// A task's `width` weight rows times every band, in tiles of `N` weight rows × `B`
/// bands ([`tile`]), then what is left over (1 row, 1 band).
///
/// # Safety
/// As [`tile`]'s.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn tiles<'a, const N: usize, const B: usize>(
    isa: Isa,
    kind: KKind,
    w: &impl Fn(usize) -> &'a [u8],
    v: &impl Fn(usize) -> &'a [u8],
    bands: &Bands,
    m: usize,
    width: usize,
    out: &mut Columns<'_>,
) {
    let nbands = m.div_ceil(Bands::ROWS);
    let mut band = 0;
    while band < nbands {
        let all_b = band + B <= nbands;
        let mut jj = 0;
        while jj < width {
            let all_n = jj + N <= width;
            // SAFETY: the caller's.
            unsafe {
                match (all_n, all_b) {
                    (true, true) => tile::<N, B>(isa, kind, w, v, bands, band, jj, m, out),
                    (true, false) => tile::<N, 1>(isa, kind, w, v, bands, band, jj, m, out),
                    (false, true) => tile::<1, B>(isa, kind, w, v, bands, band, jj, m, out),
                    (false, false) => tile::<1, 1>(isa, kind, w, v, bands, band, jj, m, out),
                }
            }
            jj += if all_n { N } else { 1 };
        }
        band += if all_b { B } else { 1 };
    }
}

/// A Q4_K, Q5_K or Q6_K weight of `n` rows of `k` values, repacked (see [`repack`]).
#[derive(Debug, Clone)]
pub(crate) struct KWeight {
    kind: KKind,
    n: usize,
    k: usize,
    /// On huge pages (see [`Huge`](crate::cpu::huge::Huge)).
    data: crate::cpu::huge::Huge<u8>,
}

impl KWeight {
    /// The weight, if it is a 2-D Q4_K / Q5_K / Q6_K tensor on the CPU.
    pub(crate) fn new(t: &candle_core::quantized::QTensor) -> candle_core::Result<Option<Self>> {
        use candle_core::quantized::GgmlDType;
        let kind = match t.dtype() {
            GgmlDType::Q4K => KKind::Q4K,
            GgmlDType::Q5K => KKind::Q5K,
            GgmlDType::Q6K => KKind::Q6K,
            _ => return Ok(None),
        };
        let Ok((n, k)) = t.shape().dims2() else {
            return Ok(None);
        };
        if k % QK_K != 0 || !t.device().is_cpu() {
            return Ok(None);
        }
        let raw = t.data()?;
        if raw.len() != n * (k / QK_K) * kind.block_bytes() {
            candle_core::bail!(
                "weight of {n}x{k} {:?} has {} bytes of data",
                t.dtype(),
                raw.len()
            );
        }
        Ok(Some(Self::from_blocks(kind, n, k, &raw)))
    }

    /// The weight of `n` rows of `k` values from ggml's blocks `raw`.
    fn from_blocks(kind: KKind, n: usize, k: usize, raw: &[u8]) -> Self {
        let data = crate::cpu::huge::Huge::copy_of(&repack(kind, raw));
        Self { kind, n, k, data }
    }

    pub(crate) fn n(&self) -> usize {
        self.n
    }

    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// `out[i·n + j] = x[i] · w[j]` for the `m` rows of `x`; `batch`: the rows are
    /// one sequence's batch (a prompt), which llama.cpp computes with its tiled
    /// arithmetic from [`TILED_MIN_ROWS`] rows on.
    pub(crate) fn matmul(&self, x: &[f32], m: usize, batch: bool, out: &mut [f32]) {
        let arith = if batch && m >= TILED_MIN_ROWS {
            Arith::Tiled
        } else {
            Arith::Lanes
        };
        self.product(Isa::here(), arith, x, m, out);
    }

    /// `out[i·n + j] = x[i] · w[j]` for the `m` rows of `x`, in `arith`, by the kernels
    /// of `isa` (which the CPU must have).
    fn product(&self, isa: Isa, arith: Arith, x: &[f32], m: usize, out: &mut [f32]) {
        let nb = self.k / QK_K;
        let mut fresh = Vec::new();
        QROWS.with(|kept| {
            // This thread's buffer from its last product, unless it is in use.
            let mut kept = kept.try_borrow_mut();
            let q = match kept.as_deref_mut() {
                Ok(q) => q,
                Err(_) => &mut fresh,
            };
            if q.len() < m * nb {
                q.resize(m * nb, Q8K::default());
            }
            let q = &mut q[..m * nb];
            if m >= 8 {
                x.par_chunks_exact(self.k)
                    .zip(q.par_chunks_exact_mut(nb))
                    .for_each(|(row, qrow)| quantize_row_q8k(row, qrow));
            } else {
                for (row, qrow) in x.chunks_exact(self.k).zip(q.chunks_exact_mut(nb)) {
                    quantize_row_q8k(row, qrow);
                }
            }
            self.product_quantized(isa, arith, q, m, out);
        });
    }

    /// [`Self::product`] of the activation rows quantized in `q`.
    fn product_quantized(&self, isa: Isa, arith: Arith, q: &[Q8K], m: usize, out: &mut [f32]) {
        let nb = self.k / QK_K;
        #[cfg(target_arch = "x86_64")]
        if arith == Arith::Tiled && matches!(isa, Isa::Avx512Vnni | Isa::Avx2) {
            self.matmul_banded(isa, q, m, out);
            return;
        }
        let rows: Vec<&[Q8K]> = q.chunks_exact(nb).collect();
        let row_bytes = nb * self.kind.packed_bytes();
        column_tasks(self.n, m, out, |j0, j1, res| {
            let mut some = [0f32; ROWS];
            // A group of activation rows against the task's weight rows: both stay in
            // the first-level cache.
            for (g, ys) in rows.chunks(ROWS).enumerate() {
                for (jj, j) in (j0..j1).enumerate() {
                    let w = &self.data[j * row_bytes..(j + 1) * row_bytes];
                    self.dot(isa, arith, w, ys, &mut some[..ys.len()]);
                    for (r, v) in some[..ys.len()].iter().enumerate() {
                        res.set(ROWS * g + r, jj, *v);
                    }
                }
            }
        });
    }

    /// The tiled arithmetic with a band's 16 activation rows in the lanes: one
    /// register on AVX-512 VNNI ([`banded`]), two on AVX2 ([`avx2::banded`]).
    #[cfg(target_arch = "x86_64")]
    fn matmul_banded(&self, isa: Isa, q: &[Q8K], m: usize, out: &mut [f32]) {
        let nb = self.k / QK_K;
        let mut fresh = None;
        BANDS.with(|kept| {
            // The buffers of this thread's last product, unless they are in use (a
            // product run while another waits on this thread): fresh ones then.
            let mut kept = kept.try_borrow_mut();
            let bands = match kept.as_deref_mut() {
                Ok(b) => b,
                Err(_) => fresh.insert(Bands::default()),
            };
            bands.fill(q, m, nb);
            self.banded_with(isa, bands, m, out);
        });
    }

    /// [`Self::matmul_banded`] with the activation rows laid out in `bands`.
    #[cfg(target_arch = "x86_64")]
    fn banded_with(&self, isa: Isa, bands: &Bands, m: usize, out: &mut [f32]) {
        let nb = self.k / QK_K;
        let row_bytes = nb * self.kind.packed_bytes();
        column_tasks(self.n, m, out, |j0, j1, res| {
            let width = j1 - j0;
            // The task's weight rows unpacked once for all bands.
            let rows = &self.data[j0 * row_bytes..j1 * row_bytes];
            let mut vals = vec![0u8; width * nb * QK_K];
            for (b, v) in rows
                .chunks_exact(self.kind.packed_bytes())
                .zip(vals.chunks_exact_mut(QK_K))
            {
                banded::values(self.kind, b, v);
            }
            let w = |jj: usize| &rows[jj * row_bytes..(jj + 1) * row_bytes];
            let v = |jj: usize| &vals[jj * nb * QK_K..(jj + 1) * nb * QK_K];
            // SAFETY: `isa` is the CPU's (`Isa::Avx512Vnni` or `Isa::Avx2`, see the caller).
            unsafe {
                if isa == Isa::Avx2 {
                    tiles::<AVX2_BANDED_WEIGHT_ROWS, 1>(
                        isa, self.kind, &w, &v, bands, m, width, res,
                    )
                } else {
                    tiles::<BANDED_WEIGHT_ROWS, 2>(isa, self.kind, &w, &v, bands, m, width, res)
                }
            }
        });
    }

    /// One weight row `w` against up to [`ROWS`] activation rows (the tiled
    /// arithmetic on AVX-512 and AVX2 goes to [`Self::matmul_banded`] instead).
    #[inline]
    fn dot(&self, isa: Isa, arith: Arith, w: &[u8], ys: &[&[Q8K]], out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        match isa {
            Isa::Avx512Vnni if arith == Arith::Lanes => {
                // SAFETY: `Isa::Avx512Vnni` only when the CPU has AVX-512 F/BW/VL/VNNI and FMA.
                unsafe {
                    match self.kind {
                        KKind::Q4K => avx512::q4k(w, ys, out),
                        KKind::Q5K => avx512::q5k(w, ys, out),
                        KKind::Q6K => avx512::q6k(w, ys, out),
                    }
                }
                return;
            }
            Isa::Avx2 if arith == Arith::Lanes => {
                // SAFETY: `Isa::Avx2` only when the CPU has AVX2 and FMA.
                unsafe { avx2::dot(self.kind, w, ys, out) };
                return;
            }
            _ => {}
        }
        let _ = isa;
        for (o, y) in out.iter_mut().zip(ys) {
            *o = match self.kind {
                KKind::Q4K => portable::dot_q4k(arith, w, y),
                KKind::Q5K => portable::dot_q5k(arith, w, y),
                KKind::Q6K => portable::dot_q6k(arith, w, y),
            };
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    use crate::llm::runtime::matmul::tests::rnd;

    #[test]
    fn q8k_quantization_is_ggmls() {
        let mut x = vec![0.5f32; QK_K];
        x[3] = -1.984375; // largest magnitude, negative: iscale = -127/max = 64
        x[4] = 1.984375; // same magnitude later: the first one sets the sign
        x[5] = 0.5 / 64.0; // 0.5 after scaling: ties to even
        x[6] = 1.5 / 64.0;
        x[7] = 2.5 / 64.0;
        x[8] = -0.5 / 64.0;
        let mut q = [Q8K::default()];
        quantize_row_q8k(&x, &mut q);
        assert_eq!(q[0].d, 1.0 / 64.0);
        assert_eq!(&q[0].qs[..10], &[32, 32, 32, -127, 127, 0, 2, 2, 0, 32]);
        let s: i16 = q[0].qs[..16].iter().map(|&v| i16::from(v)).sum();
        assert_eq!(q[0].bsums[0], s);
        let mut z = [Q8K::default()];
        quantize_row_q8k(&[0f32; QK_K], &mut z);
        assert_eq!((z[0].d, z[0].qs, z[0].bsums), (0.0, [0; QK_K], [0; 16]));
    }

    /// The kernels against the float product of candle's dequantized weights, and
    /// the dispatched kernel (AVX-512 VNNI or AVX2 where present) bit for bit against
    /// the reference.
    #[test]
    fn kernels_match_the_reference_and_the_float_product() {
        let dev = Device::Cpu;
        let (n, k) = (37, 512);
        let wt = Tensor::from_vec(rnd(n * k, 5), (n, k), &dev).unwrap();
        for dt in [GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K] {
            let qt = QTensor::quantize(&wt, dt).unwrap();
            let deq = qt.dequantize(&dev).unwrap();
            let deq_rows = deq.to_vec2::<f32>().unwrap();
            let w = KWeight::new(&qt).unwrap().unwrap();
            for m in [1, 2, 3, 4, 5, 9, 17] {
                let x = rnd(m * k, 17 + m as u64);
                let xt = Tensor::from_vec(x.clone(), (m, k), &dev).unwrap();
                let exact = xt.matmul(&deq.t().unwrap()).unwrap();
                let exact = exact.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                let mut outs = Vec::new();
                for batch in [false, true] {
                    let arith = if batch && m >= TILED_MIN_ROWS {
                        Arith::Tiled
                    } else {
                        Arith::Lanes
                    };
                    let mut got = vec![0f32; m * n];
                    w.matmul(&x, m, batch, &mut got);
                    let nb = k / QK_K;
                    let mut q = vec![Q8K::default(); nb];
                    let row_bytes = nb * w.kind.packed_bytes();
                    for i in 0..m {
                        quantize_row_q8k(&x[i * k..(i + 1) * k], &mut q);
                        for j in 0..n {
                            let wr = &w.data[j * row_bytes..(j + 1) * row_bytes];
                            let p = match w.kind {
                                KKind::Q4K => portable::dot_q4k(arith, wr, &q),
                                KKind::Q5K => portable::dot_q5k(arith, wr, &q),
                                KKind::Q6K => portable::dot_q6k(arith, wr, &q),
                            };
                            let g = got[i * n + j];
                            assert_eq!(p.to_bits(), g.to_bits(), "{dt:?} m={m} [{i}][{j}]");
                            // Against the product with the quantized activation itself.
                            let dq: f64 = (0..k)
                                .map(|c| {
                                    let y = &q[c / QK_K];
                                    f64::from(deq_rows[j][c])
                                        * f64::from(y.qs[c % QK_K])
                                        * f64::from(y.d)
                                })
                                .sum();
                            assert!(
                                (f64::from(g) - dq).abs() < 1e-3,
                                "{dt:?} [{i}][{j}]: {g} vs {dq}"
                            );
                            let e = exact[i * n + j];
                            assert!((g - e).abs() < 0.15, "{dt:?} [{i}][{j}]: {g} vs {e}");
                        }
                    }
                    outs.push(got);
                }
                // From 8 rows of one batch on, the tiled arithmetic: other roundings.
                let differ = outs[0]
                    .iter()
                    .zip(&outs[1])
                    .any(|(a, b)| a.to_bits() != b.to_bits());
                assert_eq!(differ, m >= TILED_MIN_ROWS, "{dt:?} m={m}");
            }
        }
    }

    /// `n` rows of `k` values of `kind` as ggml blocks of random bytes (every scale,
    /// min and value in its range) with random finite f16 `d` / `dmin`; row 0 is all
    /// extremes (values and scales at their maxima, Q6_K's scales at −128).
    fn random_blocks(kind: KKind, n: usize, k: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let bb = kind.block_bytes();
        let mut raw: Vec<u8> = (0..n * k / QK_K * bb).map(|_| next() as u8).collect();
        for (i, b) in raw.chunks_exact_mut(bb).enumerate() {
            let extreme = i < k / QK_K;
            if extreme {
                b.fill(0xFF);
            }
            // f16 of magnitude 2^-10 .. 2^4, either sign.
            let mut f16 = || {
                let r = next();
                let exp = 5 + r % 15;
                ((r >> 8) & 0x83FF | exp << 10) as u16
            };
            match kind {
                KKind::Q4K | KKind::Q5K => {
                    b[..2].copy_from_slice(&f16().to_le_bytes());
                    b[2..4].copy_from_slice(&f16().to_le_bytes());
                }
                KKind::Q6K => {
                    if extreme {
                        b[192..208].fill(0x80);
                    }
                    b[208..210].copy_from_slice(&f16().to_le_bytes());
                }
            }
        }
        raw
    }

    /// Every kernel this CPU has (AVX-512 VNNI, AVX2 + FMA, and the portable loop
    /// through the same row grouping) bit for bit against the reference's dot
    /// products: both kinds, both arithmetics, 1..=17 activation rows, several `k`,
    /// random blocks and activations (row 0 of each at extremes: codes ±127).
    #[test]
    fn every_kernel_here_matches_the_reference_bit_for_bit() {
        let mut isas = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if crate::cpu::has_avx2_fma() {
                isas.push(Isa::Avx2);
            } else {
                println!("this CPU lacks AVX2 + FMA: the AVX2 kernels are NOT tested here");
            }
            if crate::cpu::vnni_in_cpu() && crate::cpu::has_avx512() {
                isas.push(Isa::Avx512Vnni);
            } else {
                println!("this CPU lacks AVX-512 VNNI: those kernels are NOT tested here");
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        println!("not x86-64: only the portable kernels are tested here");
        println!("kernels tested: {isas:?}");
        let n = 11;
        for kind in [KKind::Q4K, KKind::Q5K, KKind::Q6K] {
            for (ki, k) in [256, 512, 1280, 2304].into_iter().enumerate() {
                let raw = random_blocks(kind, n, k, 7 + ki as u64);
                let w = KWeight::from_blocks(kind, n, k, &raw);
                let nb = k / QK_K;
                let row_bytes = nb * kind.packed_bytes();
                // (32 rows and more: whole pairs of bands, written straight into the
                // output by the AVX-512 kernel; 47: a pair and a part band.)
                for m in (1..=17).chain([32, 47, 64]) {
                    let mut x = rnd(m * k, 100 * m as u64 + ki as u64);
                    // Row 0: all codes −127 (the first value sets the sign).
                    x[..k].fill(1.0);
                    let mut q = vec![Q8K::default(); m * nb];
                    for (row, qrow) in x.chunks_exact(k).zip(q.chunks_exact_mut(nb)) {
                        quantize_row_q8k(row, qrow);
                    }
                    for arith in [Arith::Lanes, Arith::Tiled] {
                        let want: Vec<f32> = (0..m * n)
                            .map(|at| {
                                let (i, j) = (at / n, at % n);
                                let wr = &w.data[j * row_bytes..(j + 1) * row_bytes];
                                let ys = &q[i * nb..(i + 1) * nb];
                                match kind {
                                    KKind::Q4K => portable::dot_q4k(arith, wr, ys),
                                    KKind::Q5K => portable::dot_q5k(arith, wr, ys),
                                    KKind::Q6K => portable::dot_q6k(arith, wr, ys),
                                }
                            })
                            .collect();
                        for &isa in &isas {
                            let mut got = vec![f32::NAN; m * n];
                            w.product(isa, arith, &x, m, &mut got);
                            for (at, (g, e)) in got.iter().zip(&want).enumerate() {
                                assert_eq!(
                                    g.to_bits(),
                                    e.to_bits(),
                                    "{isa:?} {kind:?} {arith:?} k={k} m={m} [{}][{}]: {g} vs {e}",
                                    at / n,
                                    at % n
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The repacked blocks hold the values candle's dequantization gives
    /// (ggml's `dequantize_row_q4_K` / `_q6_K` formulas, bit for bit).
    #[test]
    fn repacked_blocks_dequantize_as_candle_does() {
        let dev = Device::Cpu;
        let wt = Tensor::from_vec(rnd(3 * QK_K, 9), (3, QK_K), &dev).unwrap();
        for dt in [GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K] {
            let qt = QTensor::quantize(&wt, dt).unwrap();
            let deq = qt.dequantize(&dev).unwrap().to_vec2::<f32>().unwrap();
            let w = KWeight::new(&qt).unwrap().unwrap();
            for (r, b) in w.data.chunks_exact(w.kind.packed_bytes()).enumerate() {
                // The tiled kernels' unpacked values are the same.
                #[cfg(target_arch = "x86_64")]
                {
                    let mut vals = [0u8; QK_K];
                    banded::values(w.kind, b, &mut vals);
                    for (v, &got) in vals.iter().enumerate() {
                        let want = match w.kind {
                            KKind::Q4K => q4k_value(b, v),
                            KKind::Q5K => q5k_value(b, v),
                            KKind::Q6K => b[20 + v],
                        };
                        assert_eq!(got, want, "{dt:?} block {r} value {v}");
                    }
                }
                for v in 0..QK_K {
                    let got = match w.kind {
                        KKind::Q4K | KKind::Q5K => {
                            let q = q45_value(w.kind == KKind::Q5K, b, v);
                            let sub = v / 32;
                            let d1 = f32_at(b, 0) * f32::from(b[8 + sub]);
                            let m1 = f32_at(b, 4) * f32::from(b[16 + sub]);
                            d1 * f32::from(q) - m1
                        }
                        KKind::Q6K => {
                            let sc = f32::from(b[4 + v / 16] as i8);
                            f32_at(b, 0) * sc * (f32::from(b[20 + v]) - 32.0)
                        }
                    };
                    assert_eq!(
                        got.to_bits(),
                        deq[r][v].to_bits(),
                        "{dt:?} row {r} value {v}"
                    );
                }
            }
        }
    }
}
