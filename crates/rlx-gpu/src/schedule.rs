//! A `Schedule`: what a driver executes for one compiled graph. Produced by [`crate::lower`]
//! from a verified, optimized graph and its memory plan, validated there once; consumed by
//! rlx-vulkan and rlx-wgpu, which only allocate, bind, record and launch.
//!
//! Storage: every planned intermediate lives in a *pool* buffer. Values whose lifetimes do not
//! overlap share a pool, but one pool never holds two live values, so a step never reads and
//! writes the same buffer. That is what lets wgpu, which tracks usage per buffer, bind inputs
//! read-only and place barriers only between dependent steps (one arena for every value made
//! each step read-write on the whole arena). Leaves (inputs, params, constants) and scratch
//! requests have buffers of their own.

use crate::{KernelKey, KernelVariant};
use rlx_ir::{NodeId, Tensor, TensorType};

/// Device facts the lowering needs (filled by each driver from its probe).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuLimits {
    /// Largest storage-buffer binding in bytes (lavapipe 128 MiB; wgpu on the H100 2 GiB).
    pub max_binding_bytes: u64,
    /// The device's minStorageBufferOffsetAlignment as probed; rlx uses [`Self::alignment`].
    pub min_offset_alignment: u64,
    /// maxComputeWorkGroupCount.
    pub max_workgroups: [u32; 3],
    /// Bytes of workgroup (shared) memory.
    pub shared_memory_bytes: u32,
    /// Subgroup size (0 when unknown).
    pub subgroup_size: u32,
    /// f16 16×16×16 cooperative matrices with f32 accumulation at subgroup scope are usable:
    /// the device offers them and the driver enabled them together with f16 shader arithmetic
    /// (the tensor-core matmul rungs need both).
    pub cooperative_matrix: bool,
    /// Shaders may compute on f16 and read and write it in storage buffers (Vulkan:
    /// shaderFloat16 and storageBuffer16BitAccess; wgpu: SHADER_F16), and the driver enables
    /// both. F16 tensors are stored only where this holds (see [`crate::policy`]).
    pub shader_f16: bool,
    /// Storage buffers one kernel may bind (Vulkan maxPerStageDescriptorStorageBuffers, wgpu
    /// max_storage_buffers_per_shader_stage): launches that would bind more are not formed.
    pub max_storage_bindings: u32,
}

impl GpuLimits {
    /// The alignment of every binding offset and planned buffer: the device's own, at least 16
    /// bytes (vec4 loads stay aligned), rounded up to a power of two. The one rule both drivers
    /// and the capabilities use.
    pub fn alignment(&self) -> u64 {
        self.min_offset_alignment.max(16).next_power_of_two()
    }
}

impl GpuLimits {
    /// lavapipe's limits (128 MiB bindings, 32 KiB shared memory, subgroup 8, f16): the device the
    /// unit tests and the op audit lower for without a device, varied per test with struct-update
    /// syntax.
    pub fn lavapipe() -> Self {
        GpuLimits {
            max_binding_bytes: 128 << 20,
            min_offset_alignment: 16,
            max_workgroups: [65_535; 3],
            shared_memory_bytes: 32 << 10,
            subgroup_size: 8,
            cooperative_matrix: false,
            shader_f16: true,
            max_storage_bindings: 64,
        }
    }

    /// An H200 under Vulkan: 48 KiB shared memory, subgroup 32, cooperative matrices.
    pub fn hopper() -> Self {
        GpuLimits {
            shared_memory_bytes: 48 << 10,
            subgroup_size: 32,
            cooperative_matrix: true,
            ..Self::lavapipe()
        }
    }
}

/// Which device buffer an operand lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferId {
    /// `Schedule::pools[i]`: planned intermediates with disjoint lifetimes, one live at a time.
    Pool(usize),
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

/// Bindings and buffers come in whole units of this many bytes: a kernel may view any operand as
/// an array of vec4 (the tensor-core matmul loads its f32 operands 16 bytes at a time), and the
/// last vec4 of a tensor whose byte size is not a multiple of 16 still lies inside the binding.
/// Kernels never use the bytes past the tensor.
pub const BINDING_UNIT: u64 = 16;

impl Operand {
    /// The bytes a driver binds: [`Self::size`] rounded up to [`BINDING_UNIT`]. Every buffer is
    /// allocated in whole units, so the rounded range stays inside it ([`Schedule::validate`]).
    /// Copies (upload, readback) use the exact `size`.
    pub fn binding_size(&self) -> u64 {
        self.size.div_ceil(BINDING_UNIT).saturating_mul(BINDING_UNIT)
    }

    /// Whether the two byte ranges share a byte (same buffer, overlapping half-open ranges).
    pub fn overlaps(&self, other: &Operand) -> bool {
        self.buffer == other.buffer
            && self.offset < other.offset.saturating_add(other.size)
            && other.offset < self.offset.saturating_add(self.size)
    }

    /// Whether `other` lies entirely inside this range.
    pub fn covers(&self, other: &Operand) -> bool {
        self.buffer == other.buffer
            && self.offset <= other.offset
            && other.offset.saturating_add(other.size) <= self.offset.saturating_add(self.size)
    }
}

/// What fills a leaf buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum LeafKind {
    /// Uploaded on every `run`.
    Input(String),
    /// Uploaded by `set_param`.
    Param(String),
    /// Zeros when the executable is built, then written in place by the steps and by
    /// `set_param`; kept across runs (and shared within a compile group).
    State(String),
    /// Uploaded once at compile time.
    Constant(Tensor),
}

