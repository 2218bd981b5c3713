//! ggml's lookup tables and the lane width the runtime's vector code shares, kept apart
//! so that [`ops`](super::ops) and its AVX-512 forms in [`wide`](super::wide) both read
//! them without importing each other. `ggml_table_gelu_f16` is built as llama.cpp's
//! `ggml_cpu_init` builds it (`ggml-cpu/ggml-cpu.c`).

use half::f16;

/// Lanes of an AVX-512 register of f32.
pub(super) const LANES: usize = 16;

/// `ggml_table_gelu_f16`: GELU (tanh approximation) of every f16 value, as f16.
pub(super) static GELU_F16: std::sync::LazyLock<Vec<f16>> = std::sync::LazyLock::new(|| {
    const GELU_COEF_A: f32 = 0.044715;
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    (0..=u16::MAX)
        .map(|b| {
            let x = f16::from_bits(b).to_f32();
            // GCC contracts `1 + a·x·x` into a fused multiply-add.
            let inner = SQRT_2_OVER_PI * x * (GELU_COEF_A * x).mul_add(x, 1.0);
            f16::from_f32(0.5 * x * (1.0 + inner.tanh()))
        })
        .collect()
});

/// [`GELU_F16`] widened, for a gather.
pub(super) static GELU_F32: std::sync::LazyLock<Vec<f32>> =
    std::sync::LazyLock::new(|| GELU_F16.iter().map(|v| v.to_f32()).collect());
