//! Quantized matrix products on weights packed 16 output columns per AVX-512
//! register (AVX-512 VNNI), in either of llama.cpp's two CPU arithmetics
//! ([`Order`]):
//! - `Lanes` (the default): its AVX2 `ggml_vec_dot_*`, per block 8 integer lanes each
//!   accumulated in f32, summed pairwise at the end. With 16 outputs side by side,
//!   each lane is one register and the final sum is vertical adds, so there is no
//!   horizontal reduction per output. This is what the greedy references match.
//! - `Blocks`: its AMX backend (`ggml-cpu/amx/mmq.cpp`), which llama.cpp uses on a
//!   CPU with AMX for Q4_0/Q4_1/Q8_0 weights whose rows are a multiple of 32 (not the
//!   token embeddings, read by `get_rows`): per 32-value block, in order,
//!   `c = fma(float(Σ qw·qx), dw·dx, c)`, then for Q4_1 `c = fma(mw, sx, c)`.
//!   Measured: SmolLM2 greedy then gives exactly what a llama.cpp AMX build gives
//!   (7/32, 25/25, 32/32, 8/32 against the references, both).
//!
//! The integer sums are exact whatever their order: signed values go through the
//! unsigned operand as `q + c` (Q4_0: `c = 8` on the stored nibble; Q8_0: `c = 128`),
//! and `c·Σqx` of each activation block is subtracted.

use std::arch::x86_64::*;

use rayon::prelude::*;

use super::q8::{quantize_row_q8, Kind, Q8Block, QK};
#[cfg(test)]
use crate::cpu::f16_at;
use crate::cpu::huge::Huge;

/// Output columns per packed group (one 512-bit register of f32).
pub(crate) const GROUP: usize = 16;

/// Which of llama.cpp's CPU kernels the arithmetic follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Its AVX2 `ggml_vec_dot_*` (what llama.cpp runs on a CPU without AMX, and what
    /// the shared greedy references were recorded with): per block 8 integer lanes
    /// (lane `l` = values `4l..4l+4`), each accumulated in f32 by FMA with `dw·dx`,
    /// the 8 lanes summed pairwise at the end (`hsum_float_8`), plus Q4_1's `Σ mw·sx`.
    Lanes,
    /// Its AMX backend: per block `c = fma(float(Σ), dw·dx, c)`, then for Q4_1
    /// `c = fma(mw, sx, c)`.
    Blocks,
}

/// Whether a weight (`n` outputs of `k` inputs) can be packed for `order`: for
/// `Blocks`, as llama.cpp's AMX buffer takes it (`n` a multiple of 32).
pub(crate) fn eligible(n: usize, k: usize, order: Order) -> bool {
    let unit = match order {
        Order::Lanes => GROUP,
        Order::Blocks => 2 * GROUP,
    };
    n > 0 && k > 0 && n.is_multiple_of(unit) && k.is_multiple_of(QK)
}

/// A weight packed in groups of 16 rows: for group `g`, block `b`, at
/// `(g·nb + b)·q_regs` registers of `data`: the quantized values (Q4: 4×64 bytes,
/// byte `e` of 64-byte row `r` = row `e/4` of the group, values `8r + e%4` in the low
/// nibble and `8r + 4 + e%4` in the high one; Q5: the same 4 registers of low nibbles
/// of `q + 16`, then one register whose byte `4·row + e` has in bit `t` the fifth bit
/// of value `4t + e`; Q8_0: 8×64 bytes of `q + 128`, 64-byte row `t` = values
/// `4t..4t+4` of each row); at `(g·nb + b)·scale_regs` of `scales`: 16 f16 scales and
/// (Q4_1) 16 f16 minimums. Apart, the scales waste no bytes: a packed Q8_0 weight is
/// the size of its GGUF tensor, a Q5_0 one too.
#[derive(Debug, Clone)]
pub(crate) struct Packed {
    form: Form,
    order: Order,
    n: usize,
    k: usize,
    data: Huge<__m512i>,
    scales: Huge<__m256i>,
}

/// How the values of a block are packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Q4_0,
    Q4_1,
    /// Q8_0 blocks whose values all lie in −16..16 (Q5_0 weights, which Quire reads as
    /// Q8_0 blocks of the same values): 5 bits a value, as the file stores them.
    Q5,
    Q8_0,
}

