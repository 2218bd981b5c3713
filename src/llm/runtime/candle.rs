//! The llama, Qwen2, Qwen3, Gemma 3 and Phi-3 forward passes over candle tensors, on any candle
//! device: the path the GPU runs (CUDA, Metal), and which runs on the CPU too, so that
//! tests compare it with Quire's own kernels on a machine without a GPU.
//!
//! Why our own forward over candle's `QMatMul` rather than candle-transformers'
//! `quantized_llama` / `quantized_qwen2` / `quantized_gemma3`: those keep a KV cache
//! that can only be appended to or dropped, so a new prompt sharing a prefix with the
//! last one (every follow-up question, every refine step) would run again from the
//! first token; their three loaders read the GGUF metadata in three ways, where this
//! file reads it once as [`super::llama`] does (same keys, same defaults, same Gemma
//! layer pattern and rope bases) and loads the tensors each architecture's description
//! names ([`crate::llm::arch`]); and Gemma 3 270M's sliding window and its local rope
//! base are handled here as llama.cpp's `llm_build_gemma3_iswa` does. The weights stay
//! quantized on the device (candle's CUDA/Metal quantized kernels multiply them);
//! everything else is f32, but for what llama.cpp keeps in f16: the KV cache, and the
//! queries and attention weights that multiply it.
//!
//! The token embeddings stay on the CPU ([`Rows`], the runtime's own row lookup): only
//! the prompt's rows are uploaded, so Gemma's 262k-row table is never dequantized on
//! the device.

use std::io::{Read, Seek};

use candle_core::quantized::{gguf_file, QMatMul, QStorage, QTensor};
use candle_core::{DType, Device, Module, Result, Tensor, D};

use super::hparams::Hparams;
use super::matmul::{split_rows, Rows};
use crate::llm::arch::{self, Decoder, Ffn, Rope};

/// One decoder layer's weights on the device.
#[derive(Debug)]
struct Layer {
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    w_gate: QMatMul,
    w_up: QMatMul,
    w_down: QMatMul,
    attn_norm: Tensor,
    ffn_norm: Tensor,
    /// The architecture's optional biases and norms ([`arch::Block`]).
    qkv_bias: Option<[Tensor; 3]>,
    q_norm: Option<Tensor>,
    k_norm: Option<Tensor>,
    post_attn_norm: Option<Tensor>,
    post_ffn_norm: Option<Tensor>,
    /// A sliding-window layer: keys visible while `query_pos − key_pos < window`.
    window: Option<usize>,
    /// Index into [`CandleLlama::ropes`].
    rope: usize,
}

/// A dense llama-family model on a candle device, with a KV cache that can be
/// truncated (prefix reuse).
#[derive(Debug)]
pub struct CandleLlama {
    embeddings: Rows,
    embed_scale: Option<f32>,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QMatMul,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    rope_dim: usize,
    /// (cos, sin), `max_seq × rope_dim/2`, per rope (Gemma: global, local).
    ropes: Vec<(Tensor, Tensor)>,
    rope: Rope,
    ffn: Ffn,
    /// Queries scaled by this before attention: `1/√head_dim` unless the architecture
    /// says otherwise ([`arch::AttnScale`]).
    q_scale: f64,
    eps: f32,
    max_seq: usize,
    /// Per layer: keys and values in f16, `1 × kv_heads × len × head_dim`.
    cache: Vec<Option<(Tensor, Tensor)>>,
    len: usize,
    device: Device,
}

