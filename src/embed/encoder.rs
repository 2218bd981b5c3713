//! Quire's own BERT encoder forward (all-MiniLM-L6-v2 and other BERT models in
//! sentence-transformers' layout), on the CPU over plain buffers.
//!
//! What makes it faster than a general tensor library here:
//! - no padding: the sequences of a batch are packed row after row for the dense
//!   layers, and attention runs per sequence over its own length only;
//! - the dense layers are single GEMM calls on all cores that add the bias in place
//!   (AVX-512 kernels over weights packed at load, [`sgemm`]; the `gemm` crate on a
//!   CPU without AVX-512; AMX tiles where the CPU has them); Q, K and V are one GEMM
//!   against the three weights stacked;
//! - a batch of several sequences per worker goes sequence by sequence: one worker
//!   takes a sequence through every layer, with no wait for the other workers between
//!   steps, its Q|K|V and activations in that core's cache (a query, or a batch too
//!   small for the pool, goes layer by layer, each step split across the workers:
//!   the same arithmetic per row, so the same bits);
//! - past attention, a layer is row by row: each block of 96 rows goes through the
//!   output projection, both layer norms, the FFN and GELU at once, its activations
//!   in cache (no pass over the whole batch per step);
//! - attention writes each head's output in place, its scores in a buffer each worker
//!   keeps, the softmax's division done on the `d` outputs instead of the `n` scores.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use candle_core::{Device, Tensor};
use gemm::Parallelism;
use rayon::prelude::*;

use crate::cpu::scratch::with_scratch;
use crate::embed::kernels::amx::{self, Amx, PackedB};
use crate::embed::kernels::bgemm::{self, PackedH};
use crate::embed::kernels::igemm::{self, PackedI8};
use crate::embed::kernels::ops;
use crate::embed::kernels::sgemm::{self, PackedW};
use crate::{Error, Result};

struct Layer {
    /// Q, K and V stacked: `3h × h`.
    qkv: Dense,
    o: Dense,
    ln1_w: Vec<f32>,
    ln1_b: Vec<f32>,
    i: Dense,
    out: Dense,
    ln2_w: Vec<f32>,
    ln2_b: Vec<f32>,
}

/// A dense layer `y = x · wᵀ + b`, `w` being `n × k` (out × in).
struct Dense {
    n: usize,
    k: usize,
    w: Weights,
    b: Vec<f32>,
}

enum Weights {
    /// Packed for the AVX-512 kernels ([`sgemm`]).
    Wide(PackedW),
    /// Quantized to int8 and packed for the VNNI kernels ([`igemm`]).
    Int8(PackedI8),
    /// Row-major f32, multiplied by the `gemm` crate (a CPU without AVX-512).
    F32(Vec<f32>),
    /// Packed bf16 tiles for AMX.
    Amx(PackedB),
}

impl Dense {
    fn new(w: Vec<f32>, b: Vec<f32>, k: usize, kernels: Kernels) -> Self {
        let n = b.len();
        let w = match kernels {
            Kernels::Amx(_) if amx::fits(n, k) => Weights::Amx(PackedB::pack(&w, n, k)),
            Kernels::Int8 if igemm::available() && igemm::fits(n, k) => {
                Weights::Int8(PackedI8::pack(&w, n, k))
            }
            _ if sgemm::available() => Weights::Wide(PackedW::pack(&w, n, k)),
            _ => Weights::F32(w),
        };
        Self { n, k, w, b }
    }

    /// A layer whose input is GELU's output (int8: its own outlier threshold).
    fn after_gelu(self) -> Self {
        match self.w {
            Weights::Int8(p) => Self {
                w: Weights::Int8(p.after_gelu()),
                ..self
            },
            _ => self,
        }
    }

    /// `y[m × n] = x[m × k] · wᵀ + b` in f32.
    fn apply(&self, x: &[f32], m: usize, y: &mut [f32]) {
        match &self.w {
            Weights::Wide(w) => sgemm::linear(x, m, w, &self.b, y),
            Weights::Int8(w) => igemm::linear(x, m, w, &self.b, y),
            Weights::F32(w) => {
                let threads = rayon::current_num_threads().max(1);
                let par = if m * self.n * self.k > 1 << 16 {
                    Parallelism::Rayon(threads)
                } else {
                    Parallelism::None
                };
                linear(x, m, self.k, w, &self.b, self.n, y, par)
            }
            Weights::Amx(..) => unreachable!("a packed dense layer on the f32 path"),
        }
    }

