//! Run-time CPU feature detection, checked once per process, so one binary runs on
//! any x86-64: AVX2 + FMA, AVX-512 (F, BW, VL), AVX-512 VNNI, AVX512-BF16, and Intel
//! AMX with Linux's permission for its tile state. `QUIRE_NO_VNNI=1`, `QUIRE_NO_BF16=1`
//! and `QUIRE_NO_AMX=1` turn the last three off, to compare.

/// Whether the CPU has AVX2 and FMA, for the run-time choice of kernels.
#[cfg(target_arch = "x86_64")]
pub fn has_avx2_fma() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// Whether the CPU has F16C (f16 ↔ f32 conversions), checked once.
#[cfg(target_arch = "x86_64")]
pub fn has_f16c() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| std::is_x86_feature_detected!("f16c"))
}

/// Whether the CPU has AVX-512 (F, BW, VL) and FMA, for the run-time choice of kernels.
#[cfg(target_arch = "x86_64")]
pub fn has_avx512() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        has_avx2_fma()
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl")
    })
}

/// Whether the CPU has AVX-512 F, BW and VL (FMA not required).
#[cfg(target_arch = "x86_64")]
pub fn has_avx512_bw_vl() -> bool {
    std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vl")
}

/// Whether the AVX-512 VNNI kernels can run: the CPU has AVX-512 F/BW/VL, VNNI and
/// FMA, and `QUIRE_NO_VNNI` is not set (checked once).
#[cfg(target_arch = "x86_64")]
pub fn has_vnni() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| std::env::var_os("QUIRE_NO_VNNI").is_none() && vnni_in_cpu())
}

/// The CPU's own answer, whatever `QUIRE_NO_VNNI` says.
#[cfg(target_arch = "x86_64")]
pub fn vnni_in_cpu() -> bool {
    has_avx512_bw_vl()
        && std::is_x86_feature_detected!("avx512vnni")
        && std::is_x86_feature_detected!("fma")
}

/// Whether attention's bf16 products can run (`embed::bgemm`): the CPU has AVX-512
/// F/BW/VL and AVX512-BF16, and `QUIRE_NO_BF16` is not set (checked once).
#[cfg(target_arch = "x86_64")]
pub fn has_avx512_bf16() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| std::env::var_os("QUIRE_NO_BF16").is_none() && avx512_bf16_in_cpu())
}

/// The CPU's own answer, whatever `QUIRE_NO_BF16` says.
#[cfg(target_arch = "x86_64")]
pub fn avx512_bf16_in_cpu() -> bool {
    has_avx512_bw_vl() && std::is_x86_feature_detected!("avx512bf16")
}

/// The class of kernels the models' products run on here, which sets how fast one
/// model is against another (a K-quant model gains more from VNNI than a Q5_0 one):
/// AVX-512 VNNI (switches such as `QUIRE_NO_VNNI` heeded), else AVX2 + FMA, else
/// portable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    Avx512Vnni,
    Avx2,
    Portable,
}

impl Kernels {
    /// This process's kernels.
    pub fn here() -> Kernels {
        #[cfg(target_arch = "x86_64")]
        {
            if has_vnni() {
                return Kernels::Avx512Vnni;
            }
            if has_avx2_fma() {
                return Kernels::Avx2;
            }
        }
        Kernels::Portable
    }

    /// The name a calibration key and a report show.
    pub fn name(self) -> &'static str {
        match self {
            Kernels::Avx512Vnni => "avx512-vnni",
            Kernels::Avx2 => "avx2",
            Kernels::Portable => "portable",
        }
    }
}

/// Proof that AMX bf16 can be used in this process.
#[derive(Debug, Clone, Copy)]
pub struct Amx(());

impl Amx {
    /// AMX if the CPU, the OS and the kernel allow it, and `QUIRE_NO_AMX` is not set.
    pub fn detect() -> Option<Amx> {
        static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let ok =
            *DETECTED.get_or_init(|| std::env::var_os("QUIRE_NO_AMX").is_none() && amx_enable());
        ok.then_some(Amx(()))
    }
}

/// CPUID says AMX-TILE and AMX-BF16, XCR0 has the tile state on, and Linux grants
/// it to this process (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn amx_enable() -> bool {
    use std::arch::asm;
    let max = std::arch::x86_64::__cpuid(0).eax;
    if max < 7 {
        return false;
    }
    let l7 = std::arch::x86_64::__cpuid_count(7, 0);
    let (amx_bf16, amx_tile) = (l7.edx & (1 << 22) != 0, l7.edx & (1 << 24) != 0);
    let osxsave = std::arch::x86_64::__cpuid(1).ecx & (1 << 27) != 0;
    if !(amx_bf16 && amx_tile && osxsave) {
        return false;
    }
    let (lo, _hi): (u32, u32);
    // SAFETY: xgetbv with ecx = 0 is valid when OSXSAVE is set (checked).
    unsafe { asm!("xgetbv", in("ecx") 0, out("eax") lo, out("edx") _hi, options(nomem, nostack)) };
    if lo & (0b11 << 17) != (0b11 << 17) {
        return false;
    }
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a plain syscall with integer arguments.
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn amx_enable() -> bool {
    false
}
