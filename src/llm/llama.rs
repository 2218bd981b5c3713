//! The llama architecture (SmolLM2, Llama 3.x, TinyLlama) as Quire's own model code.
//!
//! Adapted from candle-transformers 0.11.1 `models/quantized_llama.rs`
//! (Apache-2.0/MIT, © the candle authors), trimmed to dense models and changed so:
//! - the KV cache is a preallocated buffer that can be truncated, so a new prompt that
//!   shares a prefix with the previous one reuses its keys and values;
//! - grouped-query attention reshapes the queries instead of copying K/V per head;
//! - weights of types without a fast CPU kernel in candle (Q4_1, Q5_0, Q5_1) can be
//!   requantized to Q8_0 at load.

use std::collections::HashMap;
use std::io::{Read, Seek};

use candle_core::quantized::{gguf_file, GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, IndexOp, Module, Result, Tensor, D};
use candle_transformers::quantized_nn::RmsNorm;

/// Read tensor `name`, requantizing slow types to Q8_0 when `requant` is set.
pub(crate) fn load_tensor<R: Read + Seek>(
    ct: &gguf_file::Content,
    r: &mut R,
    name: &str,
    device: &Device,
    requant: bool,
) -> Result<QTensor> {
    let t = ct.tensor(r, name, device)?;
    if requant
        && matches!(
            t.dtype(),
            GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1
        )
        && t.shape().dims().last().is_some_and(|d| d % 32 == 0)
    {
        let f = t.dequantize(device)?;
        return QTensor::quantize(&f, GgmlDType::Q8_0);
    }
    Ok(t)
}

/// A growable key/value buffer along the sequence dimension, truncatable.
#[derive(Debug, Clone)]
struct KvBuf {
    k: Option<Tensor>,
    v: Option<Tensor>,
    len: usize,
}

impl KvBuf {
    fn new() -> Self {
        Self {
            k: None,
            v: None,
            len: 0,
        }
    }

    /// Append `k`, `v` of shape (1, heads, seq, dim); returns the whole cache so far.
    fn append(&mut self, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let seq = k.dim(2)?;
        let need = self.len + seq;
        let cap = self.k.as_ref().map(|t| t.dim(2)).transpose()?.unwrap_or(0);
        if need > cap {
            let new_cap = need.max(cap * 2).max(256);
            let (b, h, _, d) = k.dims4()?;
            let nk = Tensor::zeros((b, h, new_cap, d), k.dtype(), k.device())?;
            let nv = Tensor::zeros((b, h, new_cap, d), v.dtype(), v.device())?;
            if let (Some(ok), Some(ov)) = (&self.k, &self.v) {
                if self.len > 0 {
                    nk.slice_set(&ok.narrow(2, 0, self.len)?.contiguous()?, 2, 0)?;
                    nv.slice_set(&ov.narrow(2, 0, self.len)?.contiguous()?, 2, 0)?;
                }
            }
            self.k = Some(nk);
            self.v = Some(nv);
        }
        let (Some(bk), Some(bv)) = (&self.k, &self.v) else {
            candle_core::bail!("kv cache buffer missing")
        };
        bk.slice_set(&k.contiguous()?, 2, self.len)?;
        bv.slice_set(&v.contiguous()?, 2, self.len)?;
        self.len = need;
        Ok((bk.narrow(2, 0, need)?, bv.narrow(2, 0, need)?))
    }
}

#[derive(Debug, Clone)]
struct Layer {
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    w1: QMatMul,
    w2: QMatMul,
    w3: QMatMul,
    attn_norm: RmsNorm,
    ffn_norm: RmsNorm,
    kv: KvBuf,
}

/// A dense llama-architecture model with a reusable KV cache.
#[derive(Debug, Clone)]
pub struct Llama {
    embeddings: Tensor,
    hidden: usize,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: QMatMul,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    cos: Tensor,
    sin: Tensor,
    max_seq: usize,
    masks: HashMap<(usize, usize), Tensor>,
}

