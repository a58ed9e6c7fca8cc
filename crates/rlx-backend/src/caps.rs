//! What a backend can do, probed once and converted once.

use rlx_ir::{DType, OpKind};
use std::collections::BTreeSet;

/// A backend's abilities, as the optimizer and the runtime need them.
#[derive(Clone, Debug, PartialEq)]
pub struct Capabilities {
    /// Human-readable device name ("cpu (16 threads)", "NVIDIA H100 80GB HBM3", …).
    pub device_name: String,
    /// Ops the backend runs natively. rlx-opt's legalize decomposes every other op into these,
    /// or fails with `Unsupported` naming the op.
    pub native_ops: BTreeSet<OpKind>,
    /// Element types the backend stores and computes.
    pub dtypes: BTreeSet<DType>,
    /// Binary/compare/where ops broadcast their operands themselves. When false, legalize makes
    /// every broadcast an explicit `Expand`.
    pub native_broadcast: bool,
    /// Offsets of planned buffers are multiples of this (a power of two).
    pub buffer_alignment: usize,
    /// Largest single tensor in bytes (one storage binding on GPUs, the machine's memory on the
    /// CPU), counted as [`rlx_ir::TensorType::storage_bytes`] does (Bool as 4 bytes). rlx-opt's
    /// pipeline refuses a graph holding a bigger tensor. Every tensor is also bounded by
    /// [`rlx_ir::MAX_TENSOR_BYTES`] when it is built, whatever this says.
    pub max_tensor_bytes: u64,
}

impl Capabilities {
    /// Every op kind rlx has, fused forms included.
    pub fn all_ops() -> BTreeSet<OpKind> {
        use OpKind::*;
        [
            Input,
            Param,
            Constant,
            Unary,
            Binary,
            Compare,
            Where,
            Cast,
            Reduce,
            ArgReduce,
            Cumsum,
            TopK,
            Reshape,
            Permute,
            Slice,
            Concat,
            Expand,
            Gather,
            Pad,
            Reverse,
            MatMul,
            LayerNorm,
            RmsNorm,
            Softmax,
            LogSoftmax,
            Attention,
            Rope,
            Conv2d,
            Pool2d,
            Upsample2x,
            FusedMatMul,
            AddNorm,
            FusedElementwise,
        ]
        .into_iter()
        .collect()
    }

    /// A backend that runs everything natively, with no size limit of its own
    /// (`max_tensor_bytes` = `u64::MAX`). The CPU backend starts from this and sets
    /// `max_tensor_bytes` to the machine's memory; tests use it as a permissive device.
    pub fn everything(device_name: impl Into<String>) -> Self {
        Capabilities {
            device_name: device_name.into(),
            native_ops: Self::all_ops(),
            dtypes: DType::ALL.into_iter().collect(),
            native_broadcast: true,
            buffer_alignment: 64,
            max_tensor_bytes: u64::MAX,
        }
    }

    pub fn supports(&self, kind: OpKind) -> bool {
        self.native_ops.contains(&kind)
    }
}
