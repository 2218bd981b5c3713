//! Q4_K, Q5_K and Q6_K times Q8_K on AVX2 + FMA, in both of llama.cpp's arithmetics
//! for them, on the repacked blocks of [`kquants`](super); the reference's bits
//! ([`portable`](super::portable), tested).
//!
//! **The lanes** ([`Arith::Lanes`]: the 8 lanes of llama.cpp's AVX2
//! `ggml_vec_dot_q4_K_q8_K` / `_q5_K_q8_K` / `_q6_K_q8_K`), [`dot`]: a weight row goes
//! against up to [`ROWS`] activation rows, each super-block unpacked once for them: 8
//! registers of 32 unsigned values (one 32-value run each, in value order) and, per
//! register, the scales as i16 lanes (Q4_K: the run's scale over all 16; Q6_K: those
//! of its two 16-value runs over the low and the high 8). Per activation row,
//! `vpmaddubsw` (values × codes, pairs summed) then `vpmaddwd` by the scales gives
//! ggml's 8 integer lanes (lane `l`: the values at `4l..4l+4` of every run), as its
//! AVX2 kernels form them; `vpmaddwd` of the bsums gives Q4_K's min terms
//! (`min·Σ bsum` per 32-value run) and Q6_K's offset (`Σ bsum·scale` per lane). It
//! accumulates `d_w·d_x · lanes` by FMA, 8 float lanes per row (Q4_K also 4 lanes of
//! `−dmin·d_x · mins`, Q5_K one float of the mins' integer total), and sums them
//! horizontally last.
//!
//! **The tiled sums** ([`Arith::Tiled`]: llama.cpp's tiled matmul, a prompt's batch),
//! [`banded`]: the activation rows side by side in the lanes ([`Bands`]), 2 weight
//! rows at once; per super-block each row's exact `s1` (and Q4_K's `s2`), then
//! [`tiled_step`](super::tiled_step) per lane: `fma(fma(−dmin, s2, s1·d), d_x, out)`.

use std::arch::x86_64::*;

use super::{
    f32_at, hsum4, hsum8, Bands, KKind, PREFETCH, Q4K_PACKED, Q5K_PACKED, Q6K_PACKED, Q8K, QK_K,
    ROWS,
};

/// The kinds as the kernels' const parameter.
const Q4: u8 = 0;
const Q5: u8 = 1;
const Q6: u8 = 2;

/// Repacked bytes of a super-block of kind `K`.
const fn packed_bytes(k: u8) -> usize {
    match k {
        Q4 => Q4K_PACKED,
        Q5 => Q5K_PACKED,
        _ => Q6K_PACKED,
    }
}

/// A super-block unpacked for the integer dot products.
struct Unpacked {
    /// The 256 unsigned values, 32 per register, in order.
    q: [__m256i; 8],
    /// The scales of register `c`'s values as i16 lanes (see the module docs).
    sc: [__m256i; 8],
    /// What the bsums are multiplied by (`vpmaddwd`): Q4_K's 8 mins, each over two
    /// lanes (lane `l` of the product: `min_l · S_l`, `S_l` the sum of the codes of run
    /// `l`); Q6_K's 16 scales (lane `l`: `bsum_2l·sc_2l + bsum_2l+1·sc_2l+1`).
    m: __m256i,
    d: f32,
    dmin: f32,
}

