//! [`VulkanBackend`]: the rlx-backend contract over one Vulkan [`Context`].
//!
//! Probe once (the context's [`AdapterInfo`]), convert once into rlx-gpu's [`GpuLimits`] and
//! from them, by rlx-gpu's policy, into [`Capabilities`]; `compile` lowers with rlx-gpu and hands
//! the schedule to [`VulkanExecutable::build`].

use crate::executable::VulkanExecutable;
use crate::probe::AdapterInfo;
use crate::Context;
use rlx_backend::{Backend, BackendError, Capabilities, Executable, KernelOptions};
use rlx_gpu::GpuLimits;
use rlx_ir::Graph;
use std::sync::Arc;

/// The native Vulkan backend: one device, its capabilities and limits.
pub struct VulkanBackend {
    ctx: Arc<Context>,
    caps: Capabilities,
    limits: GpuLimits,
}

impl std::fmt::Debug for VulkanBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanBackend")
            .field("device", &self.caps.device_name)
            .field("limits", &self.limits)
            .finish()
    }
}

/// rlx-gpu's view of a device's limits ([`AdapterInfo::gpu_limits`]).
pub fn gpu_limits(info: &AdapterInfo) -> GpuLimits {
    info.gpu_limits()
}

impl VulkanBackend {
    /// Opens the device `rlx_vulkan::pick` chooses (discrete first; `RLX_VULKAN_DEVICE=index`
    /// overrides). `DeviceUnavailable` with the reason when there is no loader or device.
    pub fn new() -> Result<Self, BackendError> {
        Ok(Self::with_context(Context::new()?))
    }

    /// A backend over a context opened by the caller (a chosen adapter or memory strategy).
    pub fn with_context(ctx: Context) -> Self {
        let limits = gpu_limits(ctx.info());
        let caps = rlx_gpu::capabilities(&ctx.info().name, &limits);
        VulkanBackend { ctx: Arc::new(ctx), caps, limits }
    }

    /// Replaces the limits the lowering checks against (and the capabilities derived from them).
    /// A test hook: it lets a test hit the binding limit with a small tensor. Limits above what
    /// the device has are the caller's responsibility; the driver still refuses them at record
    /// time.
    pub fn with_limits_override(mut self, limits: GpuLimits) -> Self {
        self.caps = rlx_gpu::capabilities(&self.ctx.info().name, &limits);
        self.limits = limits;
        self
    }

    /// The limits the lowering uses.
    pub fn limits(&self) -> &GpuLimits {
        &self.limits
    }

    /// The probed device.
    pub fn info(&self) -> &AdapterInfo {
        self.ctx.info()
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

impl Backend for VulkanBackend {
    fn name(&self) -> &'static str {
        "vulkan"
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn compile(&self, graph: &Graph, options: &KernelOptions) -> Result<Box<dyn Executable>, BackendError> {
        let schedule = rlx_gpu::lower(graph, &self.limits, options)
            .map_err(|e| rlx_gpu::backend_error(&self.caps.device_name, e))?;
        Ok(Box::new(VulkanExecutable::build(self.ctx.clone(), &schedule)?))
    }

    /// Each graph gets its own buffers and command buffer; params and states of the same name
    /// are one device buffer bound by all of them.
    fn compile_group(
        &self,
        graphs: &[&Graph],
        options: &KernelOptions,
    ) -> Result<Vec<Box<dyn Executable>>, BackendError> {
        rlx_gpu::compile_group(graphs, &self.limits, options, &self.caps.device_name, |schedule, shared| {
            let exe = VulkanExecutable::build_shared(self.ctx.clone(), schedule, shared)?;
            Ok(Box::new(exe) as Box<dyn Executable>)
        })
    }

    fn live_objects(&self) -> Option<rlx_backend::LiveObjects> {
        Some(self.ctx.live_objects())
    }
}
