//! Phi-3 (Phi-3.5-mini, Phi-4-mini) as llama.cpp's `llm_build_phi3` builds it: llama's
//! graph with the q, k and v projections fused (`attn_qkv`: query rows, then key's,
//! then value's) and the gate and up projections fused (`ffn_up`: 2·n_ff rows, the
//! gate's first, SiLU of the first half times the second: `LLM_FFN_SWIGLU`,
//! `LLM_FFN_SEQ`); NeoX rotary pairs over the first `rope.dimension_count` values of
//! each head (all of Phi-3.5's 96, 96 of Phi-4-mini's 128), divided by the long
//! factors (`rope_factors_long`) when the context is longer than
//! `rope.scaling.original_context_length`, else the short ones, the rotation scaled by
//! `rope.scaling.attn_factor`; queries multiplied by `1/√head_dim` after the rotary
//! embedding, attention's own scale then 1. The head width is hidden / heads; the
//! output is tied to the embeddings where the file has no `output.weight`.

use super::{Arch, AttnScale, Block, Decoder, Ffn, Rope, RopeFactors, LLAMA_BLOCK};

pub const DECODER: Decoder = Decoder {
    arch: Arch::Phi3,
    block: Block {
        gate_up: true,
        ..LLAMA_BLOCK
    },
    rope: Rope::Neox,
    rope_base: 10_000.0,
    sliding: None,
    ffn: Ffn::SwiGlu,
    embed_scale: false,
    attn_scale: AttnScale::Queries(head_width),
    rope_factors: RopeFactors::ShortLong,
};

/// Queries are scaled by `1/√head_dim`.
fn head_width(_blocks: usize, _hidden: usize, _heads: usize, head_dim: usize) -> usize {
    head_dim
}
