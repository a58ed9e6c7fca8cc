//! Lowering of state writes: `WriteRows` becomes one `write_rows.wgsl` launch that writes the
//! rows into the state's own leaf buffer. The node's value *is* that buffer (the memory plan
//! aliases it, like a view), so every later reader sees the write, and the dependency analysis
//! orders them after it because they read the range it wrote.
//!
//! A write of a whole state from an elementwise value that nothing else reads, into a state
//! that nothing else reads ([`in_place_writes`]: a training step's updated weights and
//! moments), launches nothing: the elementwise kernel writes its output straight into the
//! state's buffer, which saves a launch and a copy of the tensor per write.

use super::shape::split_at_axis;
use super::{LowerCtx, Site};
use crate::catalog::state::params::WriteRowsParams;
use crate::catalog::state::StateKernel;
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::{Graph, NodeId, Op};
use std::collections::HashMap;

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (Op::WriteRows { axis }, &[state, rows, offset]) = (&at.node.op, at.node.inputs.as_slice()) else {
        return Err(at.bad("not a 3-operand write_rows"));
    };
    let dims = cx.ty(state)?.shape.dims();
    let (outer, cap, inner) = split_at_axis(dims, *axis);
    let n = cx.ty(rows)?.shape.dims().get(*axis).copied().unwrap_or(0);
    if cx.in_place.get(&rows) == Some(&state) {
        return Ok(()); // the rows' kernel wrote the state itself
    }
    let Some(rows_op) = cx.operand(rows)? else {
        return Ok(()); // nothing to write
    };
    // The verifier allows an offset of one entry or one per outer block.
    let per_block = outer != 1 && cx.ty(offset)?.shape.numel() == outer;
    let (params, grid) = WriteRowsParams::new(outer, cap, inner, n, per_block)?;
    let operands = vec![rows_op, cx.operand_nonempty(offset)?, cx.operand_nonempty(at.id)?];
    out.push(at.step(KernelKey::State(StateKernel::WriteRows), operands, &params, grid));
    Ok(())
}

/// The values an elementwise kernel may write straight into a state (value → state): each is
/// the rows of a `WriteRows` that replaces the whole state (same type, offset the constant 0),
/// is an elementwise op's output (unary, binary, compare, where, fused: kernels that write
/// their output and nothing else) read by that write alone and not a graph output, and the
/// state is read by that write alone (so no reader can see the new values early).
pub(super) fn in_place_writes(g: &Graph) -> HashMap<NodeId, NodeId> {
    let mut uses = vec![0usize; g.len()];
    for n in g.nodes() {
        for &x in &n.inputs {
            if let Some(u) = uses.get_mut(x.index()) {
                *u += 1;
            }
        }
    }
    for &o in g.outputs() {
        if let Some(u) = uses.get_mut(o.index()) {
            *u += 1;
        }
    }
    let once = |x: NodeId| uses.get(x.index()) == Some(&1);
    let mut found = HashMap::new();
    for n in g.nodes() {
        let (Op::WriteRows { .. }, &[state, rows, offset]) = (&n.op, n.inputs.as_slice()) else { continue };
        let (Ok(s), Ok(r), Ok(o)) = (g.node(state), g.node(rows), g.node(offset)) else { continue };
        let zero_offset = match &o.op {
            Op::Constant(t) => t.as_i32().is_some_and(|v| v.iter().all(|&x| x == 0)),
            _ => false,
        };
        let elementwise = matches!(
            r.op,
            Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Where | Op::FusedElementwise(_)
        );
        if matches!(s.op, Op::State { .. })
            && s.ty == r.ty
            && zero_offset
            && elementwise
            && once(rows)
            && once(state)
        {
            found.insert(rows, state);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use crate::lower::test_util::schedule;
    use crate::schedule::BufferId;
    use crate::KernelKey;
    use rlx_ir::{DType, Graph, Tensor};

    /// s ← x·2 + 1 (a whole-state write of an elementwise value), with or without another
    /// reader of the state's old value.
    fn update(read_old: bool) -> Graph {
        let mut g = Graph::new("update");
        let s = g.state("s", &[4, 3], DType::F32).unwrap();
        let x = g.input("x", &[4, 3], DType::F32).unwrap();
        let two = g.scalar(2.0).unwrap();
        let y = g.mul(x, two).unwrap();
        let one = g.scalar(1.0).unwrap();
        let y = g.add(y, one).unwrap();
        let zero = g.constant(Tensor::from_i32([1], vec![0]).unwrap()).unwrap();
        let w = g.write_rows(s, y, zero, 0).unwrap();
        let mut outs = vec![w];
        if read_old {
            outs.push(g.neg(s).unwrap());
        }
        g.set_outputs(&outs).unwrap();
        g
    }

    #[test]
    fn whole_state_updates_are_written_in_place() {
        let s = schedule(&update(false));
        let state = s.leaves.iter().position(|l| l.node.index() == 0).unwrap();
        assert!(s.steps.iter().all(|d| !matches!(d.key, KernelKey::State(_))), "no write_rows launch");
        let last = s.steps.last().unwrap();
        assert_eq!(last.operands.last().unwrap().buffer, BufferId::Leaf(state), "the add writes the state");
        // Another reader of the old value keeps the copy.
        let s = schedule(&update(true));
        assert!(s.steps.iter().any(|d| matches!(d.key, KernelKey::State(_))));
    }
}
