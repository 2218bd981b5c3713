//! Element-wise and attention operations computed exactly as llama.cpp's CPU
//! backend (ggml, built for x86-64 with AVX-512) computes them, operation for
//! operation and rounding for rounding, so greedy decoding follows llama.cpp's.
//!
//! Where ggml uses SIMD code whose result depends on the lane order (its vectorized
//! `expf`, the horizontal sums of `_mm512_reduce_add_ps`, tinyBLAS' per-lane fused
//! multiply-adds), the same order is reproduced here in portable Rust. References are
//! to llama.cpp's `ggml/src/ggml-cpu/{ops.cpp,vec.h,vec.cpp,llamafile/sgemm.cpp}`.

use half::f16;

/// Whether the CPU has AVX2 and FMA, for the run-time choice of kernels.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2_fma() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// Whether the CPU has AVX-512 (F, BW, VL) and FMA, for the run-time choice of kernels.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx512() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        has_avx2_fma()
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl")
    })
}

/// Lanes of an AVX-512 register of f32.
const LANES: usize = 16;

/// `ggml_v_expf` (AVX-512 variant): a polynomial with `_mm512_scalef_ps`.
#[inline(always)]
pub fn expf(x: f32) -> f32 {
    let r = f32::from_bits(0x4b40_0000); // 0x1.8p23
    let z = x.mul_add(f32::from_bits(0x3fb8_aa3b), r); // log2(e)
    let n = z - r;
    let b = (-n).mul_add(
        f32::from_bits(0x35bf_be8e),
        (-n).mul_add(f32::from_bits(0x3f31_7200), x),
    );
    let u = b * b;
    let j = f32::from_bits(0x3c07_2010)
        .mul_add(b, f32::from_bits(0x3d2b_9f17))
        .mul_add(
            u,
            f32::from_bits(0x3e2a_af33).mul_add(b, f32::from_bits(0x3eff_fedb)),
        )
        .mul_add(u, f32::from_bits(0x3f7f_fff6).mul_add(b, 1.0));
    if n.abs() > 192.0 {
        return if n <= 0.0 { 0.0 } else { f32::INFINITY };
    }
    if n.is_nan() {
        return f32::NAN;
    }
    // scalef: j · 2^n rounded once (the product is exact in f64).
    // 2^n is exact in f64 for |n| <= 192.
    (f64::from(j) * f64::from_bits(((n as i64 + 1023) as u64) << 52)) as f32
}

/// `ggml_v_silu`: x / (1 + e^(−x)).
#[inline(always)]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + expf(0.0 - x))
}

/// `ggml_vec_swiglu_f32`: silu(gate) · up; full 16-lane chunks use the vector
/// `expf`, the tail libm's, as ggml does.
#[inline(always)]
pub fn swiglu(gate: &[f32], up: &[f32], out: &mut [f32]) {
    let full = gate.len() / LANES * LANES;
    for i in 0..full {
        out[i] = silu(gate[i]) * up[i];
    }
    swiglu_tail(&gate[full..], &up[full..], &mut out[full..]);
}

/// `ggml_compute_forward_rms_norm_f32` fused with the weight: the sum of squares in
/// f64 of f32 squares, then `x · scale · w`.
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    use rayon::prelude::*;
    const R: usize = 8;
    let n = w.len();
    let scaled = |xr: &[f32], yr: &mut [f32], sum: f64| {
        let mean = (sum / n as f64) as f32;
        let scale = 1.0f32 / (mean + eps).sqrt();
        for ((y, &v), &wi) in yr.iter_mut().zip(xr).zip(w) {
            *y = v * scale * wi;
        }
    };
    // Each row's sum is one chain of f64 additions in order (ggml's); R rows at a
    // time run R independent chains, which the CPU overlaps.
    let block = |(xs, ys): (&[f32], &mut [f32])| {
        if xs.len() == R * n {
            let mut sums = [0f64; R];
            for i in 0..n {
                for (r, s) in sums.iter_mut().enumerate() {
                    let v = xs[r * n + i];
                    *s += f64::from(v * v);
                }
            }
            for ((xr, yr), sum) in xs.chunks_exact(n).zip(ys.chunks_exact_mut(n)).zip(sums) {
                scaled(xr, yr, sum);
            }
        } else {
            for (xr, yr) in xs.chunks_exact(n).zip(ys.chunks_exact_mut(n)) {
                let sum: f64 = xr.iter().map(|&v| f64::from(v * v)).sum();
                scaled(xr, yr, sum);
            }
        }
    };
    if x.len() > 2 * R * n {
        // Rows are independent: the same arithmetic on both cores.
        x.par_chunks(R * n)
            .zip(out.par_chunks_mut(R * n))
            .for_each(block);
    } else {
        x.chunks(R * n).zip(out.chunks_mut(R * n)).for_each(block);
    }
}

/// `_mm512_reduce_add_ps` as GCC expands it: halves, then quarters, then pairs.
fn reduce16(a: &[f32; LANES]) -> f32 {
    let b: [f32; 8] = std::array::from_fn(|i| a[i] + a[i + 8]);
    let c: [f32; 4] = std::array::from_fn(|i| b[i] + b[i + 4]);
    let d = [c[0] + c[2], c[1] + c[3]];
    d[0] + d[1]
}

/// tinyBLAS' dot product of f16 vectors (AVX-512), on their f32 values: per lane
/// a chain of fused multiply-adds over 16-wide chunks, then the horizontal sum.
/// Lengths are multiples of 16 (callers pad with zeros, as llama.cpp pads its cache).
#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    for (x, y) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] = x[l].mul_add(y[l], acc[l]);
        }
    }
    reduce16(&acc)
}

/// [`dot_lanes`] of `N` rows with the same `b` at once: the same chains per row,
/// interleaved so that they run in parallel.
#[inline(always)]
fn dot_lanes_n<const N: usize>(rows: [&[f32]; N], b: &[f32]) -> [f32; N] {
    let mut acc = [[0f32; LANES]; N];
    for (c, y) in b.chunks_exact(LANES).enumerate() {
        for (a, row) in acc.iter_mut().zip(&rows) {
            let x = &row[c * LANES..(c + 1) * LANES];
            for l in 0..LANES {
                a[l] = x[l].mul_add(y[l], a[l]);
            }
        }
    }
    acc.map(|a| reduce16(&a))
}

/// [`dot_vec`] of `N` rows with the same `b` at once (lengths a multiple of 64).
#[inline(always)]
fn dot_vec_n<const N: usize>(rows: [&[f32]; N], b: &[f32]) -> [f32; N] {
    let mut sums = [[[0f32; LANES]; 4]; N];
    for (c, y) in b.chunks_exact(64).enumerate() {
        for (s, row) in sums.iter_mut().zip(&rows) {
            let x = &row[c * 64..(c + 1) * 64];
            for (j, acc) in s.iter_mut().enumerate() {
                for l in 0..LANES {
                    acc[l] = x[j * LANES + l].mul_add(y[j * LANES + l], acc[l]);
                }
            }
        }
    }
    sums.map(|s| {
        let x0: [f32; LANES] = std::array::from_fn(|l| s[0][l] + s[2][l]);
        let x1: [f32; LANES] = std::array::from_fn(|l| s[1][l] + s[3][l]);
        let x: [f32; LANES] = std::array::from_fn(|l| x0[l] + x1[l]);
        (f64::from(reduce16(&x))) as f32
    })
}

/// [`dot_vec_n`] (`one_token`) or [`dot_lanes_n`]. (On AVX-512 the head-group
/// kernels of `wide` take every full group of keys and dimensions instead.)
#[inline(always)]
fn dot_n<const N: usize>(one_token: bool, rows: [&[f32]; N], b: &[f32]) -> [f32; N] {
    if one_token {
        dot_vec_n(rows, b)
    } else {
        dot_lanes_n(rows, b)
    }
}

