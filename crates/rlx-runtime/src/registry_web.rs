//! The backend registry of the web build (wasm32): the CPU (rlx-cpu, on the page's one thread)
//! and WebGPU through rlx-wgpu. There is no native Vulkan in a browser and nothing is
//! calibrated: `Auto` is WebGPU when the browser grants an adapter and a device, else the CPU.
//! A GPU is granted on the browser's event loop, so it opens only through `Session::open`.
//! The `cpu` and `wgpu` features select them as on native targets.

use crate::device::Device;
use crate::error::Error;
use rlx_backend::Backend;
#[cfg(feature = "cpu")]
use rlx_cpu::CpuBackend;
#[cfg(feature = "wgpu")]
use rlx_wgpu::{WgpuBackend, WgpuOptions};

/// Opens a device that needs no waiting: the CPU. A GPU refuses, naming `Session::open`.
pub(crate) fn open(device: Device) -> Result<Box<dyn Backend>, Error> {
    match device {
        Device::Cpu => open_cpu(),
        Device::Vulkan => Err(no_vulkan()),
        Device::Gpu | Device::Auto => Err(Error::DeviceUnavailable {
            device,
            reason: "on the web a GPU is granted on the browser's event loop: open it with \
                     `Session::open(device).await`"
                .into(),
        }),
    }
}

/// Opens `device` without blocking; returns the device it resolved to (`Auto`: the GPU or the
/// CPU) with its backend.
pub(crate) async fn open_async(device: Device) -> Result<(Device, Box<dyn Backend>), Error> {
    match device {
        Device::Gpu => Ok((Device::Gpu, open_webgpu().await?)),
        Device::Auto => match open_webgpu().await {
            Ok(b) => Ok((Device::Gpu, b)),
            Err(_) => Ok((Device::Cpu, open_cpu()?)),
        },
        d => Ok((d, open(d)?)),
    }
}

#[cfg(feature = "cpu")]
fn open_cpu() -> Result<Box<dyn Backend>, Error> {
    Ok(Box::new(CpuBackend::new()))
}

#[cfg(not(feature = "cpu"))]
fn open_cpu() -> Result<Box<dyn Backend>, Error> {
    Err(not_built(Device::Cpu, "cpu"))
}

/// The browser's WebGPU adapter (its default, high-performance one).
#[cfg(feature = "wgpu")]
async fn open_webgpu() -> Result<Box<dyn Backend>, Error> {
    let backend = WgpuBackend::open(WgpuOptions::default()).await.map_err(|e| Error::DeviceUnavailable {
        device: Device::Gpu,
        reason: match e {
            rlx_backend::BackendError::DeviceUnavailable { reason, .. } => {
                format!("{reason} (does this browser have WebGPU enabled?)")
            }
            other => other.to_string(),
        },
    })?;
    Ok(Box::new(backend))
}

#[cfg(not(feature = "wgpu"))]
async fn open_webgpu() -> Result<Box<dyn Backend>, Error> {
    Err(not_built(Device::Gpu, "wgpu"))
}

/// Why a device whose cargo feature is off cannot open.
#[cfg(not(all(feature = "cpu", feature = "wgpu")))]
fn not_built(device: Device, feature: &str) -> Error {
    Error::DeviceUnavailable {
        device,
        reason: format!(
            "this build has no {feature} backend: enable the `{feature}` feature of rlx (or rlx-runtime)"
        ),
    }
}

fn no_vulkan() -> Error {
    Error::DeviceUnavailable {
        device: Device::Vulkan,
        reason: "the native Vulkan backend is not part of the web build; use Device::Gpu (WebGPU)".into(),
    }
}
