//! The embedder's own CPU kernels, chosen by `encoder::Kernels`: `igemm.rs` int8
//! products on AVX-512 VNNI with f32 outliers, `bgemm.rs` attention's products in
//! bf16 on AVX512-BF16, `sgemm.rs` AVX-512 f32 products over weights packed at load,
//! `amx.rs` bf16 tiles, `ops.rs` the element-wise work. The lane helpers they share
//! are `cpu::simd`'s.

pub(crate) mod amx;
pub(crate) mod bgemm;
pub(crate) mod igemm;
pub(crate) mod ops;
pub(crate) mod sgemm;