/// One activation block as the kernels read it: the 32 values as 8 words of 4 bytes,
/// the scale, the Q8_1 sum `s`, and the integer corrections `−c·Σq` for the block and
/// (as [`lane_magic`] has it) for each 4-value lane.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Act {
    q: [i32; 8],
    lc: [i32; 8],
    d: f32,
    s: f32,
    corr: i32,
}

impl Default for Act {
    fn default() -> Self {
        Self {
            q: [0; 8],
            lc: [0; 8],
            d: 0.0,
            s: 0.0,
            corr: 0,
        }
    }
}

/// 64-byte registers of values per (group, block).
fn q_regs(form: Form) -> usize {
    match form {
        Form::Q4_0 | Form::Q4_1 => 4,
        Form::Q5 => 5,
        Form::Q8_0 => 8,
    }
}

/// 32-byte registers of scales (and minimums) per (group, block).
fn scale_regs(form: Form) -> usize {
    if form == Form::Q4_1 {
        2
    } else {
        1
    }
}

/// The 16 scales (`hi = false`) or Q4_1 minimums (`hi = true`) of the (group, block)
/// whose scales are at `p`, widened (exact).
#[inline(always)]
unsafe fn scales(p: *const __m256i, hi: bool) -> __m512 {
    // SAFETY: `p` points at the block's scale registers (callers).
    unsafe { _mm512_cvtph_ps(_mm256_load_si256(p.add(usize::from(hi)))) }
}

/// What is added to each value to make it unsigned.
fn offset(form: Form) -> i32 {
    match form {
        Form::Q4_1 => 0,
        Form::Q4_0 => 8,
        Form::Q5 => 16,
        Form::Q8_0 => 128,
    }
}

impl Packed {
    /// Pack `data`, `n` rows of `k` values as raw blocks of `kind`.
    pub(crate) fn new(kind: Kind, n: usize, k: usize, data: &[u8], order: Order) -> Self {
        assert!(eligible(n, k, order), "{n}x{k} is not packable");
        let nb = k / QK;
        let bb = kind.block_bytes();
        let form = match kind {
            Kind::Q4_0 => Form::Q4_0,
            Kind::Q4_1 => Form::Q4_1,
            Kind::Q8_0
                if data
                    .chunks_exact(bb)
                    .all(|b| b[2..].iter().all(|&v| (-16..16).contains(&(v as i8)))) =>
            {
                Form::Q5
            }
            Kind::Q8_0 => Form::Q8_0,
        };
        let (qr, sr, off) = (q_regs(form), scale_regs(form), offset(form));
        let groups = n / GROUP;
        // SAFETY: __m512i/__m256i are plain bits; zero is a valid value.
        let mut regs = Huge::<__m512i>::filled(groups * nb * qr, unsafe { std::mem::zeroed() });
        let mut scales = Huge::<__m256i>::filled(groups * nb * sr, unsafe { std::mem::zeroed() });
        let mut bytes = vec![0u8; qr * 64];
        let mut sbytes = vec![0u8; sr * 32];
        for g in 0..groups {
            for b in 0..nb {
                for r in 0..GROUP {
                    let row = g * GROUP + r;
                    let blk = &data[(row * nb + b) * bb..(row * nb + b + 1) * bb];
                    let vals: [u8; QK] = match form {
                        Form::Q4_0 | Form::Q4_1 => {
                            let at = if form == Form::Q4_1 { 4 } else { 2 };
                            std::array::from_fn(|i| {
                                if i < 16 {
                                    blk[at + i] & 0xF
                                } else {
                                    blk[at + i - 16] >> 4
                                }
                            })
                        }
                        Form::Q5 | Form::Q8_0 => {
                            std::array::from_fn(|i| (i32::from(blk[2 + i] as i8) + off) as u8)
                        }
                    };
                    match form {
                        Form::Q4_0 | Form::Q4_1 | Form::Q5 => {
                            for reg in 0..4 {
                                for e in 0..4 {
                                    let lo = vals[8 * reg + e] & 0xF;
                                    let hi = vals[8 * reg + 4 + e] & 0xF;
                                    bytes[reg * 64 + r * 4 + e] = lo | (hi << 4);
                                }
                            }
                            if form == Form::Q5 {
                                for e in 0..4 {
                                    bytes[4 * 64 + r * 4 + e] =
                                        (0..8).map(|t| (vals[4 * t + e] >> 4) << t).sum();
                                }
                            }
                        }
                        Form::Q8_0 => {
                            for t in 0..8 {
                                for e in 0..4 {
                                    bytes[t * 64 + r * 4 + e] = vals[4 * t + e];
                                }
                            }
                        }
                    }
                    // The f16 scale (and minimum) as stored.
                    sbytes[r * 2..r * 2 + 2].copy_from_slice(&blk[0..2]);
                    if form == Form::Q4_1 {
                        sbytes[32 + r * 2..32 + r * 2 + 2].copy_from_slice(&blk[2..4]);
                    }
                }
                for (i, c) in bytes.chunks_exact(64).enumerate() {
                    // SAFETY: 64 readable bytes; unaligned load.
                    regs[(g * nb + b) * qr + i] = unsafe { _mm512_loadu_si512(c.as_ptr().cast()) };
                }
                for (i, c) in sbytes.chunks_exact(32).enumerate() {
                    // SAFETY: 32 readable bytes; unaligned load.
                    scales[(g * nb + b) * sr + i] =
                        unsafe { _mm256_loadu_si256(c.as_ptr().cast()) };
                }
            }
        }
        Self {
            form,
            order,
            n,
            k,
            data: regs,
            scales,
        }
    }

