//! The memory planner: one arena per graph, an offset for every computed value.
//!
//! - The schedule is the node order. A buffer lives from the node that writes it to the last node
//!   that reads it (graph outputs live to the end). Lifetimes are closed intervals: a node's
//!   output never shares memory with one of its own inputs, so kernels need not be in-place safe.
//! - Input, Param and Constant nodes are not planned (slot `None`): they have storage of their
//!   own, owned by the executable.
//! - A Reshape is a view: it shares its input's buffer (and extends its lifetime to the view's
//!   last reader). A reshape of an unplanned node is unplanned too; `view_of` names its storage.
//!   A state write (`WriteRows`) is planned the same way: its result is the state it wrote.
//! - Buffers whose lifetimes do not overlap reuse memory: each new buffer takes the smallest gap
//!   between live buffers that fits (best fit), else the top of the live region.
//! - Sizes are numel × bytes per element, with Bool counted as 4 bytes because GPUs store it as
//!   one u32 word (the host stores one byte). Offsets are multiples of the alignment; an empty
//!   tensor gets a zero-size slot at offset 0, which overlaps nothing.
//! - The arena never exceeds the sum of the buffer sizes each rounded up to the alignment (with
//!   unaligned sizes the unrounded sum cannot be met: two live 4-byte buffers at alignment 64
//!   need 68 bytes).

use crate::OptError;
use rlx_ir::{DType, Graph, NodeId};

/// Where one node's value lives in the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Index into [`MemoryPlan::buffers`]; a reshape shares its input's buffer.
    pub buffer: usize,
    /// Byte offset in the arena (a multiple of the alignment).
    pub offset: u64,
    /// Bytes of the value.
    pub size: u64,
}

/// One allocation of the arena and the span of the schedule it is live for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// The node that writes it.
    pub producer: NodeId,
    pub offset: u64,
    pub size: u64,
    /// Index of the producing node.
    pub first: usize,
    /// Index of the last node reading it (or any view of it); `graph.len()` for graph outputs.
    pub last: usize,
}

/// Result of [`plan`].
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPlan {
    /// Per node (by index): its place in the arena, or `None` for leaves and views of leaves.
    pub slots: Vec<Option<Slot>>,
    /// Per node: for a Reshape, the non-view node whose memory it shows (chains of reshapes
    /// resolved); `None` for every other node.
    pub view_of: Vec<Option<NodeId>>,
    pub buffers: Vec<Buffer>,
    /// Arena size: the largest `offset + size` over all buffers.
    pub peak_bytes: u64,
    pub alignment: usize,
}

impl MemoryPlan {
    /// Sum of every buffer's size, as if nothing were reused.
    pub fn total_bytes(&self) -> u64 {
        // Saturating: each buffer fits `MAX_TENSOR_BYTES`, but three of them can pass `u64::MAX`.
        self.buffers.iter().fold(0u64, |sum, b| sum.saturating_add(b.size))
    }
}

/// Bytes a value of this dtype takes per element in the arena (Bool: 4, see the module docs):
/// [`DType::storage_bytes`], the count `max_tensor_bytes` is checked against too.
pub fn arena_bytes_per_element(dtype: DType) -> u64 {
    dtype.storage_bytes() as u64
}

/// Plans every computed value of `g` into one arena. `alignment` must be a power of two.
pub fn plan(g: &Graph, alignment: usize) -> Result<MemoryPlan, OptError> {
    if !alignment.is_power_of_two() {
        return Err(OptError::BadAlignment { alignment });
    }
    let n = g.len();
    let mut view_of: Vec<Option<NodeId>> = vec![None; n];
    // The node whose storage each node's value lives in (itself unless it is a view).
    let mut root: Vec<usize> = (0..n).collect();
    let mut buffer_of: Vec<Option<usize>> = vec![None; n];
    let mut buffers: Vec<Buffer> = Vec::new();

    for (i, node) in g.nodes().iter().enumerate() {
        if node.op.is_leaf() {
            continue;
        }
        if node.op.is_view() || node.op.writes_in_place() {
            if let Some(src) = node.inputs.first().and_then(|s| root.get(s.index()).copied()) {
                root[i] = src;
                view_of[i] = Some(NodeId(src as u32));
                buffer_of[i] = buffer_of.get(src).copied().flatten();
                continue;
            }
        }
        let size = size_of(g, i)?;
        buffer_of[i] = Some(buffers.len());
        buffers.push(Buffer { producer: NodeId(i as u32), offset: 0, size, first: i, last: i });
    }

    // Lifetimes: every read of a value (through any view) extends its buffer.
    for (i, node) in g.nodes().iter().enumerate() {
        for inp in &node.inputs {
            if let Some(b) = buffer_of.get(inp.index()).copied().flatten().and_then(|b| buffers.get_mut(b)) {
                b.last = b.last.max(i);
            }
        }
    }
    for o in g.outputs() {
        if let Some(b) = buffer_of.get(o.index()).copied().flatten().and_then(|b| buffers.get_mut(b)) {
            b.last = n;
        }
    }

    let peak_bytes = assign_offsets(&mut buffers, alignment as u64)?;
    let slots = buffer_of
        .iter()
        .map(|b| {
            b.and_then(|b| buffers.get(b).map(|buf| Slot { buffer: b, offset: buf.offset, size: buf.size }))
        })
        .collect();
    Ok(MemoryPlan { slots, view_of, buffers, peak_bytes, alignment })
}