    /// [`Dense::apply`] on this thread, for a block of rows.
    fn apply_seq(&self, x: &[f32], m: usize, y: &mut [f32]) {
        match &self.w {
            Weights::Wide(w) => sgemm::product(x, self.k, m, w, Some(&self.b), y, self.n),
            Weights::Int8(w) => igemm::linear_seq(x, m, w, &self.b, y),
            Weights::F32(w) => linear(x, m, self.k, w, &self.b, self.n, y, Parallelism::None),
            Weights::Amx(..) => unreachable!("a packed dense layer on the f32 path"),
        }
    }

    /// The packed weight (the encoder packs every dense layer or none).
    fn tiles(&self) -> &PackedB {
        match &self.w {
            Weights::Amx(p) => p,
            Weights::F32(_) | Weights::Wide(_) | Weights::Int8(_) => {
                unreachable!("a dense layer left in f32 on the AMX path")
            }
        }
    }
}

/// The arithmetic of the dense layers (attention's products, the norms and GELU stay
/// in f32 on every path).
#[derive(Debug, Clone, Copy)]
pub enum Kernels {
    /// f32: AVX-512 kernels ([`sgemm`]), or the `gemm` crate without AVX-512.
    F32,
    /// int8 weights and activations on AVX-512 VNNI ([`igemm`]), attention's products
    /// in bf16 where the CPU has AVX512-BF16 ([`bgemm`]); f32 where the CPU has no
    /// VNNI or `QUIRE_NO_VNNI` is set (`QUIRE_NO_BF16`: attention in f32).
    Int8,
    /// bf16 on AMX tiles ([`amx`]).
    Amx(Amx),
}

impl Kernels {
    /// The fastest this machine has: AMX, else int8 on VNNI, else f32.
    pub fn best() -> Self {
        match Amx::detect() {
            Some(a) => Kernels::Amx(a),
            None if igemm::available() => Kernels::Int8,
            None => Kernels::F32,
        }
    }

    /// Whether attention's products run in bf16 ([`bgemm`]): with the int8 layers,
    /// where the CPU has AVX512-BF16 (the f32 kernels stay f32 throughout: the
    /// reference the others are measured by).
    fn bf16_attention(self) -> bool {
        matches!(self, Kernels::Int8) && igemm::available() && bgemm::available()
    }

    /// What runs, in words: "bf16 AMX", "int8 VNNI" (", attention bf16") or "f32".
    pub fn describe(self) -> &'static str {
        match self {
            Kernels::Amx(_) => "bf16 AMX",
            Kernels::Int8 if self.bf16_attention() => "int8 VNNI, attention bf16",
            Kernels::Int8 if igemm::available() => "int8 VNNI",
            Kernels::Int8 | Kernels::F32 => "f32",
        }
    }
}

/// A BERT encoder with sentence-transformers' pooling and normalization.
pub struct Encoder {
    hidden: usize,
    heads: usize,
    inter: usize,
    eps: f32,
    vocab: usize,
    max_pos: usize,
    word: Vec<f32>,
    pos: Vec<f32>,
    /// Token type 0 (sentence-transformers embeds one segment).
    type0: Vec<f32>,
    emb_ln_w: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    kernels: Kernels,
}

/// How token vectors become one sentence vector (sentence-transformers'
/// `1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// The mean over the tokens (all-MiniLM, multilingual-e5, text2vec).
    #[default]
    Mean,
    /// The first token's vector, `[CLS]` (the bge family).
    Cls,
}

/// The tensors of a safetensors file, or of a PyTorch pickle (`.bin`, `.pt`,
/// `.pth`), by name.
fn load_tensors(path: &Path) -> Result<std::collections::HashMap<String, Tensor>> {
    let pickle = path
        .extension()
        .is_some_and(|x| x == "bin" || x == "pt" || x == "pth");
    if pickle {
        let all = candle_core::pickle::read_all(path)
            .map_err(|e| Error::model_format(path, format!("not a PyTorch weights file: {e}")))?;
        Ok(all.into_iter().collect())
    } else {
        candle_core::safetensors::load(path, &Device::Cpu)
            .map_err(|e| Error::model_format(path, format!("not a safetensors file: {e}")))
    }
}

/// Model sizes from `config.json`.
#[derive(Debug, Clone, Copy)]
pub struct Dims {
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub eps: f64,
}

