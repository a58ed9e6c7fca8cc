//! The backend registry: which devices this build can run on, and why not where it cannot.
//!
//! Each backend is probed here and nowhere else; `Session::new` and `devices()` share the probe,
//! so what `rlx devices` prints is exactly what a session would get.

use crate::device::Device;
use crate::error::Error;
use rlx_backend::Backend;
use rlx_cpu::CpuBackend;

/// Why the wgpu backend cannot be used in this build.
const GPU_REASON: &str = "the wgpu backend (crate rlx-wgpu) is not part of this build yet; it \
                          arrives with its own issue. Use the cpu device meanwhile";
/// Why the native Vulkan backend cannot be used in this build.
const VULKAN_REASON: &str = "the native Vulkan backend (crate rlx-vulkan) is not part of this \
                             build yet; it arrives with its own issue. Use the cpu device meanwhile";

/// One row of the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    pub device: Device,
    /// Short backend name ("cpu", "wgpu", "vulkan").
    pub backend: &'static str,
    pub available: bool,
    /// Why not, when unavailable.
    pub reason: Option<String>,
    /// Key facts when available: model or adapter name, threads, limits.
    pub details: Vec<(String, String)>,
}

/// Every concrete device (cpu, gpu, vulkan) with its availability. `Auto` picks the first
/// available one in [`Device::PREFERENCE`] order.
pub fn devices() -> Vec<DeviceStatus> {
    [Device::Cpu, Device::Gpu, Device::Vulkan].into_iter().map(status).collect()
}

/// The registry entry of one device (`Auto` resolves first).
pub fn status(device: Device) -> DeviceStatus {
    let backend = backend_name(device);
    match open(device) {
        Ok(b) => DeviceStatus {
            device,
            backend,
            available: true,
            reason: None,
            details: details(device, b.as_ref()),
        },
        Err(e) => {
            let reason = match e {
                Error::DeviceUnavailable { reason, .. } => reason,
                other => other.to_string(),
            };
            DeviceStatus { device, backend, available: false, reason: Some(reason), details: Vec::new() }
        }
    }
}

fn backend_name(device: Device) -> &'static str {
    match device {
        Device::Cpu => "cpu",
        Device::Gpu => "wgpu",
        Device::Vulkan => "vulkan",
        Device::Auto => "auto",
    }
}

/// Opens the backend of a concrete device. `Auto` is resolved by the caller (see
/// [`resolve_auto`]); passed here it resolves the same way.
pub(crate) fn open(device: Device) -> Result<Box<dyn Backend>, Error> {
    match device {
        Device::Cpu => Ok(Box::new(CpuBackend::new())),
        Device::Gpu => Err(Error::DeviceUnavailable { device, reason: GPU_REASON.to_string() }),
        Device::Vulkan => Err(Error::DeviceUnavailable { device, reason: VULKAN_REASON.to_string() }),
        Device::Auto => {
            let (_, backend) = best_available()?;
            Ok(backend)
        }
    }
}

/// `Auto`: the device named by `env_value` (the value of `RLX_DEVICE`, `None` when unset) if
/// any, which must then be available; otherwise the first available device in
/// [`Device::PREFERENCE`].
pub(crate) fn resolve_auto(env_value: Option<&str>) -> Result<(Device, Box<dyn Backend>), Error> {
    match Device::from_env_value(env_value, Device::Auto)? {
        Device::Auto => best_available(),
        named => open(named).map(|b| (named, b)),
    }
}

fn best_available() -> Result<(Device, Box<dyn Backend>), Error> {
    let mut reasons = Vec::new();
    for d in Device::PREFERENCE {
        match open(d) {
            Ok(b) => return Ok((d, b)),
            Err(e) => reasons.push(format!("{d}: {e}")),
        }
    }
    // Unreachable while the CPU backend always opens, but kept as an error, not a panic.
    Err(Error::DeviceUnavailable { device: Device::Auto, reason: reasons.join("; ") })
}

fn details(device: Device, backend: &dyn Backend) -> Vec<(String, String)> {
    let caps = backend.capabilities();
    let mut d = Vec::new();
    if device == Device::Cpu {
        d.push(("model".to_string(), cpu_model().unwrap_or_else(|| "unknown".to_string())));
        let threads = std::thread::available_parallelism().map(|n| n.get().to_string());
        d.push(("logical threads".to_string(), threads.unwrap_or_else(|_| "unknown".to_string())));
    }
    d.push(("backend".to_string(), caps.device_name.clone()));
    let max = if caps.max_tensor_bytes == u64::MAX {
        "no limit (host memory)".to_string()
    } else {
        format!("{} bytes", caps.max_tensor_bytes)
    };
    d.push(("max tensor bytes".to_string(), max));
    d.push(("buffer alignment".to_string(), format!("{} bytes", caps.buffer_alignment)));
    d.push(("native ops".to_string(), caps.native_ops.len().to_string()));
    let dtypes: Vec<&str> = caps.dtypes.iter().map(|t| t.name()).collect();
    d.push(("dtypes".to_string(), dtypes.join(", ")));
    d
}

/// The CPU model from /proc/cpuinfo, where that file exists (Linux).
fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    parse_cpu_model(&info)
}

fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    // x86 says "model name"; some ARM kernels say "Model" or only "Hardware".
    ["model name", "Model", "Hardware", "cpu model"].iter().find_map(|key| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_model_parsing() {
        let x86 =
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Gold\n";
        assert_eq!(parse_cpu_model(x86).as_deref(), Some("Intel(R) Xeon(R) Gold"));
        let arm = "processor\t: 0\nBogoMIPS\t: 48.00\n\nModel\t\t: Raspberry Pi 4 Model B\n";
        assert_eq!(parse_cpu_model(arm).as_deref(), Some("Raspberry Pi 4 Model B"));
        assert_eq!(parse_cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn registry_lists_each_backend_once() {
        let all = devices();
        let names: Vec<Device> = all.iter().map(|s| s.device).collect();
        assert_eq!(names, vec![Device::Cpu, Device::Gpu, Device::Vulkan]);
        let cpu = all.iter().find(|s| s.device == Device::Cpu).unwrap();
        assert!(cpu.available && cpu.reason.is_none());
        let keys: Vec<&str> = cpu.details.iter().map(|(k, _)| k.as_str()).collect();
        for k in ["model", "logical threads", "max tensor bytes", "buffer alignment", "native ops"] {
            assert!(keys.contains(&k), "missing {k} in {keys:?}");
        }
        for gpu in all.iter().filter(|s| s.device != Device::Cpu) {
            assert!(!gpu.available);
            assert!(gpu.reason.as_deref().unwrap().contains("not part of this build"));
        }
    }

    #[test]
    fn auto_prefers_env_then_best() {
        assert_eq!(resolve_auto(None).unwrap().0, Device::Cpu);
        assert_eq!(resolve_auto(Some("")).unwrap().0, Device::Cpu);
        assert_eq!(resolve_auto(Some("auto")).unwrap().0, Device::Cpu);
        assert_eq!(resolve_auto(Some("CPU")).unwrap().0, Device::Cpu);
        let e = resolve_auto(Some("vulkan")).err().unwrap();
        assert!(matches!(e, Error::DeviceUnavailable { device: Device::Vulkan, .. }), "{e}");
        let e = resolve_auto(Some("tpu")).err().unwrap();
        assert!(matches!(e, Error::InvalidEnv { .. }), "{e}");
        assert!(e.to_string().contains("RLX_DEVICE='tpu'"), "{e}");
    }
}