/// An input, param or constant: device storage of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    pub node: NodeId,
    pub kind: LeafKind,
    pub ty: TensorType,
    /// Device bytes ([`crate::convert::device_bytes`]), at least 4.
    pub bytes: u64,
}

impl Leaf {
    /// The input or param name, or "%3 constant": labels its buffer and names it in errors.
    pub fn label(&self) -> String {
        match &self.kind {
            LeafKind::Input(n) | LeafKind::Param(n) | LeafKind::State(n) => n.clone(),
            LeafKind::Constant(_) => format!("{} constant", self.node),
        }
    }
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
    /// Earlier steps (indices into `Schedule::steps`) this one must wait for: it reads what they
    /// wrote, or writes what they read or wrote. Filled by [`crate::deps`] when lowering.
    pub waits_for: Vec<usize>,
}

/// One device buffer a schedule needs: which, how large, and its label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferSpec {
    pub id: BufferId,
    pub bytes: u64,
    pub label: String,
}

/// Everything a driver needs to run one graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// The graph's name (labels buffers).
    pub name: String,
    pub steps: Vec<Dispatch>,
    /// Sizes in bytes of the pool buffers (each at least 4).
    pub pools: Vec<u64>,
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
            waits_for: Vec::new(),
        }
    }

    pub fn variant(&self) -> KernelVariant {
        crate::variant(self.key)
    }
}

impl Schedule {
    /// Size of buffer `id`; `None` when the schedule has no such buffer.
    pub fn buffer_bytes(&self, id: BufferId) -> Option<u64> {
        match id {
            BufferId::Pool(i) => self.pools.get(i).copied(),
            BufferId::Leaf(i) => self.leaves.get(i).map(|l| l.bytes),
            BufferId::Scratch(i) => self.scratch.get(i).copied(),
        }
    }

    /// Every buffer the schedule uses, pools first, then leaves, then scratch.
    pub fn buffers(&self) -> Vec<BufferSpec> {
        let pools = self.pools.iter().enumerate().map(|(i, &bytes)| BufferSpec {
            id: BufferId::Pool(i),
            bytes,
            label: format!("{} pool {i}", self.name),
        });
        let leaves = self.leaves.iter().enumerate().map(|(i, l)| BufferSpec {
            id: BufferId::Leaf(i),
            bytes: l.bytes,
            label: l.label(),
        });
        let scratch = self.scratch.iter().enumerate().map(|(i, &bytes)| BufferSpec {
            id: BufferId::Scratch(i),
            bytes,
            label: format!("{} scratch {i}", self.name),
        });
        pools.chain(leaves).chain(scratch).collect()
    }

    /// Device bytes of every buffer together, saturating at `u64::MAX` (a schedule edited by
    /// hand may hold sizes no device has; the drivers' memory check then refuses it).
    pub fn total_bytes(&self) -> u64 {
        self.buffers().iter().fold(0u64, |sum, b| sum.saturating_add(b.bytes))
    }

    /// Input leaves in schedule order: (leaf index, leaf).
    pub fn inputs(&self) -> impl Iterator<Item = (usize, &Leaf)> {
        self.leaves.iter().enumerate().filter(|(_, l)| matches!(l.kind, LeafKind::Input(_)))
    }

    /// Where a driver that orders steps with global barriers (one barrier makes every earlier
    /// step's writes visible) puts them: `true` before step i when i waits for a step issued
    /// after the last barrier. Derived from [`Dispatch::waits_for`]; the fewest barriers that
    /// honour every dependency in issue order.
    pub fn barriers(&self) -> Vec<bool> {
        let mut since = 0; // first step after the last barrier
        self.steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let needed = s.waits_for.iter().any(|&d| d >= since);
                if needed {
                    since = i;
                }
                needed
            })
            .collect()
    }
}

/// A schedule rlx-gpu has checked against a device's limits, with its dependencies computed:
/// the only kind of schedule a driver accepts, so the drivers never validate again.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidSchedule(Schedule);

impl ValidSchedule {
    /// Computes the dependencies of `schedule`'s steps ([`crate::deps`], replacing any
    /// `waits_for` given) and validates it against `limits` ([`Schedule::validate`]).
    pub fn new(mut schedule: Schedule, limits: &GpuLimits) -> Result<Self, crate::GpuError> {
        crate::deps::analyze(&mut schedule.steps);
        schedule.validate(limits)?;
        Ok(ValidSchedule(schedule))
    }

    /// The schedule, for changes (it has to be validated again to reach a driver).
    pub fn into_inner(self) -> Schedule {
        self.0
    }
}

impl std::ops::Deref for ValidSchedule {
    type Target = Schedule;
    fn deref(&self) -> &Schedule {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing (fuzz/regressions/schedule): buffer sizes summing past `u64::MAX` made
    /// `total_bytes` overflow (a panic with overflow checks) instead of saturating.
    #[test]
    fn total_bytes_saturates() {
        let s = Schedule {
            name: "huge".into(),
            steps: Vec::new(),
            pools: vec![u64::MAX, 16],
            leaves: Vec::new(),
            scratch: vec![u64::MAX],
            outputs: Vec::new(),
        };
        assert_eq!(s.total_bytes(), u64::MAX);
        assert_eq!(Schedule { pools: vec![16, 32], scratch: Vec::new(), ..s }.total_bytes(), 48);
    }
}