impl Encoder {
    /// Load the weights (`model.safetensors`, or PyTorch's `pytorch_model.bin`; names
    /// with or without a `bert.` prefix); the dense
    /// layers run on the `kernels` given.
    pub fn load(path: &Path, dims: Dims, kernels: Kernels) -> Result<Self> {
        let bad = |m: String| Error::model_format(path, m);
        let tensors = load_tensors(path)?;
        let get = |name: &str, shape: &[usize]| -> Result<Vec<f32>> {
            let t: &Tensor = tensors
                .get(name)
                .or_else(|| tensors.get(&format!("bert.{name}")))
                .ok_or_else(|| bad(format!("no tensor {name}")))?;
            if t.dims() != shape {
                return Err(bad(format!("{name} is {:?}, expected {shape:?}", t.dims())));
            }
            t.to_dtype(candle_core::DType::F32)?
                .flatten_all()?
                .to_vec1::<f32>()
                .map_err(Error::from)
        };
        let (h, i) = (dims.hidden, dims.intermediate);
        if dims.heads == 0 || h % dims.heads != 0 {
            return Err(bad(format!(
                "{h} hidden is not a multiple of {} heads",
                dims.heads
            )));
        }
        // AMX for all the dense layers or none.
        let kernels = match kernels {
            Kernels::Amx(_) if !(amx::fits(3 * h, h) && amx::fits(i, h) && amx::fits(h, i)) => {
                Kernels::F32
            }
            k => k,
        };
        let word_t = tensors
            .get("embeddings.word_embeddings.weight")
            .or_else(|| tensors.get("bert.embeddings.word_embeddings.weight"))
            .ok_or_else(|| bad("no word embeddings".into()))?;
        let vocab = word_t.dims().first().copied().unwrap_or(0);
        let pos_t = tensors
            .get("embeddings.position_embeddings.weight")
            .or_else(|| tensors.get("bert.embeddings.position_embeddings.weight"))
            .ok_or_else(|| bad("no position embeddings".into()))?;
        let max_pos = pos_t.dims().first().copied().unwrap_or(0);
        let types = get_rows(&tensors, "embeddings.token_type_embeddings.weight", h)
            .ok_or_else(|| bad("no token type embeddings".into()))??;
        let mut layers = Vec::with_capacity(dims.layers);
        for l in 0..dims.layers {
            let p = |s: &str| format!("encoder.layer.{l}.{s}");
            let mut qkv_w = get(&p("attention.self.query.weight"), &[h, h])?;
            qkv_w.extend(get(&p("attention.self.key.weight"), &[h, h])?);
            qkv_w.extend(get(&p("attention.self.value.weight"), &[h, h])?);
            let mut qkv_b = get(&p("attention.self.query.bias"), &[h])?;
            qkv_b.extend(get(&p("attention.self.key.bias"), &[h])?);
            qkv_b.extend(get(&p("attention.self.value.bias"), &[h])?);
            layers.push(Layer {
                qkv: Dense::new(qkv_w, qkv_b, h, kernels),
                o: Dense::new(
                    get(&p("attention.output.dense.weight"), &[h, h])?,
                    get(&p("attention.output.dense.bias"), &[h])?,
                    h,
                    kernels,
                ),
                ln1_w: get(&p("attention.output.LayerNorm.weight"), &[h])?,
                ln1_b: get(&p("attention.output.LayerNorm.bias"), &[h])?,
                i: Dense::new(
                    get(&p("intermediate.dense.weight"), &[i, h])?,
                    get(&p("intermediate.dense.bias"), &[i])?,
                    h,
                    kernels,
                ),
                out: Dense::new(
                    get(&p("output.dense.weight"), &[h, i])?,
                    get(&p("output.dense.bias"), &[h])?,
                    i,
                    kernels,
                )
                .after_gelu(),
                ln2_w: get(&p("output.LayerNorm.weight"), &[h])?,
                ln2_b: get(&p("output.LayerNorm.bias"), &[h])?,
            });
        }
        Ok(Self {
            hidden: h,
            heads: dims.heads,
            inter: i,
            eps: dims.eps as f32,
            vocab,
            max_pos,
            word: get("embeddings.word_embeddings.weight", &[vocab, h])?,
            pos: get("embeddings.position_embeddings.weight", &[max_pos, h])?,
            type0: types[..h].to_vec(),
            emb_ln_w: get("embeddings.LayerNorm.weight", &[h])?,
            emb_ln_b: get("embeddings.LayerNorm.bias", &[h])?,
            layers,
            kernels,
        })
    }

    /// The AMX proof when the dense layers run on AMX tiles.
    fn amx(&self) -> Option<Amx> {
        match self.kernels {
            Kernels::Amx(a) => Some(a),
            _ => None,
        }
    }