fn size_of(g: &Graph, i: usize) -> Result<u64, OptError> {
    let node = g.node(NodeId(i as u32))?;
    let overflow =
        || OptError::SizeOverflow { node: NodeId(i as u32), op: node.op.name(), ty: node.ty.to_string() };
    node.ty
        .shape
        .dims()
        .iter()
        .try_fold(arena_bytes_per_element(node.ty.dtype), |acc, &d| acc.checked_mul(d as u64))
        .ok_or_else(overflow)
}

/// Best-fit placement in schedule order; returns the arena size. `buffers` are sorted by
/// `first` (they were created in node order).
fn assign_offsets(buffers: &mut [Buffer], align: u64) -> Result<u64, OptError> {
    // Live allocations as (offset, end, last use), kept sorted by offset.
    let mut live: Vec<(u64, u64, usize)> = Vec::new();
    let mut peak = 0u64;
    for b in buffers.iter_mut() {
        if b.size == 0 {
            continue;
        }
        // Closed intervals: a buffer whose last reader is this very node stays live.
        live.retain(|&(_, _, last)| last >= b.first);
        let overflow = || OptError::SizeOverflow {
            node: b.producer,
            op: "arena",
            ty: format!("{} bytes at alignment {align}", b.size),
        };
        let mut best: Option<(u64, u64)> = None; // (gap size, offset)
        let mut cursor = 0u64;
        for &(off, end, _) in &live {
            if off >= cursor && off - cursor >= b.size {
                let gap = off - cursor;
                if best.is_none_or(|(g, _)| gap < g) {
                    best = Some((gap, cursor));
                }
            }
            cursor = cursor.max(align_up(end, align).ok_or_else(overflow)?);
        }
        let offset = match best {
            Some((_, off)) => off,
            None => cursor,
        };
        let end = offset.checked_add(b.size).ok_or_else(overflow)?;
        b.offset = offset;
        peak = peak.max(end);
        let pos = live.partition_point(|&(o, _, _)| o < offset);
        live.insert(pos, (offset, end, b.last));
    }
    Ok(peak)
}

fn align_up(x: u64, align: u64) -> Option<u64> {
    x.checked_add(align - 1).map(|v| v & !(align - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(size: u64, first: usize, last: usize) -> Buffer {
        Buffer { producer: NodeId(first as u32), offset: 0, size, first, last }
    }

    #[test]
    fn picks_the_smallest_gap_that_fits() {
        let mut b = vec![
            buf(10, 0, 10),
            buf(50, 1, 2),
            buf(10, 1, 10),
            buf(20, 1, 2),
            buf(10, 1, 10),
            buf(15, 3, 10),
        ];
        let peak = assign_offsets(&mut b, 1).unwrap();
        let offs: Vec<u64> = b.iter().map(|b| b.offset).collect();
        // At step 3 the gaps are [10, 60) and [70, 90); best fit takes the 20-byte one.
        assert_eq!(offs, [0, 10, 60, 70, 90, 70]);
        assert_eq!(peak, 100);
    }

    #[test]
    fn aligns_up_and_detects_overflow() {
        assert_eq!(align_up(0, 64), Some(0));
        assert_eq!(align_up(1, 64), Some(64));
        assert_eq!(align_up(128, 64), Some(128));
        assert_eq!(align_up(u64::MAX, 64), None);
        let mut b = vec![buf(u64::MAX - 8, 0, 2), buf(64, 1, 2)];
        assert!(matches!(assign_offsets(&mut b, 64), Err(OptError::SizeOverflow { .. })));
    }

    #[test]
    fn bool_takes_a_word() {
        assert_eq!(arena_bytes_per_element(DType::Bool), 4);
        assert_eq!(arena_bytes_per_element(DType::F16), 2);
        assert_eq!(arena_bytes_per_element(DType::F32), 4);
    }
}
