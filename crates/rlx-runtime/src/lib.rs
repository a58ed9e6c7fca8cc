//! rlx-runtime: devices, the backend registry, `Session` and `Executable`.
//!
//! Contract:
//! - [`Session::new`] opens a backend for a [`Device`]; a device that cannot be used gives
//!   [`Error::DeviceUnavailable`] with the reason. `Device::Gpu` is rlx-wgpu's adapter,
//!   `Device::Vulkan` the native backend. [`devices`] reports the same probe for every device,
//!   with its cached [`Calibration`].
//! - [`Device::Auto`] takes `RLX_DEVICE` when set, else ranks the CPU and every GPU backend on a
//!   real GPU (never a software adapter such as lavapipe) by [`estimate_seconds`]: matmul
//!   flops / matmul rate + tensor bytes / bandwidth + steps × dispatch cost + launch cost, and
//!   picks the fastest. [`Session::auto_for`] ranks for a given graph, `Session::new(Auto)` for
//!   [`GraphStats::representative`]. Calibrations ([`calibrate`]: a short micro-benchmark per
//!   device) are cached as JSON at [`calibration_path`], keyed by backend, adapter and driver,
//!   and measured lazily when missing; a corrupt cache is ignored with a warning.
//! - [`Session::compile`] verifies the graph, runs rlx-opt's pipeline for the backend's
//!   capabilities (constant folding evaluates with the CPU reference), and compiles it.
//! - [`Executable::set_param`] and [`Executable::run`] validate every value at the boundary (name,
//!   dtype, length or exact shape, duplicates, missing inputs, unset params) so a backend only
//!   ever sees well-typed tensors. Every failure is an [`Error`] naming what is wrong and the fix;
//!   no public function panics on bad input.
//!
//! Cargo features choose the backends, all three by default: `vulkan` (rlx-vulkan),
//! `wgpu` (rlx-wgpu) and `cpu`. A device whose feature is off stays in [`devices`], unavailable,
//! and [`Session::new`] gives [`Error::DeviceUnavailable`] naming the feature. rlx-cpu is linked
//! whatever the features: constant folding evaluates with it.

#![warn(missing_docs)]

// Calibration (a micro-benchmark per device, cached on disk) and the native registry are not
// part of the web build: there the registry opens the CPU and WebGPU only (`registry_web`).
#[cfg(not(target_arch = "wasm32"))]
mod auto;
#[cfg(not(target_arch = "wasm32"))]
mod cache;
#[cfg(not(target_arch = "wasm32"))]
mod calibrate;
mod device;
mod error;
mod executable;
mod host;
mod rank;
#[cfg(not(target_arch = "wasm32"))]
mod registry;
// The browser's registry (WebGPU and the CPU) stands in under the same name.
#[cfg(target_arch = "wasm32")]
use registry_web as registry;
#[cfg(target_arch = "wasm32")]
mod registry_web;
mod session;

#[cfg(not(target_arch = "wasm32"))]
pub use auto::{cached_ranking, calibrate_device};
#[cfg(not(target_arch = "wasm32"))]
pub use cache::{calibration_path, CacheEntry, DeviceKey};
#[cfg(not(target_arch = "wasm32"))]
pub use calibrate::calibrate;
pub use device::{Device, ParseDeviceError, DEVICE_ENV};
pub use error::{Error, NameList, PortKind};
pub use executable::{Executable, Port};
pub use host::{FlatData, HostData, HostView};
pub use rank::{estimate_seconds, rank, Calibration, GraphStats};
#[cfg(not(target_arch = "wasm32"))]
pub use registry::{devices, status, DeviceStatus};
pub use rlx_backend::{BackendError, KernelOptions, LiveObjects, MatmulKernel, Precision, RunProfile};
pub use rlx_opt::PassOptions;
pub use session::{CompileOptions, Session};
