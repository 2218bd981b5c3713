//! Gemma 3 as llama.cpp's `llm_build_gemma3_iswa` builds it: embeddings scaled by
//! √hidden; RMS norms of each query and key head; NeoX rotary pairs, with base
//! `rope.local_freq_base` (10⁴) on the sliding-window layers (five of every six) and
//! `rope.freq_base` (10⁶) on the others; queries scaled by `1/√head_dim` before
//! attention (whose own scale is then 1); a key is visible on a sliding layer while
//! `query_pos − key_pos < window`; norms after attention and after the feed-forward,
//! which is GELU-gated (`LLM_FFN_GELU`, `LLM_FFN_PAR`); output tied to the embeddings.

use super::{Arch, AttnScale, Block, Decoder, Ffn, Rope, RopeFactors, Sliding, LLAMA_BLOCK};

pub const DECODER: Decoder = Decoder {
    arch: Arch::Gemma3,
    block: Block {
        q_norm: Some("attn_q_norm"),
        k_norm: Some("attn_k_norm"),
        post_attn_norm: Some("post_attention_norm"),
        post_ffn_norm: Some("post_ffw_norm"),
        ..LLAMA_BLOCK
    },
    rope: Rope::Neox,
    rope_base: 1_000_000.0,
    sliding: Some(Sliding {
        local_rope_base: 10_000.0,
        pattern: 6,
    }),
    ffn: Ffn::GeGlu,
    embed_scale: true,
    attn_scale: AttnScale::Queries(query_width),
    rope_factors: RopeFactors::None,
};

/// What queries are scaled by the square root of (llama.cpp's `f_attention_scale`):
/// Gemma 3 27B (62 layers) the hidden size per head, every other size its head width.
fn query_width(blocks: usize, hidden: usize, heads: usize, head_dim: usize) -> usize {
    if blocks == 62 {
        hidden / heads
    } else {
        head_dim
    }
}
