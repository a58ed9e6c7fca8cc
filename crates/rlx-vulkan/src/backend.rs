//! [`VulkanBackend`]: the rlx-backend contract over one Vulkan [`Context`].
//!
//! Probe once (the context's [`AdapterInfo`]), convert once into [`Capabilities`] and rlx-gpu's
//! [`GpuLimits`]; `compile` lowers with rlx-gpu and hands the schedule to
//! [`VulkanExecutable::build`].

use crate::executable::VulkanExecutable;
use crate::probe::AdapterInfo;
use crate::Context;
use rlx_backend::{Backend, BackendError, Capabilities, DType, Executable, OpKind};
use rlx_gpu::{device_bytes, GpuError, GpuLimits};
use rlx_ir::{Graph, NodeId};
use std::sync::Arc;

/// Ops rlx-opt must decompose for every GPU: they have no kernel of their own.
const DECOMPOSED: [OpKind; 4] =
    [OpKind::Conv2d, OpKind::Pool2d, OpKind::Upsample2x, OpKind::FusedElementwise];

/// The smallest binding-offset alignment rlx uses, whatever the device allows (16 bytes keeps
/// vec4 loads aligned).
const MIN_ALIGNMENT: u64 = 16;

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

/// rlx-gpu's view of a device's limits.
pub fn gpu_limits(info: &AdapterInfo) -> GpuLimits {
    let l = &info.limits;
    GpuLimits {
        max_binding_bytes: u64::from(l.max_storage_buffer_range),
        min_offset_alignment: l.min_storage_buffer_offset_alignment.max(MIN_ALIGNMENT),
        max_workgroups: l.max_compute_work_group_count,
        shared_memory_bytes: l.max_compute_shared_memory_size,
        subgroup_size: info.features.subgroup_size,
    }
}

/// What rlx-opt may leave in a graph for a Vulkan device with these limits.
pub fn gpu_capabilities(device_name: &str, limits: &GpuLimits) -> Capabilities {
    let mut native_ops = Capabilities::all_ops();
    for op in DECOMPOSED {
        native_ops.remove(&op);
    }
    Capabilities {
        device_name: device_name.to_string(),
        native_ops,
        dtypes: [DType::F32, DType::I32, DType::U32, DType::Bool].into_iter().collect(),
        native_broadcast: true,
        buffer_alignment: usize::try_from(limits.min_offset_alignment).unwrap_or(usize::MAX),
        max_tensor_bytes: limits.max_binding_bytes,
    }
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
        let caps = gpu_capabilities(&ctx.info().name, &limits);
        VulkanBackend { ctx: Arc::new(ctx), caps, limits }
    }

    /// Replaces the limits the lowering checks against (and the capabilities derived from them).
    /// A test hook: it lets a test hit the binding limit with a small tensor. Limits above what
    /// the device has are the caller's responsibility; the driver still refuses them at record
    /// time.
    pub fn with_limits_override(mut self, limits: GpuLimits) -> Self {
        self.caps = gpu_capabilities(&self.ctx.info().name, &limits);
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

    /// A node whose value does not fit one binding, named with its shape, before the lowering
    /// meets it (the lowering's own error knows the kernel but not the node).
    fn check_tensor_sizes(&self, graph: &Graph) -> Result<(), BackendError> {
        let limit = self.limits.max_binding_bytes;
        for (i, node) in graph.nodes().iter().enumerate() {
            let bytes = device_bytes(&node.ty);
            if bytes > limit {
                return Err(BackendError::LimitExceeded {
                    device: self.caps.device_name.clone(),
                    what: "tensor bytes (one storage binding)",
                    node: format!("{} {} {}", NodeId(i as u32), node.op.name(), node.ty),
                    requested: bytes,
                    limit,
                    hint: "split the tensor (a smaller batch or sequence) so that each fits one binding"
                        .into(),
                });
            }
        }
        Ok(())
    }
}

/// The rlx error a lowering failure means on `device`.
pub(crate) fn lowering_error(device: &str, e: GpuError) -> BackendError {
    let device = device.to_string();
    match e {
        GpuError::TooLarge { kernel, what, value, limit } => BackendError::LimitExceeded {
            device,
            what,
            node: kernel.to_string(),
            requested: value,
            limit,
            hint: "split the op into smaller parts (a smaller batch or sequence)".into(),
        },
        GpuError::Lowering { node, reason } => BackendError::Unsupported { op: node, device, reason },
        GpuError::Shape { kernel, shapes, reason } => BackendError::Unsupported {
            op: kernel.to_string(),
            device,
            reason: format!("{shapes}: {reason}"),
        },
        // Kernel-source errors: a bug in rlx-gpu's catalogue, not in the user's graph.
        other => {
            BackendError::Driver { device, scope: "preparing a kernel".into(), reason: other.to_string() }
        }
    }
}

impl Backend for VulkanBackend {
    fn name(&self) -> &'static str {
        "vulkan"
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn compile(&self, graph: &Graph) -> Result<Box<dyn Executable>, BackendError> {
        self.check_tensor_sizes(graph)?;
        let schedule =
            rlx_gpu::lower(graph, &self.limits).map_err(|e| lowering_error(&self.caps.device_name, e))?;
        Ok(Box::new(VulkanExecutable::build(self.ctx.clone(), graph.name(), schedule, &self.limits)?))
    }
}
