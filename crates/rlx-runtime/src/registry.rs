//! The backend registry: which devices this build can run on, and why not where it cannot.
//!
//! Each backend is probed here and nowhere else; `Session::new` and `devices()` share the probe,
//! so what `rlx devices` prints is exactly what a session would get. The registry opens concrete
//! devices (cpu, gpu, vulkan) only: `Session` alone resolves `Auto`, with `auto.rs`'s ranking.
//!
//! The cargo features `cpu`, `wgpu` and `vulkan` say which backends a build has. A device whose
//! feature is off is listed like any other, unavailable, with the feature to enable as the
//! reason. rlx-cpu is linked in every build (constant folding evaluates with it), so only the
//! `Cpu` variant of [`Opened`] exists without its feature; it is never constructed then.

use crate::auto;
use crate::cache::DeviceKey;
use crate::device::Device;
use crate::error::Error;
use crate::rank::Calibration;
use rlx_backend::{Backend, Capabilities};
use rlx_cpu::CpuBackend;
use rlx_ir::OpKind;
#[cfg(feature = "vulkan")]
use rlx_vulkan::{AdapterInfo, AdapterType, VulkanBackend};
#[cfg(feature = "wgpu")]
use rlx_wgpu::WgpuBackend;

/// One row of the registry.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceStatus {
    /// The device (for `Auto`, the one it resolved to when available).
    pub device: Device,
    /// Short backend name ("cpu", "wgpu", "vulkan").
    pub backend: &'static str,
    /// Whether a session can open it here.
    pub available: bool,
    /// Why not, when unavailable.
    pub reason: Option<String>,
    /// Key facts when available: model or adapter name, threads, limits.
    pub details: Vec<(String, String)>,
    /// What calibration results are keyed by (backend, adapter, driver), when available.
    pub key: Option<DeviceKey>,
    /// The cached calibration of this device, if it has been measured (looking it up never
    /// measures anything).
    pub calibration: Option<Calibration>,
    /// A CPU implementation of a GPU API (lavapipe, llvmpipe): `Auto` never selects it.
    pub software: bool,
}

/// Every concrete device (cpu, gpu, vulkan) with its availability and cached calibration.
pub fn devices() -> Vec<DeviceStatus> {
    [Device::Cpu, Device::Gpu, Device::Vulkan].into_iter().map(status).collect()
}

