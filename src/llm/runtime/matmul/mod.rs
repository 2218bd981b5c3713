//! Quire's own quantized matrix multiplication, computed the way llama.cpp's CPU
//! backend computes it: a linear layer ([`QLinear`]) picks the arithmetic for its
//! weight type once, at load.
//!
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
//! - output rows are split across threads (rayon), each task passing its weight rows
//!   over a tile of the activation rows at a time (prompt processing; the tile stays
//!   in cache), with scratch buffers reused between calls (no allocation per token
//!   beyond the output).
//!
//! - on a CPU with AMX, where llama.cpp moves layer weights to its AMX backend and
//!   computes them differently (block by block, no lanes), those weights go through
//!   [`packed`](super::packed), which has that arithmetic.
//!
//! Q4_K, Q5_K and Q6_K go to [`kquants`](super::kquants); other weight types fall back
//! to candle's `QMatMul`.

mod avx2;
pub(crate) mod kquants;
#[cfg(target_arch = "x86_64")]
pub(crate) mod packed;
mod plain;
mod portable;
pub(crate) mod q8;
pub mod timing;
#[cfg(target_arch = "x86_64")]
pub(crate) mod vnni;

use candle_core::quantized::{QMatMul, QStorage, QTensor};
use candle_core::{Module, Result, Tensor};

use crate::cpu::f16_at;
use plain::OwnWeight;
use q8::{Kind, Q8Block, QK};

/// A linear layer `y = x·Wᵀ` with a quantized weight.
#[derive(Debug, Clone)]
pub(crate) enum QLinear {
    Own(OwnWeight),
    #[cfg(target_arch = "x86_64")]
    Packed(packed::Packed),
    /// Q4_K, Q5_K, Q6_K.
    KQuant(kquants::KWeight),
    Candle(QMatMul),
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
            None => match kquants::KWeight::new(&t)? {
                Some(w) => Ok(QLinear::KQuant(w)),
                None => Ok(QLinear::Candle(QMatMul::from_qtensor(t)?)),
            },
        }
    }

    /// The packed order for `w`, where this CPU runs the packed kernels and the
    /// shape allows.
    #[cfg(target_arch = "x86_64")]
    fn packed_order(w: &OwnWeight, backend: bool) -> Option<packed::Order> {
        use packed::{eligible, Order};
        if !crate::cpu::has_vnni() {
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
            return QLinear::Packed(packed::Packed::new(w.kind, w.n, w.k, &w.data, order));
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
}

/// The weight `t` (`n × k`, `n = Σ rows`) cut into consecutive blocks of `rows` rows,
/// each its own weight of the same type (a fused q/k/v or gate/up projection as its
/// parts: each output row's arithmetic is the same either way).
pub(crate) fn split_rows(t: QTensor, rows: &[usize]) -> Result<Vec<QTensor>> {
    let (n, k) = t.shape().dims2()?;
    if rows.iter().sum::<usize>() != n {
        candle_core::bail!("a {n}-row weight does not split into {rows:?} rows");
    }
    let dtype = t.dtype();
    let row_bytes = k / dtype.block_size() * dtype.type_size();
    let data = t.data()?;
    let device = t.device();
    let mut at = 0;
    rows.iter()
        .map(|&r| {
            let part = data[at * row_bytes..(at + r) * row_bytes].to_vec();
            at += r;
            let storage = QStorage::from_data(std::borrow::Cow::Owned(part), &device, dtype)?;
            QTensor::new(storage, (r, k))
        })
        .collect()
}

/// Whether the packed AVX-512 VNNI kernels run here (tests).
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) fn packed_available() -> bool {
    crate::cpu::has_vnni()
}

/// Whether weights eligible for llama.cpp's AMX backend get that backend's
/// arithmetic: asked for with `QUIRE_LLAMACPP_AMX=1`, and the CPU has AMX.
#[cfg(target_arch = "x86_64")]
fn amx_order() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        std::env::var_os("QUIRE_LLAMACPP_AMX").is_some_and(|v| v == "1")
            && crate::cpu::Amx::detect().is_some()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::needless_range_loop)]
pub(crate) mod tests {
    use super::*;
    use candle_core::quantized::GgmlDType;
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
        for dt in [GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K] {
            let qt = QTensor::quantize(&wt, dt).unwrap();
            assert!(matches!(QLinear::new(qt).unwrap(), QLinear::KQuant(_)));
        }
        let qt = QTensor::quantize(&wt, GgmlDType::Q3K).unwrap();
        assert!(matches!(QLinear::new(qt).unwrap(), QLinear::Candle(_)));
    }
}
