//! Quire's own quantized matrix multiplication for the weight types of the default
//! models (Q4_0, Q4_1, Q8_0), computed the way llama.cpp's CPU backend computes it.
//!
//! Why not candle's `QMatMul`: its Q4_1 path has no SIMD kernel, and its activation
//! quantization rounds differently from llama.cpp (half away from zero instead of to
//! even, `1/d` instead of `127/amax`, the Q8_1 block sum rounded twice through f16).
//! Those differences moved SmolLM2's logits by up to 1.8 and its greedy output away
//! from llama.cpp's. Here:
//! - each activation row is quantized to Q8_1 (for Q4_1) or Q8_0 (for Q4_0, Q8_0)
//!   exactly as ggml's x86 `quantize_row_q8_1` / `quantize_row_q8_0`;
//! - the block dot products are integer-exact and combined in f32 like ggml's AVX2
//!   `ggml_vec_dot_*` (8 float lanes, fused multiply-add, horizontal sum last);
//! - the AVX2 kernels are chosen at run time, a portable loop otherwise, so one binary
//!   runs on any x86-64;
//! - output rows are split across threads (rayon), each thread reusing its weight
//!   rows for every activation row (prompt processing), with scratch buffers reused
//!   between calls (no allocation per token beyond the output).
//!
//! - on a CPU with AMX, where llama.cpp moves layer weights to its AMX backend and
//!   computes them differently (block by block, no lanes), those weights go through
//!   [`packed`](super::packed), which has that arithmetic.
//!
//! Q4_K and Q6_K go to [`kquants`](super::kquants); other weight types fall back to
//! candle's `QMatMul`.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Module, Result, Tensor};
use half::f16;
use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
use super::vnni;

/// Values per quantization block (all types here).
pub(crate) const QK: usize = 32;

/// Weight block layouts (bytes): Q4_0 = d + 16 nibble bytes; Q4_1 = d, m + 16;
/// Q8_0 = d + 32 signed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Q4_0,
    Q4_1,
    Q8_0,
}

impl Kind {
    pub(crate) fn block_bytes(self) -> usize {
        match self {
            Kind::Q4_0 => 18,
            Kind::Q4_1 => 20,
            Kind::Q8_0 => 34,
        }
    }
}

/// Bytes of a Q5_0 block: the f16 scale, 32 high bits, 16 bytes of low nibbles.
const Q5_0_BYTES: usize = 22;

/// Q5_0 blocks rewritten as Q8_0 blocks of the same values (`q = (nibble | high
/// bit << 4) − 16`, the same scale): lossless, and the same arithmetic, since
/// llama.cpp's `ggml_vec_dot_q5_0_q8_0` expands each block to exactly these signed
/// bytes and then runs `ggml_vec_dot_q8_0_q8_0`'s steps (per block `d = dx·dy`,
/// 8 lanes of 4 products, `acc = fma(d, lanes, acc)`, `hsum_float_8`).
fn q5_0_as_q8_0(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / Q5_0_BYTES * 34);
    for b in data.chunks_exact(Q5_0_BYTES) {
        let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        out.extend_from_slice(&b[0..2]);
        for i in 0..QK {
            let nib = if i < 16 {
                b[6 + i] & 0xF
            } else {
                b[6 + i - 16] >> 4
            };
            let hi = ((qh >> i) & 1) as u8;
            out.push(((nib | (hi << 4)) as i8 - 16) as u8);
        }
    }
    out
}

/// An activation block quantized to 8 bits: scale `d`, for Q8_1 also `s = d·Σq`
/// (both as f16 values widened to f32, as ggml stores them), and the 32 values.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
pub(crate) struct Q8Block {
    pub(crate) qs: [i8; QK],
    pub(crate) d: f32,
    pub(crate) s: f32,
}

impl Default for Q8Block {
    fn default() -> Self {
        Self {
            qs: [0; QK],
            d: 0.0,
            s: 0.0,
        }
    }
}

