//! Lane helpers the AVX-512 kernels share (what ggml keeps in `simd-mappings.h`):
//! the mask of a register's first lanes, a 32-column panel's two masks, and loading or
//! storing a vector that is whole or a row's last part.

/// The load/store masks of a 32-column panel's two registers when only its first
/// `cols` columns exist.
pub(crate) fn col_masks(cols: usize) -> (u16, u16) {
    (lane_mask(cols), lane_mask(cols.saturating_sub(16)))
}

/// The mask of a register's first `count` f32 lanes (all 16 from 16 on).
pub(crate) fn lane_mask(count: usize) -> u16 {
    if count >= 16 {
        0xffff
    } else {
        ((1u32 << count) - 1) as u16
    }
}

/// The 16 f32 at `p`, or only the first `count` (the others zero) where fewer are left:
/// a whole vector is loaded unmasked, since masked loads cost more even with every
/// lane set (on Zen 5, ~16% of `igemm::add_outliers`' time).
///
/// # Safety
/// `min(count, 16)` f32 at `p` are readable; the CPU has AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn load_lanes(p: *const f32, count: usize) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    // SAFETY: the caller's.
    unsafe {
        if count >= 16 {
            _mm512_loadu_ps(p)
        } else {
            _mm512_maskz_loadu_ps(lane_mask(count), p)
        }
    }
}

/// [`load_lanes`]' store: `v`'s first `min(count, 16)` lanes to `p`.
///
/// # Safety
/// `min(count, 16)` f32 at `p` are writable; the CPU has AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn store_lanes(p: *mut f32, count: usize, v: std::arch::x86_64::__m512) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's.
    unsafe {
        if count >= 16 {
            _mm512_storeu_ps(p, v)
        } else {
            _mm512_mask_storeu_ps(p, lane_mask(count), v)
        }
    }
}