/// `ggml_vec_dot_f16` (AVX-512): four 16-lane accumulators over 64-wide steps,
/// folded pairwise, the horizontal sum, then the tail in f64. llama.cpp takes this
/// path instead of tinyBLAS when one token is processed.
#[inline(always)]
fn dot_vec(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [[0f32; LANES]; 4];
    let np = a.len() / 64 * 64;
    for (x, y) in a[..np].chunks_exact(64).zip(b[..np].chunks_exact(64)) {
        for (j, acc) in sums.iter_mut().enumerate() {
            for l in 0..LANES {
                acc[l] = x[j * LANES + l].mul_add(y[j * LANES + l], acc[l]);
            }
        }
    }
    let x0: [f32; LANES] = std::array::from_fn(|l| sums[0][l] + sums[2][l]);
    let x1: [f32; LANES] = std::array::from_fn(|l| sums[1][l] + sums[3][l]);
    let x: [f32; LANES] = std::array::from_fn(|l| x0[l] + x1[l]);
    let mut sum = f64::from(reduce16(&x));
    for (x, y) in a[np..].iter().zip(&b[np..]) {
        sum += f64::from(x * y);
    }
    sum as f32
}

/// Rotary embedding tables as `ggml_rope_cache_init` builds them for one position:
/// θ starts at the position and is multiplied by `theta_scale` for each pair; each
/// angle is `freq_scale · θ` (`rope_yarn` without extrapolation).
pub fn rope_cache(
    pos: usize,
    pairs: usize,
    theta_scale: f32,
    freq_scale: f32,
    out: &mut Vec<(f32, f32)>,
) {
    out.clear();
    let mut theta = pos as f32;
    for _ in 0..pairs {
        let t = freq_scale * theta;
        out.push((t.cos(), t.sin()));
        theta *= theta_scale;
    }
}

/// `rotate_pairs` for `GGML_ROPE_TYPE_NEOX`: pairs `(i, i + n/2)` of the first
/// `n = 2·cache.len()` values of `x`.
pub fn rope_neox(x: &mut [f32], cache: &[(f32, f32)]) {
    rope::<true>(x, cache);
}

/// `rotate_pairs` for `GGML_ROPE_TYPE_NORM` (adjacent pairs) on the first
/// `2·cache.len()` values of `x`.
pub fn rope_norm(x: &mut [f32], cache: &[(f32, f32)]) {
    rope::<false>(x, cache);
}

/// [`rope_neox`] (`NEOX`) or [`rope_norm`], with the fused multiply-adds in hardware
/// where the CPU has them (the same bits as the library's `fmaf`, many times faster;
/// this crate is built for plain x86-64, where `mul_add` is a library call).
fn rope<const NEOX: bool>(x: &mut [f32], cache: &[(f32, f32)]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU has the features `rope_fma` is compiled for.
        unsafe { rope_fma::<NEOX>(x, cache) };
        return;
    }
    rope_impl::<NEOX>(x, cache);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rope_fma<const NEOX: bool>(x: &mut [f32], cache: &[(f32, f32)]) {
    rope_impl::<NEOX>(x, cache);
}

#[inline(always)]
fn rope_impl<const NEOX: bool>(x: &mut [f32], cache: &[(f32, f32)]) {
    let half = cache.len();
    for (i, &(c, s)) in cache.iter().enumerate() {
        // NEOX pairs `(i, i + n/2)`, NORM adjacent pairs.
        let (a, b) = if NEOX {
            (i, i + half)
        } else {
            (2 * i, 2 * i + 1)
        };
        let (x0, x1) = (x[a], x[b]);
        // GCC contracts these (-ffp-contract=fast) into fused multiply-adds.
        x[a] = x0.mul_add(c, -(x1 * s));
        x[b] = x0.mul_add(s, x1 * c);
    }
}

/// `ggml_table_gelu_f16`: GELU (tanh approximation) of every f16 value, as f16.
static GELU_F16: std::sync::LazyLock<Vec<f16>> = std::sync::LazyLock::new(|| {
    const GELU_COEF_A: f32 = 0.044715;
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    (0..=u16::MAX)
        .map(|b| {
            let x = f16::from_bits(b).to_f32();
            // GCC contracts `1 + a·x·x` into a fused multiply-add.
            let inner = SQRT_2_OVER_PI * x * (GELU_COEF_A * x).mul_add(x, 1.0);
            to_f16(0.5 * x * (1.0 + inner.tanh()))
        })
        .collect()
});

/// [`GELU_F16`] widened, for a gather.
static GELU_F32: std::sync::LazyLock<Vec<f32>> =
    std::sync::LazyLock::new(|| GELU_F16.iter().map(|v| v.to_f32()).collect());

/// `ggml_vec_geglu_f32` (with `GGML_GELU_FP16`): `gelu(gate) · up`, GELU read from
/// the f16 table at the gate rounded to f16; 0 at or below −10, the gate itself at
/// or above 10.
pub fn geglu(gate: &[f32], up: &[f32], out: &mut [f32]) {
    let mut full = 0;
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512 F/BW/VL (checked).
        full = unsafe { wide::geglu(gate, up, out) };
    }
    geglu_scalar(&gate[full..], &up[full..], &mut out[full..]);
}

/// [`geglu`] value by value.
fn geglu_scalar(gate: &[f32], up: &[f32], out: &mut [f32]) {
    let table = &*GELU_F16;
    for ((o, &x), &g) in out.iter_mut().zip(gate).zip(up) {
        *o = if x <= -10.0 {
            0.0
        } else if x >= 10.0 {
            x * g
        } else {
            table[usize::from(to_f16(x).to_bits())].to_f32() * g
        };
    }
}

/// f32 → f16 bits, rounding to nearest even (`_cvtss_sh`).
pub fn to_f16(x: f32) -> f16 {
    f16::from_f32(x)
}

/// Each value rounded to f16 and widened back (`to_f16(v).to_f32()`), in place.
pub fn round_f16(x: &mut [f32]) {
    let mut full = 0;
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        // SAFETY: the CPU has AVX-512 F/BW/VL (checked).
        full = unsafe { wide::round_f16(x) };
    }
    for v in &mut x[full..] {
        *v = to_f16(*v).to_f32();
    }
}

/// A KV cache of one layer, per kv head. llama.cpp keeps it in f16; the values here
/// are those f16 values, kept widened to f32 (exact) in the layout attention reads,
/// so that no step converts the whole cache again.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    heads: Vec<HeadKv>,
    /// Values per position (kv heads × head dim).
    pub width: usize,
}

impl KvCache {
    /// A cache of `kv_heads` heads of `dim` values.
    pub fn new(kv_heads: usize, dim: usize) -> Self {
        Self {
            heads: vec![
                HeadKv {
                    dim,
                    ..HeadKv::default()
                };
                kv_heads
            ],
            width: kv_heads * dim,
        }
    }

    /// Write positions `pos..pos + n` from rows of `k` and `v` (each `n × width`,
    /// heads side by side), rounded to f16; later positions are dropped.
    pub fn store(&mut self, pos: usize, k: &[f32], v: &[f32]) {
        let w = self.width;
        for (h, head) in self.heads.iter_mut().enumerate() {
            let dim = head.dim;
            let kr: Vec<&[f32]> = k
                .chunks_exact(w)
                .map(|r| &r[h * dim..(h + 1) * dim])
                .collect();
            let vr: Vec<&[f32]> = v
                .chunks_exact(w)
                .map(|r| &r[h * dim..(h + 1) * dim])
                .collect();
            head.store(pos, &kr, &vr);
        }
    }

    /// The number of KV heads.
    pub fn heads(&self) -> usize {
        self.heads.len()
    }

    /// Kv head `h`.
    pub fn head(&self, h: usize) -> &HeadKv {
        &self.heads[h]
    }

    /// A copy holding only positions `0..len`.
    pub fn fork(&self, len: usize) -> Self {
        Self {
            heads: self.heads.iter().map(|h| h.fork(len)).collect(),
            width: self.width,
        }
    }
}

/// One KV head's cache as f32, for attention: keys row by row (`positions × dim`) and
/// values transposed (`dim × stride`, `stride` a multiple of 64, zero past the stored
/// positions).
#[derive(Debug, Clone, Default)]
pub struct HeadKv {
    k: Vec<f32>,
    vt: Vec<f32>,
    stride: usize,
    dim: usize,
    total: usize,
}

