//! Lowering of state writes: `WriteRows` becomes one `write_rows.wgsl` launch that writes the
//! rows into the state's own leaf buffer (32-bit words: f16 or bf16 rows of an even count move
//! two elements a word). The node's value *is* that buffer (the memory plan
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
use rlx_ir::{DType, Graph, NodeId, Op};
use std::collections::{HashMap, HashSet};

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (Op::WriteRows { axis }, &[state, rows, offset]) = (&at.node.op, at.node.inputs.as_slice()) else {
        return Err(at.bad("not a 3-operand write_rows"));
    };
    let dims = cx.ty(state)?.shape.dims();
    let (outer, cap, mut inner) = split_at_axis(dims, *axis);
    // Rows of an even count of 2-byte elements (a KV cache held in f16) move as words.
    if super::shape::packed_rows(cx, at.node)? {
        inner /= 2;
    }
    let n = cx.ty(rows)?.shape.dims().get(*axis).copied().unwrap_or(0);
    if cx.in_place.get(&rows) == Some(&state) {
        return Ok(()); // the rows' kernel wrote the state itself
    }
    // A cast f32 → f16/bf16 absorbed into this write ([`narrowing_writes`]): bind the f32
    // rows and round them as they are written.
    let (rows, kernel) = match cx.absorbed.contains(&rows) {
        true => {
            let src = *cx.node(rows)?.inputs.first().ok_or_else(|| at.bad("a cast without its input"))?;
            let kernel = StateKernel::narrowing(cx.ty(state)?.dtype)
                .ok_or_else(|| at.bad("an absorbed cast into a state that is neither f16 nor bf16"))?;
            (src, kernel)
        }
        false => (rows, StateKernel::WriteRows),
    };
    let Some(rows_op) = cx.operand(rows)? else {
        return Ok(()); // nothing to write
    };
    // The verifier allows an offset of one entry or one per outer block.
    let per_block = outer != 1 && cx.ty(offset)?.shape.numel() == outer;
    let (params, grid) = WriteRowsParams::new(outer, cap, inner, n, per_block)?;
    let operands = vec![rows_op, cx.operand_nonempty(offset)?, cx.operand_nonempty(at.id)?];
    out.push(at.step(KernelKey::State(kernel), operands, &params, grid));
    Ok(())
}

/// The casts f32 → f16 (or bf16) whose one reader is a state row write of packed rows
/// (`Capabilities::moves_packed_rows`: a KV cache held in f16 taking its new keys): the write
/// rounds the f32 rows itself (`StateKernel::WriteRowsF16`) and the cast launches nothing. A
/// decode step saves two launches a layer.
pub(super) fn narrowing_writes(g: &Graph) -> HashSet<NodeId> {
    let uses = g.use_counts();
    let mut found = HashSet::new();
    for n in g.nodes() {
        let (Op::WriteRows { .. }, &[state, rows, _]) = (&n.op, n.inputs.as_slice()) else { continue };
        let (Ok(cast), Ok(st), Ok(r)) = (g.node(rows), g.ty(state), g.ty(rows)) else { continue };
        let from_f32 = cast.inputs.first().and_then(|&x| g.ty(x).ok()).is_some_and(|t| t.dtype == DType::F32);
        if matches!(cast.op, Op::Cast(_))
            && from_f32
            && StateKernel::narrowing(st.dtype).is_some()
            && rlx_backend::Capabilities::moves_packed_rows(&n.op, &[st, r])
            && uses.get(rows.index()) == Some(&1)
        {
            found.insert(rows);
        }
    }
    found
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

    /// A KV-cache append in f16: f32 rows cast to f16 and written at a run-time offset; with
    /// `keep_cast` the cast is an output too.
    fn half_append(keep_cast: bool) -> Graph {
        let mut g = Graph::new("append");
        let s = g.state("s", &[1, 6, 4], DType::F16).unwrap();
        let x = g.input("x", &[1, 2, 4], DType::F32).unwrap();
        let off = g.input("off", &[1], DType::I32).unwrap();
        let c = g.cast(x, DType::F16).unwrap();
        let w = g.write_rows(s, c, off, 1).unwrap();
        let outs = if keep_cast { vec![w, c] } else { vec![w] };
        g.set_outputs(&outs).unwrap();
        g
    }

    #[test]
    fn a_cast_into_a_half_state_is_rounded_by_the_write() {
        use crate::catalog::state::StateKernel;
        let s = schedule(&half_append(false));
        assert_eq!(crate::lower::test_util::keys(&s), [KernelKey::State(StateKernel::WriteRowsF16)]);
        // The write reads the f32 input (leaf 1) and counts words: 2 rows of 2 words.
        let step = &s.steps[0];
        assert_eq!(step.operands[0].buffer, BufferId::Leaf(1));
        assert_eq!(step.operands[0].size, 2 * 4 * 4);
        // A cast another reader sees stays a launch, and the write moves its words.
        let s = schedule(&half_append(true));
        let keys = crate::lower::test_util::keys(&s);
        assert!(keys.contains(&KernelKey::State(StateKernel::WriteRows)), "{keys:?}");
        assert!(keys.iter().any(|k| matches!(k, KernelKey::Cast(_))), "{keys:?}");
    }
}