    /// The dense layers' arithmetic, in words (see [`Kernels::describe`]).
    pub fn kernels(&self) -> &'static str {
        self.kernels.describe()
    }

    /// Pooled, L2-normalized embeddings of `seqs` (token ids with their special
    /// tokens; none longer than the position table).
    pub fn embed(&self, seqs: &[&[u32]], pooling: Pooling) -> Result<Vec<Vec<f32>>> {
        let h = self.hidden;
        let rows: usize = seqs.iter().map(|s| s.len()).sum();
        if rows == 0 {
            return Ok(seqs.iter().map(|_| vec![0.0; h]).collect());
        }
        // AMX multiplies blocks of 32 rows: pad with rows that are never read back.
        let padded = if self.amx().is_some() {
            rows.div_ceil(amx::BLOCK) * amx::BLOCK
        } else {
            rows
        };
        let mut starts = Vec::with_capacity(seqs.len());
        let mut x = vec![0f32; padded * h];
        let mut r = 0;
        for s in seqs {
            if s.len() > self.max_pos {
                return Err(Error::Invalid(format!(
                    "{} tokens, more than the model's {} positions",
                    s.len(),
                    self.max_pos
                )));
            }
            starts.push(r);
            for (p, &id) in s.iter().enumerate() {
                let id = id as usize;
                if id >= self.vocab {
                    return Err(Error::Invalid(format!(
                        "token id {id} beyond the vocabulary"
                    )));
                }
                let row = &mut x[r * h..(r + 1) * h];
                let (w, ps) = (&self.word[id * h..][..h], &self.pos[p * h..][..h]);
                for (j, v) in row.iter_mut().enumerate() {
                    *v = w[j] + ps[j] + self.type0[j];
                }
                r += 1;
            }
        }
        let spans: Vec<(usize, usize)> = starts
            .iter()
            .zip(seqs)
            .map(|(&s, q)| (s, q.len()))
            .collect();
        match self.amx() {
            Some(amx) => self.layers_amx(amx, &mut x, &spans),
            None => self.layers_f32(&mut x, &spans),
        }
        Ok(spans
            .iter()
            .map(|&(s, n)| {
                let mut v = vec![0f32; h];
                match pooling {
                    Pooling::Mean => {
                        for row in x[s * h..(s + n) * h].chunks_exact(h) {
                            v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
                        }
                        let inv_n = 1.0 / n.max(1) as f32;
                        v.iter_mut().for_each(|a| *a *= inv_n);
                    }
                    Pooling::Cls if n > 0 => v.copy_from_slice(&x[s * h..(s + 1) * h]),
                    Pooling::Cls => {}
                }
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
                v.iter_mut().for_each(|a| *a /= norm);
                v
            })
            .collect())
    }

    /// The embeddings' layer norm and the layers on the int8 or f32 kernels: a batch
    /// of enough sequences goes sequence by sequence ([`Encoder::sequence`]), one
    /// worker taking each through every layer; fewer (a query) layer by layer, each
    /// step split across the pool. Every row's arithmetic is the same either way
    /// (the kernels split rows, never a row's sums), so are the vectors, bit for bit.
    fn layers_f32(&self, x: &mut [f32], spans: &[(usize, usize)]) {
        let workers = rayon::current_num_threads();
        if spans.len() >= BY_SEQUENCE * workers {
            let mut parts = split_spans(x, spans, self.hidden);
            // Longest first, each worker taking the next one when it is free: the last
            // ones to start are the shortest, and the workers end close together.
            parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
            let parts: Vec<Mutex<Option<&mut [f32]>>> =
                parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
            let next = AtomicUsize::new(0);
            (0..workers).into_par_iter().with_max_len(1).for_each(|_| {
                while let Some(slot) = parts.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let xs = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                    if let Some(xs) = xs {
                        self.sequence(xs);
                    }
                }
            });
            return;
        }
        self.layers_by_step(x, spans)
    }

    /// One sequence's rows `x` (`n × h`) through the embeddings' layer norm and every
    /// layer, on this thread: no worker waits for another between steps, and the
    /// sequence's Q|K|V and activations stay in this core's cache.
    fn sequence(&self, x: &mut [f32]) {
        let (h, eps) = (self.hidden, self.eps);
        let n = x.len() / h;
        for row in x.chunks_exact_mut(h) {
            ops::residual_norm_row(row, &[], &self.emb_ln_w, &self.emb_ln_b, eps, None);
        }
        with_scratch(&QKV, n * 3 * h, |qkv| {
            with_scratch(&CTX, n * h, |ctx| {
                for l in &self.layers {
                    l.qkv.apply_seq(x, n, qkv);
                    self.heads_of(qkv, n, ctx);
                    for (xb, cb) in x.chunks_mut(BLOCK_ROWS * h).zip(ctx.chunks(BLOCK_ROWS * h)) {
                        self.rows_after_attention(l, xb, cb);
                    }
                }
            })
        })
    }

    /// [`Encoder::layers_f32`] layer by layer, each step split across the pool.
    fn layers_by_step(&self, x: &mut [f32], spans: &[(usize, usize)]) {
        let (h, eps) = (self.hidden, self.eps);
        let rows = x.len() / h;
        ops::residual_norm(x, &[], &self.emb_ln_w, &self.emb_ln_b, eps, &mut []);
        // Q|K|V and attention's output, kept from batch to batch (each written whole
        // before it is read): no fresh, zeroed megabytes on one thread per batch.
        with_scratch(&QKV, rows * 3 * h, |qkv| {
            with_scratch(&CTX, rows * h, |ctx| {
                for l in &self.layers {
                    l.qkv.apply(x, rows, qkv);
                    self.attention(qkv, spans, ctx);
                    // The rest of the layer is row by row: each block of rows goes
                    // through it on one worker, its activations staying in that
                    // core's cache.
                    x.par_chunks_mut(BLOCK_ROWS * h)
                        .zip(ctx.par_chunks(BLOCK_ROWS * h))
                        .for_each(|(xb, cb)| self.rows_after_attention(l, xb, cb));
                }
            })
        })
    }

    /// One layer past attention for a block of rows `x` (its input, then its output)
    /// with their attention output `ctx`: `a = LN₁(x + ctx·Oᵀ)`, then
    /// `x = LN₂(a + GELU(a·Iᵀ)·Outᵀ)`, the biases included.
    fn rows_after_attention(&self, l: &Layer, x: &mut [f32], ctx: &[f32]) {
        let (h, eps) = (self.hidden, self.eps);
        let m = x.len() / h;
        with_scratch(&BLOCK, m * (h + self.inter), |buf| {
            let (a, mid) = buf.split_at_mut(m * h);
            l.o.apply_seq(ctx, m, a);
            for (ar, xr) in a.chunks_exact_mut(h).zip(x.chunks_exact(h)) {
                ops::residual_norm_row(ar, xr, &l.ln1_w, &l.ln1_b, eps, None);
            }
            l.i.apply_seq(a, m, mid);
            ops::gelu_slice(mid, None);
            l.out.apply_seq(mid, m, x);
            for (xr, ar) in x.chunks_exact_mut(h).zip(a.chunks_exact(h)) {
                ops::residual_norm_row(xr, ar, &l.ln2_w, &l.ln2_b, eps, None);
            }
        });
    }

    /// The embeddings' layer norm and the layers, every dense layer on AMX tiles, the
    /// bias and the element-wise work done in each GEMM's epilogue while its block of
    /// rows is in cache: `x` (rows a multiple of [`amx::BLOCK`]) in, the output out.
    fn layers_amx(&self, amx: Amx, x: &mut [f32], spans: &[(usize, usize)]) {
        const B: usize = amx::BLOCK;
        let (h, i, eps) = (self.hidden, self.inter, self.eps);
        let rows = x.len() / h;
        let mut x16 = vec![0u16; rows * h];
        let mut ctx16 = vec![0u16; rows * h];
        let mut mid16 = vec![0u16; rows * i];
        let mut qkv = vec![0f32; rows * 3 * h];
        let mut ctx = vec![0f32; rows * h];
        let (x16, ctx16, mid16, qkv, ctx) = (&mut x16, &mut ctx16, &mut mid16, &mut qkv, &mut ctx);
        ops::residual_norm(x, &[], &self.emb_ln_w, &self.emb_ln_b, eps, x16);
        for l in &self.layers {
            let (qkv_w, o_w, i_w, out_w) = (l.qkv.tiles(), l.o.tiles(), l.i.tiles(), l.out.tiles());
            amx::linear(amx, x16, rows, qkv_w, &l.qkv.b, qkv);
            self.attention(qkv, spans, ctx);
            ops::to_bf16(ctx, ctx16);
            amx::linear_blocks(
                amx,
                ctx16,
                rows,
                o_w,
                x.par_chunks_mut(B * h).zip(x16.par_chunks_mut(B * h)),
                |c, (xb, x16b)| {
                    ops::bias_residual_norm(c, &l.o.b, xb, &l.ln1_w, &l.ln1_b, eps, x16b)
                },
            );
            amx::linear_blocks(amx, x16, rows, i_w, mid16.par_chunks_mut(B * i), |c, mb| {
                ops::bias_gelu_bf16(c, &l.i.b, mb)
            });
            amx::linear_blocks(
                amx,
                mid16,
                rows,
                out_w,
                x.par_chunks_mut(B * h).zip(x16.par_chunks_mut(B * h)),
                |c, (xb, x16b)| {
                    ops::bias_residual_norm(c, &l.out.b, xb, &l.ln2_w, &l.ln2_b, eps, x16b)
                },
            );
        }
    }

    /// Scaled dot-product attention of every (sequence, head), over the sequence's own
    /// tokens: `ctx[rows × h]` from `qkv[rows × 3h]`; on AMX tiles when the dense
    /// layers are and the head size is a multiple of 32, in bf16 on AVX512-BF16 when
    /// they are int8.
    fn attention(&self, qkv: &[f32], spans: &[(usize, usize)], ctx: &mut [f32]) {
        let h = self.hidden;
        // Each sequence's rows of `ctx`, so that every sequence's heads write their
        // output in place.
        let parts = split_spans(ctx, spans, h);
        spans
            .par_iter()
            .zip(parts)
            .for_each(|(&(s, n), out)| self.heads_of(&qkv[s * 3 * h..(s + n) * 3 * h], n, out));
    }

    /// Every head of one sequence: its `n` rows of Q|K|V in, its attention output
    /// (`n × h`) written into `out`; on AMX tiles, in bf16 or in f32 (see
    /// [`Encoder::attention`]).
    fn heads_of(&self, qkv: &[f32], n: usize, out: &mut [f32]) {
        let h = self.hidden;
        let d = h / self.heads;
        let amx = self.amx().filter(|_| d.is_multiple_of(amx::BLOCK));
        let bf16 = self.kernels.bf16_attention();
        for hd in 0..self.heads {
            let head = Head { qkv, n, d, h, hd };
            match amx {
                Some(amx) => head.place(&head.on_amx(amx), out),
                None if bf16 => head.in_bf16(out),
                None => head.in_f32(out),
            }
        }
    }
}

