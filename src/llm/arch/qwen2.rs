//! Qwen2 (Qwen2.5, Qwen2.5-Coder) as llama.cpp's `llm_build_qwen2` builds it: llama's
//! graph with a bias added to each of the q, k and v projections (`ggml_add` after
//! the matmul, in f32) and NeoX rotary pairs with base `rope.freq_base` (10⁶ for
//! Qwen2.5).

use super::{Arch, AttnScale, Block, Decoder, Ffn, Rope, RopeFactors, LLAMA_BLOCK};

pub const DECODER: Decoder = Decoder {
    arch: Arch::Qwen2,
    block: Block {
        qkv_bias: true,
        ..LLAMA_BLOCK
    },
    rope: Rope::Neox,
    rope_base: 10_000.0,
    sliding: None,
    ffn: Ffn::SwiGlu,
    embed_scale: false,
    attn_scale: AttnScale::HeadDim,
    rope_factors: RopeFactors::None,
};
