//! Operand → binding resolution, and the layout of host I/O staging memory: the parts of
//! allocating and binding a schedule that do not depend on the driver.
//!
//! A driver allocates one buffer per [`crate::Schedule::buffers`] entry into a [`Buffers`]
//! table, then asks it for the buffer behind each operand.

use crate::schedule::{BufferId, BufferSpec, LeafKind, Operand, Schedule};
use crate::GpuError;
use rlx_ir::{NodeId, TensorType};
use std::collections::HashMap;

/// The params and states of one compile group, by name: the buffer holding each and its type.
/// Every executable of the group binds these buffers, so a value set or written through one
/// is what the others read.
#[derive(Debug)]
pub struct SharedLeaves<B> {
    map: HashMap<String, (B, TensorType)>,
}

/// What both drivers' `compile_group` do: lowers each of `graphs` for `limits` and builds its
/// executable with `build`, all of them sharing one [`SharedLeaves`].
pub fn compile_group<B, E>(
    graphs: &[&rlx_ir::Graph],
    limits: &crate::GpuLimits,
    options: &rlx_backend::KernelOptions,
    device: &str,
    mut build: impl FnMut(&crate::ValidSchedule, &mut SharedLeaves<B>) -> Result<E, rlx_backend::BackendError>,
) -> Result<Vec<E>, rlx_backend::BackendError> {
    let mut shared = SharedLeaves::default();
    graphs
        .iter()
        .map(|g| {
            let schedule = crate::lower(g, limits, options).map_err(|e| crate::backend_error(device, e))?;
            build(&schedule, &mut shared)
        })
        .collect()
}

impl<B> Default for SharedLeaves<B> {
    fn default() -> Self {
        SharedLeaves { map: HashMap::new() }
    }
}

/// The driver's buffers (`B`: a wgpu::Buffer, a Vulkan buffer handle, …) by [`BufferId`].
#[derive(Debug)]
pub struct Buffers<B> {
    pools: Vec<B>,
    leaves: Vec<B>,
    scratch: Vec<B>,
}

impl<B> Buffers<B> {
    /// Allocates every buffer of `schedule` with `alloc`, stopping at the first failure.
    pub fn allocate<E>(
        schedule: &Schedule,
        mut alloc: impl FnMut(&BufferSpec) -> Result<B, E>,
    ) -> Result<Self, E> {
        let mut table = Buffers { pools: Vec::new(), leaves: Vec::new(), scratch: Vec::new() };
        for spec in schedule.buffers() {
            let b = alloc(&spec)?;
            match spec.id {
                BufferId::Pool(_) => table.pools.push(b),
                BufferId::Leaf(_) => table.leaves.push(b),
                BufferId::Scratch(_) => table.scratch.push(b),
            }
        }
        Ok(table)
    }

    /// [`Self::allocate`] for one executable of a compile group: a param or state leaf whose
    /// name `shared` already holds takes that buffer (same name, same type, else `mismatch`
    /// gives the error), and the ones it does not hold are allocated and added. Returns the
    /// table and, per leaf, whether its buffer is new (a new state buffer must be zeroed; a
    /// shared one keeps what the group wrote).
    pub fn allocate_shared<E>(
        schedule: &Schedule,
        shared: &mut SharedLeaves<B>,
        mut alloc: impl FnMut(&BufferSpec) -> Result<B, E>,
        mismatch: impl Fn(&str, &TensorType, &TensorType) -> E,
    ) -> Result<(Self, Vec<bool>), E>
    where
        B: Clone,
    {
        let mut fresh = Vec::new();
        let table = Self::allocate(schedule, |spec| {
            let BufferId::Leaf(i) = spec.id else {
                return alloc(spec);
            };
            let Some(leaf) = schedule.leaves.get(i) else {
                return alloc(spec);
            };
            let name = match &leaf.kind {
                LeafKind::Param(n) | LeafKind::State(n) => n,
                LeafKind::Input(_) | LeafKind::Constant(_) => {
                    fresh.push(true);
                    return alloc(spec);
                }
            };
            if let Some((b, ty)) = shared.map.get(name) {
                if *ty != leaf.ty {
                    return Err(mismatch(name, ty, &leaf.ty));
                }
                fresh.push(false);
                return Ok(b.clone());
            }
            let b = alloc(spec)?;
            shared.map.insert(name.clone(), (b.clone(), leaf.ty.clone()));
            fresh.push(true);
            Ok(b)
        })?;
        Ok((table, fresh))
    }

    /// The buffer behind `id`.
    pub fn get(&self, id: BufferId) -> Result<&B, GpuError> {
        let found = match id {
            BufferId::Pool(i) => self.pools.get(i),
            BufferId::Leaf(i) => self.leaves.get(i),
            BufferId::Scratch(i) => self.scratch.get(i),
        };
        found.ok_or_else(|| GpuError::Lowering {
            node: format!("{id:?}"),
            reason: "an operand names a buffer the schedule does not have".into(),
        })
    }