impl CandleLlama {
    /// Load a GGUF file of `decoder`'s architecture onto `device`; `max_seq` bounds
    /// the positions.
    pub fn from_gguf<R: Read + Seek>(
        ct: &gguf_file::Content,
        r: &mut R,
        decoder: &'static Decoder,
        device: &Device,
        max_seq: usize,
    ) -> Result<Self> {
        let h = Hparams::read(ct, decoder)?;
        let (n_head, n_kv_head, blocks, hidden, head_dim, eps) =
            (h.n_head, h.n_kv_head, h.blocks, h.hidden, h.head_dim, h.eps);
        // An even count: the rotation goes by pairs.
        let rope_dim = h.rope_dim & !1;
        let factors = match decoder
            .rope_factors
            .tensor(|n| ct.tensor_infos.contains_key(n), max_seq > h.orig_ctx)
        {
            Some(name) => {
                Some(vector(ct, r, name, h.rope_dim / 2, &Device::Cpu)?.to_vec1::<f32>()?)
            }
            None => None,
        };
        let mscale = h.rope_attn_factor;
        let mut ropes = vec![rope_table(
            h.rope_base,
            h.freq_scale,
            factors.as_deref(),
            mscale,
            rope_dim,
            max_seq,
            device,
        )?];
        if let Some(local) = h.local_rope_base {
            ropes.push(rope_table(
                local, 1.0, None, mscale, rope_dim, max_seq, device,
            )?);
        }

        let tok_q = ct.tensor(r, arch::TOKEN_EMBD, &Device::Cpu)?;
        let embeddings = Rows::new(&tok_q)?;
        if embeddings.width() != hidden {
            candle_core::bail!(
                "token embeddings are {} wide, not {hidden}",
                embeddings.width()
            );
        }
        let norm = vector(ct, r, arch::OUTPUT_NORM, hidden, device)?;
        // Tied output weights are the token embeddings, read again onto the device.
        let output = match ct.tensor_infos.contains_key(arch::OUTPUT) {
            true => qmatmul(ct.tensor(r, arch::OUTPUT, device)?)?,
            false => qmatmul(ct.tensor(r, arch::TOKEN_EMBD, device)?)?,
        };
        let mut layers = Vec::with_capacity(blocks);
        for i in 0..blocks {
            let n = decoder.block.names(i);
            let has = |name: &str| ct.tensor_infos.contains_key(name);
            let fused_qkv = has(&n.attn_qkv);
            if fused_qkv && has(&n.attn_qkv_bias) {
                candle_core::bail!("{}: a fused q/k/v bias is not supported", n.attn_qkv_bias);
            }
            // Fused weights are cut into their parts on the CPU, then moved.
            let on_device = |t: QTensor| -> Result<QMatMul> {
                let t = QTensor::new(
                    QStorage::from_data(t.data()?, device, t.dtype())?,
                    t.shape().clone(),
                )?;
                qmatmul(t)
            };
            let (wq, wk, wv) = if fused_qkv {
                let (q_rows, kv_rows) = (n_head * head_dim, n_kv_head * head_dim);
                let t = ct.tensor(r, &n.attn_qkv, &Device::Cpu)?;
                let [q, k, v] =
                    <[QTensor; 3]>::try_from(split_rows(t, &[q_rows, kv_rows, kv_rows])?)
                        .map_err(|_| candle_core::Error::Msg("q/k/v split".into()))?;
                (on_device(q)?, on_device(k)?, on_device(v)?)
            } else {
                let mut q = |name: &str| qmatmul(ct.tensor(r, name, device)?);
                (q(&n.attn_q)?, q(&n.attn_k)?, q(&n.attn_v)?)
            };
            let wo = qmatmul(ct.tensor(r, &n.attn_output, device)?)?;
            let (w_gate, w_up) = if n.gate_up {
                let t = ct.tensor(r, &n.ffn_up, &Device::Cpu)?;
                let ff = t.shape().dims2()?.0 / 2;
                let [g, u] = <[QTensor; 2]>::try_from(split_rows(t, &[ff, ff])?)
                    .map_err(|_| candle_core::Error::Msg("gate/up split".into()))?;
                (on_device(g)?, on_device(u)?)
            } else {
                (
                    qmatmul(ct.tensor(r, &n.ffn_gate, device)?)?,
                    qmatmul(ct.tensor(r, &n.ffn_up, device)?)?,
                )
            };
            let w_down = qmatmul(ct.tensor(r, &n.ffn_down, device)?)?;
            let widths = arch::Widths {
                hidden,
                head_dim,
                n_head,
                n_kv_head,
            };
            let arch::BlockVectors {
                attn_norm,
                ffn_norm,
                qkv_bias,
                q_norm,
                k_norm,
                post_attn_norm,
                post_ffn_norm,
            } = n.vectors(widths, |name: &str, len: usize| {
                vector(ct, r, name, len, device)
            })?;
            let sliding = h.sliding(i);
            layers.push(Layer {
                wq,
                wk,
                wv,
                wo,
                w_gate,
                w_up,
                w_down,
                attn_norm,
                ffn_norm,
                qkv_bias,
                q_norm,
                k_norm,
                post_attn_norm,
                post_ffn_norm,
                window: if sliding { h.window } else { None },
                rope: usize::from(sliding),
            });
        }
        Ok(Self {
            embeddings,
            embed_scale: decoder.embed_scale.then(|| (hidden as f32).sqrt()),
            cache: vec![None; layers.len()],
            layers,
            norm,
            output,
            n_head,
            n_kv_head,
            head_dim,
            rope_dim,
            ropes,
            rope: decoder.rope,
            ffn: decoder.ffn,
            q_scale: 1.0 / (h.q_per as f64).sqrt(),
            eps,
            max_seq,
            len: 0,
            device: device.clone(),
        })
    }

