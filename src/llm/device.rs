//! Where the models run: the device setting (`auto | cpu | cuda[:N] | metal`), which
//! devices this build has, and turning a setting into a candle [`Device`] with a line
//! that says which device was chosen and why.
//!
//! A device that is not compiled in, or that does not initialize (no driver, no GPU,
//! a library missing), is an [`Error::Device`](crate::Error) naming what is missing;
//! `auto` falls back to the CPU and says why. Nothing here panics: candle's CUDA and
//! Metal constructors return errors, and they are only called in builds that have them.

use candle_core::Device;

use crate::{Error, Result};

/// A device setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// A compiled-in GPU that initializes, else the CPU.
    #[default]
    Auto,
    Cpu,
    /// The CUDA device with this ordinal.
    Cuda(usize),
    Metal,
}

/// The devices the setting may name, for the settings dialog and `--help`.
pub const DEVICE_CHOICES: &[&str] = &["auto", "cpu", "cuda", "metal"];

impl std::str::FromStr for DeviceChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "" | "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" | "gpu" => Ok(Self::Cuda(0)),
            "metal" | "mps" => Ok(Self::Metal),
            o => match o.strip_prefix("cuda:").map(str::parse::<usize>) {
                Some(Ok(n)) => Ok(Self::Cuda(n)),
                _ => Err(Error::Invalid(format!(
                    "unknown device {o:?} (expected auto, cpu, cuda, cuda:N or metal)"
                ))),
            },
        }
    }
}

impl std::fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Cpu => f.write_str("cpu"),
            Self::Cuda(0) => f.write_str("cuda"),
            Self::Cuda(n) => write!(f, "cuda:{n}"),
            Self::Metal => f.write_str("metal"),
        }
    }
}

/// The GPU backends compiled into this build (cargo features `cuda`, `metal`).
pub fn compiled_gpus() -> Vec<&'static str> {
    let mut v = Vec::new();
    if cfg!(feature = "cuda") {
        v.push("cuda");
    }
    if cfg!(feature = "metal") {
        v.push("metal");
    }
    v
}

/// A device a setting resolved to.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The setting it came from.
    pub choice: DeviceChoice,
    pub device: Device,
    /// `cpu`, `cuda:0`, `metal`.
    pub name: String,
    /// Why this one: "asked for", or what `auto` found.
    pub reason: String,
}

impl Chosen {
    /// The CPU, for `reason`.
    fn cpu(choice: DeviceChoice, reason: impl Into<String>) -> Self {
        Self {
            choice,
            device: Device::Cpu,
            name: "cpu".into(),
            reason: reason.into(),
        }
    }

    /// Whether the device is a GPU.
    pub fn is_gpu(&self) -> bool {
        !self.device.is_cpu()
    }

    /// "cuda:0 (auto: the first CUDA GPU initialized)" and the like, for status lines.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.name, self.reason)
    }
}

/// Devices already made, by setting: a GPU is initialized once per process, and the
/// LLM and the embedder share it (one CUDA context and stream).
static MADE: std::sync::Mutex<Vec<Chosen>> = std::sync::Mutex::new(Vec::new());

impl DeviceChoice {
    /// The device for this setting: the CPU, a GPU that initializes, or for `auto`
    /// the first compiled-in GPU that initializes, else the CPU with the reason.
    /// A device made is kept for the process; a failure is tried again next time.
    pub fn resolve(self) -> Result<Chosen> {
        let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = made.iter().find(|c| c.choice == self) {
            return Ok(c.clone());
        }
        let c = self.make()?;
        made.push(c.clone());
        Ok(c)
    }

