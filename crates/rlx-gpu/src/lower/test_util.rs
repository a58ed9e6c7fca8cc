//! Helpers the lowering tests share: limits, lowering with default options, step keys.

use crate::schedule::{GpuLimits, Schedule};
use crate::{lower, KernelKey};
use rlx_ir::Graph;

/// Lavapipe's limits with `shared` bytes of workgroup memory.
pub(super) fn limits(shared: u32) -> GpuLimits {
    GpuLimits { shared_memory_bytes: shared, ..GpuLimits::lavapipe() }
}

/// `g` lowered for lavapipe with 32 KiB of workgroup memory and default options.
pub(super) fn schedule(g: &Graph) -> Schedule {
    lower(g, &limits(32 * 1024), &rlx_backend::KernelOptions::default()).unwrap().into_inner()
}

/// The kernel of each step.
pub(super) fn keys(s: &Schedule) -> Vec<KernelKey> {
    s.steps.iter().map(|d| d.key).collect()
}