    /// Whether the values are packed in 5 bits (tests).
    #[cfg(test)]
    pub(crate) fn five_bits(&self) -> bool {
        self.form == Form::Q5
    }

    pub(crate) fn n(&self) -> usize {
        self.n
    }

    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// `out[i·n + j] = x[i] · w[j]` for the `m` rows of `x` (`m × k`), each row
    /// quantized to Q8 first as ggml does.
    pub(crate) fn matmul(&self, x: &[f32], m: usize, out: &mut [f32]) {
        self.matmul_parts(x, m, &mut [out]);
    }

    /// [`Self::matmul`] with the output columns cut into parts (stacked weights: q, k,
    /// v): part `p`, of width `w_p = outs[p].len() / m` (a multiple of 16), gets its
    /// columns as its own row-major `m × w_p` matrix, written in place (no copy of a
    /// whole output to split it afterwards).
    pub(crate) fn matmul_parts(&self, x: &[f32], m: usize, outs: &mut [&mut [f32]]) {
        assert_eq!(x.len(), m * self.k);
        let widths: Vec<usize> = outs.iter().map(|o| o.len() / m.max(1)).collect();
        assert_eq!(widths.iter().sum::<usize>(), self.n);
        assert!(outs
            .iter()
            .zip(&widths)
            .all(|(o, &w)| o.len() == m * w && w % GROUP == 0));
        // The first group of each part.
        let starts: Vec<usize> = widths
            .iter()
            .scan(0, |g, &w| {
                let g0 = *g;
                *g += w / GROUP;
                Some(g0)
            })
            .collect();
        // The thread's buffer is taken out for the call (not borrowed): while this
        // thread waits on the parallel steps below it may run another matmul.
        let mut buf = ACTS.with(|cell| cell.take());
        {
            let acts = &mut buf;
            self.quantize(x, m, acts);
            let acts: &[Act] = acts;
            let nb = self.k / QK;
            if m >= 2 * ROWS_PER_TASK {
                // Tasks of ROWS_PER_TASK activation rows, each writing those rows of
                // every part.
                let mut tasks: Vec<Vec<&mut [f32]>> = Vec::new();
                for (o, &w) in outs.iter_mut().zip(&widths) {
                    for (t, c) in o.chunks_mut(ROWS_PER_TASK * w).enumerate() {
                        if tasks.len() <= t {
                            tasks.push(Vec::new());
                        }
                        tasks[t].push(c);
                    }
                }
                tasks.into_par_iter().enumerate().for_each(|(t, parts)| {
                    let r0 = t * ROWS_PER_TASK;
                    for ((o, &w), &g0) in parts.into_iter().zip(&widths).zip(&starts) {
                        let rows = o.len() / w;
                        let a = &acts[r0 * nb..(r0 + rows) * nb];
                        // SAFETY: `Packed` exists only where the CPU has AVX-512 VNNI
                        // (see `plain`).
                        unsafe { self.rows(a, rows, g0, g0 + w / GROUP, o, w) };
                    }
                });
            } else {
                // Column ranges of `per` groups (at least two tasks per thread).
                let per = (self.n / GROUP)
                    .div_ceil(rayon::current_num_threads() * 2)
                    .max(if m == 1 { 2 } else { 1 });
                if m == 1 {
                    // One row: each range is a slice of its part, written in place.
                    let mut ranges: Vec<(usize, &mut [f32])> = Vec::new();
                    for (o, &g0) in outs.iter_mut().zip(&starts) {
                        for (c, chunk) in o.chunks_mut(per * GROUP).enumerate() {
                            ranges.push((g0 + c * per, chunk));
                        }
                    }
                    ranges.into_par_iter().for_each(|(g0, o)| {
                        // SAFETY: as above.
                        unsafe { self.rows(acts, 1, g0, g0 + o.len() / GROUP, o, o.len()) };
                    });
                } else {
                    // Several rows: each range into its own buffer, copied after.
                    let mut ranges = Vec::new();
                    for (p, (&w, &g0)) in widths.iter().zip(&starts).enumerate() {
                        let groups = w / GROUP;
                        for a in (0..groups).step_by(per) {
                            ranges.push((p, g0 + a, g0 + (a + per).min(groups)));
                        }
                    }
                    let pieces: Vec<(usize, usize, Vec<f32>)> = ranges
                        .into_par_iter()
                        .map(|(p, a, b)| {
                            let width = (b - a) * GROUP;
                            let mut piece = vec![0f32; m * width];
                            // SAFETY: as above.
                            unsafe { self.rows(acts, m, a, b, &mut piece, width) };
                            (p, (a - starts[p]) * GROUP, piece)
                        })
                        .collect();
                    for (p, j0, piece) in pieces {
                        let (w, width) = (widths[p], piece.len() / m);
                        for (i, src) in piece.chunks_exact(width).enumerate() {
                            outs[p][i * w + j0..i * w + j0 + width].copy_from_slice(src);
                        }
                    }
                }
            }
        }
        ACTS.with(|cell| cell.replace(buf));
    }