impl HeadKv {
    /// Positions `pos..pos + rows` from `k` and `v` rows; positions after them are
    /// dropped (their values zeroed, as the padded products expect).
    fn store(&mut self, pos: usize, k: &[&[f32]], v: &[&[f32]]) {
        let dim = self.dim;
        let end = pos + k.len();
        let keep = self.total.min(pos);
        self.k.truncate(keep * dim);
        self.k.resize(pos * dim, 0.0);
        for row in k {
            self.k.extend_from_slice(row);
        }
        round_f16(&mut self.k[pos * dim..]);
        if end > self.stride {
            let stride = (end.div_ceil(64) * 64).max(2 * self.stride);
            let mut vt = vec![0f32; dim * stride];
            for d in 0..dim {
                vt[d * stride..d * stride + keep]
                    .copy_from_slice(&self.vt[d * self.stride..d * self.stride + keep]);
            }
            self.vt = vt;
            self.stride = stride;
        }
        for d in 0..dim {
            let col = &mut self.vt[d * self.stride..(d + 1) * self.stride];
            col[keep..pos].fill(0.0);
            for (j, row) in v.iter().enumerate() {
                col[pos + j] = row[d];
            }
            round_f16(&mut col[pos..end]);
            if self.total > end {
                col[end..self.total].fill(0.0);
            }
        }
        self.total = end;
    }

    fn fork(&self, len: usize) -> Self {
        let len = len.min(self.total);
        let mut c = self.clone();
        c.k.truncate(len * self.dim);
        for d in 0..self.dim {
            c.vt[d * self.stride + len..d * self.stride + self.total].fill(0.0);
        }
        c.total = len;
        c
    }
}

/// Scratch for one attention call.
#[derive(Default)]
pub struct AttnScratch {
    q: Vec<f32>,
    scores: Vec<f32>,
}

/// Attention of the query heads in `q` (each `kv.dim` values, all of one row, all
/// sharing the KV head `kv`) over positions `0..total` of `kv` (`total` at most the
/// positions `kv` holds), as llama.cpp's non-flash path computes it: KQ with Q
/// rounded to f16 (tinyBLAS), `soft_max_ext` (scale, causal mask, vector `expf`,
/// f64 sum of 16-lane sums), the probabilities rounded to f16, then KQV (tinyBLAS).
/// With `one_token` (a single position processed) both products take
/// `ggml_vec_dot_f16`'s order, as llama.cpp's do. `out` (as long as `q`) gets each
/// head's dimensions. The heads are computed together so that each key and value is
/// read once for all of them (the same bits as one by one). Keys before `first` are
/// masked out (a sliding window), as llama.cpp's `-inf` mask does: they take no
/// part in the maximum and their probabilities are zero.
#[allow(clippy::too_many_arguments)]
pub fn attend(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    first: usize,
    total: usize,
    scale: f32,
    s: &mut AttnScratch,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features `attend_512` is compiled for.
            unsafe { attend_512(one_token, q, kv, first, total, scale, s, out) };
            return;
        }
        if has_avx2_fma() {
            // SAFETY: the CPU has the features `attend_fma` is compiled for.
            unsafe { attend_fma(one_token, q, kv, first, total, scale, s, out) };
            return;
        }
    }
    attend_impl::<false>(one_token, q, kv, first, total, scale, s, out);
}

/// Whether [`attend_scores`], [`attend_softmax`] and [`attend_values`] run on vector
/// code here: AVX-512 on x86-64 (elsewhere on x86-64 only [`attend`] has its AVX2
/// build; the steps' fused multiply-adds would be library calls), any other target.
pub fn attend_steps_are_fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx512()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

/// [`attend`]'s first step, for splitting one token's attention across cores: the
/// scores of the query heads in `q` (already f16-rounded, see [`round_f16`]) for
/// keys `ja..jb`, head `h`'s at `out[h·(jb − ja)..]`.
pub fn attend_scores(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    ja: usize,
    jb: usize,
    scale: f32,
    out: &mut [f32],
) {
    let ld = jb.saturating_sub(ja);
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { steps_512::scores(one_token, q, kv, ja, jb, scale, out, ld) };
            return;
        }
    }
    scores_impl::<false>(one_token, q, kv, ja, jb, scale, out, ld);
}

/// [`attend`]'s second step: one head's scores (all keys up to `total`, padded with
/// zeros to a multiple of 64) into its probabilities, keys before `first` masked.
pub fn attend_softmax(row: &mut [f32], first: usize, total: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: as above.
            unsafe { steps_512::softmax(row, first, total) };
            return;
        }
    }
    softmax_impl::<false>(row, first, total);
}

/// [`attend`]'s third step: output dimensions `da..db` of each head from its
/// probabilities (`p`, rows of `ld`, a multiple of 64), head `h`'s at
/// `out[h·(db − da)..]`.
#[allow(clippy::too_many_arguments)]
pub fn attend_values(
    one_token: bool,
    kv: &HeadKv,
    p: &[f32],
    ld: usize,
    first: usize,
    da: usize,
    db: usize,
    out: &mut [f32],
) {
    let heads = p.len() / ld.max(1);
    let ldo = db.saturating_sub(da);
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: as above.
            unsafe { steps_512::values(one_token, kv, p, ld, heads, first, da, db, out, ldo) };
            return;
        }
    }
    values_impl::<false>(one_token, kv, p, ld, heads, first, da, db, out, ldo);
}

