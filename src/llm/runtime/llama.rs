//! The dense decoders Quire runs with its own model code: llama (SmolLM2, Llama 3.x,
//! TinyLlama), Qwen2, Qwen3, Gemma 3 and Phi-3, one graph read from each architecture's
//! description ([`Decoder`]: its tensors, optional biases and norms, rope kind,
//! feed-forward and attention scale; the files of `crate::llm::arch` say how each
//! differs from llama, after llama.cpp's `llm_build_*`).
//!
//! Loading follows candle-transformers 0.11.1 `models/quantized_llama.rs` (Apache-2.0/
//! MIT, © the candle authors); the forward pass is Quire's own, on the CPU, over plain
//! buffers, computing each operation as llama.cpp does (`ops`, `attention`,
//! `matmul`) so that greedy decoding gives llama.cpp's tokens:
//! - a KV cache in f16 that can be truncated, so a new prompt that shares a prefix
//!   with the previous one reuses its keys and values;
//! - grouped-query attention reads the shared K/V head directly;
//! - weights of Q4_1 / Q5_0 / Q5_1 can optionally be requantized to Q8_0 at load.

use std::io::{Read, Seek};
use std::sync::atomic::{AtomicBool, Ordering};

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Result, Tensor};
use rayon::prelude::*;

use super::attention::{self, AttnScratch};
use super::hparams::Hparams;
use super::kv_cache::KvCache;
use super::matmul::{split_rows, QLinear, Rows, Stacked};
use super::ops;
use crate::llm::arch::{self, AttnScale, Decoder, Ffn, Rope as RopeKind};

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

#[derive(Debug, Clone)]
struct Layer {
    /// q, k, v.
    wqkv: Stacked,
    wo: QLinear,
    /// gate, up.
    w13: Stacked,
    w2: QLinear,
    attn_norm: Vec<f32>,
    ffn_norm: Vec<f32>,
    /// Biases added to the q, k and v projections (Qwen2).
    qkv_bias: Option<[Vec<f32>; 3]>,
    /// RMS norms of each query and key head (Gemma 3).
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    /// Norms of the attention and feed-forward outputs (Gemma 3).
    post_attn_norm: Option<Vec<f32>>,
    post_ffn_norm: Option<Vec<f32>>,
    /// Keys visible while `query_pos − key_pos < window` (a sliding-window layer).
    window: Option<usize>,
    /// Index into [`Llama::ropes`].
    rope: usize,
}

impl Layer {
    /// The first key a query at `pos` sees (after a sliding window's start).
    fn first_key(&self, pos: usize) -> usize {
        self.window.map_or(0, |w| (pos + 1).saturating_sub(w))
    }
}

/// What sets an architecture apart from llama's graph, resolved for this model.
#[derive(Debug, Clone, Copy)]
struct Style {
    rope: RopeKind,
    ffn: Ffn,
    /// Token embeddings multiplied by this.
    embed_scale: Option<f32>,
    /// Queries multiplied by this before attention, whose own scale is then 1;
    /// `None`: attention scales by `1/√head_dim`.
    q_scale: Option<f32>,
}

/// A rotary embedding's parameters: `θ_i = pos · scale^i · freq_scale / factor_i`.
#[derive(Debug, Clone)]
struct Rope {
    theta_scale: f32,
    freq_scale: f32,
    /// Per-pair frequency factors ([`arch::RopeFactors`]), 1 where `None`.
    factors: Option<Vec<f32>>,
    /// cos and sin multiplied by this (`rope.scaling.attn_factor`).
    mscale: f32,
}

/// The keys and values of one sequence, per layer: the model's own sequence, or one
/// of a batch of independent sequences run together ([`Llama::forward_multi`]).
#[derive(Debug, Clone, Default)]
pub struct SeqCache {
    layers: Vec<KvCache>,
    /// Positions held.
    len: usize,
}

impl SeqCache {
    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A new sequence starting with the first `len` positions of this one.
    pub fn fork(&self, len: usize) -> SeqCache {
        let len = len.min(self.len);
        SeqCache {
            layers: self.layers.iter().map(|kv| kv.fork(len)).collect(),
            len,
        }
    }
}