    /// The activation rows as [`Act`] blocks.
    fn quantize(&self, x: &[f32], m: usize, acts: &mut Vec<Act>) {
        let nb = self.k / QK;
        acts.clear();
        acts.resize(m * nb, Act::default());
        let c = offset(self.form);
        let one = |row: &[f32], out: &mut [Act]| {
            let mut q8 = [Q8Block::default(); 64];
            for (xs, os) in row.chunks(64 * QK).zip(out.chunks_mut(64)) {
                let q8 = &mut q8[..os.len()];
                quantize_row_q8(xs, q8);
                for (a, y) in os.iter_mut().zip(q8.iter()) {
                    a.q = std::array::from_fn(|t| {
                        i32::from_le_bytes(std::array::from_fn(|e| y.qs[4 * t + e] as u8))
                    });
                    a.d = y.d;
                    a.s = y.s;
                    a.lc = std::array::from_fn(|t| {
                        -c * y.qs[4 * t..4 * t + 4]
                            .iter()
                            .map(|&v| i32::from(v))
                            .sum::<i32>()
                    });
                    a.corr = a.lc.iter().sum();
                    // The lane sums come out of the integer unit as the bits of a
                    // float `magic + sum`, see `tile_lanes` and [`lane_magic`].
                    for (t, l) in a.lc.iter_mut().enumerate() {
                        let (bits, times) = lane_magic(self.form, t);
                        *l = bits + times * *l;
                    }
                }
            }
        };
        if m >= 8 {
            x.par_chunks(self.k)
                .zip(acts.par_chunks_mut(nb))
                .for_each(|(row, out)| one(row, out));
        } else {
            for (row, out) in x.chunks_exact(self.k).zip(acts.chunks_mut(nb)) {
                one(row, out);
            }
        }
    }