/// Quantize `x` (a multiple of 32 long) into `out` as ggml's x86 `quantize_row_q8_1`
/// does (which for `d` and `qs` is also `quantize_row_q8_0`).
pub(crate) fn quantize_row_q8(x: &[f32], out: &mut [Q8Block]) {
    #[cfg(target_arch = "x86_64")]
    if super::ggml_ops::has_avx512() {
        // SAFETY: the CPU has AVX-512 F/BW/VL (checked).
        unsafe { quantize_row_q8_512(x, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if super::ggml_ops::has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked).
        unsafe { quantize_row_q8_avx2(x, out) };
        return;
    }
    quantize_row_q8_body(x, out);
}

/// The same arithmetic on AVX-512 registers, a block (two registers) at a time:
/// the maximum is order-free, each value is scaled and rounded to even alone, the
/// integer sum is exact.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn quantize_row_q8_512(x: &[f32], out: &mut [Q8Block]) {
    use std::arch::x86_64::*;
    for (xb, y) in x.chunks_exact(QK).zip(out.iter_mut()) {
        // SAFETY: 32 readable floats in `xb`, 32 writable bytes in `y.qs`.
        unsafe {
            let a = _mm512_loadu_ps(xb.as_ptr());
            let b = _mm512_loadu_ps(xb.as_ptr().add(16));
            let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
            let d = amax / 127.0;
            let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
            let m = _mm512_set1_ps(id);
            let round = |v: __m512| {
                _mm512_cvtps_epi32(_mm512_roundscale_ps::<
                    { _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC },
                >(_mm512_mul_ps(v, m)))
            };
            let (qa, qb) = (round(a), round(b));
            let sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
            _mm_storeu_si128(y.qs.as_mut_ptr().cast(), _mm512_cvtepi32_epi8(qa));
            _mm_storeu_si128(y.qs.as_mut_ptr().add(16).cast(), _mm512_cvtepi32_epi8(qb));
            y.d = f16::from_f32(d).to_f32();
            y.s = f16::from_f32(d * sum as f32).to_f32();
        }
    }
}

/// The same code compiled with AVX2 (`round_ties_even` becomes one instruction
/// instead of a libm call); the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quantize_row_q8_avx2(x: &[f32], out: &mut [Q8Block]) {
    quantize_row_q8_body(x, out)
}

#[inline(always)]
fn quantize_row_q8_body(x: &[f32], out: &mut [Q8Block]) {
    for (xb, y) in x.chunks_exact(QK).zip(out.iter_mut()) {
        let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
        let mut sum = 0i32;
        for (q, &v) in y.qs.iter_mut().zip(xb) {
            // Round half to even, as `_mm256_round_ps(_MM_ROUND_NEAREST)`.
            let r = (v * id).round_ties_even() as i32;
            *q = r as i8;
            sum += r;
        }
        y.d = f16::from_f32(d).to_f32();
        y.s = f16::from_f32(d * sum as f32).to_f32();
    }
}

/// A linear layer `y = x·Wᵀ` with a quantized weight.
#[derive(Debug, Clone)]
pub(crate) enum QLinear {
    Own(OwnWeight),
    #[cfg(target_arch = "x86_64")]
    Packed(super::packed::Packed),
    /// Q4_K, Q6_K.
    KQuant(super::kquants::KWeight),
    Candle(QMatMul),
}

/// Raw blocks of a Q4_0 / Q4_1 / Q8_0 weight of `n` rows of `k` values.
#[derive(Debug, Clone)]
pub(crate) struct OwnWeight {
    kind: Kind,
    n: usize,
    k: usize,
    data: Vec<u8>,
}

impl QLinear {
    /// Take the weight: own kernels for Q4_0, Q4_1, Q8_0; candle's otherwise.
    pub(crate) fn new(t: QTensor) -> Result<Self> {
        Self::build(t, false)
    }

    /// A weight llama.cpp would move to its AMX backend on a CPU that has AMX (a
    /// layer's weight or an untied output; not the token embeddings, which `get_rows`
    /// reads). The arithmetic is llama.cpp's CPU kernels' unless `QUIRE_LLAMACPP_AMX`
    /// asks for its AMX backend's (and this CPU has AMX).
    pub(crate) fn new_backend(t: QTensor) -> Result<Self> {
        Self::build(t, true)
    }

    /// Take the weight (own kernels for Q4_0, Q4_1, Q8_0; candle's otherwise);
    /// `backend`: one llama.cpp may move to its AMX backend.
    fn build(t: QTensor, backend: bool) -> Result<Self> {
        match OwnWeight::new(&t)? {
            Some(w) => {
                // The tensor's own copy goes before packing (peak memory at load).
                drop(t);
                Ok(Self::from_own(w, backend))
            }
            None => match super::kquants::KWeight::new(&t)? {
                Some(w) => Ok(QLinear::KQuant(w)),
                None => Ok(QLinear::Candle(QMatMul::from_qtensor(t)?)),
            },
        }
    }

    /// The packed order for `w`, where this CPU runs the packed kernels and the
    /// shape allows.
    #[cfg(target_arch = "x86_64")]
    fn packed_order(w: &OwnWeight, backend: bool) -> Option<super::packed::Order> {
        use super::packed::{eligible, Order};
        if !vnni_available() {
            return None;
        }
        let order = if backend && amx_order() {
            Order::Blocks
        } else {
            Order::Lanes
        };
        eligible(w.n, w.k, order).then_some(order)
    }