/// The steps compiled for AVX-512 (the same lanes, so the same bits).
#[cfg(target_arch = "x86_64")]
mod steps_512 {
    use super::HeadKv;

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scores(
        one_token: bool,
        q: &[f32],
        kv: &HeadKv,
        ja: usize,
        jb: usize,
        scale: f32,
        out: &mut [f32],
        ld: usize,
    ) {
        super::scores_impl::<true>(one_token, q, kv, ja, jb, scale, out, ld);
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    pub(super) fn softmax(row: &mut [f32], first: usize, total: usize) {
        super::softmax_impl::<true>(row, first, total);
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn values(
        one_token: bool,
        kv: &HeadKv,
        p: &[f32],
        ld: usize,
        heads: usize,
        first: usize,
        da: usize,
        db: usize,
        out: &mut [f32],
        ldo: usize,
    ) {
        super::values_impl::<true>(one_token, kv, p, ld, heads, first, da, db, out, ldo);
    }
}

/// The same code on 16-lane registers (the lanes are the same, so are the bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
#[allow(clippy::too_many_arguments)]
fn attend_512(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    first: usize,
    total: usize,
    scale: f32,
    s: &mut AttnScratch,
    out: &mut [f32],
) {
    attend_impl::<true>(one_token, q, kv, first, total, scale, s, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
fn attend_fma(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    first: usize,
    total: usize,
    scale: f32,
    s: &mut AttnScratch,
    out: &mut [f32],
) {
    attend_impl::<false>(one_token, q, kv, first, total, scale, s, out);
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attend_impl<const W: bool>(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    first: usize,
    total: usize,
    scale: f32,
    s: &mut AttnScratch,
    out: &mut [f32],
) {
    let dim = kv.dim;
    assert!(dim > 0 && q.len().is_multiple_of(dim) && out.len() == q.len());
    let heads = q.len() / dim;
    let total = total.min(kv.total);
    let first = first.min(total);
    // Padded to 64 so both dot orders see whole steps; the zeros add nothing.
    let padded = total.div_ceil(64) * 64;
    s.q.clear();
    s.q.extend_from_slice(q);
    round_f16(&mut s.q);
    s.scores.clear();
    s.scores.resize(heads * padded, 0.0);
    scores_impl::<W>(
        one_token,
        &s.q,
        kv,
        first,
        total,
        scale,
        &mut s.scores[first..],
        padded,
    );
    for row in s.scores.chunks_exact_mut(padded) {
        softmax_impl::<W>(row, first, total);
    }
    values_impl::<W>(
        one_token, kv, &s.scores, padded, heads, first, 0, dim, out, dim,
    );
}

/// Step 1 of [`attend`]: the scores `dot(k_j, q_h) · scale` of the query heads in `q`
/// (f16-rounded, `kv.dim` apart) for keys `ja..jb`, at `out[h·ld + j − ja]`. Keys
/// before a sliding window's start need none: the mask zeroes them.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scores_impl<const W: bool>(
    one_token: bool,
    q: &[f32],
    kv: &HeadKv,
    ja: usize,
    jb: usize,
    scale: f32,
    out: &mut [f32],
    ld: usize,
) {
    let dim = kv.dim;
    let heads = q.len() / dim;
    let n = jb.saturating_sub(ja);
    if n == 0 || heads == 0 {
        return;
    }
    let k = &kv.k[ja * dim..jb * dim];
    assert!(ld >= n && out.len() >= (heads - 1) * ld + n);
    let batched = if one_token {
        dim.is_multiple_of(64)
    } else {
        dim.is_multiple_of(LANES)
    };
    // The query heads sharing this KV head, four keys at a time, on registers.
    let mut j0 = 0;
    #[cfg(target_arch = "x86_64")]
    if W && batched {
        // SAFETY: `W` only from AVX-512F code; bounds checked inside.
        j0 = unsafe { wide::scores_heads(one_token, k, dim, n, q, scale, out, ld) };
    }
    for h in 0..heads {
        let qh = &q[h * dim..(h + 1) * dim];
        let row = &mut out[h * ld..h * ld + n];
        let mut j = j0;
        // Eight keys at a time where the width allows (each key's chain unchanged).
        if batched {
            while j + 8 <= n {
                let rows: [&[f32]; 8] =
                    std::array::from_fn(|t| &k[(j + t) * dim..(j + t + 1) * dim]);
                let dots = dot_n::<8>(one_token, rows, qh);
                for (t, dot) in dots.iter().enumerate() {
                    row[j + t] = dot * scale;
                }
                j += 8;
            }
        }
        for (j, krow) in k.chunks_exact(dim).enumerate().take(n).skip(j) {
            let dot = if one_token || !dim.is_multiple_of(LANES) {
                dot_vec(krow, qh)
            } else {
                dot_lanes(krow, qh)
            };
            row[j] = dot * scale;
        }
    }
}

/// Step 2 of [`attend`]: one head's scores (`row`, padded with zeros to a multiple of
/// 64) into f16-rounded probabilities, keys before `first` masked. Whole 16-value
/// chunks before `first` are zeros that add zero to the sum: skipped.
#[inline(always)]
fn softmax_impl<const W: bool>(row: &mut [f32], first: usize, total: usize) {
    let max = row[first..total]
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let skip = first / LANES * LANES;
    row[..skip].fill(0.0);
    softmax_f16::<W>(&mut row[skip..], first - skip, total - skip, max);
}

/// Step 3 of [`attend`]: output dimensions `da..db` of `heads` heads, `dot(v_d, p_h)`
/// at `out[h·ldo + d − da]`, with head `h`'s probabilities at `p[h·ld..]` (`ld` a
/// multiple of 64, at most the cache's stride; zero before `first`). Positions before
/// `first`'s 64-value step are skipped: their products are zeros added to
/// accumulators that are still zero, which changes no bit.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn values_impl<const W: bool>(
    one_token: bool,
    kv: &HeadKv,
    p: &[f32],
    ld: usize,
    heads: usize,
    first: usize,
    da: usize,
    db: usize,
    out: &mut [f32],
    ldo: usize,
) {
    let from = first / 64 * 64;
    let len = ld - from;
    assert!(ld.is_multiple_of(64) && (ld == 0 || ld <= kv.stride));
    assert!(da <= db && db <= kv.dim && p.len() >= heads * ld);
    assert!(ldo >= db - da && out.len() >= heads.saturating_sub(1) * ldo + (db - da));
    // Four dimensions at a time for all heads on registers, then per head.
    let mut d0 = da;
    #[cfg(target_arch = "x86_64")]
    if W && len > 0 {
        // SAFETY: `W` only from AVX-512F code; bounds checked inside.
        d0 += unsafe {
            wide::values_heads(
                one_token,
                &kv.vt[da * kv.stride + from..],
                kv.stride,
                &p[from..],
                ld,
                len,
                heads,
                db - da,
                out,
                ldo,
            )
        };
    }
    let vrow = |d: usize| &kv.vt[d * kv.stride + from..d * kv.stride + ld];
    for h in 0..heads {
        let ph = &p[h * ld + from..(h + 1) * ld];
        let out = &mut out[h * ldo..h * ldo + (db - da)];
        let mut d = d0;
        // Four or eight output dimensions at a time (each one's chain unchanged).
        if one_token {
            // Four at a time: `dot_vec` keeps four accumulators per dimension.
            while d + 4 <= db {
                let rows: [&[f32]; 4] = std::array::from_fn(|t| vrow(d + t));
                out[d - da..d - da + 4].copy_from_slice(&dot_n::<4>(true, rows, ph));
                d += 4;
            }
        } else {
            while d + 8 <= db {
                let rows: [&[f32]; 8] = std::array::from_fn(|t| vrow(d + t));
                out[d - da..d - da + 8].copy_from_slice(&dot_n::<8>(false, rows, ph));
                d += 8;
            }
        }
        for d in d..db {
            out[d - da] = if one_token {
                dot_vec(vrow(d), ph)
            } else {
                dot_lanes(vrow(d), ph)
            };
        }
    }
}

/// `soft_max_ext` of one row of scores (the first `total` of `x`, the rest zero) with
/// its maximum: vector `expf`, the f64 sum of 16-lane sums, then the probabilities
/// rounded to f16 (KQV's input type). Values before `first` are masked: zero
/// after the exponential, as `expf(-inf)` makes them.
#[inline(always)]
fn softmax_f16<const W: bool>(x: &mut [f32], first: usize, total: usize, max: f32) {
    let mut sum = 0f64;
    for (c, chunk) in x.chunks_exact_mut(LANES).enumerate() {
        let valid = total.saturating_sub(c * LANES).min(LANES);
        let masked = first.saturating_sub(c * LANES).min(LANES);
        #[cfg(target_arch = "x86_64")]
        if W {
            // SAFETY: `W` is set only by `attend_512`, compiled for AVX-512 F/BW/VL.
            unsafe { wide::exp_minus(chunk, valid, max) };
        } else {
            for x in chunk[..valid].iter_mut() {
                *x = expf(*x - max);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        for x in chunk[..valid].iter_mut() {
            *x = expf(*x - max);
        }
        chunk[..masked].fill(0.0);
        let lanes: &[f32; LANES] = (&*chunk).try_into().unwrap_or(&[0.0; LANES]);
        sum += f64::from(reduce16(lanes));
    }
    let inv = (1.0 / sum) as f32;
    #[cfg(target_arch = "x86_64")]
    if W {
        for (c, chunk) in x.chunks_exact_mut(LANES).enumerate() {
            let valid = total.saturating_sub(c * LANES).min(LANES);
            // SAFETY: as above.
            unsafe { wide::scale_to_f16(chunk, valid, inv) };
        }
    }
    if !W || cfg!(not(target_arch = "x86_64")) {
        for x in x[..total].iter_mut() {
            *x = to_f16(*x * inv).to_f32();
        }
    }
}

/// The element-wise steps of attention and of the feed-forward on 16-lane registers
/// (only where the CPU has AVX-512).
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::LANES;
    use std::arch::x86_64::*;

    /// `ggml_v_expf` (AVX-512), the original of the scalar [`super::expf`].
    #[inline(always)]
    unsafe fn expf(x: __m512) -> __m512 {
        // SAFETY: callers run with AVX-512F.
        unsafe {
            let c = |b: u32| _mm512_set1_ps(f32::from_bits(b));
            let r = c(0x4b40_0000);
            let z = _mm512_fmadd_ps(x, c(0x3fb8_aa3b), r);
            let n = _mm512_sub_ps(z, r);
            let b = _mm512_fnmadd_ps(n, c(0x35bf_be8e), _mm512_fnmadd_ps(n, c(0x3f31_7200), x));
            let d = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(_mm512_abs_ps(n), _mm512_set1_ps(192.0));
            let u = _mm512_mul_ps(b, b);
            let j = _mm512_fmadd_ps(
                _mm512_fmadd_ps(
                    _mm512_fmadd_ps(c(0x3c07_2010), b, c(0x3d2b_9f17)),
                    u,
                    _mm512_fmadd_ps(c(0x3e2a_af33), b, c(0x3eff_fedb)),
                ),
                u,
                _mm512_fmadd_ps(c(0x3f7f_fff6), b, _mm512_set1_ps(1.0)),
            );
            let res = _mm512_scalef_ps(j, n);
            if d == 0 {
                return res;
            }
            let le = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(n, _mm512_setzero_ps());
            let alt = _mm512_mask_blend_ps(le, _mm512_set1_ps(f32::INFINITY), _mm512_setzero_ps());
            _mm512_mask_blend_ps(d, res, alt)
        }
    }

    /// [`super::reduce16`] of 16 registers at once: lane `t` of the result is the
    /// horizontal sum of `x[t]`, with the same pairs added in the same order
    /// (halves, quarters, pairs, then the last two), done across registers.
    #[inline(always)]
    pub(super) unsafe fn reduce16x16(x: &[__m512; 16]) -> __m512 {
        // SAFETY: AVX-512F (callers).
        unsafe {
            // a[i] + a[i + 8]: two keys per register, eight sums each.
            let b: [__m512; 8] = core::array::from_fn(|p| {
                let (a0, a1) = (x[2 * p], x[2 * p + 1]);
                _mm512_add_ps(
                    _mm512_shuffle_f32x4::<0x44>(a0, a1),
                    _mm512_shuffle_f32x4::<0xEE>(a0, a1),
                )
            });
            // b[i] + b[i + 4]: four keys per register, one per 128-bit chunk.
            let c: [__m512; 4] = core::array::from_fn(|q| {
                let (p0, p1) = (b[2 * q], b[2 * q + 1]);
                _mm512_add_ps(
                    _mm512_shuffle_f32x4::<0x88>(p0, p1),
                    _mm512_shuffle_f32x4::<0xDD>(p0, p1),
                )
            });
            // [c0 + c2, c1 + c3] per key.
            let d: [__m512; 2] = core::array::from_fn(|r| {
                let (r0, r1) = (c[2 * r], c[2 * r + 1]);
                _mm512_add_ps(
                    _mm512_shuffle_ps::<0x44>(r0, r1),
                    _mm512_shuffle_ps::<0xEE>(r0, r1),
                )
            });
            // d0 + d1; lane 4k + m now holds key 4m + k.
            let e = _mm512_add_ps(
                _mm512_shuffle_ps::<0x88>(d[0], d[1]),
                _mm512_shuffle_ps::<0xDD>(d[0], d[1]),
            );
            let idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
            _mm512_permutexvar_ps(idx, e)
        }
    }

    /// Lanes `4n..4n + 4` of `r`.
    #[inline(always)]
    unsafe fn quarter(r: __m512, n: usize) -> __m128 {
        // SAFETY: AVX-512F (callers).
        unsafe {
            match n {
                0 => _mm512_extractf32x4_ps::<0>(r),
                1 => _mm512_extractf32x4_ps::<1>(r),
                2 => _mm512_extractf32x4_ps::<2>(r),
                _ => _mm512_extractf32x4_ps::<3>(r),
            }
        }
    }

    /// `N` (at most 4) rows of `dim` values at `a` (rows `sa` apart) dotted with 4 rows
    /// at `b` (rows `sb` apart) over `len` values: lane `4n + t` of the result is
    /// `dot(a_n, b_t)`, in [`super::dot_vec`]'s order when `vec` (`len` a multiple of
    /// 64), else [`super::dot_lanes`]' (`len` a multiple of 16), each `b` chunk loaded
    /// once for the `N` rows.
    #[inline(always)]
    unsafe fn dots_n_by_4<const N: usize>(
        vec: bool,
        a: *const f32,
        sa: usize,
        b: *const f32,
        sb: usize,
        len: usize,
    ) -> __m512 {
        // SAFETY: the rows are readable for `len` values (callers); AVX-512F.
        unsafe {
            let mut x = [_mm512_setzero_ps(); 16];
            if vec {
                for t in 0..4 {
                    let bt = b.add(t * sb);
                    let mut s = [[_mm512_setzero_ps(); 4]; N];
                    for c in 0..len / 64 {
                        for j in 0..4 {
                            let o = c * 64 + j * 16;
                            let y = _mm512_loadu_ps(bt.add(o));
                            for (n, sn) in s.iter_mut().enumerate() {
                                let xa = _mm512_loadu_ps(a.add(n * sa + o));
                                sn[j] = _mm512_fmadd_ps(y, xa, sn[j]);
                            }
                        }
                    }
                    for (n, sn) in s.iter().enumerate() {
                        x[4 * n + t] =
                            _mm512_add_ps(_mm512_add_ps(sn[0], sn[2]), _mm512_add_ps(sn[1], sn[3]));
                    }
                }
            } else {
                for c in 0..len / 16 {
                    let y: [__m512; 4] =
                        core::array::from_fn(|t| _mm512_loadu_ps(b.add(t * sb + c * 16)));
                    for n in 0..N {
                        let xa = _mm512_loadu_ps(a.add(n * sa + c * 16));
                        for t in 0..4 {
                            x[4 * n + t] = _mm512_fmadd_ps(y[t], xa, x[4 * n + t]);
                        }
                    }
                }
            }
            reduce16x16(&x)
        }
    }

    /// [`dots_n_by_4`] for `n` (1 to 4) rows at `a`.
    #[inline(always)]
    unsafe fn dots_by_4(
        n: usize,
        vec: bool,
        a: *const f32,
        sa: usize,
        b: *const f32,
        sb: usize,
        len: usize,
    ) -> __m512 {
        // SAFETY: as `dots_n_by_4` (callers).
        unsafe {
            match n {
                1 => dots_n_by_4::<1>(vec, a, sa, b, sb, len),
                2 => dots_n_by_4::<2>(vec, a, sa, b, sb, len),
                3 => dots_n_by_4::<3>(vec, a, sa, b, sb, len),
                _ => dots_n_by_4::<4>(vec, a, sa, b, sb, len),
            }
        }
    }

    /// Scores of the query heads in `q` (`dim` apart, already f16-rounded) against
    /// keys `0..total/4·4` of `k`, four keys and up to four heads at a time: head `h`'s
    /// `dot(k_j, q_h) · scale` into `scores[h·ld + j]`, in [`super::dot_vec`]'s order
    /// when `one_token`, else [`super::dot_lanes`]'. Returns the number of keys done.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) unsafe fn scores_heads(
        one_token: bool,
        k: &[f32],
        dim: usize,
        total: usize,
        q: &[f32],
        scale: f32,
        scores: &mut [f32],
        ld: usize,
    ) -> usize {
        let heads = q.len() / dim;
        let keys = total / 4 * 4;
        if heads == 0 || keys == 0 {
            return keys;
        }
        assert!(k.len() >= total * dim);
        assert!(ld >= total && scores.len() >= (heads - 1) * ld + keys);
        assert!(dim.is_multiple_of(if one_token { 64 } else { 16 }));
        // SAFETY: reads keys `< keys ≤ total` of `k` and heads `< heads` of `q`;
        // writes `scores[h·ld + j]` for `j < keys ≤ ld` (asserted); AVX-512F.
        unsafe {
            let sc = _mm512_set1_ps(scale);
            for h0 in (0..heads).step_by(4) {
                let n = (heads - h0).min(4);
                let qa = q.as_ptr().add(h0 * dim);
                for j in (0..keys).step_by(4) {
                    let kb = k.as_ptr().add(j * dim);
                    let r = dots_by_4(n, one_token, qa, dim, kb, dim, dim);
                    let v = _mm512_mul_ps(r, sc);
                    for i in 0..n {
                        let at = scores.as_mut_ptr().add((h0 + i) * ld + j);
                        _mm_storeu_ps(at, quarter(v, i));
                    }
                }
            }
            keys
        }
    }

    /// Output dimensions `0..dims/4·4` of `heads` heads, four dimensions and up to four
    /// heads at a time: `out[h·ldo + d] = dot(vt_d, p_h)` over `len` positions (a
    /// multiple of 64; `vt_d` at `vt[d·stride..]`, `p_h` at `p[h·ldp..]`), in the same
    /// order as [`scores_heads`]. Returns the number of dimensions done.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) unsafe fn values_heads(
        one_token: bool,
        vt: &[f32],
        stride: usize,
        p: &[f32],
        ldp: usize,
        len: usize,
        heads: usize,
        dims: usize,
        out: &mut [f32],
        ldo: usize,
    ) -> usize {
        let dims = dims / 4 * 4;
        if heads == 0 || dims == 0 {
            return dims;
        }
        assert!(len.is_multiple_of(64) && len <= stride && len <= ldp);
        assert!(p.len() >= (heads - 1) * ldp + len);
        assert!(vt.len() >= (dims - 1) * stride + len);
        assert!(ldo >= dims && out.len() >= (heads - 1) * ldo + dims);
        // SAFETY: reads rows `d < dims` of `vt` for `len` values and `len` values of
        // each head's `p`, writes `out[h·ldo + d]` for `d < dims` (asserted); AVX-512F.
        unsafe {
            for h0 in (0..heads).step_by(4) {
                let n = (heads - h0).min(4);
                let pa = p.as_ptr().add(h0 * ldp);
                for d in (0..dims).step_by(4) {
                    let vb = vt.as_ptr().add(d * stride);
                    let r = dots_by_4(n, one_token, pa, ldp, vb, stride, len);
                    for i in 0..n {
                        _mm_storeu_ps(out.as_mut_ptr().add((h0 + i) * ldo + d), quarter(r, i));
                    }
                }
            }
            dims
        }
    }

    /// `ggml_vec_swiglu_f32`'s 16-lane chunks: `silu(g) · u` with
    /// `silu(x) = x / (1 + expf(0 − x))`. Returns how many values it did.
    #[inline(always)]
    pub(super) unsafe fn swiglu16(gate: &[f32], up: &[f32], out: &mut [f32]) -> usize {
        let full = gate.len().min(up.len()).min(out.len()) / 16 * 16;
        // SAFETY: 16 values at each `i < full` in all three slices; AVX-512F (callers).
        unsafe {
            for i in (0..full).step_by(16) {
                let x = _mm512_loadu_ps(gate.as_ptr().add(i));
                let e = expf(_mm512_sub_ps(_mm512_setzero_ps(), x));
                let silu = _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0), e));
                let y = _mm512_mul_ps(silu, _mm512_loadu_ps(up.as_ptr().add(i)));
                _mm512_storeu_ps(out.as_mut_ptr().add(i), y);
            }
        }
        full
    }

    /// `x[i] = expf(x[i] − max)` for the first `valid` of 16 values.
    #[inline(always)]
    pub(super) unsafe fn exp_minus(x: &mut [f32], valid: usize, max: f32) {
        debug_assert!(x.len() >= 16 && valid <= 16);
        // SAFETY: 16 values at `x` (chunks of 16); AVX-512F (callers).
        unsafe {
            let k: __mmask16 = ((1u32 << valid) - 1) as u16;
            let v = _mm512_loadu_ps(x.as_ptr());
            let e = expf(_mm512_sub_ps(v, _mm512_set1_ps(max)));
            _mm512_mask_storeu_ps(x.as_mut_ptr(), k, e);
        }
    }

    /// [`round_f16`](super::round_f16) of the whole 16-value chunks of `x`; returns
    /// how many values it did.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    pub(super) unsafe fn round_f16(x: &mut [f32]) -> usize {
        let full = x.len() / LANES * LANES;
        for c in x[..full].chunks_exact_mut(LANES) {
            // SAFETY: 16 values.
            unsafe {
                let v = _mm512_loadu_ps(c.as_ptr());
                let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
                _mm512_storeu_ps(c.as_mut_ptr(), _mm512_cvtph_ps(h));
            }
        }
        full
    }

    /// [`geglu`](super::geglu) of the whole 16-value chunks: the gate rounded to f16
    /// indexes the widened GELU table (a gather), then the same cut-offs.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    pub(super) unsafe fn geglu(gate: &[f32], up: &[f32], out: &mut [f32]) -> usize {
        let table = &*super::GELU_F32;
        let n = gate.len().min(up.len()).min(out.len());
        let full = n / LANES * LANES;
        let (lo, hi) = (_mm512_set1_ps(-10.0), _mm512_set1_ps(10.0));
        for i in (0..full).step_by(LANES) {
            // SAFETY: 16 values of each from `i < full`; the indices are u16 values,
            // within the 65536-entry table.
            unsafe {
                let x = _mm512_loadu_ps(gate.as_ptr().add(i));
                let g = _mm512_loadu_ps(up.as_ptr().add(i));
                let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x);
                let t = _mm512_i32gather_ps::<4>(_mm512_cvtepu16_epi32(h), table.as_ptr().cast());
                let mut r = _mm512_mul_ps(t, g);
                r = _mm512_mask_mov_ps(
                    r,
                    _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, hi),
                    _mm512_mul_ps(x, g),
                );
                r = _mm512_mask_mov_ps(
                    r,
                    _mm512_cmp_ps_mask::<_CMP_LE_OQ>(x, lo),
                    _mm512_setzero_ps(),
                );
                _mm512_storeu_ps(out.as_mut_ptr().add(i), r);
            }
        }
        full
    }

    /// `x[i] = f16(x[i] · inv)` widened back, for the first `valid` of 16 values.
    #[inline(always)]
    pub(super) unsafe fn scale_to_f16(x: &mut [f32], valid: usize, inv: f32) {
        debug_assert!(x.len() >= 16 && valid <= 16);
        // SAFETY: as above; F16C conversions are part of AVX-512F.
        unsafe {
            let k: __mmask16 = ((1u32 << valid) - 1) as u16;
            let v = _mm512_mul_ps(_mm512_loadu_ps(x.as_ptr()), _mm512_set1_ps(inv));
            let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
            _mm512_mask_storeu_ps(x.as_mut_ptr(), k, _mm512_cvtph_ps(h));
        }
    }
}

