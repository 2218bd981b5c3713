//! The architectures Quire runs, by a GGUF file's `general.architecture`: [`Arch`],
//! parsed once when a file is loaded or described, and for each dense decoder its
//! [`Decoder`] description — tensor names, optional biases and norms, RoPE kind,
//! feed-forward and attention quirks — that both forward passes read
//! ([`super::runtime::llama`] on the own kernels, [`super::runtime::candle`] on any
//! candle device). One file per architecture, as candle-transformers has one per model:
//! [`llama`], [`qwen2`], [`qwen3`], [`gemma3`], [`phi3`].
//!
//! A new dense architecture goes here: a file with its `DECODER`, a variant of
//! [`Arch`] and its line in [`Arch::forward`]; its shape comes from the metadata keys
//! under its name ([`super::runtime::hparams`]). This module imports nothing else of
//! `llm` but the GGUF header ([`super::gguf`]): the model and the runtime read it.

pub mod gemma3;
pub mod llama;
pub mod phi3;
pub mod qwen2;
pub mod qwen3;

use super::gguf::GgufFile;
use crate::{Error, Result};

/// An architecture Quire can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    Llama,
    Qwen2,
    Qwen3,
    Gemma3,
    Phi3,
}

/// Which forward pass runs an architecture.
#[derive(Clone, Copy, Debug)]
pub enum Forward {
    /// Quire's own (bit for bit with llama.cpp's CPU backend), built from this
    /// description; on a GPU, the candle pass reads the same description.
    Own(&'static Decoder),
}

impl Arch {
    /// Every architecture, in the order messages list them.
    pub const ALL: [Arch; 5] = [
        Arch::Llama,
        Arch::Qwen2,
        Arch::Qwen3,
        Arch::Gemma3,
        Arch::Phi3,
    ];

    /// Its `general.architecture` name.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Qwen2 => "qwen2",
            Arch::Qwen3 => "qwen3",
            Arch::Gemma3 => "gemma3",
            Arch::Phi3 => "phi3",
        }
    }

    /// The architecture of `general.architecture` = `name`, if Quire runs it.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The architecture of the GGUF file `g`: an error naming the file when its
    /// `general.architecture` is missing or not one Quire runs.
    pub fn of(g: &GgufFile) -> Result<Self> {
        let name = g.architecture()?;
        Self::parse(name).ok_or_else(|| {
            Error::model_format(
                &g.path,
                format!(
                    "unsupported architecture {name:?} (supported: {})",
                    supported()
                ),
            )
        })
    }

    /// The forward pass that runs it.
    pub fn forward(self) -> Forward {
        match self {
            Arch::Llama => Forward::Own(&llama::DECODER),
            Arch::Qwen2 => Forward::Own(&qwen2::DECODER),
            Arch::Qwen3 => Forward::Own(&qwen3::DECODER),
            Arch::Gemma3 => Forward::Own(&gemma3::DECODER),
            Arch::Phi3 => Forward::Own(&phi3::DECODER),
        }
    }

    /// "fast": every architecture runs on Quire's own forward pass.
    pub fn speed(self) -> &'static str {
        match self.forward() {
            Forward::Own(_) => "fast",
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The architectures' names, for messages: "llama, qwen2, qwen3, gemma3, phi3".
pub fn supported() -> String {
    Arch::ALL.map(Arch::name).join(", ")
}

/// A dense decoder: llama's graph (RMS norms, rotary embeddings, grouped-query
/// attention, a gated feed-forward) and what its architecture changes in it.
#[derive(Debug)]
pub struct Decoder {
    pub arch: Arch,
    /// Each block's tensors.
    pub block: Block,
    /// How rotary embeddings pair a head's values.
    pub rope: Rope,
    /// `rope.freq_base` where the file does not give it.
    pub rope_base: f32,
    /// Sliding-window layers, with a rope base of their own (Gemma 3).
    pub sliding: Option<Sliding>,
    /// The feed-forward's gate.
    pub ffn: Ffn,
    /// Token embeddings multiplied by √hidden (Gemma).
    pub embed_scale: bool,
    /// How attention's scores are scaled.
    pub attn_scale: AttnScale,
    /// Per-pair rotary frequency factors the file may hold.
    pub rope_factors: RopeFactors,
}

/// Rotary frequency factors (`ggml_rope_ext`'s `freq_factors`: each pair's angle
/// divided by its factor), read where the file has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RopeFactors {
    /// None.
    None,
    /// Llama 3.1+'s [`ROPE_FREQS`], one factor per rotated pair.
    Freqs,
    /// Phi-3's [`ROPE_FACTORS_LONG`] when the context is longer than the original one
    /// (`rope.scaling.original_context_length`), else [`ROPE_FACTORS_SHORT`]
    /// (llama.cpp's `get_rope_factors`).
    ShortLong,
}