    /// Every buffer, in the order of [`Schedule::buffers`].
    pub fn iter(&self) -> impl Iterator<Item = &B> {
        self.pools.iter().chain(&self.leaves).chain(&self.scratch)
    }
}

/// Where one item lives in a set of staging buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub buffer: usize,
    pub offset: u64,
    pub size: u64,
}

/// Packs items of `sizes` bytes in order into staging buffers of at most `max_buffer` bytes,
/// each item at an offset aligned to `align` (a power of two). Returns the buffer sizes and
/// each item's place. An item larger than `max_buffer` gets a buffer of its own (whose creation
/// the device then refuses with a clear error).
pub fn pack(sizes: &[u64], align: u64, max_buffer: u64) -> (Vec<u64>, Vec<Place>) {
    let align = align.max(1);
    let mut buffers: Vec<u64> = Vec::new();
    let mut places = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let index = buffers.len().saturating_sub(1);
        match buffers.last_mut() {
            Some(end) if end.div_ceil(align) * align + size <= max_buffer => {
                let offset = end.div_ceil(align) * align;
                *end = offset + size;
                places.push(Place { buffer: index, offset, size });
            }
            _ => {
                places.push(Place { buffer: buffers.len(), offset: 0, size });
                buffers.push(size);
            }
        }
    }
    (buffers, places)
}

/// Host I/O of one run: every input leaf and every non-empty output, with its staging place.
#[derive(Clone, Debug, PartialEq)]
pub struct IoPlan {
    /// (leaf index, input node, its staging place) for each input leaf, in schedule order.
    pub inputs: Vec<(usize, NodeId, Place)>,
    /// Per graph output: its operand and staging place, `None` when empty.
    pub outputs: Vec<Option<(Operand, Place)>>,
    /// Sizes of the upload staging buffers and of the readback staging buffers.
    pub upload_buffers: Vec<u64>,
    pub readback_buffers: Vec<u64>,
}

impl IoPlan {
    /// Plans staging for `schedule`: inputs packed into upload buffers, outputs into readback
    /// buffers, `align` and `max_buffer` as in [`pack`]. `extra_readback` bytes (GPU timestamps,
    /// say) follow the outputs; their place is the last of `readback_places`.
    pub fn new(schedule: &Schedule, align: u64, max_buffer: u64) -> Self {
        let inputs: Vec<(usize, NodeId, u64)> =
            schedule.inputs().map(|(i, l)| (i, l.node, l.bytes)).collect();
        let sizes: Vec<u64> = inputs.iter().map(|&(_, _, b)| b).collect();
        let (upload_buffers, places) = pack(&sizes, align, max_buffer);
        let inputs = inputs.into_iter().zip(places).map(|((i, n, _), p)| (i, n, p)).collect();
        let out_sizes: Vec<u64> = schedule.outputs.iter().filter_map(|(op, _)| op.map(|o| o.size)).collect();
        let (readback_buffers, places) = pack(&out_sizes, align, max_buffer);
        let mut places = places.into_iter();
        let outputs =
            schedule.outputs.iter().map(|(op, _)| op.and_then(|o| places.next().map(|p| (o, p)))).collect();
        IoPlan { inputs, outputs, upload_buffers, readback_buffers }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_pack_aligned_until_a_buffer_is_full() {
        let (buffers, places) = pack(&[12, 4, 16], 8, 1 << 20);
        assert_eq!(buffers, vec![40]);
        assert_eq!(
            places,
            vec![
                Place { buffer: 0, offset: 0, size: 12 },
                Place { buffer: 0, offset: 16, size: 4 },
                Place { buffer: 0, offset: 24, size: 16 },
            ]
        );
        let (buffers, places) = pack(&[12, 4, 16], 8, 32);
        assert_eq!(buffers, vec![20, 16]);
        assert_eq!(places[2], Place { buffer: 1, offset: 0, size: 16 });
        let (buffers, _) = pack(&[8, 100, 8], 8, 64);
        assert_eq!(buffers, vec![8, 100, 8]);
        assert_eq!(pack(&[], 8, 64), (vec![], vec![]));
    }

    #[test]
    fn buffers_resolve_by_id_and_unknown_ids_are_errors() {
        let s = Schedule {
            name: "g".into(),
            steps: vec![],
            pools: vec![16, 32],
            leaves: vec![],
            scratch: vec![8],
            outputs: vec![],
        };
        let t: Buffers<u64> = Buffers::allocate(&s, |spec| Ok::<_, ()>(spec.bytes)).unwrap();
        assert_eq!(*t.get(BufferId::Pool(1)).unwrap(), 32);
        assert_eq!(*t.get(BufferId::Scratch(0)).unwrap(), 8);
        assert!(t.get(BufferId::Leaf(0)).is_err());
        assert_eq!(t.iter().count(), 3);
        let labels: Vec<String> = s.buffers().into_iter().map(|b| b.label).collect();
        assert_eq!(labels, ["g pool 0", "g pool 1", "g scratch 0"]);
    }
}