/// `swiglu` with fused multiply-adds in hardware where the CPU has them, 16 lanes
/// at a time on AVX-512 (as ggml's `ggml_v_silu`; the same bits).
pub fn swiglu_fast(gate: &[f32], up: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features `swiglu_512` is compiled for.
            unsafe { swiglu_512(gate, up, out) };
            return;
        }
        if has_avx2_fma() {
            // SAFETY: the CPU has the features `swiglu_fma` is compiled for.
            unsafe { swiglu_fma(gate, up, out) };
            return;
        }
    }
    swiglu(gate, up, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
fn swiglu_512(gate: &[f32], up: &[f32], out: &mut [f32]) {
    // SAFETY: compiled for AVX-512F; bounds checked inside.
    let full = unsafe { wide::swiglu16(gate, up, out) };
    swiglu_tail(&gate[full..], &up[full..], &mut out[full..]);
}

/// The libm tail of [`swiglu`] (fewer than 16 values).
fn swiglu_tail(gate: &[f32], up: &[f32], out: &mut [f32]) {
    for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
        *o = g / (1.0 + (-g).exp()) * u;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn swiglu_fma(gate: &[f32], up: &[f32], out: &mut [f32]) {
    swiglu(gate, up, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_expf_is_close_to_libm_and_handles_the_ends() {
        for i in -1000..=1000 {
            let x = i as f32 * 0.0871;
            let (a, b) = (expf(x), x.exp());
            assert!(((a - b) / b).abs() < 4e-7, "expf({x}) = {a}, libm {b}");
        }
        assert_eq!(expf(f32::NEG_INFINITY), 0.0);
        assert_eq!(expf(-200.0), 0.0);
        assert_eq!(expf(200.0), f32::INFINITY);
        assert_eq!(expf(0.0), 1.0);
    }

    #[test]
    fn rms_norm_matches_its_definition() {
        let x = [1.0f32, -2.0, 3.0, 0.5];
        let w = [1.0f32, 2.0, 0.5, 1.0];
        let mut y = [0f32; 4];
        rms_norm(&x, &w, 1e-5, &mut y);
        let ms = (1.0 + 4.0 + 9.0 + 0.25) / 4.0;
        let s = 1.0 / (ms + 1e-5f32).sqrt();
        for i in 0..4 {
            assert!((y[i] - x[i] * s * w[i]).abs() < 1e-6);
        }
    }

    #[test]
    fn rms_norm_of_many_rows_is_each_row_alone() {
        let n = 96;
        // Magnitudes over many octaves, so that another order of the f64 sum
        // would round differently.
        let x: Vec<f32> = (0..40 * n)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 2f32.powi((i % 37) as i32 - 18))
            .collect();
        let w: Vec<f32> = (0..n).map(|i| 0.5 + i as f32 / 97.0).collect();
        for rows in [1, 7, 8, 9, 17, 40] {
            let mut y = vec![0f32; rows * n];
            rms_norm(&x[..rows * n], &w, 1e-6, &mut y);
            for r in 0..rows {
                let xr = &x[r * n..(r + 1) * n];
                let sum: f64 = xr.iter().map(|&v| f64::from(v * v)).sum();
                let scale = 1.0f32 / ((sum / n as f64) as f32 + 1e-6).sqrt();
                for i in 0..n {
                    assert_eq!(
                        y[r * n + i].to_bits(),
                        (xr[i] * scale * w[i]).to_bits(),
                        "{rows} rows, row {r}"
                    );
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn wide_exp_and_f16_rounding_are_the_scalar_ones() {
        if !has_avx512() {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        let xs: Vec<f32> = (0..4000)
            .map(|i| (i as f32 - 3000.0) * 0.0731)
            .chain([-1e30, -300.0, -104.0, -87.5, 0.0, -0.0, 88.0, 89.0, 200.0])
            .collect();
        for chunk in xs.chunks(16) {
            for valid in [chunk.len(), chunk.len() / 2] {
                let mut v = [7.0f32; 16];
                v[..chunk.len()].copy_from_slice(chunk);
                let mut w = v;
                // SAFETY: AVX-512 checked above.
                unsafe { wide::exp_minus(&mut v, valid, 1.5) };
                for i in 0..16 {
                    let want = if i < valid { expf(w[i] - 1.5) } else { w[i] };
                    assert_eq!(v[i].to_bits(), want.to_bits(), "exp({} - 1.5)", w[i]);
                }
                // SAFETY: as above.
                unsafe { wide::scale_to_f16(&mut w, valid, 0.37) };
                for i in 0..valid {
                    let x = if i < chunk.len() { chunk[i] } else { 7.0 };
                    assert_eq!(w[i].to_bits(), to_f16(x * 0.37).to_f32().to_bits());
                }
            }
        }
    }

    #[test]
    fn swiglu_on_registers_is_the_scalar_one() {
        let gate: Vec<f32> = (0..1000)
            .map(|i| (i as f32 - 600.0) * 0.173)
            .chain([-1e30, -200.0, -88.5, -0.0, 0.0, 88.5, 1e30])
            .collect();
        let up: Vec<f32> = (0..gate.len()).map(|i| (i % 7) as f32 - 2.5).collect();
        let mut want = vec![0f32; gate.len()];
        let mut got = vec![0f32; gate.len()];
        swiglu(&gate, &up, &mut want);
        swiglu_fast(&gate, &up, &mut got);
        for i in 0..gate.len() {
            assert_eq!(
                got[i].to_bits(),
                want[i].to_bits(),
                "silu({}) · {}",
                gate[i],
                up[i]
            );
        }
    }

    #[test]
    fn geglu_and_f16_rounding_on_registers_are_the_scalar_ones() {
        let gate: Vec<f32> = (0..4000)
            .map(|i| (i as f32 - 2000.0) * 0.0061)
            .chain([
                -1e30, -10.0, -9.999, 9.999, 10.0, 65504.0, 70000.0, -0.0, 0.0, 1e-8,
            ])
            .collect();
        let up: Vec<f32> = (0..gate.len()).map(|i| (i % 7) as f32 - 2.5).collect();
        let mut want = vec![0f32; gate.len()];
        let mut got = vec![0f32; gate.len()];
        geglu_scalar(&gate, &up, &mut want);
        geglu(&gate, &up, &mut got);
        for i in 0..gate.len() {
            assert_eq!(
                got[i].to_bits(),
                want[i].to_bits(),
                "gelu({}) · {}",
                gate[i],
                up[i]
            );
        }
        let mut r = gate.clone();
        round_f16(&mut r);
        for (x, y) in gate.iter().zip(&r) {
            assert_eq!(y.to_bits(), to_f16(*x).to_f32().to_bits(), "{x}");
        }
        let cache: Vec<(f32, f32)> = (0..8)
            .map(|i| ((i as f32).cos(), (i as f32).sin()))
            .collect();
        let x: Vec<f32> = (0..16).map(|i| i as f32 * 0.37 - 2.0).collect();
        let (mut a, mut b) = (x.clone(), x.clone());
        rope_neox(&mut a, &cache);
        rope_impl::<true>(&mut b, &cache);
        assert_eq!(a, b);
        let (mut a, mut b) = (x.clone(), x);
        rope_norm(&mut a, &cache);
        rope_impl::<false>(&mut b, &cache);
        assert_eq!(a, b);
    }

    #[test]
    fn batched_dots_keep_each_rows_order() {
        let row = |r: usize| -> Vec<f32> {
            (0..192)
                .map(|i| ((i * 31 + r * 17) % 97) as f32 / 7.0 - 6.5)
                .collect()
        };
        let rows: Vec<Vec<f32>> = (0..8).map(row).collect();
        let b: Vec<f32> = (0..192)
            .map(|i| ((i * 13) % 89) as f32 / 11.0 - 4.0)
            .collect();
        let refs: [&[f32]; 8] = std::array::from_fn(|t| rows[t].as_slice());
        let lanes = dot_lanes_n(refs, &b);
        let vec = dot_vec_n(refs, &b);
        for t in 0..8 {
            assert_eq!(lanes[t].to_bits(), dot_lanes(&rows[t], &b).to_bits());
            assert_eq!(vec[t].to_bits(), dot_vec(&rows[t], &b).to_bits());
        }
        // The two orders differ somewhere (so the test can tell them apart).
        assert!((0..8).any(|t| lanes[t] != vec[t]));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn wide_attention_is_the_portable_one_bit_for_bit() {
        if !has_avx512() {
            eprintln!("skipped: no AVX-512 here");
            return;
        }
        // Sixteen sums at once pair the same lanes as one at a time.
        let mut seed = 0x9e37_79b9_u32;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed % 20_011) as f32 / 1_000.0 - 10.0
        };
        let regs: Vec<[f32; 16]> = (0..16).map(|_| std::array::from_fn(|_| rnd())).collect();
        let mut sums = [0f32; 16];
        // SAFETY: AVX-512 checked above.
        unsafe {
            use std::arch::x86_64::*;
            let x: [__m512; 16] = std::array::from_fn(|t| _mm512_loadu_ps(regs[t].as_ptr()));
            _mm512_storeu_ps(sums.as_mut_ptr(), wide::reduce16x16(&x));
        }
        for t in 0..16 {
            assert_eq!(
                sums[t].to_bits(),
                reduce16(&regs[t]).to_bits(),
                "register {t}"
            );
        }
        // Whole attention rows, 1 to 6 query heads on one KV head (head groups of 4
        // and their remainders), against the portable code one head at a time: every
        // count of keys around the 4-, 16- and 64-wide steps; a width the one-token
        // key step does not take (80).
        let n = 300;
        for dim in [64, 80] {
            let mut c = KvCache::new(1, dim);
            let k: Vec<f32> = (0..n * dim).map(|_| rnd() * 0.3).collect();
            let v: Vec<f32> = (0..n * dim).map(|_| rnd()).collect();
            c.store(0, &k, &v);
            for heads in 1..=6 {
                let q: Vec<f32> = (0..heads * dim).map(|_| rnd() * 0.3).collect();
                for total in [1, 3, 4, 7, 15, 16, 17, 33, 64, 65, 130, 255, 300] {
                    // No window, and a window that hides the first third of the keys.
                    for (one_token, first) in
                        [(false, 0), (true, 0), (false, total / 3), (true, total / 3)]
                    {
                        let mut s = AttnScratch::default();
                        let mut got = vec![0f32; heads * dim];
                        attend(
                            one_token,
                            &q,
                            c.head(0),
                            first,
                            total,
                            0.125,
                            &mut s,
                            &mut got,
                        );
                        for h in 0..heads {
                            let mut want = vec![0f32; dim];
                            let qh = &q[h * dim..(h + 1) * dim];
                            attend_impl::<false>(
                                one_token,
                                qh,
                                c.head(0),
                                first,
                                total,
                                0.125,
                                &mut s,
                                &mut want,
                            );
                            for d in 0..dim {
                                assert_eq!(
                                    got[h * dim + d].to_bits(),
                                    want[d].to_bits(),
                                    "dim {dim}, heads {heads}, total {total}, first {first}, \
                                     one_token {one_token}, head {h}, dim {d}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// llama.cpp's attention as written, every key and every position: the scores of
    /// all keys, the mask, the softmax of the whole row, then each output dimension
    /// over the whole padded row.
    fn attend_reference(
        one_token: bool,
        q: &[f32],
        kv: &HeadKv,
        first: usize,
        total: usize,
        scale: f32,
    ) -> Vec<f32> {
        let dim = kv.dim;
        let total = total.min(kv.total);
        let first = first.min(total);
        let padded = total.div_ceil(64) * 64;
        let dot = |a: &[f32], b: &[f32]| {
            if one_token || !dim.is_multiple_of(LANES) {
                dot_vec(a, b)
            } else {
                dot_lanes(a, b)
            }
        };
        let mut qr = q.to_vec();
        round_f16(&mut qr);
        let mut out = Vec::new();
        for qh in qr.chunks_exact(dim) {
            let mut row = vec![0f32; padded];
            for (j, r) in row.iter_mut().enumerate().take(total) {
                *r = dot(&kv.k[j * dim..(j + 1) * dim], qh) * scale;
            }
            let max = row[first..total]
                .iter()
                .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            softmax_f16::<false>(&mut row, first, total, max);
            for d in 0..dim {
                let v = &kv.vt[d * kv.stride..d * kv.stride + padded];
                out.push(if one_token {
                    dot_vec(v, &row)
                } else {
                    dot_lanes(v, &row)
                });
            }
        }
        out
    }

    /// Attention skips the keys and positions a window masks, and can run in
    /// pieces (key ranges, then dimension ranges): the bits of the whole computation.
    #[test]
    fn attention_in_pieces_and_windows_is_the_whole_computation() {
        let mut seed = 0x2545_f491_u32;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed % 20_011) as f32 / 1_000.0 - 10.0
        };
        let n = 300;
        for dim in [64, 80, 128] {
            let mut c = KvCache::new(1, dim);
            let k: Vec<f32> = (0..n * dim).map(|_| rnd() * 0.3).collect();
            let v: Vec<f32> = (0..n * dim).map(|_| rnd()).collect();
            c.store(0, &k, &v);
            let kv = c.head(0);
            for heads in [1, 3, 4] {
                let q: Vec<f32> = (0..heads * dim).map(|_| rnd() * 0.3).collect();
                for total in [1usize, 17, 64, 65, 130, 255, 300] {
                    for first in [0, total / 3, total.saturating_sub(70), total - 1] {
                        for one_token in [false, true] {
                            let want = attend_reference(one_token, &q, kv, first, total, 0.125);
                            let mut got = vec![0f32; heads * dim];
                            let mut s = AttnScratch::default();
                            attend(one_token, &q, kv, first, total, 0.125, &mut s, &mut got);
                            let same = got
                                .iter()
                                .zip(&want)
                                .all(|(a, b)| a.to_bits() == b.to_bits());
                            assert!(same, "whole: dim {dim} heads {heads} total {total} first {first} one_token {one_token}");
                            // In pieces: keys in three ranges, then dimensions in two.
                            let mut qr = q.clone();
                            round_f16(&mut qr);
                            let padded = total.div_ceil(64) * 64;
                            let mut p = vec![0f32; heads * padded];
                            let cut = [
                                first,
                                first + (total - first) / 3,
                                total - (total - first) / 4,
                                total,
                            ];
                            for w in cut.windows(2) {
                                let mut part = vec![0f32; heads * (w[1] - w[0])];
                                attend_scores(one_token, &qr, kv, w[0], w[1], 0.125, &mut part);
                                for h in 0..heads {
                                    let len = w[1] - w[0];
                                    p[h * padded + w[0]..h * padded + w[1]]
                                        .copy_from_slice(&part[h * len..(h + 1) * len]);
                                }
                            }
                            for row in p.chunks_exact_mut(padded) {
                                attend_softmax(row, first, total);
                            }
                            let mut pieces = vec![0f32; heads * dim];
                            let half = dim / 2 + 4;
                            for (da, db) in [(0, half), (half, dim)] {
                                let mut part = vec![0f32; heads * (db - da)];
                                attend_values(one_token, kv, &p, padded, first, da, db, &mut part);
                                for h in 0..heads {
                                    pieces[h * dim + da..h * dim + db]
                                        .copy_from_slice(&part[h * (db - da)..(h + 1) * (db - da)]);
                                }
                            }
                            let same = pieces
                                .iter()
                                .zip(&want)
                                .all(|(a, b)| a.to_bits() == b.to_bits());
                            assert!(same, "pieces: dim {dim} heads {heads} total {total} first {first} one_token {one_token}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn kv_cache_rewrites_drop_later_positions() {
        let (heads, dim) = (2, 3);
        let mut c = KvCache::new(heads, dim);
        let rows = |n: usize, base: f32| -> Vec<f32> {
            (0..n * heads * dim).map(|i| base + i as f32).collect()
        };
        c.store(0, &rows(5, 0.0), &rows(5, 100.0));
        // Position 2 again: positions 3 and 4 are gone.
        c.store(2, &rows(1, 1000.0), &rows(1, 2000.0));
        let h1 = c.head(1);
        assert_eq!(h1.total, 3);
        assert_eq!(h1.k.len(), 3 * dim);
        // Head 1's key at position 2 = the new row's values 3..6.
        assert_eq!(&h1.k[2 * dim..], &[1003.0, 1004.0, 1005.0]);
        for d in 0..dim {
            let col = &h1.vt[d * h1.stride..(d + 1) * h1.stride];
            // Position 1 of head 1 in the first rows: 100 + 1·6 + 3 + d.
            assert_eq!(col[1], 109.0 + d as f32);
            assert_eq!(col[2], 2003.0 + d as f32);
            assert!(
                col[3..].iter().all(|&x| x == 0.0),
                "stale values past the end"
            );
        }
        // Values are rounded to f16, as llama.cpp's cache holds them.
        let mut r = KvCache::new(1, 1);
        r.store(0, &[0.1], &[0.1]);
        assert_eq!(r.head(0).k[0], half::f16::from_f32(0.1).to_f32());
        let f = c.fork(2);
        assert_eq!(f.head(0).total, 2);
        assert!(f.head(0).vt[2..f.head(0).stride].iter().all(|&x| x == 0.0));
        // Growing past the stride keeps the stored values.
        let mut g = KvCache::new(1, 2);
        g.store(0, &rows(60, 0.0)[..120], &rows(60, 0.0)[..120]);
        g.store(60, &rows(10, 500.0)[..20], &rows(10, 500.0)[..20]);
        let h = g.head(0);
        assert_eq!(h.total, 70);
        assert_eq!(h.vt[h.stride + 59], 119.0);
        assert_eq!(h.vt[h.stride + 60], 501.0);
    }

    #[test]
    fn attention_is_a_softmax_weighted_mean_of_values() {
        let (hd, n) = (16, 3);
        let mut c = KvCache::new(1, hd);
        let k: Vec<f32> = (0..n * hd).map(|i| ((i * 7) % 5) as f32 * 0.25).collect();
        let v: Vec<f32> = (0..n * hd)
            .map(|i| (i % hd) as f32 + (i / hd) as f32)
            .collect();
        c.store(0, &k, &v);
        let q: Vec<f32> = (0..hd).map(|i| (i % 3) as f32 * 0.5).collect();
        let kv = c.head(0).clone();
        type Attend = fn(bool, &[f32], &HeadKv, usize, usize, f32, &mut AttnScratch, &mut [f32]);
        let run_from = |f: Attend, one_token: bool, first: usize| {
            let mut out = vec![0f32; hd];
            f(
                one_token,
                &q,
                &kv,
                first,
                n,
                0.25,
                &mut AttnScratch::default(),
                &mut out,
            );
            out
        };
        let run = |f: Attend, one_token: bool| run_from(f, one_token, 0);
        let out = run(attend, false);
        let one = run(attend, true);
        let portable = run(attend_impl::<false>, false);
        assert_eq!(
            portable, out,
            "the FMA build and the portable one agree bit for bit"
        );
        for d in 0..hd {
            assert!((one[d] - out[d]).abs() < 1e-3);
        }
        let sc: Vec<f32> = (0..n)
            .map(|j| (0..hd).map(|i| k[j * hd + i] * q[i]).sum::<f32>() * 0.25)
            .collect();
        // With a window from key `first` on, the keys before it take no part.
        for first in [0, 1, 2] {
            let out = run_from(attend, false, first);
            let m = sc[first..].iter().cloned().fold(f32::MIN, f32::max);
            let e: Vec<f32> = sc.iter().map(|s| (s - m).exp()).collect();
            let z: f32 = e[first..].iter().sum();
            for d in 0..hd {
                let want: f32 = (first..n).map(|j| e[j] / z * v[j * hd + d]).sum();
                assert!(
                    (out[d] - want).abs() < 0.02,
                    "first {first}, dim {d}: {} vs {want}",
                    out[d]
                );
            }
        }
    }
}