/// Phi-3's rotary factors beyond the original context.
pub const ROPE_FACTORS_LONG: &str = "rope_factors_long.weight";
/// Phi-3's rotary factors within the original context.
pub const ROPE_FACTORS_SHORT: &str = "rope_factors_short.weight";

/// Llama 3's rotary frequency factors (one tensor for all layers).
pub const ROPE_FREQS: &str = "rope_freqs.weight";

impl RopeFactors {
    /// The tensor of factors to read, if the architecture has them and the file holds
    /// it (`has(name)`); they are `rope.dimension_count / 2` values. `long`: the
    /// context is longer than the model's original one.
    pub fn tensor(self, has: impl Fn(&str) -> bool, long: bool) -> Option<&'static str> {
        let name = match self {
            RopeFactors::None => return None,
            RopeFactors::Freqs => ROPE_FREQS,
            RopeFactors::ShortLong if long => ROPE_FACTORS_LONG,
            RopeFactors::ShortLong => ROPE_FACTORS_SHORT,
        };
        Some(name).filter(|n| has(n))
    }
}

/// The token embeddings (also the output weights where the file has no
/// [`OUTPUT`]).
pub const TOKEN_EMBD: &str = "token_embd.weight";
/// The norm before the output layer.
pub const OUTPUT_NORM: &str = "output_norm.weight";
/// The output layer, when it is not tied to the embeddings.
pub const OUTPUT: &str = "output.weight";

/// The names of a block's tensors in llama.cpp's GGUF layout (`blk.N.<name>.weight`);
/// the optional ones are `None` for an architecture without them.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub attn_norm: &'static str,
    pub attn_q: &'static str,
    pub attn_k: &'static str,
    pub attn_v: &'static str,
    pub attn_output: &'static str,
    pub ffn_norm: &'static str,
    pub ffn_gate: &'static str,
    pub ffn_up: &'static str,
    pub ffn_down: &'static str,
    /// Biases added to the q, k and v projections (`blk.N.attn_q.bias`, …), in f32
    /// after the matmul.
    pub qkv_bias: bool,
    /// RMS norms of each query and key head, after the projections.
    pub q_norm: Option<&'static str>,
    pub k_norm: Option<&'static str>,
    /// Norms of the attention's and the feed-forward's outputs, before the residual.
    pub post_attn_norm: Option<&'static str>,
    pub post_ffn_norm: Option<&'static str>,
    /// `ffn_up` holds the gate's rows then the up projection's (2·`feed_forward_length`
    /// rows), and there is no `ffn_gate` (Phi-3: `LLM_FFN_SWIGLU`, `LLM_FFN_SEQ`).
    pub gate_up: bool,
}

/// The fused q/k/v projection (`blk.N.attn_qkv.weight`: the query rows, then the
/// key's, then the value's), which llama.cpp takes instead of `attn_q`/`attn_k`/
/// `attn_v` wherever a file has it (Phi-3 always).
pub const ATTN_QKV: &str = "attn_qkv";

/// llama's block: no biases, no norms beyond the two before attention and the
/// feed-forward.
pub const LLAMA_BLOCK: Block = Block {
    attn_norm: "attn_norm",
    attn_q: "attn_q",
    attn_k: "attn_k",
    attn_v: "attn_v",
    attn_output: "attn_output",
    ffn_norm: "ffn_norm",
    ffn_gate: "ffn_gate",
    ffn_up: "ffn_up",
    ffn_down: "ffn_down",
    qkv_bias: false,
    q_norm: None,
    k_norm: None,
    post_attn_norm: None,
    post_ffn_norm: None,
    gate_up: false,
};