/// A dense llama-architecture model with a reusable KV cache, computed on the CPU
/// the way llama.cpp computes it (see `ops`, `attention` and `matmul`).
#[derive(Debug, Clone)]
pub struct Llama {
    embeddings: Rows,
    hidden: usize,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    output: QLinear,
    n_head: usize,
    n_kv_head: usize,
    head_dim: usize,
    rope_pairs: usize,
    /// The rotary embeddings the layers use (Gemma: local and global).
    ropes: Vec<Rope>,
    style: Style,
    eps: f32,
    max_seq: usize,
    /// The model's own sequence (prefix reuse across calls).
    cache: SeqCache,
    device: Device,
}

/// The f32 values of the 1-D tensor `name`, which must hold `len` of them.
fn vector(
    ct: &gguf_file::Content,
    r: &mut (impl Read + Seek),
    name: &str,
    len: usize,
) -> Result<Vec<f32>> {
    let v = ct
        .tensor(r, name, &Device::Cpu)?
        .dequantize(&Device::Cpu)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    if v.len() != len {
        candle_core::bail!("{name} holds {} values, not {len}", v.len());
    }
    Ok(v)
}

impl Llama {
    /// Load a GGUF file of `decoder`'s architecture; `max_seq` bounds the positions.
    pub fn from_gguf<R: Read + Seek>(
        ct: &gguf_file::Content,
        r: &mut R,
        decoder: &'static Decoder,
        device: &Device,
        max_seq: usize,
        requant: bool,
    ) -> Result<Self> {
        let h = Hparams::read(ct, decoder)?;
        let (n_head, n_kv_head, blocks, hidden, head_dim, rope_dim, eps) = (
            h.n_head,
            h.n_kv_head,
            h.blocks,
            h.hidden,
            h.head_dim,
            h.rope_dim,
            h.eps,
        );
        let theta = |b: f32| b.powf(-2.0 / rope_dim as f32);
        let factors = match decoder
            .rope_factors
            .tensor(|n| ct.tensor_infos.contains_key(n), max_seq > h.orig_ctx)
        {
            Some(name) => Some(vector(ct, r, name, rope_dim / 2)?),
            None => None,
        };
        let mut ropes = vec![Rope {
            theta_scale: theta(h.rope_base),
            freq_scale: h.freq_scale,
            factors,
            mscale: h.rope_attn_factor,
        }];
        if let Some(local) = h.local_rope_base {
            ropes.push(Rope {
                theta_scale: theta(local),
                freq_scale: 1.0,
                factors: None,
                mscale: h.rope_attn_factor,
            });
        }
        let style = Style {
            rope: decoder.rope,
            ffn: decoder.ffn,
            embed_scale: decoder.embed_scale.then(|| (hidden as f32).sqrt()),
            q_scale: match decoder.attn_scale {
                AttnScale::HeadDim => None,
                AttnScale::Queries(_) => Some(1.0 / (h.q_per as f32).sqrt()),
            },
        };
        let cpu = Device::Cpu;
        let tok_q = ct.tensor(r, arch::TOKEN_EMBD, &cpu)?;
        let embeddings = Rows::new(&tok_q)?;
        if embeddings.width() != hidden {
            candle_core::bail!(
                "token embeddings are {} wide, not {hidden}",
                embeddings.width()
            );
        }
        let norm = vector(ct, r, arch::OUTPUT_NORM, hidden)?;
        // llama.cpp reads tied output weights from the token embeddings' buffer
        // (plain CPU); an own output tensor goes where layer weights go.
        let output = if ct.tensor_infos.contains_key(arch::OUTPUT) {
            QLinear::new_backend(load_tensor(ct, r, arch::OUTPUT, &cpu, requant)?)?
        } else {
            QLinear::new(tok_q)?
        };
        let mut layers = Vec::with_capacity(blocks);
        for i in 0..blocks {
            let n = decoder.block.names(i);
            let has = |name: &str| ct.tensor_infos.contains_key(name);
            let fused_qkv = has(&n.attn_qkv);
            if fused_qkv && has(&n.attn_qkv_bias) {
                candle_core::bail!("{}: a fused q/k/v bias is not supported", n.attn_qkv_bias);
            }
            let mut t = |name: &str| load_tensor(ct, r, name, &cpu, requant);
            let (q_rows, kv_rows) = (n_head * head_dim, n_kv_head * head_dim);
            let wqkv = Stacked::new(if fused_qkv {
                split_rows(t(&n.attn_qkv)?, &[q_rows, kv_rows, kv_rows])?
            } else {
                vec![t(&n.attn_q)?, t(&n.attn_k)?, t(&n.attn_v)?]
            })?;
            let wo = QLinear::new_backend(t(&n.attn_output)?)?;
            let w13 = Stacked::new(if n.gate_up {
                let up = t(&n.ffn_up)?;
                let ff = up.shape().dims2()?.0 / 2;
                split_rows(up, &[ff, ff])?
            } else {
                vec![t(&n.ffn_gate)?, t(&n.ffn_up)?]
            })?;
            let w2 = QLinear::new_backend(t(&n.ffn_down)?)?;
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
            } = n.vectors(widths, |name: &str, len: usize| vector(ct, r, name, len))?;
            let sliding = h.sliding(i);
            layers.push(Layer {
                wqkv,
                wo,
                w13,
                w2,
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
            hidden,
            layers,
            norm,
            output,
            n_head,
            n_kv_head,
            head_dim,
            rope_pairs: rope_dim / 2,
            ropes,
            style,
            eps,
            max_seq,
            cache: SeqCache {
                layers: vec![KvCache::new(n_kv_head, head_dim); blocks],
                len: 0,
            },
            device: device.clone(),
        })
    }

