//! Constant folding.

use super::Rewriter;
use crate::{FoldFn, OptError};
use rlx_ir::{Graph, NodeId, Op, Tensor};

/// Outputs larger than this many elements are left to the device: baking them into the graph
/// would cost more memory (and upload time) than computing them.
pub const MAX_FOLD_ELEMENTS: usize = 1 << 20;

/// Replaces every node whose inputs are all constants (after folding earlier nodes) and whose
/// output has at most `MAX_FOLD_ELEMENTS` elements by a constant computed with `fold`.
/// A node `fold` declines (returns `None`) or answers with a tensor of the wrong type stays as
/// it is. Node ids are unchanged; constants that become unused are left for [`super::dce`].
pub fn const_fold(g: &Graph, fold: FoldFn<'_>) -> Result<Graph, OptError> {
    let mut rw = Rewriter::new(g, "const_fold");
    for (i, node) in g.nodes().iter().enumerate() {
        let id = NodeId(i as u32);
        if node.op.is_leaf() {
            rw.copy(id)?;
            continue;
        }
        let inputs = rw.inputs_of(node)?;
        let folded = if node.ty.numel() > MAX_FOLD_ELEMENTS {
            None
        } else {
            let consts: Option<Vec<&Tensor>> = inputs
                .iter()
                .map(|&n| match rw.new.node(n).map(|n| &n.op) {
                    Ok(Op::Constant(t)) => Some(t),
                    _ => None,
                })
                .collect();
            consts
                .and_then(|c| fold(&node.op, &c, &node.ty))
                .filter(|t| t.shape() == &node.ty.shape && t.dtype() == node.ty.dtype)
        };
        match folded {
            Some(t) => rw.replace(id, Op::Constant(t), &[])?,
            None => rw.replace(id, node.op.clone(), &inputs)?,
        };
    }
    rw.finish().map(|(g, _)| g)
}