/// Super-block `b` (repacked) of a row of kind `K`, unpacked.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn unpack<const K: u8>(b: &[u8]) -> Unpacked {
    if K == Q6 {
        debug_assert!(b.len() >= Q6K_PACKED);
        // SAFETY: 256 values at 20 and 16 scale bytes at 4 in a repacked Q6_K block.
        let q = std::array::from_fn(|c| unsafe {
            _mm256_loadu_si256(b.as_ptr().add(20 + 32 * c).cast())
        });
        // SAFETY: as above.
        let s16 = _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(b.as_ptr().add(4).cast()) });
        // Scales 0..8 in both halves, and 8..16: register `c` takes scale `2c` in its low
        // half and `2c + 1` in its high one, from one of them.
        let lo = _mm256_permute2x128_si256::<0x00>(s16, s16);
        let hi = _mm256_permute2x128_si256::<0x11>(s16, s16);
        let sc = std::array::from_fn(|c| {
            // The `vpshufb` indices of i16 lane `i`: its two bytes.
            let word = |i: usize| i16::from_le_bytes([2 * i as u8, 2 * i as u8 + 1]);
            let j = 2 * c % 8;
            let mask = _mm256_setr_m128i(_mm_set1_epi16(word(j)), _mm_set1_epi16(word(j + 1)));
            _mm256_shuffle_epi8(if c < 4 { lo } else { hi }, mask)
        });
        Unpacked {
            q,
            sc,
            m: s16,
            d: f32_at(b, 0),
            dmin: 0.0,
        }
    } else {
        debug_assert!(b.len() >= packed_bytes(K));
        let m4 = _mm256_set1_epi8(0xF);
        let mut q = [_mm256_setzero_si256(); 8];
        for p in 0..2 {
            for h in 0..2 {
                // SAFETY: 128 bytes of nibbles at 24 in a repacked Q4_K (Q5_K) block.
                let v = unsafe { _mm256_loadu_si256(b.as_ptr().add(24 + 64 * p + 32 * h).cast()) };
                // Byte `i` of group `p`: value `128p + i` low, `128p + 64 + i` high.
                q[4 * p + h] = _mm256_and_si256(v, m4);
                q[4 * p + 2 + h] = _mm256_and_si256(_mm256_srli_epi16::<4>(v), m4);
            }
        }
        if K == Q5 {
            // SAFETY: 32 bytes of fifth bits at 152 in a repacked Q5_K block.
            let h = unsafe { _mm256_loadu_si256(b.as_ptr().add(Q4K_PACKED).cast()) };
            let bit4 = _mm256_set1_epi8(16);
            for (c, q) in q.iter_mut().enumerate() {
                // Run `c`'s fifth bits are bit `c` of each byte: moved to bit 4 (a shift
                // of the 16-bit lanes brings no other byte's bit to bit 4).
                let at4 = if c <= 4 {
                    _mm256_sll_epi16(h, _mm_cvtsi32_si128(4 - c as i32))
                } else {
                    _mm256_srl_epi16(h, _mm_cvtsi32_si128(c as i32 - 4))
                };
                *q = _mm256_or_si256(*q, _mm256_and_si256(at4, bit4));
            }
        }
        // SAFETY: 8 scales at 8, 8 mins at 16.
        let (scales, mins) = unsafe {
            (
                _mm_cvtepu8_epi16(_mm_loadl_epi64(b.as_ptr().add(8).cast())),
                _mm_cvtepu8_epi16(_mm_loadl_epi64(b.as_ptr().add(16).cast())),
            )
        };
        let both = _mm256_broadcastsi128_si256(scales);
        // Register `c`: i16 lane `c` (bytes `2c`, `2c + 1`) everywhere.
        let sc = std::array::from_fn(|c| {
            let word = i16::from_le_bytes([2 * c as u8, 2 * c as u8 + 1]);
            _mm256_shuffle_epi8(both, _mm256_set1_epi16(word))
        });
        let m = _mm256_setr_m128i(
            _mm_unpacklo_epi16(mins, mins),
            _mm_unpackhi_epi16(mins, mins),
        );
        Unpacked {
            q,
            sc,
            m,
            d: f32_at(b, 0),
            dmin: f32_at(b, 4),
        }
    }
}

/// The block `u` times the activation block `y`: ggml's 8 integer lanes (Q6_K: less
/// its offset of 32) and the bsums times `u.m`.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn sums<const K: u8>(u: &Unpacked, y: &Q8K) -> (__m256i, __m256i) {
    let mut sumi = _mm256_setzero_si256();
    for (c, (w, s)) in u.q.iter().zip(&u.sc).enumerate() {
        // SAFETY: 256 activation codes per block.
        let a = unsafe { _mm256_loadu_si256(y.qs.as_ptr().add(32 * c).cast()) };
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(*s, _mm256_maddubs_epi16(*w, a)));
    }
    // SAFETY: 16 bsums.
    let bs = unsafe { _mm256_loadu_si256(y.bsums.as_ptr().cast()) };
    let mb = _mm256_madd_epi16(bs, u.m);
    if K == Q6 {
        (_mm256_sub_epi32(sumi, _mm256_slli_epi32::<5>(mb)), mb)
    } else {
        (sumi, mb)
    }
}

