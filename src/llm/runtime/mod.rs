//! The numeric runtime under [`GgufLlm`](super::GgufLlm): Quire's own forward passes
//! on the CPU, computing each operation as llama.cpp's CPU backend does, so that
//! logits and greedy tokens are llama.cpp's bit for bit (tested against llama.cpp run
//! here).
//!
//! - [`llama`]: the dense decoders (llama, Qwen2, Qwen3, Gemma 3): loading their weights and
//!   the forward pass over a batch of sequences, with prefix reuse.
//! - [`candle`]: the same decoders over candle tensors on any candle device (the GPU
//!   path; on the CPU it is what tests compare with the own kernels).
//! - [`hparams`]: a decoder's shape and settings from the GGUF metadata, read once
//!   for both.
//!
//! Both loaders build a model from its architecture's description
//! ([`crate::llm::arch::Decoder`]: tensor names, optional biases and norms, rope kind,
//! feed-forward, attention scale); no architecture is named here.
//! - [`attention`]: scores, softmax and weighted values of one layer, whole or split.
//! - [`kv_cache`]: the per-layer cache of keys and values.
//! - [`ops`]: element-wise steps (norms, rotary embeddings, activations, f16 rounding);
//!   [`wide`] holds their AVX-512 register forms, [`wide_avx2`] attention's AVX2 ones.
//! - [`matmul`]: quantized matrix products, one file per arithmetic (and
//!   [`matmul::timing`], one product timed alone for the benchmark).
//!
//! Imports point one way: `candle` → `hparams`, `matmul`; `llama` → `hparams`, `attention`, `kv_cache`, `ops`, `matmul`;
//! `attention` → `kv_cache`, `ops`, `wide`, `wide_avx2`, `tables`; `ops` → `wide`,
//! `tables`; `wide` → `tables`; `wide_avx2` → `ops`; and all of them → `crate::cpu`; `llama`, `candle` and
//! `hparams` read `crate::llm::arch`, which imports nothing of the runtime.

pub(crate) mod attention;
pub mod candle;
pub mod hparams;
pub(crate) mod kv_cache;
pub mod llama;
pub mod matmul;
pub(crate) mod ops;
mod tables;
#[cfg(target_arch = "x86_64")]
mod wide;
#[cfg(target_arch = "x86_64")]
mod wide_avx2;