    /// `w` packed where [`Self::packed_order`] allows, as it is otherwise.
    fn from_own(w: OwnWeight, backend: bool) -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(order) = Self::packed_order(&w, backend) {
            return QLinear::Packed(super::packed::Packed::new(w.kind, w.n, w.k, &w.data, order));
        }
        let _ = backend;
        QLinear::Own(w)
    }

    /// `m` rows of `x` (row-major, `k` wide) times the weight: `m × n` values, each row
    /// computed as llama.cpp computes it alone (generation).
    pub(crate) fn forward_rows(&self, x: &[f32], m: usize) -> Result<Vec<f32>> {
        self.forward_batch(x, m, false)
    }

    /// [`Self::forward_rows`]; `batch`: the rows are one sequence's batch (a prompt),
    /// computed as llama.cpp computes such a batch (which differs for K-quants, see
    /// [`kquants`](super::kquants)).
    pub(crate) fn forward_batch(&self, x: &[f32], m: usize, batch: bool) -> Result<Vec<f32>> {
        let mut out = Vec::new();
        self.forward_into(x, m, batch, &mut out)?;
        Ok(out)
    }

    /// [`Self::forward_batch`] into `out`, resized to `m × n` and overwritten: a
    /// buffer kept across calls is not cleared each time.
    pub(crate) fn forward_into(
        &self,
        x: &[f32],
        m: usize,
        batch: bool,
        out: &mut Vec<f32>,
    ) -> Result<()> {
        let (n, k) = self.shape();
        if x.len() != m * k {
            candle_core::bail!("matmul input of {} values is not {m}x{k}", x.len());
        }
        out.resize(m * n, 0.0);
        match self {
            #[cfg(target_arch = "x86_64")]
            QLinear::Packed(p) => p.matmul(x, m, out),
            QLinear::Own(w) => {
                // Taken out, not borrowed: this thread may run another matmul while
                // it waits on this one's parallel tasks.
                let mut q = SCRATCH.with(|cell| cell.take());
                w.matmul(x, m, &mut q, out);
                SCRATCH.with(|cell| cell.replace(q));
            }
            QLinear::KQuant(w) => w.matmul(x, m, batch, out),
            QLinear::Candle(q) => {
                let t = Tensor::from_slice(x, (m, k), &candle_core::Device::Cpu)?;
                *out = q.forward(&t)?.flatten_all()?.to_vec1::<f32>()?;
            }
        }
        Ok(())
    }

    /// (rows `n`, inputs `k`) of the weight.
    fn shape(&self) -> (usize, usize) {
        match self {
            #[cfg(target_arch = "x86_64")]
            QLinear::Packed(p) => (p.n(), p.k()),
            QLinear::Own(w) => (w.n, w.k),
            QLinear::KQuant(w) => (w.n(), w.k()),
            QLinear::Candle(q) => match q {
                QMatMul::QTensor(t) => (t.shape().dims()[0], t.shape().dims()[1]),
                QMatMul::Tensor(t) | QMatMul::TensorF16(t) => (t.dims()[0], t.dims()[1]),
            },
        }
    }
}

/// Several linear layers of the same input (q, k, v; gate and up): where their
/// weights share a type and width, one weight of their rows stacked, so the input is
/// quantized once and the threads meet once; each output is the same as alone.
#[derive(Debug, Clone)]
pub(crate) enum Stacked {
    One { w: QLinear, widths: Vec<usize> },
    Each(Vec<QLinear>),
}

impl Stacked {
    /// The weights `ts` (each `n_i × k`), as llama.cpp's layer weights ([`QLinear::new_backend`]).
    pub(crate) fn new(ts: Vec<QTensor>) -> Result<Self> {
        let raw: Option<Vec<OwnWeight>> = ts
            .iter()
            .map(|t| OwnWeight::new(t).ok().flatten())
            .collect();
        if let Some(ws) = raw {
            let same = ws
                .windows(2)
                .all(|p| p[0].kind == p[1].kind && p[0].k == p[1].k);
            // Stacking must not change which arithmetic each part gets: only parts
            // that would each be packed (the same order, as types and widths match).
            #[cfg(target_arch = "x86_64")]
            let alone = ws.iter().all(|w| QLinear::packed_order(w, true).is_some());
            #[cfg(not(target_arch = "x86_64"))]
            let alone = false;
            if same && !ws.is_empty() && alone {
                let widths: Vec<usize> = ws.iter().map(|w| w.n).collect();
                let first = &ws[0];
                let mut data = Vec::new();
                for w in &ws {
                    data.extend_from_slice(&w.data);
                }
                let n = widths.iter().sum();
                let all = OwnWeight {
                    kind: first.kind,
                    n,
                    k: first.k,
                    data,
                };
                return Ok(Stacked::One {
                    w: QLinear::from_own(all, true),
                    widths,
                });
            }
        }
        Ok(Stacked::Each(
            ts.into_iter()
                .map(QLinear::new_backend)
                .collect::<Result<_>>()?,
        ))
    }