    /// The device the model runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Positions in the KV cache.
    pub fn cached(&self) -> usize {
        self.len
    }

    /// Keep only the first `len` positions of the KV cache.
    pub fn truncate_cache(&mut self, len: usize) -> Result<()> {
        if len >= self.len {
            return Ok(());
        }
        for kv in self.cache.iter_mut() {
            *kv = match kv.take() {
                Some((k, v)) if len > 0 => Some((k.narrow(2, 0, len)?, v.narrow(2, 0, len)?)),
                _ => None,
            };
        }
        self.len = len;
        Ok(())
    }

    /// Free the KV cache.
    pub fn clear_cache(&mut self) {
        self.cache.iter_mut().for_each(|kv| *kv = None);
        self.len = 0;
    }

    /// Run `tokens` at positions `pos..` (the cache is cut to `pos` first); returns
    /// the last position's logits, f32 on the CPU.
    pub fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        if tokens.is_empty() {
            candle_core::bail!("no tokens to run");
        }
        if pos > self.len {
            candle_core::bail!("position {pos} is past the {} cached positions", self.len);
        }
        if pos + tokens.len() > self.max_seq {
            candle_core::bail!(
                "positions up to {} are past the model's {} positions",
                pos + tokens.len(),
                self.max_seq
            );
        }
        self.truncate_cache(pos)?;
        let r = self.forward_inner(tokens, pos);
        if r.is_err() {
            self.clear_cache();
        }
        r
    }

    fn forward_inner(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        let t = tokens.len();
        let hidden = self.embeddings.width();
        let mut rows = Vec::with_capacity(t * hidden);
        for &id in tokens {
            self.embeddings.row(id as usize, &mut rows)?;
        }
        if let Some(s) = self.embed_scale {
            rows.iter_mut().for_each(|x| *x *= s);
        }
        let mut x = Tensor::from_vec(rows, (t, hidden), &Device::Cpu)?.to_device(&self.device)?;
        let (nh, nkv, hd) = (self.n_head, self.n_kv_head, self.head_dim);
        for (i, l) in self.layers.iter().enumerate() {
            let h = candle_nn::ops::rms_norm(&x, &l.attn_norm, self.eps)?;
            let (mut q, mut k, mut v) = (l.wq.forward(&h)?, l.wk.forward(&h)?, l.wv.forward(&h)?);
            if let Some([bq, bk, bv]) = &l.qkv_bias {
                q = q.broadcast_add(bq)?;
                k = k.broadcast_add(bk)?;
                v = v.broadcast_add(bv)?;
            }
            // (t, heads·hd) → (1, heads, t, hd)
            let heads = |x: Tensor, n: usize| -> Result<Tensor> {
                x.reshape((1, t, n, hd))?.transpose(1, 2)?.contiguous()
            };
            let (mut q, mut k, v) = (heads(q, nh)?, heads(k, nkv)?, heads(v, nkv)?);
            if let (Some(qn), Some(kn)) = (&l.q_norm, &l.k_norm) {
                q = candle_nn::ops::rms_norm(&q, qn, self.eps)?;
                k = candle_nn::ops::rms_norm(&k, kn, self.eps)?;
            }
            let (cos, sin) = &self.ropes[l.rope];
            let (cos, sin) = (cos.narrow(0, pos, t)?, sin.narrow(0, pos, t)?);
            q = self.rotate(&q, &cos, &sin)?;
            k = self.rotate(&k, &cos, &sin)?;
            // The cache holds f16 keys and values, as llama.cpp's does.
            let (k, v) = (k.to_dtype(DType::F16)?, v.to_dtype(DType::F16)?);
            let (k, v) = match self.cache[i].take() {
                Some((ck, cv)) => (Tensor::cat(&[&ck, &k], 2)?, Tensor::cat(&[&cv, &v], 2)?),
                None => (k, v),
            };
            self.cache[i] = Some((k.clone(), v.clone()));
            // Only the keys some query of this chunk can see (a sliding window).
            let first = l.window.map_or(0, |w| (pos + 1).saturating_sub(w));
            let n_keys = pos + t - first;
            let (k, v) = (k.narrow(2, first, n_keys)?, v.narrow(2, first, n_keys)?);
            let k = candle_transformers::utils::repeat_kv(k.to_dtype(DType::F32)?, nh / nkv)?;
            let v = candle_transformers::utils::repeat_kv(v.to_dtype(DType::F32)?, nh / nkv)?;
            let (k, v) = (k.contiguous()?, v.contiguous()?);
            // llama.cpp multiplies the f16 cache by queries (and then by attention
            // weights) rounded to f16.
            let q = f16_round(&(q * self.q_scale)?)?;
            let mut att = q.matmul(&k.t()?)?;
            if let Some(mask) = mask(t, pos, first, l.window, &self.device)? {
                att = att.broadcast_add(&mask)?;
            }
            let att = f16_round(&candle_nn::ops::softmax_last_dim(&att)?)?;
            let y = att.matmul(&v)?.transpose(1, 2)?.reshape((t, nh * hd))?;
            let mut y = l.wo.forward(&y)?;
            if let Some(n) = &l.post_attn_norm {
                y = candle_nn::ops::rms_norm(&y, n, self.eps)?;
            }
            x = (x + y)?;
            let h = candle_nn::ops::rms_norm(&x, &l.ffn_norm, self.eps)?;
            let gate = l.w_gate.forward(&h)?;
            let gate = match self.ffn {
                Ffn::GeGlu => gate.gelu()?,
                Ffn::SwiGlu => candle_nn::ops::silu(&gate)?,
            };
            let mut y = l.w_down.forward(&(gate * l.w_up.forward(&h)?)?)?;
            if let Some(n) = &l.post_ffn_norm {
                y = candle_nn::ops::rms_norm(&y, n, self.eps)?;
            }
            x = (x + y)?;
        }
        self.len = pos + t;
        let last = x.narrow(0, t - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, self.eps)?;
        self.output
            .forward(&last)?
            .flatten_all()?
            .to_dtype(DType::F32)?
            .to_device(&Device::Cpu)
    }

    /// Rotary embedding of `x` (`1 × heads × t × hd`) over its first `rope_dim` values.
    fn rotate(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        let f = |x: &Tensor| match self.rope {
            Rope::Neox => candle_nn::rotary_emb::rope(x, cos, sin),
            Rope::Norm => candle_nn::rotary_emb::rope_i(x, cos, sin),
        };
        if self.rope_dim == self.head_dim {
            return f(x);
        }
        let rot = f(&x.narrow(D::Minus1, 0, self.rope_dim)?.contiguous()?)?;
        let pass = x.narrow(D::Minus1, self.rope_dim, self.head_dim - self.rope_dim)?;
        Tensor::cat(&[&rot, &pass], D::Minus1)?.contiguous()
    }
}