    /// Positions already in the KV cache.
    pub fn cached(&self) -> usize {
        self.cache.len
    }

    /// Keep only the first `len` positions of the KV cache.
    pub fn truncate_cache(&mut self, len: usize) {
        self.cache.len = self.cache.len.min(len);
    }

    /// Free the KV cache.
    pub fn clear_cache(&mut self) {
        self.cache = self.fork_cache(0);
    }

    /// A new sequence starting with the first `len` positions of the model's own.
    pub fn fork_cache(&self, len: usize) -> SeqCache {
        self.cache.fork(len)
    }

    /// Run `tokens` at positions `pos..`, appending to the KV cache (which must hold
    /// at least `pos` positions); returns the logits of the last position.
    pub fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<Tensor> {
        let mut cache = std::mem::take(&mut self.cache);
        let r = self.forward_multi(&mut [(&mut cache, tokens, pos)]);
        self.cache = cache;
        let logits = r?.pop().unwrap_or_default();
        let len = logits.len();
        Tensor::from_vec(logits, len, &self.device)
    }

    /// Run several independent sequences at once, each `(cache, tokens, pos)`
    /// appending `tokens` at positions `pos..` of its own cache; returns each
    /// sequence's last-position logits. The weights are read once for all rows,
    /// which is what makes a batch of one-token steps cheaper than one at a time;
    /// every row is computed exactly as it would be alone.
    pub fn forward_multi(
        &self,
        seqs: &mut [(&mut SeqCache, &[u32], usize)],
    ) -> Result<Vec<Vec<f32>>> {
        self.pass(seqs, Pass::Batch)
    }

    /// Run `tokens` at positions `pos..` of the model's own cache, each row computed
    /// exactly as a one-token generation step at its position would compute it (the
    /// one-row kernels, one-token attention), and return the logits after every one
    /// of them: the verification pass of speculative decoding, which must choose the
    /// tokens plain decoding would. The weights are still read once for all rows.
    pub fn verify(&mut self, tokens: &[u32], pos: usize) -> Result<Vec<Vec<f32>>> {
        let mut cache = std::mem::take(&mut self.cache);
        let r = self.pass(&mut [(&mut cache, tokens, pos)], Pass::Alone);
        self.cache = cache;
        r
    }

