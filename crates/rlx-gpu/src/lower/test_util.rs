//! Helpers the lowering tests share: limits, graphs of f32 inputs and one output, lowering with
//! default options, step keys.

use crate::schedule::{GpuLimits, Schedule};
use crate::{lower, GpuError, KernelKey};
use rlx_backend::KernelOptions;
use rlx_ir::{DType, Graph, NodeId};

/// Lavapipe's limits with `shared` bytes of workgroup memory.
pub(super) fn limits(shared: u32) -> GpuLimits {
    GpuLimits { shared_memory_bytes: shared, ..GpuLimits::lavapipe() }
}

/// A graph named `name` with the f32 inputs `(name, dims)`, in order, and the single output
/// `f` builds from them.
pub(super) fn graph(
    name: &str,
    inputs: &[(&str, &[usize])],
    f: impl FnOnce(&mut Graph, &[NodeId]) -> NodeId,
) -> Graph {
    let mut g = Graph::new(name);
    let ids: Vec<NodeId> = inputs.iter().map(|&(n, dims)| g.input(n, dims, DType::F32).unwrap()).collect();
    let y = f(&mut g, &ids);
    g.set_outputs(&[y]).unwrap();
    g
}

/// `g` lowered for `limits` with `options`.
pub(super) fn lowered_with(
    g: &Graph,
    limits: &GpuLimits,
    options: &KernelOptions,
) -> Result<Schedule, GpuError> {
    lower(g, limits, options).map(crate::ValidSchedule::into_inner)
}

/// `g` lowered for `limits` with default options.
pub(super) fn lowered(g: &Graph, limits: &GpuLimits) -> Result<Schedule, GpuError> {
    lowered_with(g, limits, &KernelOptions::default())
}

/// `g` lowered for `limits` with `options`; it must lower.
pub(super) fn schedule_with(g: &Graph, limits: &GpuLimits, options: &KernelOptions) -> Schedule {
    lowered_with(g, limits, options).unwrap()
}

/// `g` lowered for lavapipe with 32 KiB of workgroup memory and default options.
pub(super) fn schedule(g: &Graph) -> Schedule {
    lowered(g, &limits(32 * 1024)).unwrap()
}

/// The kernel of each step.
pub(super) fn keys(s: &Schedule) -> Vec<KernelKey> {
    s.steps.iter().map(|d| d.key).collect()
}
