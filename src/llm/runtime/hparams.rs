//! A decoder's shape and settings as a GGUF file's metadata gives them, read once for
//! both forward passes ([`super::llama`] on the own kernels, [`super::candle`] on any
//! candle device): the same keys, defaults and checks as llama.cpp's `llm_load_hparams`,
//! the defaults an architecture's own taken from its description ([`crate::llm::arch`]).

use candle_core::quantized::gguf_file;
use candle_core::Result;

use crate::llm::arch::{AttnScale, Decoder};

/// A decoder's hyperparameters.
#[derive(Clone, Debug)]
pub struct Hparams {
    /// The architecture's description.
    pub decoder: &'static Decoder,
    pub n_head: usize,
    pub n_kv_head: usize,
    pub blocks: usize,
    pub hidden: usize,
    pub head_dim: usize,
    /// Rotated values per head (`rope.dimension_count`, at most `head_dim`).
    pub rope_dim: usize,
    pub eps: f32,
    /// The global rope base (`rope.freq_base`).
    pub rope_base: f32,
    /// The base of the sliding-window layers (`rope.local_freq_base`).
    pub local_rope_base: Option<f32>,
    /// llama.cpp's `rope_freq_scale_train`: 1 / `rope.scaling.factor`.
    pub freq_scale: f32,
    /// What the rotation's cos and sin are multiplied by (`rope.scaling.attn_factor`,
    /// 1 by default: llama.cpp's `rope_attn_factor`, Phi-3.5's long-context scale).
    pub rope_attn_factor: f32,
    /// The context the model was trained for before any extension
    /// (`rope.scaling.original_context_length`, else `context_length`): longer
    /// contexts take Phi-3's long rope factors.
    pub orig_ctx: usize,
    /// What queries are scaled by the square root of ([`AttnScale`]): the head width
    /// unless the architecture says otherwise.
    pub q_per: usize,
    /// The sliding window, and every how many layers one is global.
    pub window: Option<usize>,
    pub pattern: usize,
}

impl Hparams {
    /// Read the metadata of `ct`, a file of `decoder`'s architecture;
    /// mixture-of-experts or inconsistent head shapes are errors.
    pub fn read(ct: &gguf_file::Content, decoder: &'static Decoder) -> Result<Self> {
        let name = decoder.arch.name();
        let key = |s: &str| format!("{name}.{s}");
        let md = |s: &str| match ct.metadata.get(&key(s)) {
            None => candle_core::bail!("cannot find {} in metadata", key(s)),
            Some(v) => Ok(v),
        };
        let md_u = |s: &str| md(s).and_then(|v| v.to_u32()).map(|v| v as usize);
        let md_f = |s: &str| md(s).and_then(|v| v.to_f32());
        if md_u("expert_count").unwrap_or(0) > 1 {
            candle_core::bail!("mixture-of-experts models are not supported");
        }
        let n_head = md_u("attention.head_count")?;
        let n_kv_head = md_u("attention.head_count_kv").unwrap_or(n_head);
        let blocks = md_u("block_count")?;
        let hidden = md_u("embedding_length")?;
        if n_head == 0 || n_kv_head == 0 || !n_head.is_multiple_of(n_kv_head) {
            candle_core::bail!("inconsistent head counts ({n_head} heads, {n_kv_head} kv heads)");
        }
        let head_dim = match md_u("attention.key_length") {
            Ok(d) => d,
            Err(_) if hidden.is_multiple_of(n_head) => hidden / n_head,
            Err(_) => candle_core::bail!("{hidden} hidden values do not split into {n_head} heads"),
        };
        if md_u("attention.value_length").unwrap_or(head_dim) != head_dim || head_dim == 0 {
            candle_core::bail!("keys and values of different widths are not supported");
        }
        let factor = md_f("rope.scaling.factor").unwrap_or(0.0);
        Ok(Self {
            n_head,
            n_kv_head,
            blocks,
            hidden,
            head_dim,
            rope_dim: md_u("rope.dimension_count")
                .unwrap_or(head_dim)
                .min(head_dim),
            eps: md_f("attention.layer_norm_rms_epsilon")?,
            rope_base: md_f("rope.freq_base").unwrap_or(decoder.rope_base),
            local_rope_base: decoder
                .sliding
                .map(|s| md_f("rope.local_freq_base").unwrap_or(s.local_rope_base)),
            freq_scale: if factor > 0.0 { 1.0 / factor } else { 1.0 },
            rope_attn_factor: md_f("rope.scaling.attn_factor").unwrap_or(1.0),
            orig_ctx: md_u("rope.scaling.original_context_length")
                .or_else(|_| md_u("context_length"))
                .unwrap_or(usize::MAX),
            q_per: match decoder.attn_scale {
                AttnScale::HeadDim => head_dim,
                AttnScale::Queries(width) => width(blocks, hidden, n_head, head_dim),
            },
            window: md_u("attention.sliding_window").ok().filter(|&w| w > 0),
            pattern: md_u("attention.sliding_window_type")
                .unwrap_or(decoder.sliding.map_or(1, |s| s.pattern))
                .max(1),
            decoder,
        })
    }

    /// Whether layer `i` attends over the sliding window (all but every `pattern`-th
    /// layer of an architecture with one), with the local rope base.
    pub fn sliding(&self, i: usize) -> bool {
        self.decoder.sliding.is_some() && !(i + 1).is_multiple_of(self.pattern)
    }
}