    fn pass(
        &self,
        seqs: &mut [(&mut SeqCache, &[u32], usize)],
        mode: Pass,
    ) -> Result<Vec<Vec<f32>>> {
        // On a thread of the pool: the many parallel steps of a forward pass then
        // start from a worker (the other one steals its share) instead of each waking
        // the pool and putting the calling thread to sleep (two context switches per
        // step, ~200 steps per token).
        //
        // For the length of the pass, one job per other worker keeps it looking for
        // work instead of going to sleep between steps: a worker left idle for a
        // few tens of microseconds (one serial step: a norm, the cache store) parks
        // on a futex, and waking it costs more than a one-token step's share of work
        // (generation: ~8% faster with this). It runs any job it finds and ends when
        // the pass does.
        // (The pass's own thread may pop a spinner job while it waits for a step;
        // that one returns at once, or the pass would wait on itself.)
        //
        // The pool is as wide as the CPUs this process is getting (`cpu::pool`): a
        // spinning worker that the scheduler parks makes every step wait for it.
        use crate::cpu::pool::{self, Work};
        let rows: usize = seqs.iter().map(|s| s.1.len()).sum();
        let work = if rows <= 4 {
            Work::Decode
        } else {
            Work::Prompt
        };
        let done = AtomicBool::new(false);
        let done = &done;
        pool::run(work, rows, || {
            rayon::scope(|s| {
                let owner = rayon::current_thread_index();
                for _ in 1..rayon::current_num_threads() {
                    s.spawn(move |_| {
                        if rayon::current_thread_index() == owner {
                            return;
                        }
                        while !done.load(Ordering::Acquire) {
                            if let Some(rayon::Yield::Idle) = rayon::yield_now() {
                                std::hint::spin_loop();
                            }
                        }
                    });
                }
                let r = self.forward_in_pool(seqs, mode);
                done.store(true, Ordering::Release);
                r
            })
        })
    }