/// The registry entry of one device (`Auto` resolves first, as `Session::new` resolves it).
pub fn status(device: Device) -> DeviceStatus {
    let opened = match device {
        Device::Auto => crate::Session::new(Device::Auto).and_then(|s| Opened::open(s.device())),
        d => Opened::open(d),
    };
    let backend = backend_name(device);
    match opened {
        Ok(o) => {
            let key = o.key();
            let calibration = auto::cached(&key);
            DeviceStatus {
                device: o.device(),
                backend: backend_name(o.device()),
                available: true,
                reason: None,
                details: o.details(),
                software: o.is_software(),
                key: Some(key),
                calibration,
            }
        }
        Err(e) => {
            let reason = match e {
                Error::DeviceUnavailable { reason, .. } => reason,
                other => other.to_string(),
            };
            DeviceStatus {
                device,
                backend,
                available: false,
                reason: Some(reason),
                details: Vec::new(),
                key: None,
                calibration: None,
                software: false,
            }
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

/// Opens the backend of a concrete device (`Auto` is `Session`'s to resolve).
pub(crate) fn open(device: Device) -> Result<Box<dyn Backend>, Error> {
    Opened::open(device).map(Opened::into_backend)
}

/// [`open`] without blocking ([`crate::Session::open`]): the wgpu adapter and device are
/// awaited, the other backends open as `open` opens them.
pub(crate) async fn open_async(device: Device) -> Result<(Device, Box<dyn Backend>), Error> {
    let backend = match device {
        Device::Gpu => open_wgpu_async().await?.into_backend(),
        d => open(d)?,
    };
    Ok((device, backend))
}

/// A backend opened as its concrete type, for the facts a `dyn Backend` does not expose.
pub(crate) enum Opened {
    #[cfg_attr(not(feature = "cpu"), allow(dead_code))]
    Cpu(CpuBackend),
    #[cfg(feature = "wgpu")]
    Wgpu(WgpuBackend),
    #[cfg(feature = "vulkan")]
    Vulkan(VulkanBackend),
}

impl Opened {
    pub(crate) fn open(device: Device) -> Result<Opened, Error> {
        match device {
            Device::Cpu => open_cpu(),
            Device::Gpu => open_wgpu(),
            Device::Vulkan => open_vulkan(),
            // Not a backend: callers resolve it through `Session` first.
            Device::Auto => Err(Error::DeviceUnavailable {
                device,
                reason: "auto names no backend of its own; open it with Session::new, which resolves it"
                    .into(),
            }),
        }
    }

    pub(crate) fn device(&self) -> Device {
        match self {
            Opened::Cpu(_) => Device::Cpu,
            #[cfg(feature = "wgpu")]
            Opened::Wgpu(_) => Device::Gpu,
            #[cfg(feature = "vulkan")]
            Opened::Vulkan(_) => Device::Vulkan,
        }
    }

    /// The identity calibrations are cached under. The rlx version and build profile are part
    /// of the driver: new kernels make old measurements stale, and a debug build's CPU kernels
    /// are many times slower than a release build's.
    pub(crate) fn key(&self) -> DeviceKey {
        let rlx = if cfg!(debug_assertions) {
            concat!("rlx ", env!("CARGO_PKG_VERSION"), " debug build")
        } else {
            concat!("rlx ", env!("CARGO_PKG_VERSION"))
        };
        #[cfg_attr(not(any(feature = "wgpu", feature = "vulkan")), allow(unused_variables))]
        let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
            (true, true) => rlx.to_string(),
            (false, true) => format!("{a}; {rlx}"),
            (true, false) => format!("{b}; {rlx}"),
            (false, false) => format!("{a} {b}; {rlx}"),
        };
        match self {
            Opened::Cpu(_) => DeviceKey {
                backend: "cpu".into(),
                adapter: cpu_model().unwrap_or_else(|| "unknown CPU".into()),
                driver: format!("{} threads; {rlx}", rlx_threads()),
            },
            #[cfg(feature = "wgpu")]
            Opened::Wgpu(b) => {
                let i = b.info();
                DeviceKey {
                    backend: "wgpu".into(),
                    adapter: i.summary(),
                    driver: join(&i.driver, &i.driver_info),
                }
            }
            #[cfg(feature = "vulkan")]
            Opened::Vulkan(b) => {
                let i = b.info();
                DeviceKey {
                    backend: "vulkan".into(),
                    adapter: i.name.clone(),
                    driver: join(&i.driver_name, &i.driver_info),
                }
            }
        }
    }

    /// A GPU API implemented on the CPU (lavapipe): it shares the cores the CPU backend uses and
    /// runs the same graphs slower, so `Auto` leaves it to an explicit request.
    pub(crate) fn is_software(&self) -> bool {
        match self {
            #[cfg(feature = "wgpu")]
            Opened::Wgpu(b) => b.info().is_software(),
            #[cfg(feature = "vulkan")]
            Opened::Vulkan(b) => !auto_takes(b.info().adapter_type),
            Opened::Cpu(_) => false,
        }
    }

    fn details(&self) -> Vec<(String, String)> {
        match self {
            Opened::Cpu(b) => details(Device::Cpu, b),
            #[cfg(feature = "wgpu")]
            Opened::Wgpu(b) => {
                let mut d = b.info().details();
                d.push(("environment".to_string(), "WGPU_BACKEND, RLX_WGPU_ADAPTER".to_string()));
                d.extend(details(Device::Gpu, b));
                d
            }
            #[cfg(feature = "vulkan")]
            Opened::Vulkan(b) => vulkan_details(b),
        }
    }

    pub(crate) fn into_backend(self) -> Box<dyn Backend> {
        match self {
            Opened::Cpu(b) => Box::new(b),
            #[cfg(feature = "wgpu")]
            Opened::Wgpu(b) => Box::new(b),
            #[cfg(feature = "vulkan")]
            Opened::Vulkan(b) => Box::new(b),
        }
    }
}

/// The thread count the CPU backend runs with.
fn rlx_threads() -> String {
    std::thread::available_parallelism().map_or_else(|_| "unknown".to_string(), |n| n.get().to_string())
}

/// Why a device whose cargo feature is off cannot open.
#[cfg(not(all(feature = "cpu", feature = "wgpu", feature = "vulkan")))]
fn not_built(device: Device, feature: &str) -> Error {
    Error::DeviceUnavailable {
        device,
        reason: format!(
            "this build has no {feature} backend: enable the `{feature}` feature of rlx (or rlx-runtime)"
        ),
    }
}

/// The CPU backend (nothing to probe).
#[cfg(feature = "cpu")]
fn open_cpu() -> Result<Opened, Error> {
    Ok(Opened::Cpu(CpuBackend::new()))
}

#[cfg(not(feature = "cpu"))]
fn open_cpu() -> Result<Opened, Error> {
    Err(not_built(Device::Cpu, "cpu"))
}

#[cfg(any(feature = "wgpu", feature = "vulkan"))]
fn unavailable(device: Device, e: rlx_backend::BackendError) -> Error {
    let reason = match e {
        rlx_backend::BackendError::DeviceUnavailable { reason, .. } => reason,
        other => other.to_string(),
    };
    Error::DeviceUnavailable { device, reason }
}

/// The wgpu backend on the adapter `WGPU_BACKEND` / `RLX_WGPU_ADAPTER` select; unavailable with
/// the reason when there is no adapter (or the variables are invalid).
#[cfg(feature = "wgpu")]
fn open_wgpu() -> Result<Opened, Error> {
    WgpuBackend::new().map(Opened::Wgpu).map_err(|e| unavailable(Device::Gpu, e))
}

#[cfg(not(feature = "wgpu"))]
fn open_wgpu() -> Result<Opened, Error> {
    Err(not_built(Device::Gpu, "wgpu"))
}

/// [`open_wgpu`] without blocking.
#[cfg(feature = "wgpu")]
async fn open_wgpu_async() -> Result<Opened, Error> {
    let opts = rlx_wgpu::WgpuOptions::from_env().map_err(|e| unavailable(Device::Gpu, e))?;
    WgpuBackend::open(opts).await.map(Opened::Wgpu).map_err(|e| unavailable(Device::Gpu, e))
}

#[cfg(not(feature = "wgpu"))]
async fn open_wgpu_async() -> Result<Opened, Error> {
    open_wgpu()
}

/// The Vulkan backend on the device `rlx_vulkan::pick` chooses; unavailable with the probe's
/// reason (no loader, no device, a driver that refuses to open it).
#[cfg(feature = "vulkan")]
fn open_vulkan() -> Result<Opened, Error> {
    VulkanBackend::new().map(Opened::Vulkan).map_err(|e| unavailable(Device::Vulkan, e))
}

#[cfg(not(feature = "vulkan"))]
fn open_vulkan() -> Result<Opened, Error> {
    Err(not_built(Device::Vulkan, "vulkan"))
}

/// Whether a Vulkan adapter of this type is a real GPU (one `Auto` may take).
#[cfg(feature = "vulkan")]
pub(crate) fn auto_takes(adapter: AdapterType) -> bool {
    matches!(adapter, AdapterType::Discrete | AdapterType::Integrated)
}

/// Whether the native Vulkan backend would open a real GPU, decided from the probe before
/// opening anything (`Ok(false)` for lavapipe).
#[cfg(feature = "vulkan")]
pub(crate) fn vulkan_is_real_gpu() -> Result<bool, Error> {
    let fail = |reason: String| Error::DeviceUnavailable { device: Device::Vulkan, reason };
    let adapters = rlx_vulkan::probe().map_err(|e| fail(e.to_string()))?;
    let chosen = rlx_vulkan::pick(&adapters).map_err(|e| fail(e.to_string()))?;
    Ok(auto_takes(chosen.adapter_type))
}

#[cfg(not(feature = "vulkan"))]
pub(crate) fn vulkan_is_real_gpu() -> Result<bool, Error> {
    Err(not_built(Device::Vulkan, "vulkan"))
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
    // Every other op kind is either rewritten by rlx-opt into native ones or has no way to run
    // here; rlx has no host fallback, so the second list is the one that must stay empty.
    let (decomposed, unreachable): (Vec<OpKind>, Vec<OpKind>) = Capabilities::all_ops()
        .into_iter()
        .filter(|k| !caps.native_ops.contains(k))
        .partition(|k| rlx_opt::passes::DECOMPOSABLE.contains(k));
    let names = |v: &[OpKind]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
        }
    };
    d.push(("decomposed into native ops".to_string(), names(&decomposed)));
    d.push(("host fallback".to_string(), names(&unreachable)));
    let dtypes: Vec<&str> = caps.dtypes.iter().map(|t| t.name()).collect();
    d.push(("dtypes".to_string(), dtypes.join(", ")));
    d
}

#[cfg(feature = "vulkan")]
fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// Bytes with a binary unit: "128 MiB (134217728 bytes)".
#[cfg_attr(not(feature = "vulkan"), allow(dead_code))]
fn bytes(n: u64) -> String {
    let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match units.iter().find(|(u, _)| n >= *u) {
        Some((u, name)) => format!("{:.1} {name} ({n} bytes)", n as f64 / *u as f64),
        None => format!("{n} bytes"),
    }
}

/// The adapter facts `rlx devices` shows for the native Vulkan backend, then the generic ones.
#[cfg(feature = "vulkan")]
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
mod tests;
