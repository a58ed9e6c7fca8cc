//! [`WgpuBackend`]: the rlx-backend contract over one wgpu device. Probe once (the context's
//! [`WgpuInfo`]), convert once into rlx-gpu's `GpuLimits` and from them, by rlx-gpu's policy,
//! into [`Capabilities`]; `compile` lowers with rlx-gpu and builds a `WgpuExecutable`.

use crate::context::Context;
use crate::executable::WgpuExecutable;
use crate::faults::DeviceLossTrigger;
use crate::probe::{WgpuInfo, WgpuOptions};
use rlx_backend::{Backend, BackendError, Capabilities, Executable, KernelOptions, LocalFuture};
use rlx_gpu::GpuLimits;
use rlx_ir::Graph;
use std::sync::Arc;

/// The wgpu backend: one device, its pipeline cache and its capabilities.
pub struct WgpuBackend {
    ctx: Arc<Context>,
    caps: Capabilities,
}

impl WgpuBackend {
    /// Opens the adapter the environment selects (see [`WgpuOptions::from_env`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new() -> Result<Self, BackendError> {
        Self::with_options(WgpuOptions::from_env()?)
    }

    /// Opens the adapter `opts` selects: [`WgpuBackend::open`], waited for.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_options(opts: WgpuOptions) -> Result<Self, BackendError> {
        let _one_at_a_time = rlx_gpu::driver::lock(&crate::context::OPENING);
        pollster::block_on(Self::open(opts))
    }

    /// Opens the adapter `opts` selects, without blocking: the only way on the web, where
    /// the browser's event loop answers the adapter and device requests.
    pub async fn open(opts: WgpuOptions) -> Result<Self, BackendError> {
        let ctx = Context::open(&opts).await?;
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

    /// Whether the pipeline cache was filled from a file on disk (one written by an earlier
    /// backend on the same adapter).
    pub fn pipeline_cache_loaded(&self) -> bool {
        self.ctx.pipeline_cache_loaded()
    }

    /// The pipeline cache file of this adapter; `None` when the cache is off or the device has
    /// no `Features::PIPELINE_CACHE`.
    pub fn pipeline_cache_path(&self) -> Option<std::path::PathBuf> {
        self.ctx.pipeline_cache_path()
    }

    /// Writes the cache file now if pipelines were built since the last save. Done after each
    /// compile and when the backend drops; a failure only leaves the file as it was.
    pub fn save_pipeline_cache(&self) {
        self.ctx.save_pipeline_cache();
    }

    /// A handle that destroys this backend's device (wgpu's `Device::destroy`): the device-lost
    /// callback fires and every later call of the backend and its executables returns
    /// `DeviceLost`. For fault tests (docs/reliability.md); it outlives moving the backend into
    /// a `Session`.
    #[doc(hidden)]
    pub fn device_loss_trigger(&self) -> DeviceLossTrigger {
        DeviceLossTrigger { ctx: self.ctx.clone() }
    }
}

/// The capabilities of a wgpu device: rlx-gpu's GPU policy over its limits.
pub fn capabilities(info: &WgpuInfo) -> Capabilities {
    rlx_gpu::capabilities(&info.summary(), &info.gpu_limits())
}

impl Backend for WgpuBackend {
    fn name(&self) -> &'static str {
        "wgpu"
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn compile(&self, graph: &Graph, options: &KernelOptions) -> Result<Box<dyn Executable>, BackendError> {
        crate::wait(self.ctx.name(), "compile", self.compile_async(graph, options))
    }

    fn compile_async<'a>(
        &'a self,
        graph: &'a Graph,
        options: &'a KernelOptions,
    ) -> LocalFuture<'a, Result<Box<dyn Executable>, BackendError>> {
        Box::pin(async move {
            let schedule = rlx_gpu::lower(graph, &self.ctx.limits, options)
                .map_err(|e| rlx_gpu::backend_error(&self.caps.device_name, e))?;
            let exe = WgpuExecutable::build(self.ctx.clone(), &schedule, &mut Default::default()).await?;
            Ok(Box::new(exe) as Box<dyn Executable>)
        })
    }

    /// Each graph gets its own buffers and bind groups; params and states of the same name are
    /// one buffer bound by all of them.
    fn compile_group(
        &self,
        graphs: &[&Graph],
        options: &KernelOptions,
    ) -> Result<Vec<Box<dyn Executable>>, BackendError> {
        rlx_gpu::compile_group(
            graphs,
            &self.ctx.limits,
            options,
            &self.caps.device_name,
            |schedule, shared| {
                let build = WgpuExecutable::build(self.ctx.clone(), schedule, shared);
                let exe = crate::wait(self.ctx.name(), "compile_group", build)?;
                Ok(Box::new(exe) as Box<dyn Executable>)
            },
        )
    }

    fn live_objects(&self) -> Option<rlx_backend::LiveObjects> {
        Some(self.ctx.live_objects())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EnabledFeatures, KeyLimits};
    use rlx_ir::{DType, OpKind};

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
        for k in [OpKind::Conv2d, OpKind::Pool2d, OpKind::Upsample2x] {
            assert!(!caps.supports(k), "{k:?}");
        }
        for k in [
            OpKind::MatMul,
            OpKind::FusedMatMul,
            OpKind::AddNorm,
            OpKind::Attention,
            OpKind::TopK,
            OpKind::FusedElementwise,
        ] {
            assert!(caps.supports(k), "{k:?}");
        }
        assert_eq!(caps.native_ops.len(), Capabilities::all_ops().len() - 3);
        // No SHADER_F16 enabled: every dtype but f16, which names the missing feature.
        assert!(!caps.dtypes.contains(&DType::F16) && caps.dtypes.contains(&DType::Bool));
        assert_eq!(caps.dtypes.len(), 6);
        assert!(caps.missing_dtype_features[&DType::F16].contains("shaderFloat16"));
        let f16 =
            WgpuInfo { features: EnabledFeatures { shader_f16: true, ..info.features }, ..info.clone() };
        assert!(capabilities(&f16).dtypes.contains(&DType::F16));
        assert!(caps.native_broadcast);
        assert_eq!(caps.buffer_alignment, 32);
        assert_eq!(caps.max_tensor_bytes, 2 << 30);
        assert_eq!(caps.device_name, "dev (Vulkan)");
    }
}