    fn forward_in_pool(
        &self,
        seqs: &mut [(&mut SeqCache, &[u32], usize)],
        mode: Pass,
    ) -> Result<Vec<Vec<f32>>> {
        let alone = mode == Pass::Alone;
        if seqs.is_empty() {
            return Ok(Vec::new());
        }
        // Row r belongs to sequence row_seq[r] at position row_pos[r].
        let mut row_seq = Vec::new();
        let mut row_pos = Vec::new();
        for (si, (cache, tokens, pos)) in seqs.iter_mut().enumerate() {
            let (seq, pos) = (tokens.len(), *pos);
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
            if pos > cache.len {
                candle_core::bail!("position {pos} is past the {} cached positions", cache.len);
            }
            cache.len = pos;
            if cache.layers.len() != self.layers.len() {
                cache.layers = vec![KvCache::new(self.n_kv_head, self.head_dim); self.layers.len()];
            }
            row_seq.extend(std::iter::repeat_n(si, seq));
            row_pos.extend(pos..pos + seq);
        }
        let rows = row_seq.len();
        let (hidden, nh, nkv, hd) = (self.hidden, self.n_head, self.n_kv_head, self.head_dim);
        let rep = nh / nkv;
        let style = self.style;
        // One sequence's rows form one batch, as llama.cpp would run them (its kernel
        // choice depends on the batch size); rows of several sequences are each
        // computed as alone.
        let batch = seqs.len() == 1 && !alone;
        let scale = match style.q_scale {
            Some(_) => 1.0,
            None => 1.0f32 / (hd as f32).sqrt(),
        };
        let mut x = Vec::with_capacity(rows * hidden);
        for (_, tokens, _) in seqs.iter() {
            for &t in tokens.iter() {
                self.embeddings.row(t as usize, &mut x)?;
            }
        }
        if let Some(s) = style.embed_scale {
            x.iter_mut().for_each(|v| *v *= s);
        }
        // Per rotary embedding, per row: the (cos, sin) pairs.
        let ropes: Vec<Vec<Vec<(f32, f32)>>> = self
            .ropes
            .iter()
            .map(|rope| {
                row_pos
                    .iter()
                    .map(|&p| {
                        let mut c = Vec::new();
                        ops::rope_cache(
                            p,
                            self.rope_pairs,
                            rope.theta_scale,
                            rope.freq_scale,
                            rope.factors.as_deref(),
                            rope.mscale,
                            &mut c,
                        );
                        c
                    })
                    .collect()
            })
            .collect();
        let rotate = match style.rope {
            RopeKind::Neox => ops::rope_neox,
            RopeKind::Norm => ops::rope_norm,
        };
        let act = match style.ffn {
            Ffn::GeGlu => ops::geglu,
            Ffn::SwiGlu => ops::swiglu_fast,
        };
        // The norm of `v` by `w` (rows of `w.len()`), in place (through one buffer
        // reused for the whole pass).
        let mut src = Vec::new();
        let mut norm_in_place = |v: &mut Vec<f32>, w: &[f32]| {
            src.clear();
            src.extend_from_slice(v);
            ops::rms_norm(&src, w, self.eps, v);
        };
        let mut h = vec![0f32; rows * hidden];
        let mut att = vec![0f32; rows * nh * hd];
        // Outputs of the layers' matmuls, reused by every layer (overwritten, never
        // cleared): q, k, v; attention output; gate, up; activation; down.
        let mut qkv = vec![Vec::new(); 3];
        let mut o = Vec::new();
        let mut gu = vec![Vec::new(); 2];
        let mut a = Vec::new();
        let mut y = Vec::new();
        let mut probs = Vec::new();
        // Rows past the attention of the last layer: all of them, until only those
        // whose logits are returned go on (below).
        let mut rows_on = rows;
        for (li, l) in self.layers.iter().enumerate() {
            ops::rms_norm(&x, &l.attn_norm, self.eps, &mut h);
            l.wqkv.forward_into(&h, rows, batch, &mut qkv)?;
            let [q, k, v] = &mut qkv[..] else {
                candle_core::bail!("q, k, v projections missing");
            };
            if let Some(biases) = &l.qkv_bias {
                for (out, b) in [&mut *q, &mut *k, &mut *v].into_iter().zip(biases) {
                    for row in out.chunks_exact_mut(b.len()) {
                        row.iter_mut().zip(b).for_each(|(o, b)| *o += b);
                    }
                }
            }
            if let Some(w) = &l.q_norm {
                norm_in_place(q, w);
            }
            if let Some(w) = &l.k_norm {
                norm_in_place(k, w);
            }
            // Row by row, rows on both cores for a batch.
            let rope_row = |((q, k), rope): (QkRow, &Vec<(f32, f32)>)| {
                for head in q.chunks_exact_mut(hd).chain(k.chunks_exact_mut(hd)) {
                    rotate(head, rope);
                }
                if let Some(s) = style.q_scale {
                    q.iter_mut().for_each(|v| *v *= s);
                }
            };
            if rows >= 8 {
                q.par_chunks_mut(nh * hd)
                    .zip(k.par_chunks_mut(nkv * hd))
                    .zip(ropes[l.rope].par_iter())
                    .for_each(rope_row);
            } else {
                q.chunks_mut(nh * hd)
                    .zip(k.chunks_mut(nkv * hd))
                    .zip(ropes[l.rope].iter())
                    .for_each(rope_row);
            }
            // Each sequence stores its rows in its own cache.
            let mut first = 0;
            for (cache, tokens, pos) in seqs.iter_mut() {
                let n = tokens.len();
                let w = nkv * hd;
                cache.layers[li].store(
                    *pos,
                    &k[first * w..(first + n) * w],
                    &v[first * w..(first + n) * w],
                );
                first += n;
            }
            let heads: Vec<&KvCache> = seqs.iter().map(|s| &s.0.layers[li]).collect();
            let lens: Vec<usize> = seqs.iter().map(|s| s.1.len()).collect();
            // One token with many keys: split by key and dimension (see `attend_split`).
            let split = (rows == 1 && attention::attend_steps_are_fast())
                .then(|| (l.first_key(row_pos[0]), row_pos[0] + 1))
                .filter(|&(first, total)| total - first >= SPLIT_KEYS);
            if let Some((first, total)) = split {
                ops::round_f16(q);
                attend_split(q, heads[0], rep, first, total, scale, &mut probs, &mut att);
            } else {
                // Per row and KV head: `per` of its `rep` query heads (adjacent) at once;
                // all of them unless that leaves a core idle (generation: one row, and
                // Gemma 3 has one KV head). Each head's result is the same either way.
                let per = (1..=rep)
                    .rev()
                    .filter(|p| rep.is_multiple_of(*p))
                    .find(|p| rows * nkv * (rep / p) >= rayon::current_num_threads())
                    .unwrap_or(1);
                att.par_chunks_mut(per * hd).enumerate().for_each_init(
                    AttnScratch::default,
                    |s, (c, out)| {
                        let parts = rep / per;
                        let (r, part) = (c / parts, c % parts);
                        let (i, g) = (r / nkv, r % nkv);
                        let si = row_seq[i];
                        let h0 = i * nh + g * rep + part * per;
                        let qs = &q[h0 * hd..(h0 + per) * hd];
                        let kv = heads[si].head(g);
                        let pos = row_pos[i];
                        let first = l.first_key(pos);
                        let one_token = lens[si] == 1 || alone;
                        attention::attend(one_token, qs, kv, first, pos + 1, scale, s, out);
                    },
                );
            }
            l.wo.forward_into(&att, rows, batch, &mut o)?;
            if li + 1 == self.layers.len() && !alone && seqs.len() < rows {
                // As llama.cpp does (`inp_out_ids`): past the last layer's attention,
                // only the row whose logits are returned (each sequence's last) goes on,
                // so the last feed-forward computes that row as its own product.
                let mut end = 0;
                let keep: Vec<usize> = seqs
                    .iter()
                    .map(|(_, tokens, _)| {
                        end += tokens.len();
                        end - 1
                    })
                    .collect();
                let pick = |v: &[f32]| -> Vec<f32> {
                    keep.iter()
                        .flat_map(|&r| v[r * hidden..(r + 1) * hidden].iter().copied())
                        .collect()
                };
                x = pick(&x);
                o = pick(&o);
                rows_on = keep.len();
                h.truncate(rows_on * hidden);
            }
            if let Some(w) = &l.post_attn_norm {
                norm_in_place(&mut o, w);
            }
            for (xi, oi) in x.iter_mut().zip(&o) {
                *xi += oi;
            }
            ops::rms_norm(&x, &l.ffn_norm, self.eps, &mut h);
            l.w13.forward_into(&h, rows_on, batch, &mut gu)?;
            let [g, u] = &gu[..] else {
                candle_core::bail!("gate and up projections missing");
            };
            a.resize(g.len(), 0.0);
            // Row by row (as ggml applies it), rows on both cores.
            let ff = g.len() / rows_on;
            a.par_chunks_mut(ff)
                .zip(g.par_chunks(ff))
                .zip(u.par_chunks(ff))
                .for_each(|((a, g), u)| act(g, u, a));
            l.w2.forward_into(&a, rows_on, batch, &mut y)?;
            if let Some(w) = &l.post_ffn_norm {
                norm_in_place(&mut y, w);
            }
            for (xi, yi) in x.iter_mut().zip(&y) {
                *xi += yi;
            }
        }
        // The rows left (each sequence's last; every row when verifying), normed,
        // through the output layer at once.
        for (cache, tokens, pos) in seqs.iter_mut() {
            cache.len = *pos + tokens.len();
        }
        let out_rows = rows_on;
        let mut last = vec![0f32; out_rows * hidden];
        for (xr, lr) in x.chunks_exact(hidden).zip(last.chunks_exact_mut(hidden)) {
            ops::rms_norm(xr, &self.norm, self.eps, lr);
        }
        let logits = self.output.forward_rows(&last, out_rows)?;
        let vocab = logits.len() / out_rows;
        Ok(logits.chunks_exact(vocab).map(<[f32]>::to_vec).collect())
    }
}

