//! llama (SmolLM2, Llama 3.x, TinyLlama) as llama.cpp's `llm_build_llama` builds it:
//! RMS norms before attention and the feed-forward, adjacent rotary pairs with base
//! `rope.freq_base` (10⁴ by default), grouped-query attention scaled by
//! `1/√head_dim`, a SwiGLU feed-forward; the output weights tied to the token
//! embeddings when the file has no `output.weight`.

use super::{Arch, AttnScale, Decoder, Ffn, Rope, LLAMA_BLOCK};

pub const DECODER: Decoder = Decoder {
    arch: Arch::Llama,
    block: LLAMA_BLOCK,
    rope: Rope::Norm,
    rope_base: 10_000.0,
    sliding: None,
    ffn: Ffn::SwiGlu,
    embed_scale: false,
    attn_scale: AttnScale::HeadDim,
};