/// Block `i`'s tensor names in full, those its architecture has.
#[derive(Debug, Clone)]
pub struct BlockNames {
    pub attn_norm: String,
    pub attn_q: String,
    pub attn_k: String,
    pub attn_v: String,
    pub attn_output: String,
    pub ffn_norm: String,
    pub ffn_gate: String,
    pub ffn_up: String,
    pub ffn_down: String,
    /// q, k, v.
    pub qkv_bias: Option<[String; 3]>,
    pub q_norm: Option<String>,
    pub k_norm: Option<String>,
    pub post_attn_norm: Option<String>,
    pub post_ffn_norm: Option<String>,
    /// The fused q/k/v projection, used where the file has it ([`ATTN_QKV`]); its bias.
    pub attn_qkv: String,
    pub attn_qkv_bias: String,
    /// `ffn_up` is the gate and the up projection ([`Block::gate_up`]).
    pub gate_up: bool,
}

/// A block's vectors (its norms, and the biases and norms its architecture has), as
/// either loader reads them: `T` is what a loader makes of one (a `Vec<f32>`, a
/// candle tensor).
pub struct BlockVectors<T> {
    pub attn_norm: T,
    pub ffn_norm: T,
    /// q, k, v.
    pub qkv_bias: Option<[T; 3]>,
    pub q_norm: Option<T>,
    pub k_norm: Option<T>,
    pub post_attn_norm: Option<T>,
    pub post_ffn_norm: Option<T>,
}

/// The widths a block's vectors have.
#[derive(Debug, Clone, Copy)]
pub struct Widths {
    pub hidden: usize,
    pub head_dim: usize,
    pub n_head: usize,
    pub n_kv_head: usize,
}

impl BlockNames {
    /// Read the block's vectors with `read(name, length)`.
    pub fn vectors<T, E>(
        &self,
        w: Widths,
        mut read: impl FnMut(&str, usize) -> std::result::Result<T, E>,
    ) -> std::result::Result<BlockVectors<T>, E> {
        let kv = w.n_kv_head * w.head_dim;
        let qkv_bias = match &self.qkv_bias {
            Some([q, k, v]) => Some([read(q, w.n_head * w.head_dim)?, read(k, kv)?, read(v, kv)?]),
            None => None,
        };
        let mut opt =
            |name: &Option<String>, len: usize| name.as_deref().map(|n| read(n, len)).transpose();
        let q_norm = opt(&self.q_norm, w.head_dim)?;
        let k_norm = opt(&self.k_norm, w.head_dim)?;
        let post_attn_norm = opt(&self.post_attn_norm, w.hidden)?;
        let post_ffn_norm = opt(&self.post_ffn_norm, w.hidden)?;
        Ok(BlockVectors {
            attn_norm: read(&self.attn_norm, w.hidden)?,
            ffn_norm: read(&self.ffn_norm, w.hidden)?,
            qkv_bias,
            q_norm,
            k_norm,
            post_attn_norm,
            post_ffn_norm,
        })
    }
}

impl Block {
    /// The names of block `i`'s tensors.
    pub fn names(&self, i: usize) -> BlockNames {
        let w = |n: &str| format!("blk.{i}.{n}.weight");
        let b = |n: &str| format!("blk.{i}.{n}.bias");
        BlockNames {
            attn_norm: w(self.attn_norm),
            attn_q: w(self.attn_q),
            attn_k: w(self.attn_k),
            attn_v: w(self.attn_v),
            attn_output: w(self.attn_output),
            ffn_norm: w(self.ffn_norm),
            ffn_gate: w(self.ffn_gate),
            ffn_up: w(self.ffn_up),
            ffn_down: w(self.ffn_down),
            qkv_bias: self
                .qkv_bias
                .then(|| [b(self.attn_q), b(self.attn_k), b(self.attn_v)]),
            q_norm: self.q_norm.map(w),
            k_norm: self.k_norm.map(w),
            post_attn_norm: self.post_attn_norm.map(w),
            post_ffn_norm: self.post_ffn_norm.map(w),
            attn_qkv: w(ATTN_QKV),
            attn_qkv_bias: b(ATTN_QKV),
            gate_up: self.gate_up,
        }
    }
}