/// How a pass computes its rows and which logits it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// One sequence's rows as one batch (as llama.cpp runs a prompt), rows of
    /// several sequences each as alone; the last row's logits of each sequence.
    Batch,
    /// Every row as a one-token step would compute it; every row's logits.
    Alone,
}

/// One row's query and key values.
type QkRow<'a> = (&'a mut [f32], &'a mut [f32]);

/// Keys (past a sliding window's start) from which one token's attention is split
/// across cores by key and by output dimension ([`attend_split`]) rather than by
/// KV head.
const SPLIT_KEYS: usize = 256;

/// One token's attention over positions `first..total` of `kv`, in three parallel
/// steps so that the cores share every KV head's work and each reads its own part of
/// the cache: the scores by key range, the softmax by query head, the outputs by
/// dimension range. The bits are [`attention::attend`]'s (tested). `q`: the token's
/// query heads, already f16-rounded, `rep` per KV head; `att` gets each head's output.
#[allow(clippy::too_many_arguments)]
fn attend_split(
    q: &[f32],
    kv: &KvCache,
    rep: usize,
    first: usize,
    total: usize,
    scale: f32,
    probs: &mut Vec<f32>,
    att: &mut [f32],
) {
    let hd = kv.width / kv.heads();
    let parts = rayon::current_num_threads().max(1);
    let padded = total.div_ceil(64) * 64;
    // Scores: each KV head's keys in `parts` ranges.
    let span = (total - first).div_ceil(parts);
    let ranges: Vec<(usize, usize, usize)> = (0..kv.heads())
        .flat_map(|g| {
            (0..parts).map(move |t| (g, first + t * span, (first + (t + 1) * span).min(total)))
        })
        .filter(|&(_, ja, jb)| ja < jb)
        .collect();
    let scores: Vec<(usize, usize, usize, Vec<f32>)> = ranges
        .into_par_iter()
        .map(|(g, ja, jb)| {
            let mut out = vec![0f32; rep * (jb - ja)];
            let qg = &q[g * rep * hd..(g + 1) * rep * hd];
            attention::attend_scores(true, qg, kv.head(g), ja, jb, scale, &mut out);
            (g, ja, jb, out)
        })
        .collect();
    probs.clear();
    probs.resize(kv.heads() * rep * padded, 0.0);
    for (g, ja, jb, out) in scores {
        for (i, part) in out.chunks_exact(jb - ja).enumerate() {
            let at = (g * rep + i) * padded;
            probs[at + ja..at + jb].copy_from_slice(part);
        }
    }
    probs
        .par_chunks_mut(padded)
        .for_each(|row| attention::attend_softmax(row, first, total));
    // Outputs: each KV head's dimensions in `parts` ranges (multiples of 4).
    let step = hd.div_ceil(parts).div_ceil(4) * 4;
    let ranges: Vec<(usize, usize, usize)> = (0..kv.heads())
        .flat_map(|g| (0..parts).map(move |t| (g, t * step, ((t + 1) * step).min(hd))))
        .filter(|&(_, da, db)| da < db)
        .collect();
    let probs = &probs[..];
    let outs: Vec<(usize, usize, usize, Vec<f32>)> = ranges
        .into_par_iter()
        .map(|(g, da, db)| {
            let mut out = vec![0f32; rep * (db - da)];
            let p = &probs[g * rep * padded..(g + 1) * rep * padded];
            attention::attend_values(true, kv.head(g), p, padded, first, da, db, &mut out);
            (g, da, db, out)
        })
        .collect();
    for (g, da, db, out) in outs {
        for (i, part) in out.chunks_exact(db - da).enumerate() {
            let at = (g * rep + i) * hd;
            att[at + da..at + db].copy_from_slice(part);
        }
    }
}
