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
//!   EXPERIMENTAL_COOPERATIVE_MATRIX, IMMEDIATES and TIMESTAMP_QUERY are requested only where
//!   the adapter has them, limits are the adapter's own; [`WgpuInfo`] records what was granted.
//! - [`Backend::capabilities`]: every op but Conv2d, Pool2d, Upsample2x and FusedElementwise
//!   (rlx-opt decomposes those); dtypes F32, I32, U32 and Bool (Bool is a u32 0/1 word on the
//!   device); native broadcasting; buffer alignment = minStorageBufferOffsetAlignment;
//!   max tensor bytes = the largest storage binding.
//! - `compile` lowers the graph with `rlx_gpu::lower` and builds everything once: an arena for
//!   planned intermediates, a buffer per leaf, scratch buffers (all STORAGE | COPY_DST |
//!   COPY_SRC, labelled); constants uploaded; pipelines from a per-device cache keyed by
//!   `KernelKey`; params as immediates where the device has enough of them, else one small
//!   uniform buffer per step; bind groups; staging buffers for readback. Inputs are bound
//!   read-only, except those in the same buffer as one of the step's outputs (intermediates
//!   share the arena): wgpu refuses read-only and read-write uses of one buffer in a dispatch,
//!   so those are declared `read_write` (see `pipeline.rs`).
//! - `run` writes the inputs, records one compute pass with every step, copies the outputs into
//!   the staging buffers (reused by every run), submits once, waits once. Each run records a
//!   [`RunProfile`]: upload = the host-side queue writes; compute = the pass by GPU timestamps
//!   where the device has them, else submit-to-wait; readback = the rest of the call (the
//!   device-side copies, the map, the conversion).
//! - Errors: an uncaptured-error handler and a device-lost callback record into the backend;
//!   compile, `set_param` and `run` execute inside out-of-memory, validation and internal error
//!   scopes. Failures come back as `OutOfMemory`, `DeviceLost`, `LimitExceeded` or `Driver`
//!   (naming the scope), never as panics.
//!
//! Not here: which kernels a graph becomes (rlx-gpu) and how a graph is prepared (rlx-opt).
//! F16 storage is refused (the capabilities do not list it). Kernel variants that need f16,
//! subgroups or cooperative matrices are rlx-gpu's to add; [`WgpuInfo::features`] says which
//! the device allows.

mod adapter;
mod context;
mod error;
mod executable;
mod info;
mod pipeline;
mod staging;
mod words;

pub use adapter::{
    parse_adapter_choice, parse_backends, requested_features, requested_limits, wanted_features,
    AdapterChoice, WgpuOptions, ADAPTER_ENV, BACKEND_ENV,
};
pub use info::{EnabledFeatures, KeyLimits, WgpuInfo};
pub use rlx_backend::RunProfile;
/// The wgpu backend set type of [`WgpuOptions::backends`].
pub use wgpu::Backends;

use context::Context;
use rlx_backend::{Backend, BackendError, Capabilities, Executable};
use rlx_gpu::GpuLimits;
use rlx_ir::{DType, Graph, OpKind};
use std::sync::Arc;

/// The wgpu backend: one device, its pipeline cache and its capabilities.
pub struct WgpuBackend {
    ctx: Arc<Context>,
    caps: Capabilities,
}

impl WgpuBackend {
    /// Opens the adapter the environment selects (see [`WgpuOptions::from_env`]).
    pub fn new() -> Result<Self, BackendError> {
        Self::with_options(WgpuOptions::from_env()?)
    }

    /// Opens the adapter `opts` selects.
    pub fn with_options(opts: WgpuOptions) -> Result<Self, BackendError> {
        let ctx = Context::new(&opts)?;
        let caps = capabilities(&ctx.info);
        Ok(WgpuBackend { ctx: Arc::new(ctx), caps })
    }

    /// The adapter, its driver, the features enabled and the key limits.
    pub fn info(&self) -> &WgpuInfo {
        &self.ctx.info
    }

    /// The device facts rlx-gpu's lowering uses.
    pub fn limits(&self) -> GpuLimits {
        self.ctx.limits.clone()
    }

    /// Number of kernel pipelines built on this device so far (each is built once).
    pub fn cached_pipelines(&self) -> usize {
        self.ctx.cached_pipelines()
    }
}

/// The capabilities of a wgpu device (the same policy as the native Vulkan backend).
pub fn capabilities(info: &WgpuInfo) -> Capabilities {
    let decomposed = [OpKind::Conv2d, OpKind::Pool2d, OpKind::Upsample2x, OpKind::FusedElementwise];
    let limits = info.gpu_limits();
    Capabilities {
        device_name: info.summary(),
        native_ops: Capabilities::all_ops().into_iter().filter(|k| !decomposed.contains(k)).collect(),
        dtypes: [DType::F32, DType::I32, DType::U32, DType::Bool].into_iter().collect(),
        native_broadcast: true,
        buffer_alignment: limits.min_offset_alignment.next_power_of_two() as usize,
        max_tensor_bytes: limits.max_binding_bytes,
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> &'static str {
        "wgpu"
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn compile(&self, graph: &Graph) -> Result<Box<dyn Executable>, BackendError> {
        Ok(Box::new(executable::WgpuExecutable::compile(self.ctx.clone(), graph)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}

    #[test]
    fn handles_cross_threads() {
        send_sync::<WgpuBackend>();
        send::<executable::WgpuExecutable>();
    }

    #[test]
    fn capabilities_follow_the_gpu_policy() {
        let info = WgpuInfo {
            name: "dev".into(),
            backend: "Vulkan".into(),
            device_type: "DiscreteGpu".into(),
            vendor: 0,
            device: 0,
            driver: String::new(),
            driver_info: String::new(),
            features: EnabledFeatures::default(),
            limits: KeyLimits {
                max_storage_buffer_binding_size: 2 << 30,
                max_buffer_size: 4 << 30,
                min_storage_buffer_offset_alignment: 32,
                ..Default::default()
            },
        };
        let caps = capabilities(&info);
        for k in [OpKind::Conv2d, OpKind::Pool2d, OpKind::Upsample2x, OpKind::FusedElementwise] {
            assert!(!caps.supports(k), "{k:?}");
        }
        for k in [OpKind::MatMul, OpKind::FusedMatMul, OpKind::AddNorm, OpKind::Attention, OpKind::TopK] {
            assert!(caps.supports(k), "{k:?}");
        }
        assert_eq!(caps.native_ops.len(), Capabilities::all_ops().len() - 4);
        assert!(!caps.dtypes.contains(&DType::F16) && caps.dtypes.contains(&DType::Bool));
        assert_eq!(caps.dtypes.len(), 4);
        assert!(caps.native_broadcast);
        assert_eq!(caps.buffer_alignment, 32);
        assert_eq!(caps.max_tensor_bytes, 2 << 30);
        assert_eq!(caps.device_name, "dev (Vulkan)");
    }
}
