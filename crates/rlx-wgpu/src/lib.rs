// Size (issue 22, thin drivers; goal at most 1,500): 1,195 non-test code lines, 1,609 with
// comments and blank lines. Counted over src/**/*.rs minus every `#[cfg(test)]` item (the
// attribute through its closing brace) and the files of `#[cfg(test)] mod x;`; tests/ is not
// counted. Code lines are those neither blank nor comments (tokei's "code"). What is not a
// wgpu call lives in rlx-gpu's `driver` module.
//! rlx-wgpu: the wgpu driver of rlx. It runs rlx-gpu `Schedule`s through wgpu 30 on Vulkan,
//! Metal, DX12 or GL.
//!
//! Contract:
//! - A [`WgpuBackend`] owns one wgpu instance, adapter, device and queue; nothing is
//!   process-global, so backends on different adapters coexist in one process. The adapter is
//!   chosen by [`WgpuOptions`]: `WGPU_BACKEND` restricts the wgpu backends ("vulkan", "metal",
//!   "dx12", "gl"), `RLX_WGPU_ADAPTER` names an adapter by index or name substring, and
//!   otherwise wgpu's high-performance adapter is taken. No adapter gives
//!   `BackendError::DeviceUnavailable` saying why, never a panic.
//! - Probe once, enable exactly what was probed: SHADER_F16, SUBGROUP,
//!   EXPERIMENTAL_COOPERATIVE_MATRIX, IMMEDIATES, TIMESTAMP_QUERY and PIPELINE_CACHE are
//!   requested only where the adapter has them, limits are the adapter's own; [`WgpuInfo`]
//!   records what was granted.
//! - Capabilities, conversion, binding resolution and error meanings come from rlx-gpu's
//!   policy, the same for both GPU drivers.
//! - `compile` lowers the graph with `rlx_gpu::lower` and builds everything once: a buffer per
//!   pool, leaf and scratch request (all STORAGE | COPY_DST | COPY_SRC, labelled); constants
//!   uploaded; pipelines from a per-device cache keyed by `KernelKey`, built through a
//!   `wgpu::PipelineCache` kept on disk between processes where the device allows it
//!   (`RLX_PIPELINE_CACHE`, see [`PipelineCacheDir`]); params as immediates
//!   where the device has enough of them, else one small uniform buffer per step; bind groups;
//!   staging buffers for readback. Inputs are bound read-only: no step reads and writes one
//!   buffer (rlx-gpu's pools), so wgpu places barriers only between dependent steps. Kernels
//!   run without wgpu's shader runtime checks unless [`ShaderChecks::Checked`] is asked for.
//! - `run` writes the inputs, records one compute pass with every step, copies the outputs into
//!   the staging buffers (reused by every run), submits once, waits once. Each run records a
//!   [`RunProfile`]: upload = the host-side queue writes; compute = the pass by GPU timestamps
//!   where the device has them, else submit-to-wait; readback = the rest of the call (the
//!   device-side copies, the map, the conversion).
//! - Errors: an uncaptured-error handler and a device-lost callback record into the backend;
//!   compile and `set_param` execute inside out-of-memory, validation and internal error scopes;
//!   `run` (validated at compile time) checks the device-lost flag and the uncaptured-error log
//!   after each call instead, since three scopes per call cost more than a small graph's GPU
//!   time. Failures come back as `OutOfMemory`, `DeviceLost`, `LimitExceeded` or `Driver`
//!   (naming the scope), never as panics.
//!
//! Not here: which kernels a graph becomes, its dependencies and host ↔ device conversion
//! (rlx-gpu), and how a graph is prepared (rlx-opt). F16 storage is refused (the capabilities
//! do not list it). Kernel variants that need f16,
//! subgroups or cooperative matrices are rlx-gpu's to add; [`WgpuInfo::features`] says which
//! the device allows.

mod backend;
mod buffer;
mod context;
mod error;
mod executable;
mod faults;
mod live;
mod pipeline;
mod pipeline_cache;
mod probe;
mod record;

pub use backend::{capabilities, WgpuBackend};
pub use faults::DeviceLossTrigger;
pub use probe::{
    parse_adapter_choice, parse_backends, requested_features, requested_limits, wanted_features,
    AdapterChoice, EnabledFeatures, KeyLimits, ShaderChecks, WgpuInfo, WgpuOptions, ADAPTER_ENV, BACKEND_ENV,
};
use rlx_backend::BackendError;
pub use rlx_backend::RunProfile;
pub use rlx_gpu::PipelineCacheDir;
/// The wgpu backend set type of [`WgpuOptions::backends`].
pub use wgpu::Backends;

/// Waits for `work`, the async core of a sync API call: with pollster on native.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn wait<T>(
    _device: &str,
    _call: &str,
    work: impl std::future::Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    pollster::block_on(work)
}

/// On the web a thread cannot block on the GPU (the browser's event loop answers it), so the
/// sync API refuses, naming the async call to use instead.
#[cfg(target_arch = "wasm32")]
pub(crate) fn wait<T>(
    device: &str,
    call: &str,
    _work: impl std::future::Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    Err(BackendError::Unsupported {
        op: call.to_string(),
        device: device.to_string(),
        reason: "the web cannot block on the GPU; use the async API (Session::open, \
                 compile_async, set_param_async, run_async)"
            .into(),
    })
}

// Backends are shared between threads and executables move between them (rlx-backend's
// contract): checked when the crate compiles.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    const fn movable<T: Send>() {}
    shared::<WgpuBackend>();
    movable::<executable::WgpuExecutable>();
};