    /// Rows `acts` (`m` rows of `nb` blocks) times groups `g0..g1`: into `out`, row
    /// `i` at `i·ld`, group `g` at column `(g − g0)·16`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
    unsafe fn rows(
        &self,
        acts: &[Act],
        m: usize,
        g0: usize,
        g1: usize,
        out: &mut [f32],
        ld: usize,
    ) {
        // (tile calls are inlined here and use this function's target features)
        if self.order == Order::Lanes {
            let nb = self.k / QK;
            // Group by group: its blocks unpacked once (Q4, Q5) into a buffer that
            // stays in the first-level cache, then read for every row pair.
            let unpack = m > 2 && self.form != Form::Q8_0;
            let mut buf: Vec<[__m512i; 8]> = Vec::with_capacity(if unpack { nb } else { 0 });
            for g in g0..g1 {
                // SAFETY (both): `g < groups`, `b < nb`: within the packed weight.
                let block = |b: usize| unsafe {
                    (
                        self.data.as_ptr().add((g * nb + b) * q_regs(self.form)),
                        self.scales
                            .as_ptr()
                            .add((g * nb + b) * scale_regs(self.form)),
                    )
                };
                // SAFETY: `block` gives a packed block; AVX-512 VNNI (this function).
                // `stream`: the first pass over the group's blocks, from memory (later
                // passes read them from cache).
                let values = |b: usize, stream: bool| unsafe {
                    let (p, sp) = block(b);
                    load_block::<true>(self.form, p, sp, stream)
                };
                if unpack {
                    buf.clear();
                    buf.extend((0..nb).map(|b| values(b, true)));
                }
                let mut i = 0;
                while i < m {
                    let r = (m - i).min(2);
                    let a = &acts[i * nb..];
                    let o = &mut out[i * ld..];
                    let buf = &buf;
                    match (r, unpack) {
                        (2, true) => tile_lanes::<2>(self, a, g, g0, o, ld, |b| buf[b]),
                        (_, true) => tile_lanes::<1>(self, a, g, g0, o, ld, |b| buf[b]),
                        (2, false) => tile_lanes::<2>(self, a, g, g0, o, ld, |b| values(b, i == 0)),
                        _ => tile_lanes::<1>(self, a, g, g0, o, ld, |b| values(b, i == 0)),
                    }
                    i += r;
                }
            }
            return;
        }
        let mut i = 0;
        while i < m {
            let r = (m - i).min(4);
            let a = &acts[i * (self.k / QK)..];
            let o = &mut out[i * ld..];
            let mut g = g0;
            if r == 1 {
                while g + 4 <= g1 {
                    tile::<1, 4>(self, a, g, g0, o, ld);
                    g += 4;
                }
            } else {
                while g + 2 <= g1 {
                    match r {
                        4 => tile::<4, 2>(self, a, g, g0, o, ld),
                        3 => tile::<3, 2>(self, a, g, g0, o, ld),
                        _ => tile::<2, 2>(self, a, g, g0, o, ld),
                    }
                    g += 2;
                }
            }
            while g < g1 {
                match r {
                    4 => tile::<4, 1>(self, a, g, g0, o, ld),
                    3 => tile::<3, 1>(self, a, g, g0, o, ld),
                    2 => tile::<2, 1>(self, a, g, g0, o, ld),
                    _ => tile::<1, 1>(self, a, g, g0, o, ld),
                }
                g += 1;
            }
            i += r;
        }
    }
}

/// How lane `t`'s integer sum leaves the integer unit in [`Order::Lanes`]: as the bits
/// of a float `m + sum`, exact, so that a subtraction of `m` (which either port
/// executes) replaces a conversion (which one executes). Returns the bits of `m` and
/// the weight scaling of the lane: Q4 high-nibble lanes (odd `t`) are read as
/// `byte & 0xF0` (one operation instead of a shift and a mask), i.e. 16 × the value,
/// so their float has a sixteenth for unit: `m = 1.5·2¹⁹` (ulp 2⁻⁴), exact for
/// `|sum| < 2¹⁸`. Other lanes: `m = 1.5·2²³` (ulp 1), exact for `|sum| < 2²²`.
/// (Lane sums are at most 4·128·127 in magnitude.)
fn lane_magic(form: Form, t: usize) -> (i32, i32) {
    if matches!(form, Form::Q4_0 | Form::Q4_1) && t % 2 == 1 {
        (0x4940_0000, 16)
    } else {
        (0x4B40_0000, 1)
    }
}

/// Packed blocks ahead of the one being read that [`tile_lanes`] prefetches.
const PREFETCH: usize = 6;

/// Activation rows per parallel task for a batch.
const ROWS_PER_TASK: usize = 16;

