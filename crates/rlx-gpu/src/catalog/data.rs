//! Kernel family "data" (elementwise on every dtype, data movement, reductions): its keys, variants and params structs.

use crate::KernelVariant;

/// Kernels of the data family (being written).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataKernel {}

pub(crate) fn variant(k: DataKernel) -> KernelVariant {
    match k {}
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<DataKernel> {
    Vec::new()
}