/// `out[r] = w · ys[r]` for the rows given, in the lanes arithmetic; `w` one repacked
/// row of `kind`.
#[target_feature(enable = "avx2,fma")]
pub(super) fn dot(kind: KKind, w: &[u8], ys: &[&[Q8K]], out: &mut [f32]) {
    macro_rules! rows {
        ($k:expr, $ys:expr, $out:expr) => {
            match $ys.len() {
                1 => row::<{ $k }, 1>(w, $ys, $out),
                2 => row::<{ $k }, 2>(w, $ys, $out),
                3 => row::<{ $k }, 3>(w, $ys, $out),
                4 => row::<{ $k }, 4>(w, $ys, $out),
                5 => row::<{ $k }, 5>(w, $ys, $out),
                6 => row::<{ $k }, 6>(w, $ys, $out),
                7 => row::<{ $k }, 7>(w, $ys, $out),
                _ => row::<{ $k }, 8>(w, $ys, $out),
            }
        };
    }
    for (ys, out) in ys.chunks(ROWS).zip(out.chunks_mut(ROWS)) {
        match kind {
            KKind::Q4K => rows!(Q4, ys, out),
            KKind::Q5K => rows!(Q5, ys, out),
            KKind::Q6K => rows!(Q6, ys, out),
        }
    }
}

/// `out[r] = w · ys[r]` for `R` rows (1..=8) of kind `K`, in the lanes arithmetic.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn row<const K: u8, const R: usize>(w: &[u8], ys: &[&[Q8K]], out: &mut [f32]) {
    let bytes = packed_bytes(K);
    let nb = w.len() / bytes;
    let ys: [&[Q8K]; R] = std::array::from_fn(|r| &ys[r][..nb]);
    let mut acc = [_mm256_setzero_ps(); R];
    let mut acc_m = [_mm_setzero_ps(); R];
    let mut summs = [0f32; R];
    for (bi, b) in w.chunks_exact(bytes).enumerate() {
        if R == 1 {
            // Generation streams the weight once per token: fetch a few blocks ahead
            // (a hint; past the end of the row it is harmless).
            let ahead = w.as_ptr().wrapping_add((bi + PREFETCH) * bytes);
            for line in (0..bytes).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(line).cast());
            }
        }
        let u = unpack::<K>(b);
        for r in 0..R {
            let y = &ys[r][bi];
            let (sumi, mb) = sums::<K>(&u, y);
            let d = _mm256_set1_ps(y.d * u.d);
            acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc[r]);
            if K == Q5 {
                // ggml's one float: the 8 min terms' integer total.
                let h = _mm_add_epi32(
                    _mm256_castsi256_si128(mb),
                    _mm256_extracti128_si256::<1>(mb),
                );
                let h = _mm_hadd_epi32(h, h);
                let all = _mm_cvtsi128_si32(_mm_hadd_epi32(h, h));
                summs[r] = (-y.d * u.dmin).mul_add(all as f32, summs[r]);
            } else if K == Q4 {
                // ggml's 4 lanes: `min_2i·S_2i + min_2i+1·S_2i+1`.
                let prod = _mm_hadd_epi32(
                    _mm256_castsi256_si128(mb),
                    _mm256_extracti128_si256::<1>(mb),
                );
                let dmin = _mm_set1_ps(-y.d * u.dmin);
                acc_m[r] = _mm_fmadd_ps(dmin, _mm_cvtepi32_ps(prod), acc_m[r]);
            }
        }
    }
    for r in 0..R {
        let mut lanes = [0f32; 8];
        let mut m = [0f32; 4];
        // SAFETY: 8 and 4 writable floats.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), acc[r]);
            _mm_storeu_ps(m.as_mut_ptr(), acc_m[r]);
        }
        out[r] = match K {
            Q6 => hsum8(&lanes),
            Q5 => hsum8(&lanes) + summs[r],
            _ => hsum8(&lanes) + hsum4(&m),
        };
    }
}

