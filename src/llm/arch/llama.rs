//! llama (SmolLM2, Llama 3.x, TinyLlama) as llama.cpp's `llm_build_llama` builds it:
//! RMS norms before attention and the feed-forward, adjacent rotary pairs with base
//! `rope.freq_base` (10⁴ by default), grouped-query attention scaled by
//! `1/√head_dim`, a SwiGLU feed-forward; the output weights tied to the token
//! embeddings when the file has no `output.weight`. Llama 3.1 and later carry rotary
//! frequency factors (`rope_freqs.weight`, one per rotated pair: each pair's angle is
//! divided by its factor), which llama.cpp applies where the file has them. Llama 3's
//! vocabulary (`tokenizer.ggml.pre` = `llama-bpe`) is the tokenizer's business.

use super::{Arch, AttnScale, Decoder, Ffn, Rope, RopeFactors, LLAMA_BLOCK};

pub const DECODER: Decoder = Decoder {
    arch: Arch::Llama,
    block: LLAMA_BLOCK,
    rope: Rope::Norm,
    rope_base: 10_000.0,
    sliding: None,
    ffn: Ffn::SwiGlu,
    embed_scale: false,
    attn_scale: AttnScale::HeadDim,
    rope_factors: RopeFactors::Freqs,
};