/// Each span's rows (`(start, rows)`, in order, `h` values a row) of `buf`, as their
/// own slices.
fn split_spans<'a>(buf: &'a mut [f32], spans: &[(usize, usize)], h: usize) -> Vec<&'a mut [f32]> {
    let mut parts = Vec::with_capacity(spans.len());
    let (mut rest, mut at) = (buf, 0);
    for &(s, n) in spans {
        let (mine, tail) = std::mem::take(&mut rest)[(s - at) * h..].split_at_mut(n * h);
        parts.push(mine);
        (rest, at) = (tail, s + n);
    }
    parts
}

/// A batch of at least this many sequences per worker goes sequence by sequence
/// ([`Encoder::sequence`]).
const BY_SEQUENCE: usize = 2;

/// Rows per block of [`Encoder::rows_after_attention`] (a multiple of the kernels'
/// 12-row tiles): 96 rows of MiniLM's FFN activations are 590 KB, within L2.
const BLOCK_ROWS: usize = 96;

thread_local! {
    /// Each worker's bf16 pairs of a head's queries, then of its probabilities
    /// (`rows × ⌈d/2⌉`, then `rows × ⌈n/2⌉`; rows rounded up to whole tiles).
    static PAIRS: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// A batch's Q|K|V (`rows × 3h`) and attention output (`rows × h`), kept on the
    /// thread that runs the batch.
    static QKV: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    static CTX: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Each worker's buffers for a block of rows past attention (`a` and the FFN's
    /// activations), kept from block to block.
    static BLOCK: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Each worker's attention scores (`n × n`), kept from head to head (the product
    /// writes them whole).
    static SCORES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One head of one sequence: its n rows of `[Q | K | V]` (each `h` wide, head `hd` at
/// columns `hd·d..`).
struct Head<'a> {
    qkv: &'a [f32],
    n: usize,
    d: usize,
    h: usize,
    hd: usize,
}

impl Head<'_> {
    fn q(&self, i: usize, t: usize) -> f32 {
        self.qkv[i * 3 * self.h + self.hd * self.d + t]
    }

    fn k(&self, i: usize, t: usize) -> f32 {
        self.qkv[i * 3 * self.h + self.h + self.hd * self.d + t]
    }

    fn v(&self, i: usize, t: usize) -> f32 {
        self.qkv[i * 3 * self.h + 2 * self.h + self.hd * self.d + t]
    }

    /// The head's output (`n × d`) into its columns of the sequence's rows `out`
    /// (`n × h`).
    fn place(&self, head: &[f32], out: &mut [f32]) {
        for (row, src) in out.chunks_exact_mut(self.h).zip(head.chunks_exact(self.d)) {
            row[self.hd * self.d..][..self.d].copy_from_slice(src);
        }
    }

    /// `softmax(Q·Kᵀ/√d)·V` (`n × d`) with bf16 operands on AMX tiles, the scores and
    /// the softmax in f32; rows and columns padded with zeros to blocks of 32.
    fn on_amx(&self, amx: Amx) -> Vec<f32> {
        let (n, d) = (self.n, self.d);
        let np = n.div_ceil(amx::BLOCK) * amx::BLOCK;
        let mut q16 = vec![0u16; np * d];
        for i in 0..n {
            for t in 0..d {
                q16[i * d + t] = amx::bf16(self.q(i, t));
            }
        }
        let kp = PackedB::pack_with(np, d, |j, t| if j < n { self.k(j, t) } else { 0.0 });
        let mut scores = vec![0f32; np * np];
        amx::matmul(amx, &q16, np, &kp, &mut scores);
        let mut p16 = vec![0u16; np * np];
        let scale = 1.0 / (d as f32).sqrt();
        // Unnormalized probabilities in bf16; each output row divided by its sum after.
        let sums: Vec<f32> = scores
            .chunks_exact(np)
            .zip(p16.chunks_exact_mut(np))
            .take(n)
            .map(|(srow, prow)| ops::exp_bf16(&srow[..n], scale, &mut prow[..n]))
            .collect();
        let vp = PackedB::pack_with(d, np, |c, j| if j < n { self.v(j, c) } else { 0.0 });
        let mut out = vec![0f32; np * d];
        amx::matmul(amx, &p16, np, &vp, &mut out);
        for (row, sum) in out.chunks_exact_mut(d).zip(&sums) {
            let inv = 1.0 / sum;
            row.iter_mut().for_each(|v| *v *= inv);
        }
        out.truncate(n * d);
        out
    }

    /// `softmax(Q·Kᵀ/√d)·V` with bf16 operands on AVX512-BF16 ([`bgemm`]), the
    /// scores, the softmax and the sums in f32 (the AMX path's arithmetic), written
    /// into the head's columns of the sequence's rows `out` (`n × h`).
    fn in_bf16(&self, out: &mut [f32]) {
        let (n, d, h) = (self.n, self.d, self.h);
        let scale = 1.0 / (d as f32).sqrt();
        let (d2, n2) = (d.div_ceil(2), n.div_ceil(2));
        let rows = n.div_ceil(bgemm::MR) * bgemm::MR;
        // scores[n × n] = Q · Kᵀ: key j is output column j.
        let kp = PackedH::pack_rows(&self.qkv[h + self.hd * d..], 3 * h, n, d);
        // out[n × d] = P · V: value dimension t is output column t.
        let vp = PackedH::pack_cols(&self.qkv[2 * h + self.hd * d..], 3 * h, d, n);
        let out = &mut out[self.hd * d..];
        with_scratch(&PAIRS, rows * d2.max(n2), |pairs| {
            for (i, q) in pairs.chunks_exact_mut(d2).take(n).enumerate() {
                bgemm::pairs_of(&self.qkv[i * 3 * h + self.hd * d..][..d], q);
            }
            with_scratch(&SCORES, n * n, |scores| {
                bgemm::product(pairs, n, &kp, scores, n);
                // Unnormalized probabilities, as pairs; each output row divided by
                // its sum after.
                let sums: Vec<f32> = scores
                    .chunks_exact(n)
                    .zip(pairs.chunks_exact_mut(n2))
                    .map(|(row, p)| bgemm::exp_pairs(row, scale, p))
                    .collect();
                bgemm::product(pairs, n, &vp, out, h);
                for (i, sum) in sums.iter().enumerate() {
                    let inv = 1.0 / sum;
                    out[i * h..][..d].iter_mut().for_each(|v| *v *= inv);
                }
            });
        });
    }

    /// The same in f32, written into the head's columns of the sequence's rows `out`
    /// (`n × h`): on the AVX-512 kernels (keys and values packed as their panels),
    /// else with the `gemm` crate.
    fn in_f32(&self, out: &mut [f32]) {
        let (n, d, h) = (self.n, self.d, self.h);
        let scale = 1.0 / (d as f32).sqrt();
        if sgemm::available() {
            // scores[n × n] = Q · Kᵀ: key j is output column j.
            let kp = PackedW::pack_rows(&self.qkv[h + self.hd * d..], 3 * h, n, d);
            // out[n × d] = P · V: value dimension t is output column t.
            let vp = PackedW::pack_cols(&self.qkv[2 * h + self.hd * d..], 3 * h, d, n);
            let out = &mut out[self.hd * d..];
            with_scratch(&SCORES, n * n, |scores| {
                sgemm::product(&self.qkv[self.hd * d..], 3 * h, n, &kp, None, scores, n);
                // Unnormalized probabilities; each output row divided by its sum after.
                let sums: Vec<f32> = scores
                    .chunks_exact_mut(n)
                    .map(|row| ops::exp_scaled(row, scale))
                    .collect();
                sgemm::product(scores, n, n, &vp, None, out, h);
                for (i, sum) in sums.iter().enumerate() {
                    let inv = 1.0 / sum;
                    out[i * h..][..d].iter_mut().for_each(|v| *v *= inv);
                }
            });
            return;
        }
        let q = &self.qkv[self.hd * d..];
        let k = &self.qkv[h + self.hd * d..];
        let v = &self.qkv[2 * h + self.hd * d..];
        let mut scores = vec![0f32; n * n];
        // scores[n × n] = Q[n × d] · K[n × d]ᵀ (rows 3h apart).
        // SAFETY: every pointer and stride stays within `qkv` / `scores`: row i of
        // Q/K/V starts at i·3h, and `qkv` holds the sequence's n rows.
        unsafe {
            gemm::gemm(
                n,
                n,
                d,
                scores.as_mut_ptr(),
                1,
                n as isize,
                false,
                q.as_ptr(),
                1,
                (3 * h) as isize,
                k.as_ptr(),
                (3 * h) as isize,
                1,
                0.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            );
        }
        for row in scores.chunks_exact_mut(n) {
            ops::softmax_scaled(row, scale, None);
        }
        let mut head = vec![0f32; n * d];
        // out[n × d] = P[n × n] · V[n × d].
        // SAFETY: as above.
        unsafe {
            gemm::gemm(
                n,
                d,
                n,
                head.as_mut_ptr(),
                1,
                d as isize,
                false,
                scores.as_ptr(),
                1,
                n as isize,
                v.as_ptr(),
                1,
                (3 * h) as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            );
        }
        self.place(&head, out);
    }
}