/// The 1-D tensor `name` in f32 on `device`, which must hold `len` values.
fn vector<R: Read + Seek>(
    ct: &gguf_file::Content,
    r: &mut R,
    name: &str,
    len: usize,
    device: &Device,
) -> Result<Tensor> {
    let t = ct
        .tensor(r, name, device)?
        .dequantize(device)?
        .flatten_all()?;
    if t.elem_count() != len {
        candle_core::bail!("{name} holds {} values, not {len}", t.elem_count());
    }
    t.to_dtype(DType::F32)
}

/// `x` rounded to f16 and back.
fn f16_round(x: &Tensor) -> Result<Tensor> {
    x.to_dtype(DType::F16)?.to_dtype(DType::F32)
}

fn qmatmul(t: QTensor) -> Result<QMatMul> {
    QMatMul::from_qtensor(t)
}

/// cos and sin of `θ_i = pos · freq_scale · base^(−2i/dims) / factor_i` (`factors`:
/// per-pair frequency factors, 1 where `None`), each cos and sin multiplied by
/// `mscale`, `max_seq × dims/2`.
fn rope_table(
    base: f32,
    freq_scale: f32,
    factors: Option<&[f32]>,
    mscale: f32,
    dims: usize,
    max_seq: usize,
    device: &Device,
) -> Result<(Tensor, Tensor)> {
    let half = dims / 2;
    let mut cos = Vec::with_capacity(max_seq * half);
    let mut sin = Vec::with_capacity(max_seq * half);
    for p in 0..max_seq {
        for i in 0..half {
            let ff = factors.map_or(1.0, |f| f[i]);
            let theta = p as f32 * freq_scale * base.powf(-2.0 * i as f32 / dims as f32) / ff;
            cos.push(theta.cos() * mscale);
            sin.push(theta.sin() * mscale);
        }
    }
    Ok((
        Tensor::from_vec(cos, (max_seq, half), device)?,
        Tensor::from_vec(sin, (max_seq, half), device)?,
    ))
}