impl Llama {
    /// Load from a GGUF file; `max_seq` bounds the positions (rotary tables).
    pub fn from_gguf<R: Read + Seek>(
        ct: &gguf_file::Content,
        r: &mut R,
        device: &Device,
        max_seq: usize,
        requant: bool,
    ) -> Result<Self> {
        let md = |s: &str| match ct.metadata.get(s) {
            None => candle_core::bail!("cannot find {s} in metadata"),
            Some(v) => Ok(v),
        };
        if md("llama.expert_count")
            .and_then(|v| v.to_u32())
            .unwrap_or(0)
            > 1
        {
            candle_core::bail!("mixture-of-experts llama models are not supported");
        }
        let n_head = md("llama.attention.head_count")?.to_u32()? as usize;
        let n_kv_head = md("llama.attention.head_count_kv")
            .and_then(|v| v.to_u32())
            .map(|v| v as usize)
            .unwrap_or(n_head);
        let blocks = md("llama.block_count")?.to_u32()? as usize;
        let hidden = md("llama.embedding_length")?.to_u32()? as usize;
        if n_head == 0
            || n_kv_head == 0
            || !n_head.is_multiple_of(n_kv_head)
            || !hidden.is_multiple_of(n_head)
        {
            candle_core::bail!(
                "inconsistent head counts ({n_head} heads, {n_kv_head} kv heads, {hidden} hidden)"
            );
        }
        let head_dim = hidden / n_head;
        let rope_dim = md("llama.rope.dimension_count")
            .and_then(|v| v.to_u32())
            .map(|v| v as usize)
            .unwrap_or(head_dim);
        let eps = md("llama.attention.layer_norm_rms_epsilon")?.to_f32()? as f64;
        let base = md("llama.rope.freq_base")
            .and_then(|m| m.to_f32())
            .unwrap_or(10000f32);

        let theta: Vec<f32> = (0..rope_dim)
            .step_by(2)
            .map(|i| 1f32 / base.powf(i as f32 / rope_dim as f32))
            .collect();
        let theta = Tensor::new(theta.as_slice(), device)?;
        let idx = Tensor::arange(0, max_seq as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((max_seq, 1))?
            .matmul(&theta.reshape((1, theta.elem_count()))?)?;
        let (cos, sin) = (idx.cos()?, idx.sin()?);

        let tok_q = ct.tensor(r, "token_embd.weight", device)?;
        let embeddings = tok_q.dequantize(device)?;
        let norm = RmsNorm::from_qtensor(ct.tensor(r, "output_norm.weight", device)?, eps)?;
        let output = if ct.tensor_infos.contains_key("output.weight") {
            load_tensor(ct, r, "output.weight", device, requant)?
        } else {
            tok_q
        };
        let mut layers = Vec::with_capacity(blocks);
        for i in 0..blocks {
            let p = format!("blk.{i}");
            let mut q = |n: &str| -> Result<QMatMul> {
                QMatMul::from_qtensor(load_tensor(
                    ct,
                    r,
                    &format!("{p}.{n}.weight"),
                    device,
                    requant,
                )?)
            };
            let wq = q("attn_q")?;
            let wk = q("attn_k")?;
            let wv = q("attn_v")?;
            let wo = q("attn_output")?;
            let w1 = q("ffn_gate")?;
            let w2 = q("ffn_down")?;
            let w3 = q("ffn_up")?;
            let attn_norm = RmsNorm::from_qtensor(
                ct.tensor(r, &format!("{p}.attn_norm.weight"), device)?,
                eps,
            )?;
            let ffn_norm =
                RmsNorm::from_qtensor(ct.tensor(r, &format!("{p}.ffn_norm.weight"), device)?, eps)?;
            layers.push(Layer {
                wq,
                wk,
                wv,
                wo,
                w1,
                w2,
                w3,
                attn_norm,
                ffn_norm,
                kv: KvBuf::new(),
            });
        }
        Ok(Self {
            embeddings,
            hidden,
            layers,
            norm,
            output: QMatMul::from_qtensor(output)?,
            n_head,
            n_kv_head,
            head_dim,
            cos,
            sin,
            max_seq,
            masks: HashMap::new(),
        })
    }

    /// Positions already in the KV cache.
    pub fn cached(&self) -> usize {
        self.layers.first().map(|l| l.kv.len).unwrap_or(0)
    }

    /// Keep only the first `len` positions of the KV cache.
    pub fn truncate_cache(&mut self, len: usize) {
        for l in &mut self.layers {
            l.kv.len = l.kv.len.min(len);
        }
    }

    /// Free the KV cache.
    pub fn clear_cache(&mut self) {
        for l in &mut self.layers {
            l.kv = KvBuf::new();
        }
    }

    fn mask(&mut self, seq: usize, pos: usize, device: &Device) -> Result<Tensor> {
        let total = pos + seq;
        if let Some(m) = self.masks.get(&(seq, total)) {
            return Ok(m.clone());
        }
        let data: Vec<f32> = (0..seq)
            .flat_map(|i| {
                (0..total).map(move |j| if j > pos + i { f32::NEG_INFINITY } else { 0.0 })
            })
            .collect();
        let m = Tensor::from_vec(data, (seq, total), device)?;
        if self.masks.len() > 64 {
            self.masks.clear();
        }
        self.masks.insert((seq, total), m.clone());
        Ok(m)
    }

    /// Run `tokens` at positions `pos..`, appending to the KV cache (which must hold
    /// exactly `pos` positions); returns the logits of the last position.
    pub fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        let seq = tokens.len();
        if seq == 0 {
            candle_core::bail!("no tokens to run");
        }
        if pos + seq > self.max_seq {
            candle_core::bail!(
                "position {} beyond the context window {}",
                pos + seq,
                self.max_seq
            );
        }
        self.truncate_cache(pos);
        let device = self.embeddings.device().clone();
        let ids = Tensor::new(tokens, &device)?;
        let mut x = self
            .embeddings
            .index_select(&ids, 0)?
            .reshape((1, seq, self.hidden))?;
        let mask = if seq > 1 {
            Some(self.mask(seq, pos, &device)?)
        } else {
            None
        };
        let cos = self.cos.narrow(0, pos, seq)?;
        let sin = self.sin.narrow(0, pos, seq)?;
        let (nh, nkv, hd) = (self.n_head, self.n_kv_head, self.head_dim);
        let rep = nh / nkv;
        let scale = 1.0 / (hd as f64).sqrt();
        for l in &mut self.layers {
            let residual = &x;
            let h = l.attn_norm.forward(&x)?;
            let q = l.wq.forward(&h)?;
            let k = l.wk.forward(&h)?;
            let v = l.wv.forward(&h)?;
            let q = q.reshape((1, seq, nh, hd))?.transpose(1, 2)?.contiguous()?;
            let k = k
                .reshape((1, seq, nkv, hd))?
                .transpose(1, 2)?
                .contiguous()?;
            let v = v.reshape((1, seq, nkv, hd))?.transpose(1, 2)?;
            let q = candle_nn::rotary_emb::rope_i(&q, &cos, &sin)?;
            let k = candle_nn::rotary_emb::rope_i(&k, &cos, &sin)?;
            // llama.cpp keeps K/V in f16, and its CPU matmuls against f16 convert the
            // other operand (Q, then the attention weights) to f16 too; rounding the
            // same way keeps greedy output in step with it (measured: SmolLM2 went
            // from 7/32 to 31/32 and 8/32 to 30/32 tokens on two reference prompts).
            let q = f16_round(&q)?;
            let k = f16_round(&k)?;
            let v = f16_round(&v)?;
            let (k, v) = l.kv.append(&k, &v)?;
            let total = k.dim(2)?;
            // Heads h*rep..(h+1)*rep share kv head h: fold them into the query rows.
            let q = q.reshape((1, nkv, rep * seq, hd))?;
            let att = (q.matmul(&k.t()?)? * scale)?;
            let att = match &mask {
                None => att,
                Some(m) => att
                    .reshape((1, nkv, rep, seq, total))?
                    .broadcast_add(m)?
                    .reshape((1, nkv, rep * seq, total))?,
            };
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let att = f16_round(&att)?;
            let y = att.matmul(&v.contiguous()?)?; // (1, nkv, rep*seq, hd)
            let y = y
                .reshape((1, nh, seq, hd))?
                .transpose(1, 2)?
                .reshape((1, seq, self.hidden))?;
            let y = l.wo.forward(&y)?;
            x = (y + residual)?;
            let residual = &x;
            let h = l.ffn_norm.forward(&x)?;
            let g = candle_nn::ops::silu(&l.w1.forward(&h)?)?;
            let u = l.w3.forward(&h)?;
            let y = l.w2.forward(&(g * u)?)?;
            x = (y + residual)?;
        }
        let x = self.norm.forward(&x)?;
        let x = x.i((.., seq - 1, ..))?;
        self.output
            .forward(&x)?
            .squeeze(0)?
            .to_dtype(DType::F32)?
            .flatten_all()
    }
}

fn f16_round(t: &Tensor) -> Result<Tensor> {
    t.to_dtype(DType::F16)?.to_dtype(DType::F32)
}

/// Softmax-free helper for tests: the index of the largest logit.
pub fn argmax(logits: &Tensor) -> Result<u32> {
    logits.argmax(D::Minus1)?.to_scalar::<u32>()
}
