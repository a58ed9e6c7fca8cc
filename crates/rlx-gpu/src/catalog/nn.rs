//! Kernel family "nn" (matmul with epilogues, norms, attention, rope): its keys, variants and params structs.

use crate::KernelVariant;

/// Kernels of the nn family (being written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NnKernel {}

pub(crate) fn variant(k: NnKernel) -> KernelVariant {
    match k {}
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<NnKernel> {
    Vec::new()
}