thread_local! {
    static ACTS: std::cell::RefCell<Vec<Act>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The 8 registers of 4-value lanes of the packed block at `p` (Q4 nibbles split,
/// Q5 fifth bits joined). `stream`: the first pass over a group's blocks, which
/// streams them from memory (generation, a few rows verified or written together, a
/// group unpacked for a band), so the blocks `PREFETCH` ahead are prefetched (a hint;
/// past the end a no-op); later passes read the blocks from cache. `HI16`: Q4 high
/// nibbles read as `byte & 0xF0` (see [`lane_magic`]).
#[inline(always)]
unsafe fn load_block<const HI16: bool>(
    form: Form,
    p: *const __m512i,
    sp: *const __m256i,
    stream: bool,
) -> [__m512i; 8] {
    // SAFETY: `p` points at a packed block of `form` (callers); AVX-512 (callers).
    unsafe {
        let qr = q_regs(form);
        if stream {
            for ahead in 0..qr {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(PREFETCH * qr + ahead).cast());
            }
            _mm_prefetch::<_MM_HINT_T0>(sp.wrapping_add(PREFETCH * 2 * scale_regs(form)).cast());
        }
        let mut wq = [_mm512_setzero_si512(); 8];
        let low = _mm512_set1_epi8(0xF);
        match form {
            Form::Q8_0 => {
                for (t, r) in wq.iter_mut().enumerate() {
                    *r = _mm512_load_si512(p.add(t));
                }
            }
            Form::Q5 => {
                let qh = _mm512_load_si512(p.add(4));
                let bit4 = _mm512_set1_epi8(0x10);
                for reg in 0..4 {
                    let v = _mm512_load_si512(p.add(reg));
                    let nib = [
                        _mm512_and_si512(v, low),
                        _mm512_and_si512(_mm512_srli_epi16::<4>(v), low),
                    ];
                    for (h, nib) in nib.into_iter().enumerate() {
                        // Lane t's fifth bits (bit t of each byte) moved to bit 4; the
                        // 16-bit shifts bring no bit across a byte into bit 4 or 12.
                        let t = 2 * reg + h;
                        let hb = match t {
                            0 => _mm512_slli_epi16::<4>(qh),
                            1 => _mm512_slli_epi16::<3>(qh),
                            2 => _mm512_slli_epi16::<2>(qh),
                            3 => _mm512_slli_epi16::<1>(qh),
                            4 => qh,
                            5 => _mm512_srli_epi16::<1>(qh),
                            6 => _mm512_srli_epi16::<2>(qh),
                            _ => _mm512_srli_epi16::<3>(qh),
                        };
                        // nib | (hb & 0x10)
                        wq[t] = _mm512_ternarylogic_epi32::<0xF8>(nib, hb, bit4);
                    }
                }
            }
            Form::Q4_0 | Form::Q4_1 => {
                for reg in 0..4 {
                    let v = _mm512_load_si512(p.add(reg));
                    wq[2 * reg] = _mm512_and_si512(v, low);
                    wq[2 * reg + 1] = if HI16 {
                        _mm512_and_si512(v, _mm512_set1_epi8(0xF0_u8 as i8))
                    } else {
                        _mm512_and_si512(_mm512_srli_epi16::<4>(v), low)
                    };
                }
            }
        }
        wq
    }
}

/// `R` activation rows (from `a`, rows `nb` blocks apart) × `G` groups from `g`:
/// each output's blocks accumulated in order as ggml's AMX backend does.
/// Only called from [`Packed::rows`], compiled with the features it uses.
#[inline(always)]
fn tile<const R: usize, const G: usize>(
    w: &Packed,
    a: &[Act],
    g: usize,
    g0: usize,
    out: &mut [f32],
    ld: usize,
) {
    // SAFETY: inlined into `Packed::rows` (AVX-512 VNNI); loads stay within the
    // packed weight (`g + h < g1 ≤ groups`, `b < nb`) and `out` (bounds-checked slices).
    unsafe {
        let nb = w.k / QK;
        let (qr, sr) = (q_regs(w.form), scale_regs(w.form));
        let mut c = [[_mm512_setzero_ps(); G]; R];
        for b in 0..nb {
            let mut wq = [[_mm512_setzero_si512(); 8]; G];
            let mut dw = [_mm512_setzero_ps(); G];
            let mut mw = [_mm512_setzero_ps(); G];
            for (h, wqh) in wq.iter_mut().enumerate() {
                let p = w.data.as_ptr().add(((g + h) * nb + b) * qr);
                let sp = w.scales.as_ptr().add(((g + h) * nb + b) * sr);
                *wqh = load_block::<false>(w.form, p, sp, R == 1);
                dw[h] = scales(sp, false);
                if w.form == Form::Q4_1 {
                    mw[h] = scales(sp, true);
                }
            }
            for (r, cr) in c.iter_mut().enumerate() {
                let y = &a[r * nb + b];
                let ya: [__m512i; 8] = std::array::from_fn(|t| _mm512_set1_epi32(y.q[t]));
                let d = _mm512_set1_ps(y.d);
                for (h, ch) in cr.iter_mut().enumerate() {
                    // Two independent chains, added (integers: exact in any order).
                    let mut s0 = _mm512_set1_epi32(y.corr);
                    let mut s1 = _mm512_setzero_si512();
                    for t in (0..8).step_by(2) {
                        s0 = _mm512_dpbusd_epi32(s0, wq[h][t], ya[t]);
                        s1 = _mm512_dpbusd_epi32(s1, wq[h][t + 1], ya[t + 1]);
                    }
                    let isum = _mm512_add_epi32(s0, s1);
                    *ch = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[h], d), *ch);
                    if w.form == Form::Q4_1 {
                        *ch = _mm512_fmadd_ps(mw[h], _mm512_set1_ps(y.s), *ch);
                    }
                }
            }
        }
        for (r, cr) in c.iter().enumerate() {
            for (h, ch) in cr.iter().enumerate() {
                let at = r * ld + (g + h - g0) * GROUP;
                _mm512_storeu_ps(out[at..at + GROUP].as_mut_ptr(), *ch);
            }
        }
    }
}