/// Rows of a 2-D tensor as one vector, if present (`bert.` prefix tried too).
fn get_rows(
    tensors: &HashMap<String, Tensor>,
    name: &str,
    width: usize,
) -> Option<Result<Vec<f32>>> {
    let t = tensors
        .get(name)
        .or_else(|| tensors.get(&format!("bert.{name}")))?;
    Some((|| {
        let v = t
            .to_dtype(candle_core::DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        if v.len() < width {
            return Err(Error::Invalid(format!("{name} is too small")));
        }
        Ok(v)
    })())
}

/// `y[m × n] = x[m × k] · wᵀ + b`, `w` being `n × k` row-major.
#[allow(clippy::too_many_arguments)]
fn linear(
    x: &[f32],
    m: usize,
    k: usize,
    w: &[f32],
    b: &[f32],
    n: usize,
    y: &mut [f32],
    par: Parallelism,
) {
    debug_assert!(x.len() >= m * k && w.len() == n * k && b.len() == n && y.len() >= m * n);
    for row in y[..m * n].chunks_exact_mut(n) {
        row.copy_from_slice(b);
    }
    // SAFETY: x is m×k row-major (column stride 1, row stride k); wᵀ is read from the
    // n×k row-major w (element (kk, j) at j·k + kk); y is m×n row-major; all three
    // are at least that long (checked above in debug builds, by construction here).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            y.as_mut_ptr(),
            1,
            n as isize,
            true,
            x.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            k as isize,
            1,
            1.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod dense_tests {
    use super::*;

    /// The plain sum in `k` order, in f64 (the reference).
    fn reference(x: &[f32], m: usize, k: usize, w: &[f32], b: &[f32], n: usize) -> Vec<f64> {
        let mut y = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                y[i * n + j] = b[j] as f64
                    + (0..k)
                        .map(|kk| x[i * k + kk] as f64 * w[j * k + kk] as f64)
                        .sum::<f64>();
            }
        }
        y
    }

    use crate::embed::test_values as values;

    /// A dense layer, on whichever kernels this CPU takes (AVX-512 where it has it,
    /// else the `gemm` crate), is the plain product up to f32 rounding, at ragged
    /// sizes, and the same bits on 1, 2 and 3 threads.
    #[test]
    fn dense_layers_are_the_product_at_ragged_sizes_and_every_width() {
        let wide = sgemm::available();
        // Rows past a tile and a task, columns past a panel and short of one.
        for &(m, k, n) in &[
            (1, 7, 5),
            (13, 33, 40),
            (97, 64, 96),
            (250, 384, 1152),
            (25, 1536, 17),
        ] {
            let (x, w, b) = (values(m * k, 1), values(n * k, 2), values(n, 3));
            let dense = Dense::new(w.clone(), b.clone(), k, Kernels::F32);
            assert_eq!(matches!(dense.w, Weights::Wide(_)), wide);
            let want = reference(&x, m, k, &w, &b, n);
            let mut first: Option<Vec<f32>> = None;
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut y = vec![f32::NAN; m * n];
                pool.install(|| dense.apply(&x, m, &mut y));
                for (i, (&g, &r)) in y.iter().zip(&want).enumerate() {
                    let tol = 1e-5 * (k as f64).sqrt() + 1e-6;
                    assert!((g as f64 - r).abs() <= tol, "{m}×{k}×{n} [{i}]: {g} vs {r}");
                }
                match &first {
                    None => first = Some(y),
                    Some(f) => assert!(
                        f.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{m}×{k}×{n}: other bits on {threads} threads"
                    ),
                }
            }
        }
    }
}
