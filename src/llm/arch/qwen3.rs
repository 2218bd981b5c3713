//! Qwen3 (dense: 0.6B–32B) as llama.cpp's `llm_build_qwen3` builds it: llama's graph
//! without q/k/v biases, with an RMS norm of each query and key head after the
//! projections (`attn_q_norm`, `attn_k_norm`, before the rotary embedding), NeoX
//! rotary pairs with base `rope.freq_base` (10⁶ in the released files), attention
//! scaled by `1/√head_dim`; the head width is `qwen3.attention.key_length`, which
//! need not be hidden / heads (Qwen3 0.6B: 1024 hidden, 16 heads of 128).

use super::{Arch, AttnScale, Block, Decoder, Ffn, Rope, RopeFactors, LLAMA_BLOCK};

pub const DECODER: Decoder = Decoder {
    arch: Arch::Qwen3,
    block: Block {
        q_norm: Some("attn_q_norm"),
        k_norm: Some("attn_k_norm"),
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