/// [`Order::Lanes`]: `R` activation rows × group `g`, 8 f32 lanes per output; the
/// group's block `b` has the lane registers `values(b)` ([`load_block`]).
/// Only called from [`Packed::rows`], compiled with the features it uses.
#[inline(always)]
fn tile_lanes<const R: usize>(
    w: &Packed,
    a: &[Act],
    g: usize,
    g0: usize,
    out: &mut [f32],
    ld: usize,
    values: impl Fn(usize) -> [__m512i; 8],
) {
    // SAFETY: inlined into `Packed::rows` (AVX-512 VNNI); loads stay within the
    // packed weight (`g < groups`, `b < nb`) and `out` (bounds-checked slices).
    unsafe {
        let nb = w.k / QK;
        let sr = scale_regs(w.form);
        let mut acc = [[_mm512_setzero_ps(); 8]; R];
        let mut sm = [_mm512_setzero_ps(); R];
        let magic: [__m512; 2] =
            std::array::from_fn(|t| _mm512_set1_ps(f32::from_bits(lane_magic(w.form, t).0 as u32)));
        for b in 0..nb {
            let sp = w.scales.as_ptr().add((g * nb + b) * sr);
            let wq = values(b);
            let dw = scales(sp, false);
            let mw = if w.form == Form::Q4_1 {
                scales(sp, true)
            } else {
                _mm512_setzero_ps()
            };
            for r in 0..R {
                let y = &a[r * nb + b];
                if w.form == Form::Q4_1 {
                    sm[r] = _mm512_add_ps(sm[r], _mm512_mul_ps(mw, _mm512_set1_ps(y.s)));
                }
                let dd = _mm512_mul_ps(dw, _mm512_set1_ps(y.d));
                for t in 0..8 {
                    let l = _mm512_dpbusd_epi32(
                        _mm512_set1_epi32(y.lc[t]),
                        wq[t],
                        _mm512_set1_epi32(y.q[t]),
                    );
                    // float(sum) = (m + sum) − m, exact (see `lane_magic`).
                    let f = _mm512_sub_ps(_mm512_castsi512_ps(l), magic[t % 2]);
                    acc[r][t] = _mm512_fmadd_ps(dd, f, acc[r][t]);
                }
            }
        }
        for r in 0..R {
            // hsum_float_8: (l0+l4, l1+l5, l2+l6, l3+l7), then (0+2) + (1+3).
            let l = &acc[r];
            let h: [__m512; 4] = std::array::from_fn(|i| _mm512_add_ps(l[i + 4], l[i]));
            let s = _mm512_add_ps(_mm512_add_ps(h[0], h[2]), _mm512_add_ps(h[1], h[3]));
            let s = _mm512_add_ps(s, sm[r]);
            let at = r * ld + (g - g0) * GROUP;
            _mm512_storeu_ps(out[at..at + GROUP].as_mut_ptr(), s);
        }
    }
}