/// Which values of a head a rotary embedding turns together (ggml's rope types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rope {
    /// Adjacent pairs `(2i, 2i + 1)`: `GGML_ROPE_TYPE_NORM`.
    Norm,
    /// Pairs `(i, i + n/2)`: `GGML_ROPE_TYPE_NEOX`.
    Neox,
}

/// The feed-forward's gated activation: `act(gate) · up`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ffn {
    /// SiLU (`LLM_FFN_SILU`, `LLM_FFN_PAR`).
    SwiGlu,
    /// GELU (`LLM_FFN_GELU`, `LLM_FFN_PAR`).
    GeGlu,
}

/// How attention's scores are scaled.
#[derive(Clone, Copy, Debug)]
pub enum AttnScale {
    /// By `1/√head_dim` inside attention (llama.cpp's `kq_scale`).
    HeadDim,
    /// Queries multiplied by `1/√width` after the rotary embedding, attention's own
    /// scale then 1; `width(blocks, hidden, heads, head_dim)` (llama.cpp's
    /// `f_attention_scale`).
    Queries(fn(usize, usize, usize, usize) -> usize),
}

/// Sliding-window attention on all but every `pattern`-th layer, those layers with
/// their own rope base; a key is visible there while `query_pos − key_pos < window`
/// (`attention.sliding_window`).
#[derive(Clone, Copy, Debug)]
pub struct Sliding {
    /// `rope.local_freq_base` where the file does not give it.
    pub local_rope_base: f32,
    /// `attention.sliding_window_type` where the file does not give it.
    pub pattern: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_others_are_unsupported() {
        for a in Arch::ALL {
            assert_eq!(Arch::parse(a.name()), Some(a));
            assert_eq!(a.to_string(), a.name());
            let Forward::Own(d) = a.forward();
            assert_eq!(d.arch, a, "{a}'s description is another's");
        }
        assert_eq!(Arch::parse("mamba"), None);
        assert_eq!(Arch::parse("Llama"), None);
        assert_eq!(supported(), "llama, qwen2, qwen3, gemma3, phi3");
        assert_eq!(Arch::Gemma3.speed(), "fast");
        assert_eq!(Arch::Qwen3.speed(), "fast");
        assert_eq!(Arch::Phi3.speed(), "fast");
    }

    #[test]
    fn block_names_are_llamacpps() {
        let n = LLAMA_BLOCK.names(3);
        assert_eq!(n.attn_q, "blk.3.attn_q.weight");
        assert_eq!(n.ffn_down, "blk.3.ffn_down.weight");
        assert!(n.qkv_bias.is_none() && n.q_norm.is_none() && n.post_ffn_norm.is_none());
        let n = qwen2::DECODER.block.names(0);
        assert_eq!(
            n.qkv_bias,
            Some(["attn_q", "attn_k", "attn_v"].map(|t| format!("blk.0.{t}.bias")))
        );
        let n = phi3::DECODER.block.names(0);
        assert_eq!(n.attn_qkv, "blk.0.attn_qkv.weight");
        assert!(n.gate_up && n.ffn_up == "blk.0.ffn_up.weight");
        assert!(!LLAMA_BLOCK.names(0).gate_up);
        let n = qwen3::DECODER.block.names(2);
        assert_eq!(n.q_norm.as_deref(), Some("blk.2.attn_q_norm.weight"));
        assert_eq!(n.k_norm.as_deref(), Some("blk.2.attn_k_norm.weight"));
        assert!(n.qkv_bias.is_none() && n.post_attn_norm.is_none());
        let n = gemma3::DECODER.block.names(1);
        assert_eq!(n.q_norm.as_deref(), Some("blk.1.attn_q_norm.weight"));
        assert_eq!(n.k_norm.as_deref(), Some("blk.1.attn_k_norm.weight"));
        assert_eq!(
            n.post_attn_norm.as_deref(),
            Some("blk.1.post_attention_norm.weight")
        );
        assert_eq!(
            n.post_ffn_norm.as_deref(),
            Some("blk.1.post_ffw_norm.weight")
        );
    }
}