/// The additive mask of `t` queries at `pos..` over keys `first..pos+t`: causal, and
/// a sliding window's `query − key < window`; `None` when every key is visible.
fn mask(
    t: usize,
    pos: usize,
    first: usize,
    window: Option<usize>,
    device: &Device,
) -> Result<Option<Tensor>> {
    let n_keys = pos + t - first;
    let mut m = vec![0f32; t * n_keys];
    let mut any = false;
    for qi in 0..t {
        let qp = pos + qi;
        for kj in 0..n_keys {
            let kp = first + kj;
            if kp > qp || window.is_some_and(|w| qp - kp >= w) {
                m[qi * n_keys + kj] = f32::NEG_INFINITY;
                any = true;
            }
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(Tensor::from_vec(m, (t, n_keys), device)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_is_causal_and_slides() -> Result<()> {
        assert!(mask(1, 5, 0, None, &Device::Cpu)?.is_none());
        let m = mask(3, 0, 0, None, &Device::Cpu)?
            .map(|m| m.to_vec2::<f32>())
            .transpose()?
            .unwrap_or_default();
        assert_eq!(m[0][1], f32::NEG_INFINITY);
        assert_eq!(m[2], vec![0.0; 3]);
        // Window 2: query 3 sees keys 2 and 3 only.
        let m = mask(2, 2, 0, Some(2), &Device::Cpu)?
            .map(|m| m.to_vec2::<f32>())
            .transpose()?
            .unwrap_or_default();
        assert_eq!(m[1], vec![f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0, 0.0]);
        Ok(())
    }
}