/// The same arithmetic, one output at a time, for tests: row `w` (raw blocks of
/// `kind`) · `x`.
#[cfg(test)]
pub(crate) fn reference_dot(kind: Kind, w: &[u8], x: &[f32]) -> f32 {
    let nb = x.len() / QK;
    let mut q = vec![Q8Block::default(); nb];
    quantize_row_q8(x, &mut q);
    let mut c = 0f32;
    for (blk, y) in w.chunks_exact(kind.block_bytes()).zip(&q) {
        let vals: Vec<i32> = match kind {
            Kind::Q8_0 => blk[2..34].iter().map(|&v| i32::from(v as i8)).collect(),
            Kind::Q4_0 | Kind::Q4_1 => {
                let off = if kind == Kind::Q4_1 { 4 } else { 2 };
                let sub = if kind == Kind::Q4_0 { 8 } else { 0 };
                let lo = blk[off..off + 16].iter().map(|&v| i32::from(v & 0xF) - sub);
                let hi = blk[off..off + 16].iter().map(|&v| i32::from(v >> 4) - sub);
                lo.chain(hi).collect()
            }
        };
        let isum: i32 = vals.iter().zip(&y.qs).map(|(a, &b)| a * i32::from(b)).sum();
        c = (isum as f32).mul_add(f16_at(blk, 0) * y.d, c);
        if kind == Kind::Q4_1 {
            c = f16_at(blk, 2).mul_add(y.s, c);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    fn weight(kind: Kind, n: usize, k: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u32
        };
        let mut out = Vec::new();
        for _ in 0..n * k / QK {
            let d = f16::from_f32((next() % 1000) as f32 / 40000.0 + 0.001);
            out.extend_from_slice(&d.to_le_bytes());
            if kind == Kind::Q4_1 {
                let m = f16::from_f32(-((next() % 1000) as f32) / 30000.0);
                out.extend_from_slice(&m.to_le_bytes());
            }
            let bytes = if kind == Kind::Q8_0 { 32 } else { 16 };
            out.extend((0..bytes).map(|_| next() as u8));
        }
        out
    }

    /// ggml's AVX2 arithmetic: the portable kernels of `portable`.
    fn lanes_dot(kind: Kind, w: &[u8], x: &[f32]) -> f32 {
        use super::super::portable;
        let mut q = vec![Q8Block::default(); x.len() / QK];
        quantize_row_q8(x, &mut q);
        match kind {
            Kind::Q4_0 => portable::dot_q4_0(w, &q),
            Kind::Q4_1 => portable::dot_q4_1(w, &q),
            Kind::Q8_0 => portable::dot_q8_0(w, &q),
        }
    }

    #[test]
    fn packed_matches_ggml_arithmetic_bit_for_bit() {
        if !crate::cpu::has_vnni() {
            eprintln!("skipped: no AVX-512 VNNI here");
            return;
        }
        // (Q8_0, true): Q8_0 blocks of values in −16..16, which pack in 5 bits.
        for ((kind, five), order) in [
            (Kind::Q4_0, false),
            (Kind::Q4_1, false),
            (Kind::Q8_0, false),
            (Kind::Q8_0, true),
        ]
        .into_iter()
        .flat_map(|k| [(k, Order::Lanes), (k, Order::Blocks)])
        {
            let (n, k) = (96, 160);
            let mut w = weight(kind, n, k, 7);
            if five {
                for b in w.chunks_exact_mut(kind.block_bytes()) {
                    for v in &mut b[2..] {
                        *v = ((*v as i8) >> 3) as u8;
                    }
                }
            }
            let p = Packed::new(kind, n, k, &w, order);
            assert_eq!(p.five_bits(), five);
            for m in [1, 2, 3, 5, 8, 33, 40] {
                let x: Vec<f32> = (0..m * k)
                    .map(|i| {
                        ((i * 7919 % 1013) as f32 / 97.0 - 5.0) * if i % 5 == 0 { 3.0 } else { 1.0 }
                    })
                    .collect();
                let mut out = vec![f32::NAN; m * n];
                p.matmul(&x, m, &mut out);
                let rb = k / QK * kind.block_bytes();
                for i in 0..m {
                    for j in 0..n {
                        let (wr, xr) = (&w[j * rb..(j + 1) * rb], &x[i * k..(i + 1) * k]);
                        let want = match order {
                            Order::Blocks => reference_dot(kind, wr, xr),
                            Order::Lanes => lanes_dot(kind, wr, xr),
                        };
                        assert_eq!(
                            out[i * n + j].to_bits(),
                            want.to_bits(),
                            "{kind:?} (five {five}) {order:?} m={m} row {i} col {j}: {} vs {want}",
                            out[i * n + j]
                        );
                    }
                }
            }
        }
    }
}