/// The tiled arithmetic with the activation rows side by side in the lanes, as
/// [`Bands`] lays them out (a band's 16 rows as two registers of 8 i32 lanes): `N`
/// weight rows from their values ([`banded::values`](super::banded)) times the `B`
/// bands from `band`, one after the other; `out[i][b]` the 16 rows' results of weight
/// row `i` and band `band + b`.
///
/// Per group of 4 values, `vpmaddubsw` of the weight's 4 values (broadcast) with the
/// 8 rows' 4 codes gives each row's two pair sums as i16; those of a run's groups are
/// added as i16 (`vpaddw`: no multiply) before one `vpmaddwd` by the run's scale, as
/// many groups as cannot overflow (values < 16: 8 groups, a 32-value run; < 32: 4;
/// < 64: 2 — at most `8·2·15·128`, `4·2·31·128`, `2·2·63·128` < 2¹⁵): the same exact
/// integers `s1` and `s2` (Q6_K: `s1` less `32·Σ scale·bsum`), then the same float
/// epilogue per super-block and row, so the same bits as the reference. With `N` = 2
/// and `dst` (a block of the output: its first value and row stride, `B` bands of 16
/// rows × 2 columns), the products go there instead of `out`, and it says so (`true`).
#[target_feature(enable = "avx2,fma")]
pub(super) fn banded<const N: usize, const B: usize>(
    kind: KKind,
    w: [&[u8]; N],
    vals: [&[u8]; N],
    bands: &Bands,
    band: usize,
    out: &mut [[[f32; Bands::ROWS]; B]; N],
    dst: Option<(*mut f32, usize)>,
) -> bool {
    let mut direct = false;
    for b in 0..B {
        direct = match kind {
            KKind::Q4K => banded_k::<Q4, N, B>(w, vals, bands, band, b, out, dst),
            KKind::Q5K => banded_k::<Q5, N, B>(w, vals, bands, band, b, out, dst),
            KKind::Q6K => banded_k::<Q6, N, B>(w, vals, bands, band, b, out, dst),
        };
    }
    direct
}

