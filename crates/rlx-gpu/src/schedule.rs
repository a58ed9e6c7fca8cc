//! A `Schedule`: what a driver executes for one compiled graph. Produced by [`crate::lower`]
//! from a verified, optimized graph and its memory plan; consumed by rlx-vulkan and rlx-wgpu,
//! which only allocate, bind and launch.

use crate::{KernelKey, KernelVariant};
use rlx_ir::{NodeId, Tensor, TensorType};

/// Device facts the lowering needs (filled by each driver from its probe).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuLimits {
    /// Largest storage-buffer binding in bytes (lavapipe 128 MiB; wgpu on the H100 2 GiB).
    pub max_binding_bytes: u64,
    /// Binding offsets must be multiples of this (minStorageBufferOffsetAlignment); a power of two.
    pub min_offset_alignment: u64,
    /// maxComputeWorkGroupCount.
    pub max_workgroups: [u32; 3],
    /// Bytes of workgroup (shared) memory.
    pub shared_memory_bytes: u32,
    /// Subgroup size (0 when unknown).
    pub subgroup_size: u32,
}

/// Which device buffer an operand lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferId {
    /// The one arena holding every planned intermediate (size [`Schedule::arena_bytes`]).
    Arena,
    /// The own buffer of `Schedule::leaves[i]` (an input, param or constant).
    Leaf(usize),
    /// The own buffer of `Schedule::scratch[i]` (per-step temporary storage a lowering asked for).
    Scratch(usize),
}

/// A byte range of a device buffer bound to one kernel binding. `size > 0` always (a zero-size
/// binding is illegal in Vulkan); lowerings skip steps on empty tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    pub buffer: BufferId,
    pub offset: u64,
    pub size: u64,
}

/// What fills a leaf buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum LeafKind {
    /// Uploaded on every `run`.
    Input(String),
    /// Uploaded by `set_param`.
    Param(String),
    /// Uploaded once at compile time.
    Constant(Tensor),
}

/// An input, param or constant: device storage of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    pub node: NodeId,
    pub kind: LeafKind,
    pub ty: TensorType,
    /// Device bytes: numel × 4 for every dtype (Bool is one u32 word on GPUs; F16 is not yet
    /// stored on GPUs and is refused by the capabilities).
    pub bytes: u64,
}

/// One kernel launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Dispatch {
    pub key: KernelKey,
    /// Node and kernel, e.g. "%12 layer_norm": labels pipelines and shows in errors.
    pub label: String,
    /// One operand per entry of the variant's `bindings`, in order.
    pub operands: Vec<Operand>,
    /// The params struct's bytes (push constants or a uniform).
    pub params: Vec<u8>,
    pub workgroups: [u32; 3],
}

/// Everything a driver needs to run one graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub steps: Vec<Dispatch>,
    pub arena_bytes: u64,
    pub leaves: Vec<Leaf>,
    /// Sizes in bytes of temporary buffers steps use (each at least 4).
    pub scratch: Vec<u64>,
    /// Where each graph output can be read back, in order; `None` for an empty output.
    pub outputs: Vec<(Option<Operand>, TensorType)>,
}

impl Dispatch {
    /// A launch of `key` with its params; the operand count is checked against the variant in
    /// [`Schedule::validate`].
    pub fn new<P: bytemuck::Pod>(
        key: KernelKey,
        label: impl Into<String>,
        operands: Vec<Operand>,
        params: &P,
        workgroups: [u32; 3],
    ) -> Self {
        Dispatch {
            key,
            label: label.into(),
            operands,
            params: bytemuck::bytes_of(params).to_vec(),
            workgroups,
        }
    }

    pub fn variant(&self) -> KernelVariant {
        crate::variant(self.key)
    }
}