    /// Each layer's `m × n_i` output for the `m` rows of `x` (`batch` as in
    /// [`QLinear::forward_batch`]) into `outs[i]`, resized and overwritten.
    pub(crate) fn forward_into(
        &self,
        x: &[f32],
        m: usize,
        batch: bool,
        outs: &mut [Vec<f32>],
    ) -> Result<()> {
        match self {
            Stacked::Each(ws) => {
                for (w, o) in ws.iter().zip(outs.iter_mut()) {
                    w.forward_into(x, m, batch, o)?;
                }
            }
            #[cfg(target_arch = "x86_64")]
            Stacked::One {
                w: QLinear::Packed(p),
                widths,
            } => {
                if x.len() != m * p.k() {
                    candle_core::bail!("matmul input of {} values is not {m}x{}", x.len(), p.k());
                }
                for (o, &wd) in outs.iter_mut().zip(widths) {
                    o.resize(m * wd, 0.0);
                }
                let mut parts: Vec<&mut [f32]> = outs.iter_mut().map(|o| &mut o[..]).collect();
                p.matmul_parts(x, m, &mut parts);
            }
            Stacked::One { w, widths } => {
                let all = w.forward_batch(x, m, batch)?;
                let n: usize = widths.iter().sum();
                for o in outs.iter_mut() {
                    o.clear();
                }
                for row in all.chunks_exact(n) {
                    let mut at = 0;
                    for (o, &wd) in outs.iter_mut().zip(widths) {
                        o.extend_from_slice(&row[at..at + wd]);
                        at += wd;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Dequantized rows of a weight (token embeddings), as ggml's `get_rows`.
#[derive(Debug, Clone)]
pub(crate) enum Rows {
    Own(OwnWeight),
    Dense { data: Vec<f32>, k: usize },
}

impl Rows {
    pub(crate) fn new(t: &QTensor) -> Result<Self> {
        if let Some(w) = OwnWeight::new(t)? {
            return Ok(Rows::Own(w));
        }
        let (_, k) = t.shape().dims2()?;
        let data = t
            .dequantize(&candle_core::Device::Cpu)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Ok(Rows::Dense { data, k })
    }

    /// Row width.
    pub(crate) fn width(&self) -> usize {
        match self {
            Rows::Own(w) => w.k,
            Rows::Dense { k, .. } => *k,
        }
    }

    /// Append row `j` to `out`.
    pub(crate) fn row(&self, j: usize, out: &mut Vec<f32>) -> Result<()> {
        match self {
            Rows::Dense { data, k } => {
                let r = data
                    .get(j * k..(j + 1) * k)
                    .ok_or_else(|| candle_core::Error::Msg(format!("token id {j} out of range")))?;
                out.extend_from_slice(r);
            }
            Rows::Own(w) => {
                if j >= w.n {
                    candle_core::bail!("token id {j} out of range ({} rows)", w.n);
                }
                let bb = w.kind.block_bytes();
                let row = &w.data[j * (w.k / QK) * bb..(j + 1) * (w.k / QK) * bb];
                for b in row.chunks_exact(bb) {
                    let d = f16_at(b, 0);
                    match w.kind {
                        Kind::Q8_0 => out.extend(b[2..34].iter().map(|&q| f32::from(q as i8) * d)),
                        Kind::Q4_0 => {
                            let lo = b[2..18]
                                .iter()
                                .map(|&q| f32::from(i16::from(q & 0xF) - 8) * d);
                            let hi = b[2..18]
                                .iter()
                                .map(|&q| f32::from(i16::from(q >> 4) - 8) * d);
                            out.extend(lo.chain(hi));
                        }
                        Kind::Q4_1 => {
                            let m = f16_at(b, 2);
                            let lo = b[4..20].iter().map(|&q| f32::from(q & 0xF) * d + m);
                            let hi = b[4..20].iter().map(|&q| f32::from(q >> 4) * d + m);
                            out.extend(lo.chain(hi));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<Q8Block>> = const { std::cell::RefCell::new(Vec::new()) };
    #[cfg(target_arch = "x86_64")]
    static PAIRS: std::cell::RefCell<Vec<vnni::Pair>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Whether the AVX-512 VNNI kernels can run (checked once).
#[cfg(target_arch = "x86_64")]
fn vnni_available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| std::env::var_os("QUIRE_NO_VNNI").is_none() && vnni::available())
}

/// Whether the packed AVX-512 VNNI kernels run here (tests).
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) fn packed_available() -> bool {
    vnni_available()
}

/// Whether weights eligible for llama.cpp's AMX backend get that backend's
/// arithmetic: asked for with `QUIRE_LLAMACPP_AMX=1`, and the CPU has AMX.
#[cfg(target_arch = "x86_64")]
fn amx_order() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        std::env::var_os("QUIRE_LLAMACPP_AMX").is_some_and(|v| v == "1")
            && crate::embed::amx::Amx::detect().is_some()
    })
}

/// Weight rows per parallel task.
const ROWS_PER_TASK: usize = 16;

impl OwnWeight {
    /// The weight's blocks, if its type has an own kernel (on the CPU).
    /// Q5_0 is taken as the Q8_0 blocks of the same values (see [`q5_0_as_q8_0`]).
    fn new(t: &QTensor) -> Result<Option<Self>> {
        let kind = match t.dtype() {
            GgmlDType::Q4_0 => Kind::Q4_0,
            GgmlDType::Q4_1 => Kind::Q4_1,
            GgmlDType::Q8_0 | GgmlDType::Q5_0 => Kind::Q8_0,
            _ => return Ok(None),
        };
        let Ok((n, k)) = t.shape().dims2() else {
            return Ok(None);
        };
        if k % QK != 0 || !t.device().is_cpu() {
            return Ok(None);
        }
        let raw = t.data()?;
        let data = if t.dtype() == GgmlDType::Q5_0 && raw.len() == n * (k / QK) * Q5_0_BYTES {
            q5_0_as_q8_0(&raw)
        } else {
            raw.into_owned()
        };
        if data.len() != n * (k / QK) * kind.block_bytes() {
            candle_core::bail!(
                "weight of {n}x{k} {:?} has {} bytes of data",
                t.dtype(),
                data.len()
            );
        }
        Ok(Some(Self { kind, n, k, data }))
    }

    /// `out[i][j] = x[i] · w[j]` for `m` rows of `x`.
    fn matmul(&self, xs: &[f32], m: usize, q: &mut Vec<Q8Block>, out: &mut [f32]) {
        let nb = self.k / QK;
        q.clear();
        q.resize(m * nb, Q8Block::default());
        for (row, qrow) in xs.chunks_exact(self.k).zip(q.chunks_exact_mut(nb)) {
            quantize_row_q8(row, qrow);
        }
        let q: &[Q8Block] = q;
        let row_bytes = nb * self.kind.block_bytes();
        let kern = kernel(self.kind);
        let kern4 = kernel4(self.kind);
        #[cfg(target_arch = "x86_64")]
        if m >= 2 && vnni_available() {
            let mut pairs = PAIRS.with(|cell| cell.take());
            let parts = {
                vnni::pairs(q, m, nb, &mut pairs);
                let pairs: &[vnni::Pair] = &pairs;
                self.tasks(m, |j0, j1, res| {
                    let width = j1 - j0;
                    let mut wr = vnni::WeightRow::new(self.kind);
                    let mut col = vec![0f32; m];
                    for (jj, j) in (j0..j1).enumerate() {
                        wr.load(&self.data[j * row_bytes..(j + 1) * row_bytes]);
                        vnni::rows(&wr, pairs, &mut col);
                        for (i, v) in col.iter().enumerate() {
                            res[i * width + jj] = *v;
                        }
                    }
                })
            };
            PAIRS.with(|cell| cell.replace(pairs));
            self.scatter(parts, m, out);
            return;
        }
        let parts = self.tasks(m, |j0, j1, res| {
            let width = j1 - j0;
            for (jj, j) in (j0..j1).enumerate() {
                let w = &self.data[j * row_bytes..(j + 1) * row_bytes];
                let mut i = 0;
                if let Some(k4) = kern4 {
                    let mut r4 = [0f32; 4];
                    while i + 4 <= m {
                        let row = |t: usize| &q[(i + t) * nb..(i + t + 1) * nb];
                        k4(w, [row(0), row(1), row(2), row(3)], &mut r4);
                        for (t, v) in r4.iter().enumerate() {
                            res[(i + t) * width + jj] = *v;
                        }
                        i += 4;
                    }
                }
                for (i, qa) in q.chunks_exact(nb).enumerate().skip(i) {
                    res[i * width + jj] = kern(w, qa);
                }
            }
        });
        self.scatter(parts, m, out);
    }

    fn tasks(
        &self,
        m: usize,
        task: impl Fn(usize, usize, &mut [f32]) + Sync,
    ) -> Vec<(usize, Vec<f32>)> {
        row_tasks(self.n, m, task)
    }

    fn scatter(&self, parts: Vec<(usize, Vec<f32>)>, m: usize, out: &mut [f32]) {
        scatter(self.n, parts, m, out)
    }
}

/// Run `task(j0, j1, res)` for blocks of ROWS_PER_TASK of `n` weight rows in parallel;
/// `res` (`m × (j1 − j0)`, row-major) is the block's share of the output. (Small
/// blocks even for one activation row: measured in generation, 4 large blocks were
/// slower than 40 small ones, which balance when a core starts late.)
pub(crate) fn row_tasks(
    n: usize,
    m: usize,
    task: impl Fn(usize, usize, &mut [f32]) + Sync,
) -> Vec<(usize, Vec<f32>)> {
    (0..n.div_ceil(ROWS_PER_TASK))
        .into_par_iter()
        .map(|t| {
            let j0 = t * ROWS_PER_TASK;
            let j1 = (j0 + ROWS_PER_TASK).min(n);
            let mut res = vec![0f32; (j1 - j0) * m];
            task(j0, j1, &mut res);
            (j0, res)
        })
        .collect()
}

/// The tasks' blocks ([`row_tasks`]) into `out` (row-major `m × n`).
pub(crate) fn scatter(n: usize, parts: Vec<(usize, Vec<f32>)>, m: usize, out: &mut [f32]) {
    let row = |(i, o): (usize, &mut [f32])| {
        for (j0, res) in &parts {
            let width = res.len() / m;
            o[*j0..j0 + width].copy_from_slice(&res[i * width..(i + 1) * width]);
        }
    };
    if m >= 8 {
        out.par_chunks_exact_mut(n).enumerate().for_each(row);
    } else {
        out.chunks_exact_mut(n).enumerate().for_each(row);
    }
}

type Kernel = fn(&[u8], &[Q8Block]) -> f32;

fn kernel(kind: Kind) -> Kernel {
    #[cfg(target_arch = "x86_64")]
    {
        if vnni_available() {
            return match kind {
                Kind::Q4_0 => |w, ys| vnni::row(Kind::Q4_0, w, ys),
                Kind::Q4_1 => |w, ys| vnni::row(Kind::Q4_1, w, ys),
                Kind::Q8_0 => |w, ys| vnni::row(Kind::Q8_0, w, ys),
            };
        }
        if super::ggml_ops::has_avx2_fma() {
            return match kind {
                Kind::Q4_0 => avx2::dot_q4_0,
                Kind::Q4_1 => avx2::dot_q4_1,
                Kind::Q8_0 => avx2::dot_q8_0,
            };
        }
    }
    match kind {
        Kind::Q4_0 => portable::dot_q4_0,
        Kind::Q4_1 => portable::dot_q4_1,
        Kind::Q8_0 => portable::dot_q8_0,
    }
}

/// Four activation rows against one weight row at once (same bits as [`Kernel`] on
/// each), where a SIMD version exists.
type Kernel4 = fn(&[u8], [&[Q8Block]; 4], &mut [f32; 4]);

fn kernel4(kind: Kind) -> Option<Kernel4> {
    #[cfg(target_arch = "x86_64")]
    {
        if super::ggml_ops::has_avx2_fma() {
            return Some(match kind {
                Kind::Q4_0 => avx2::dot4_q4_0,
                Kind::Q4_1 => avx2::dot4_q4_1,
                Kind::Q8_0 => avx2::dot4_q8_0,
            });
        }
    }
    let _ = kind;
    None
}

/// f16 → f32 for every bit pattern, so the kernels read scales with one load.
static F16_TO_F32: std::sync::LazyLock<Vec<f32>> =
    std::sync::LazyLock::new(|| (0..=u16::MAX).map(|b| f16::from_bits(b).to_f32()).collect());

/// The f16 stored little-endian at `b[at..at + 2]`, widened.
#[inline(always)]
pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    F16_TO_F32[usize::from(u16::from_le_bytes([b[at], b[at + 1]]))]
}

/// Portable kernels with the same arithmetic as the AVX2 ones: per block an exact
/// integer dot product, accumulated in 8 f32 lanes by fused multiply-add.
pub(crate) mod portable {
    use super::{f16_at, Q8Block, QK};

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
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! Ports of ggml's AVX2 `ggml_vec_dot_q4_0_q8_0`, `_q4_1_q8_1`, `_q8_0_q8_0`.
    use super::{f16_at, Q8Block};
    use std::arch::x86_64::*;

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
        let both =
            _mm256_insertf128_si256::<1>(_mm256_castsi128_si256(tmp), _mm_srli_epi16(tmp, 4));
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

    // Four activation rows against one weight row: the weight's blocks are unpacked
    // once for the four, and each output is computed with exactly the operations of
    // the one-row kernel above, so the bits are the same.

    #[target_feature(enable = "avx2,fma")]
    fn q4_0_x4(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
        let mut acc = [_mm256_setzero_ps(); 4];
        for (i, b) in w.chunks_exact(18).enumerate() {
            let dw = f16_at(b, 0);
            let qx = _mm256_sub_epi8(nibbles(&b[2..]), _mm256_set1_epi8(8));
            for r in 0..4 {
                let y = &ys[r][i];
                let d = _mm256_set1_ps(dw * y.d);
                acc[r] = _mm256_fmadd_ps(d, mul_sum_i8(qx, load32(&y.qs)), acc[r]);
            }
        }
        for r in 0..4 {
            out[r] = hsum(acc[r]);
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn q4_1_x4(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut summs = [0f32; 4];
        for (i, b) in w.chunks_exact(20).enumerate() {
            let (dw, mw) = (f16_at(b, 0), f16_at(b, 2));
            let qx = nibbles(&b[4..]);
            for r in 0..4 {
                let y = &ys[r][i];
                summs[r] += mw * y.s;
                let d = _mm256_set1_ps(dw * y.d);
                acc[r] = _mm256_fmadd_ps(d, mul_sum_us8(qx, load32(&y.qs)), acc[r]);
            }
        }
        for r in 0..4 {
            out[r] = hsum(acc[r]) + summs[r];
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn q8_0_x4(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
        let mut acc = [_mm256_setzero_ps(); 4];
        for (i, b) in w.chunks_exact(34).enumerate() {
            let dw = f16_at(b, 0);
            // SAFETY: a Q8_0 block has 32 bytes after its scale.
            let qx = unsafe { _mm256_loadu_si256(b[2..34].as_ptr().cast()) };
            for r in 0..4 {
                let y = &ys[r][i];
                let d = _mm256_set1_ps(dw * y.d);
                acc[r] = _mm256_fmadd_ps(d, mul_sum_i8(qx, load32(&y.qs)), acc[r]);
            }
        }
        for r in 0..4 {
            out[r] = hsum(acc[r]);
        }
    }

    // Safe entry points: `kernel()` hands these out only after detecting AVX2 and FMA.
    pub fn dot4_q4_0(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
        // SAFETY: only reachable when the CPU has AVX2 and FMA (see `kernel4`).
        unsafe { q4_0_x4(w, ys, out) }
    }
    pub fn dot4_q4_1(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
        // SAFETY: as above.
        unsafe { q4_1_x4(w, ys, out) }
    }
    pub fn dot4_q8_0(w: &[u8], ys: [&[Q8Block]; 4], out: &mut [f32; 4]) {
        // SAFETY: as above.
        unsafe { q8_0_x4(w, ys, out) }
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
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::needless_range_loop)]
pub(crate) mod tests {
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_quantization_is_the_scalar_one() {
        use super::{quantize_row_q8, quantize_row_q8_body, Q8Block};
        let mut x: Vec<f32> = (0..32 * 40)
            .map(|i| ((i * 7919) % 2003) as f32 / 37.0 - 27.0)
            .collect();
        x[32..64].fill(0.0); // an all-zero block
        x[64..96].iter_mut().for_each(|v| *v *= 1e-30); // tiny values
        for (i, v) in x[96..128].iter_mut().enumerate() {
            *v = (i as f32 - 16.0) * 0.5 * 127.0 / 8.0; // exact halves: ties
        }
        let mut a = vec![Q8Block::default(); 40];
        let mut b = vec![Q8Block::default(); 40];
        quantize_row_q8(&x, &mut a);
        quantize_row_q8_body(&x, &mut b);
        for (i, (p, q)) in a.iter().zip(&b).enumerate() {
            assert_eq!(p.qs, q.qs, "block {i}");
            assert_eq!(p.d.to_bits(), q.d.to_bits(), "block {i}");
            assert_eq!(p.s.to_bits(), q.s.to_bits(), "block {i}");
        }
    }

    use super::*;
    use candle_core::Device;

    /// `n` pseudo-random values in [−1, 1] (xorshift), for kernel tests.
    pub(crate) fn rnd(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 20001) as f32 / 10000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn activation_quantization_rounds_half_to_even_and_keeps_the_block_sum() {
        let mut x = vec![0f32; 32];
        x[0] = 127.0; // d = 1, id = 1
        x[1] = 2.5;
        x[2] = -3.5;
        x[3] = 0.5;
        let mut q = [Q8Block::default()];
        quantize_row_q8(&x, &mut q);
        assert_eq!(&q[0].qs[..4], &[127, 2, -4, 0]);
        assert_eq!(q[0].d, 1.0);
        assert_eq!(q[0].s, 125.0);
        let mut z = [Q8Block::default()];
        quantize_row_q8(&[0f32; 32], &mut z);
        assert_eq!((z[0].d, z[0].s, z[0].qs), (0.0, 0.0, [0; 32]));
    }

    /// Own kernels (SIMD or portable) agree with each other and, within quantization
    /// error, with the dequantized float product.
    #[test]
    fn kernels_match_the_portable_loop_and_the_float_product() {
        // 1 row (generation), 2, 5 and 9 (an odd row left alone), 7 (an odd row inside
        // a group of four pairs), 8.
        for m in [1, 2, 5, 7, 8, 9] {
            kernels_match_for(m);
        }
    }

    fn kernels_match_for(m: usize) {
        let (n, k) = (37, 96);
        let w = rnd(n * k, 7);
        let x = rnd(m * k, 11 + m as u64);
        let dev = Device::Cpu;
        let wt = Tensor::from_vec(w.clone(), (n, k), &dev).unwrap();
        let xt = Tensor::from_vec(x.clone(), (m, k), &dev).unwrap();
        for dt in [GgmlDType::Q4_0, GgmlDType::Q4_1, GgmlDType::Q8_0] {
            let qt = QTensor::quantize(&wt, dt).unwrap();
            let deq = qt.dequantize(&dev).unwrap();
            let exact = xt.matmul(&deq.t().unwrap()).unwrap();
            let lin = QLinear::new(qt).unwrap();
            let got = lin.forward_rows(&x, m).unwrap();
            let got = Tensor::from_vec(got, (m, n), &dev).unwrap();
            let QLinear::Own(own) = lin else {
                panic!("{dt:?} should use the own kernel")
            };
            let diff = (got.clone() - exact)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(diff < 0.05, "{dt:?}: off the float product by {diff}");
            // The portable loop gives the same bits as the dispatched kernel.
            let nb = k / QK;
            let mut q = vec![Q8Block::default(); nb];
            let got = got.to_vec2::<f32>().unwrap();
            let row_bytes = nb * own.kind.block_bytes();
            for i in 0..m {
                quantize_row_q8(&x[i * k..(i + 1) * k], &mut q);
                for j in 0..n {
                    let wj = &own.data[j * row_bytes..(j + 1) * row_bytes];
                    let p = match own.kind {
                        Kind::Q4_0 => portable::dot_q4_0(wj, &q),
                        Kind::Q4_1 => portable::dot_q4_1(wj, &q),
                        Kind::Q8_0 => portable::dot_q8_0(wj, &q),
                    };
                    assert_eq!(p.to_bits(), got[i][j].to_bits(), "{dt:?} [{i}][{j}]");
                }
            }
        }
    }

    #[test]
    fn q5_0_weights_are_the_q8_0_blocks_of_the_same_values() {
        let dev = Device::Cpu;
        let (n, k) = (16, 256);
        let wt = Tensor::from_vec(rnd(n * k, 11), (n, k), &dev).unwrap();
        let qt = QTensor::quantize(&wt, GgmlDType::Q5_0).unwrap();
        let want = qt.dequantize(&dev).unwrap().to_vec2::<f32>().unwrap();
        let rows = Rows::new(&qt).unwrap();
        assert!(matches!(rows, Rows::Own(ref w) if w.kind == Kind::Q8_0));
        for (j, want) in want.iter().enumerate() {
            let mut got = Vec::new();
            rows.row(j, &mut got).unwrap();
            let same = got
                .iter()
                .zip(want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "row {j}: {:?} vs {:?}", &got[..4], &want[..4]);
        }
        // Products: ggml's Q8_0 lanes for the rewritten blocks, as for Q8_0 itself.
        let x = rnd(3 * k, 12);
        let out = QLinear::new(qt).unwrap().forward_rows(&x, 3).unwrap();
        let w = match rows {
            Rows::Own(w) => w,
            Rows::Dense { .. } => unreachable!(),
        };
        let direct = QLinear::from_own(w, false).forward_rows(&x, 3).unwrap();
        assert_eq!(out, direct);
    }

    #[test]
    fn stacked_parts_are_each_weight_alone() {
        let dev = Device::Cpu;
        let k = 128;
        let widths = [64, 32, 96];
        for dt in [GgmlDType::Q4_0, GgmlDType::Q8_0] {
            let wts: Vec<Tensor> = widths
                .iter()
                .enumerate()
                .map(|(i, &n)| Tensor::from_vec(rnd(n * k, 20 + i as u64), (n, k), &dev).unwrap())
                .collect();
            let quantized = || wts.iter().map(|wt| QTensor::quantize(wt, dt).unwrap());
            let alone: Vec<QLinear> = quantized()
                .map(|t| QLinear::new_backend(t).unwrap())
                .collect();
            let stacked = Stacked::new(quantized().collect()).unwrap();
            if packed_available() {
                assert!(matches!(stacked, Stacked::One { .. }));
            }
            // One row (generation), a few rows, a batch (each a different path); the
            // buffers are reused from the previous size, never cleared.
            let mut outs = vec![vec![f32::NAN; 7]; 3];
            for m in [1, 5, 40, 2] {
                let x = rnd(m * k, 30 + m as u64);
                stacked.forward_into(&x, m, true, &mut outs).unwrap();
                for (p, w) in alone.iter().enumerate() {
                    let want = w.forward_batch(&x, m, true).unwrap();
                    let same = want.len() == outs[p].len()
                        && want
                            .iter()
                            .zip(&outs[p])
                            .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{dt:?} m {m} part {p}");
                }
            }
        }
    }

    #[test]
    fn k_quants_get_own_kernels_other_types_candles() {
        let dev = Device::Cpu;
        let wt = Tensor::from_vec(rnd(8 * 256, 3), (8, 256), &dev).unwrap();
        for dt in [GgmlDType::Q4K, GgmlDType::Q6K] {
            let qt = QTensor::quantize(&wt, dt).unwrap();
            assert!(matches!(QLinear::new(qt).unwrap(), QLinear::KQuant(_)));
        }
        let qt = QTensor::quantize(&wt, GgmlDType::Q5K).unwrap();
        assert!(matches!(QLinear::new(qt).unwrap(), QLinear::Candle(_)));
    }
}
