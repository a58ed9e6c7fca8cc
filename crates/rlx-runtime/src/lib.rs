//! rlx-runtime: devices, the backend registry, `Session` and `Executable`.
//!
//! Contract:
//! - [`Session::new`] opens a backend for a [`Device`]; a device that cannot be used gives
//!   [`Error::DeviceUnavailable`] with the reason. [`Device::Auto`] takes `RLX_DEVICE` when set,
//!   else the best available device: a Vulkan GPU (not a CPU implementation such as lavapipe),
//!   else the CPU. [`devices`] reports the same probe for every device.
//! - [`Session::compile`] verifies the graph, runs rlx-opt's pipeline for the backend's
//!   capabilities (constant folding evaluates with the CPU reference), and compiles it.
//! - [`Executable::set_param`] and [`Executable::run`] validate every value at the boundary (name,
//!   dtype, length or exact shape, duplicates, missing inputs, unset params) so a backend only
//!   ever sees well-typed tensors. Every failure is an [`Error`] naming what is wrong and the fix;
//!   no public function panics on bad input.

mod device;
mod error;
mod executable;
mod host;
mod registry;
mod session;

pub use device::{Device, ParseDeviceError, DEVICE_ENV};
pub use error::{Error, NameList, PortKind};
pub use executable::{Executable, Port};
pub use host::{FlatData, HostData, HostView};
pub use registry::{devices, status, DeviceStatus};
pub use rlx_backend::RunProfile;
pub use rlx_opt::PassOptions;
pub use session::{CompileOptions, Session};
