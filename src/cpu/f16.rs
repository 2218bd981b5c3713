//! f16 scales as the kernels read them: one table load per value.

use half::f16;

/// f16 → f32 for every bit pattern, so the kernels read scales with one load.
static F16_TO_F32: std::sync::LazyLock<Vec<f32>> =
    std::sync::LazyLock::new(|| (0..=u16::MAX).map(|b| f16::from_bits(b).to_f32()).collect());

/// The whole table, for a kernel to take once before its loop (each [`f16_at`] checks
/// that the table is built).
pub fn f16_table() -> &'static [f32] {
    &F16_TO_F32
}

/// The f16 stored little-endian at `b[at..at + 2]`, widened.
#[inline(always)]
pub fn f16_at(b: &[u8], at: usize) -> f32 {
    F16_TO_F32[usize::from(u16::from_le_bytes([b[at], b[at + 1]]))]
}
