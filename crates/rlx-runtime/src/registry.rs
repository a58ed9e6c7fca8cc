//! The backend registry: which devices this build can run on, and why not where it cannot.
//!
//! Each backend is probed here and nowhere else; `Session::new` and `devices()` share the probe,
//! so what `rlx devices` prints is exactly what a session would get.

use crate::device::Device;
use crate::error::Error;
use rlx_backend::{Backend, BackendError};
use rlx_cpu::CpuBackend;
use rlx_vulkan::{AdapterInfo, AdapterType, VulkanBackend};

/// Why the wgpu backend cannot be used in this build.
const GPU_REASON: &str = "the wgpu backend (crate rlx-wgpu) is not part of this build yet; it \
                          arrives with its own issue. Use the cpu or vulkan device meanwhile";

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
    let opened = match device {
        // Opened as itself, for the adapter facts a `dyn Backend` does not expose.
        Device::Vulkan => open_vulkan().map(|b| vulkan_details(&b)),
        d => open(d).map(|b| details(d, b.as_ref())),
    };
    match opened {
        Ok(details) => DeviceStatus { device, backend, available: true, reason: None, details },
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
        Device::Vulkan => Ok(Box::new(open_vulkan()?)),
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

/// The Vulkan backend on the device `rlx_vulkan::pick` chooses; unavailable with the probe's
/// reason (no loader, no device, a driver that refuses to open it).
fn open_vulkan() -> Result<VulkanBackend, Error> {
    VulkanBackend::new().map_err(|e| {
        let reason = match e {
            BackendError::DeviceUnavailable { reason, .. } => reason,
            other => other.to_string(),
        };
        Error::DeviceUnavailable { device: Device::Vulkan, reason }
    })
}

/// Whether `Auto` takes a Vulkan adapter of this type. A CPU implementation such as lavapipe
/// runs kernels far slower than the CPU backend, so `Auto` leaves it to an explicit
/// `Device::Vulkan`.
fn auto_takes(adapter: AdapterType) -> bool {
    matches!(adapter, AdapterType::Discrete | AdapterType::Integrated)
}

/// Opens `d` for `Auto`: like [`open`], except that a Vulkan device `Auto` would not take is
/// unavailable (decided from the probe, before opening anything).
fn open_for_auto(d: Device) -> Result<Box<dyn Backend>, Error> {
    if d == Device::Vulkan {
        let unavailable = |reason: String| Error::DeviceUnavailable { device: d, reason };
        let adapters = rlx_vulkan::probe().map_err(|e| unavailable(e.to_string()))?;
        let chosen = rlx_vulkan::pick(&adapters).map_err(|e| unavailable(e.to_string()))?;
        if !auto_takes(chosen.adapter_type) {
            return Err(unavailable(format!(
                "auto does not select {} because it is not a GPU; ask for the vulkan device to use it",
                chosen.summary()
            )));
        }
    }
    open(d)
}

fn best_available() -> Result<(Device, Box<dyn Backend>), Error> {
    let mut reasons = Vec::new();
    for d in Device::PREFERENCE {
        match open_for_auto(d) {
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

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// Bytes with a binary unit: "128 MiB (134217728 bytes)".
fn bytes(n: u64) -> String {
    let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match units.iter().find(|(u, _)| n >= *u) {
        Some((u, name)) => format!("{:.1} {name} ({n} bytes)", n as f64 / *u as f64),
        None => format!("{n} bytes"),
    }
}

/// The adapter facts `rlx devices` shows for the native Vulkan backend, then the generic ones.
fn vulkan_details(b: &VulkanBackend) -> Vec<(String, String)> {
    let info: &AdapterInfo = b.info();
    let (l, f) = (&info.limits, &info.features);
    let [ma, mi, pa] = info.api_version;
    let or_unknown = |s: &str| if s.is_empty() { "unknown".to_string() } else { s.to_string() };
    let mut d = vec![
        ("adapter".to_string(), format!("{} (index {}, RLX_VULKAN_DEVICE)", info.name, info.index)),
        ("type".to_string(), format!("{:?}", info.adapter_type)),
        ("driver".to_string(), or_unknown(&info.driver_name)),
        ("driver info".to_string(), or_unknown(&info.driver_info)),
        ("Vulkan API".to_string(), format!("{ma}.{mi}.{pa}")),
        ("maxStorageBufferRange".to_string(), bytes(u64::from(l.max_storage_buffer_range))),
        ("max allocation".to_string(), bytes(l.max_memory_allocation_size)),
        ("shared memory".to_string(), bytes(u64::from(l.max_compute_shared_memory_size))),
        ("subgroup size".to_string(), f.subgroup_size.to_string()),
        ("max workgroup invocations".to_string(), l.max_compute_work_group_invocations.to_string()),
        ("cooperative matrix".to_string(), yes_no(f.cooperative_matrix)),
        ("shader f16".to_string(), yes_no(f.shader_f16)),
        ("16-bit storage".to_string(), yes_no(f.storage_buffer_16bit)),
        ("memory strategy".to_string(), format!("{:?}", b.context().memory_strategy())),
    ];
    let heaps: Vec<String> = info
        .memory_heaps
        .iter()
        .map(|h| format!("{}{}", bytes(h.size), if h.device_local { " device-local" } else { "" }))
        .collect();
    d.push(("memory heaps".to_string(), heaps.join("; ")));
    if let Ok(all) = rlx_vulkan::probe() {
        let list: Vec<String> = all.iter().map(AdapterInfo::summary).collect();
        d.push(("all adapters".to_string(), list.join("; ")));
    }
    d.extend(details(Device::Vulkan, b));
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

    /// What this machine's Vulkan probe says: (usable adapter chosen, auto would take it).
    fn vulkan_here() -> (bool, bool) {
        match rlx_vulkan::probe() {
            Ok(all) => match rlx_vulkan::pick(&all) {
                Ok(a) => (true, auto_takes(a.adapter_type)),
                Err(_) => (false, false),
            },
            Err(_) => (false, false),
        }
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
        let gpu = all.iter().find(|s| s.device == Device::Gpu).unwrap();
        assert!(!gpu.available);
        assert!(gpu.reason.as_deref().unwrap().contains("not part of this build"));

        let vulkan = all.iter().find(|s| s.device == Device::Vulkan).unwrap();
        assert_eq!(vulkan.available, vulkan_here().0, "{vulkan:?}");
        if vulkan.available {
            let keys: Vec<&str> = vulkan.details.iter().map(|(k, _)| k.as_str()).collect();
            for k in [
                "adapter",
                "type",
                "driver",
                "Vulkan API",
                "maxStorageBufferRange",
                "shared memory",
                "subgroup size",
                "max workgroup invocations",
                "cooperative matrix",
                "shader f16",
                "max tensor bytes",
            ] {
                assert!(keys.contains(&k), "missing {k} in {keys:?}");
            }
        } else {
            assert!(!vulkan.reason.as_deref().unwrap_or("").is_empty(), "{vulkan:?}");
        }
    }

    #[test]
    fn auto_takes_only_real_gpus() {
        assert!(auto_takes(AdapterType::Discrete));
        assert!(auto_takes(AdapterType::Integrated));
        assert!(!auto_takes(AdapterType::Cpu));
    }

    #[test]
    fn auto_prefers_env_then_best() {
        let (vulkan, real_gpu) = vulkan_here();
        let best = if real_gpu { Device::Vulkan } else { Device::Cpu };
        assert_eq!(resolve_auto(None).unwrap().0, best);
        assert_eq!(resolve_auto(Some("")).unwrap().0, best);
        assert_eq!(resolve_auto(Some("auto")).unwrap().0, best);
        assert_eq!(resolve_auto(Some("CPU")).unwrap().0, Device::Cpu);
        match resolve_auto(Some("vulkan")) {
            Ok((d, b)) => {
                assert!(vulkan);
                assert_eq!((d, b.name()), (Device::Vulkan, "vulkan"));
            }
            Err(e) => {
                assert!(!vulkan);
                assert!(matches!(e, Error::DeviceUnavailable { device: Device::Vulkan, .. }), "{e}");
            }
        }
        let e = resolve_auto(Some("gpu")).err().unwrap();
        assert!(matches!(e, Error::DeviceUnavailable { device: Device::Gpu, .. }), "{e}");
        let e = resolve_auto(Some("tpu")).err().unwrap();
        assert!(matches!(e, Error::InvalidEnv { .. }), "{e}");
        assert!(e.to_string().contains("RLX_DEVICE='tpu'"), "{e}");
    }

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(32 << 10), "32.0 KiB (32768 bytes)");
        assert_eq!(bytes(128 << 20), "128.0 MiB (134217728 bytes)");
    }
}