    fn make(self) -> Result<Chosen> {
        match self {
            Self::Cpu => Ok(Chosen::cpu(self, "asked for")),
            Self::Cuda(n) => Ok(Chosen {
                choice: self,
                device: cuda(n)?,
                name: format!("cuda:{n}"),
                reason: "asked for".into(),
            }),
            Self::Metal => Ok(Chosen {
                choice: self,
                device: metal()?,
                name: "metal".into(),
                reason: "asked for".into(),
            }),
            Self::Auto => {
                let mut why = Vec::new();
                if cfg!(feature = "cuda") {
                    match cuda(0) {
                        Ok(device) => {
                            return Ok(Chosen {
                                choice: self,
                                device,
                                name: "cuda:0".into(),
                                reason: "auto: CUDA device 0 initialized".into(),
                            })
                        }
                        Err(e) => why.push(e.to_string()),
                    }
                }
                if cfg!(feature = "metal") {
                    match metal() {
                        Ok(device) => {
                            return Ok(Chosen {
                                choice: self,
                                device,
                                name: "metal".into(),
                                reason: "auto: the Metal device initialized".into(),
                            })
                        }
                        Err(e) => why.push(e.to_string()),
                    }
                }
                if why.is_empty() {
                    why.push("this build has no GPU support (built without `--features cuda` or `metal`)".into());
                }
                Ok(Chosen::cpu(self, format!("auto: {}", why.join("; "))))
            }
        }
    }
}

/// CUDA device `n`, or an error that names what is missing.
fn cuda(n: usize) -> Result<Device> {
    if !cfg!(feature = "cuda") {
        return Err(Error::Device(
            "CUDA was asked for, but this quire was built without CUDA support; \
             rebuild with `--features cuda` (`make build-cuda`)"
                .into(),
        ));
    }
    // candle's CUDA backend loads libcuda, cuBLAS and cuRAND when the first device is
    // made; a missing driver or library panics inside cudarc, so catch it here.
    let made = std::panic::catch_unwind(|| Device::new_cuda(n));
    match made {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(e)) => Err(Error::Device(format!(
            "CUDA device {n} did not initialize: {e} (is an NVIDIA driver installed, \
             with a GPU at index {n}, and are libcublas and libcurand on the library path?)"
        ))),
        Err(p) => Err(Error::Device(format!(
            "CUDA device {n} did not initialize: {} (the NVIDIA driver's libcuda.so, \
             or libcublas / libcurand, could not be loaded)",
            panic_text(&p)
        ))),
    }
}

/// The Metal device, or an error that names what is missing.
fn metal() -> Result<Device> {
    if !cfg!(feature = "metal") {
        return Err(Error::Device(
            "Metal was asked for, but this quire was built without Metal support; \
             rebuild with `--features metal` (on macOS)"
                .into(),
        ));
    }
    match std::panic::catch_unwind(|| Device::new_metal(0)) {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(e)) => Err(Error::Device(format!(
            "the Metal device did not initialize: {e}"
        ))),
        Err(p) => Err(Error::Device(format!(
            "the Metal device did not initialize: {}",
            panic_text(&p)
        ))),
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_print() {
        for (s, d) in [
            ("auto", DeviceChoice::Auto),
            ("", DeviceChoice::Auto),
            ("CPU", DeviceChoice::Cpu),
            ("cuda", DeviceChoice::Cuda(0)),
            ("cuda:0", DeviceChoice::Cuda(0)),
            ("cuda:2", DeviceChoice::Cuda(2)),
            ("metal", DeviceChoice::Metal),
        ] {
            assert_eq!(s.parse::<DeviceChoice>().ok(), Some(d), "{s}");
            assert_eq!(d.to_string().parse::<DeviceChoice>().ok(), Some(d));
        }
        for bad in ["tpu", "cuda:", "cuda:x", "cuda:-1"] {
            assert!(bad.parse::<DeviceChoice>().is_err(), "{bad}");
        }
    }

    #[test]
    fn auto_without_a_gpu_is_the_cpu_with_the_reason() -> Result<()> {
        let c = DeviceChoice::Auto.resolve()?;
        if compiled_gpus().is_empty() {
            assert!(!c.is_gpu());
            assert!(c.reason.contains("no GPU support"), "{}", c.reason);
        }
        assert!(!DeviceChoice::Cpu.resolve()?.is_gpu());
        Ok(())
    }

    #[test]
    fn a_device_not_compiled_in_is_a_clear_error() {
        if !cfg!(feature = "cuda") {
            let e = DeviceChoice::Cuda(0)
                .resolve()
                .map(|_| ())
                .expect_err("no cuda");
            assert!(e.to_string().contains("--features cuda"), "{e}");
        }
        if !cfg!(feature = "metal") {
            let e = DeviceChoice::Metal
                .resolve()
                .map(|_| ())
                .expect_err("no metal");
            assert!(e.to_string().contains("--features metal"), "{e}");
        }
    }
}