/// [`banded`] for kind `K` and its band `band + b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn banded_k<const K: u8, const N: usize, const B: usize>(
    w: [&[u8]; N],
    vals: [&[u8]; N],
    bands: &Bands,
    band: usize,
    b: usize,
    out: &mut [[[f32; Bands::ROWS]; B]; N],
    dst: Option<(*mut f32, usize)>,
) -> bool {
    let band = band + b;
    const R: usize = Bands::ROWS;
    // Runs per super-block, groups of 4 values per run, groups summed as i16 before
    // the scale's multiply, and where the run scales start in a repacked block.
    let (runs, per, chunk, scale_at) = match K {
        Q4 => (8, 8, 8, 8),
        Q5 => (8, 8, 4, 8),
        _ => (16, 4, 2, 4),
    };
    let nb = bands.nb;
    let pb = packed_bytes(K);
    for i in 0..N {
        debug_assert!(w[i].len() >= nb * pb && vals[i].len() >= nb * QK_K);
    }
    debug_assert!(bands.codes.len() >= (band + 1) * nb * 64 * R);
    let mut acc = [[_mm256_setzero_ps(); 2]; N];
    for bi in 0..nb {
        let at = band * nb + bi;
        let codes = bands.codes[at * 64 * R..].as_ptr();
        let blk: [*const u8; N] = std::array::from_fn(|i| w[i][bi * pb..].as_ptr());
        let q: [*const u8; N] = std::array::from_fn(|i| vals[i][bi * QK_K..].as_ptr());
        // SAFETY (every load below): a band's super-block holds 64 groups × 16 i32
        // codes, 4 (Q4_K) or 8 (Q6_K) registers × 16 i32 of run sums and 16 scales;
        // `q[i]` 256 values and `blk[i]` a repacked super-block (checked above).
        let byte = |i: usize, at: usize| unsafe { *blk[i].add(at) };
        let mut s1 = [[_mm256_setzero_si256(); 2]; N];
        for s in 0..runs {
            let sc: [__m256i; N] = std::array::from_fn(|i| {
                let v = byte(i, scale_at + s);
                _mm256_set1_epi16(if K == Q6 {
                    i16::from(v as i8)
                } else {
                    i16::from(v)
                })
            });
            for c in 0..per / chunk {
                let mut t = [[_mm256_setzero_si256(); 2]; N];
                for g in s * per + c * chunk..s * per + (c + 1) * chunk {
                    let (x0, x1) = unsafe {
                        (
                            _mm256_loadu_si256(codes.add(g * R).cast()),
                            _mm256_loadu_si256(codes.add(g * R + 8).cast()),
                        )
                    };
                    for i in 0..N {
                        let wv = _mm256_set1_epi32(unsafe {
                            std::ptr::read_unaligned(q[i].add(4 * g).cast::<i32>())
                        });
                        t[i][0] = _mm256_add_epi16(t[i][0], _mm256_maddubs_epi16(wv, x0));
                        t[i][1] = _mm256_add_epi16(t[i][1], _mm256_maddubs_epi16(wv, x1));
                    }
                }
                for i in 0..N {
                    for h in 0..2 {
                        s1[i][h] = _mm256_add_epi32(s1[i][h], _mm256_madd_epi16(t[i][h], sc[i]));
                    }
                }
            }
        }
        // Q4_K / Q5_K: s2 = Σ min·(the 32-value run's sum); Q6_K: Σ scale·bsum, the
        // offset of 32. Register `c` of the run sums pairs runs `2c` and `2c + 1`.
        let (sums, count, pair_at) = if K == Q6 {
            (bands.q6k_runs[at * 8 * R..].as_ptr(), 8, 4)
        } else {
            (bands.q4k_runs[at * 4 * R..].as_ptr(), 4, 16)
        };
        let mut s2 = [[_mm256_setzero_si256(); 2]; N];
        for c in 0..count {
            let (p0, p1) = unsafe {
                (
                    _mm256_loadu_si256(sums.add(c * R).cast()),
                    _mm256_loadu_si256(sums.add(c * R + 8).cast()),
                )
            };
            for (i, s2) in s2.iter_mut().enumerate() {
                let (lo, hi) = (byte(i, pair_at + 2 * c), byte(i, pair_at + 2 * c + 1));
                let sc = if K == Q6 {
                    super::pair(i32::from(lo as i8), i32::from(hi as i8))
                } else {
                    super::pair(i32::from(lo), i32::from(hi))
                };
                let sc = _mm256_set1_epi32(sc);
                s2[0] = _mm256_add_epi32(s2[0], _mm256_madd_epi16(p0, sc));
                s2[1] = _mm256_add_epi32(s2[1], _mm256_madd_epi16(p1, sc));
            }
        }
        let dx = unsafe {
            [
                _mm256_loadu_ps(bands.d.as_ptr().add(at * R)),
                _mm256_loadu_ps(bands.d.as_ptr().add(at * R + 8)),
            ]
        };
        for i in 0..N {
            let d = _mm256_set1_ps(f32_at(w[i], bi * pb));
            let dmin = _mm256_set1_ps(if K == Q6 {
                0.0
            } else {
                f32_at(w[i], bi * pb + 4)
            });
            for h in 0..2 {
                let r = if K == Q6 {
                    let s = _mm256_sub_epi32(s1[i][h], _mm256_slli_epi32::<5>(s2[i][h]));
                    _mm256_mul_ps(_mm256_cvtepi32_ps(s), d)
                } else {
                    let f1 = _mm256_mul_ps(_mm256_cvtepi32_ps(s1[i][h]), d);
                    _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(s2[i][h]), f1)
                };
                acc[i][h] = _mm256_fmadd_ps(r, dx[h], acc[i][h]);
            }
        }
    }
    if let (2, Some((dst, stride))) = (N, dst) {
        // Straight into the output: the two weight rows' registers interleaved, so
        // that each 64-bit half holds one output row's two columns (rows 0, 1 | 4, 5
        // in `lo`, 2, 3 | 6, 7 in `hi`, of the register's 8).
        #[allow(clippy::needless_range_loop)] // `h` also places the register's rows
        for h in 0..2 {
            let (a0, a1) = (acc[0][h], acc[1][h]);
            let (lo, hi) = (_mm256_unpacklo_ps(a0, a1), _mm256_unpackhi_ps(a0, a1));
            for (t, v) in [lo, hi].into_iter().enumerate() {
                let (l, u) = (
                    _mm_castps_si128(_mm256_castps256_ps128(v)),
                    _mm_castps_si128(_mm256_extractf128_ps::<1>(v)),
                );
                let first = b * R + 8 * h + 2 * t;
                // SAFETY: the caller's block holds `B` bands of 16 rows × 2 columns,
                // rows `stride` apart; unaligned 8-byte writes.
                unsafe {
                    let at = |r: usize| dst.add((first + r) * stride).cast::<i64>();
                    std::ptr::write_unaligned(at(0), _mm_cvtsi128_si64(l));
                    std::ptr::write_unaligned(at(1), _mm_extract_epi64::<1>(l));
                    std::ptr::write_unaligned(at(4), _mm_cvtsi128_si64(u));
                    std::ptr::write_unaligned(at(5), _mm_extract_epi64::<1>(u));
                }
            }
        }
        return true;
    }
    for i in 0..N {
        for h in 0..2 {
            // SAFETY: 8 writable floats at 8h of 16.
            unsafe { _mm256_storeu_ps(out[i][b][8 * h..].as_mut_ptr(), acc[i][h]) };
        }
    }
    false
}
