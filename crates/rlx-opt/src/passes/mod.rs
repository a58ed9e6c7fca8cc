//! The passes. Each one builds a new graph by walking the old one in order and pushing
//! (re-inferring) nodes through [`Graph::push`], keeping a map old id → new id. Inputs and params
//! keep their names; outputs keep their order and types.

mod dce;
mod decompose;
mod decompose_attention;
mod decompose_vision;
mod fold;
mod fuse_elementwise;
mod fuse_matmul;
mod fuse_norm;
mod legalize;
mod legalize_dtypes;

pub use dce::dce;
pub use decompose::DECOMPOSABLE;
pub use fold::const_fold;
pub use fuse_elementwise::fuse_elementwise;
pub use fuse_matmul::fuse_matmul_epilogue;
pub use fuse_norm::fuse_add_norm;
pub use legalize::legalize;
pub use legalize_dtypes::legalize_dtypes;

pub(crate) use dce::dce_mapped;
pub(crate) use legalize::legalize_with_origin;
pub(crate) use legalize_dtypes::legalize_dtypes_with_origin;

use crate::OptError;
use rlx_ir::{Graph, Node, NodeId, Op};

/// The old → new node map of a pass in progress, with the new graph being built.
pub(crate) struct Rewriter<'g> {
    pub(crate) old: &'g Graph,
    pub(crate) new: Graph,
    map: Vec<Option<NodeId>>,
    pass: &'static str,
}

impl<'g> Rewriter<'g> {
    pub(crate) fn new(old: &'g Graph, pass: &'static str) -> Self {
        Rewriter { old, new: Graph::new(old.name()), map: vec![None; old.len()], pass }
    }

    /// The new id of old node `id`; an error if the pass has not produced it yet.
    pub(crate) fn get(&self, id: NodeId) -> Result<NodeId, OptError> {
        self.map.get(id.index()).copied().flatten().ok_or_else(|| OptError::Invariant {
            pass: self.pass,
            node: id,
            reason: "node read before it was rewritten (or read after being removed)".into(),
        })
    }

    pub(crate) fn set(&mut self, old: NodeId, new: NodeId) {
        if let Some(slot) = self.map.get_mut(old.index()) {
            *slot = Some(new);
        }
    }

    /// New ids of a node's inputs.
    pub(crate) fn inputs_of(&self, node: &Node) -> Result<Vec<NodeId>, OptError> {
        node.inputs.iter().map(|&i| self.get(i)).collect()
    }

    /// Copies old node `id` unchanged (same op, mapped inputs).
    pub(crate) fn copy(&mut self, id: NodeId) -> Result<NodeId, OptError> {
        let node = self.old.node(id)?;
        let new = match &node.op {
            // Inputs and params carry their type; there are no operands to infer it from.
            Op::Input { .. } | Op::Param { .. } | Op::State { .. } => {
                self.new.push_leaf(node.op.clone(), node.ty.clone())?
            }
            op => {
                let inputs = self.inputs_of(node)?;
                self.new.push(op.clone(), &inputs)?
            }
        };
        self.set(id, new);
        Ok(new)
    }

    /// Pushes `op` into the new graph as the replacement of old node `id`.
    pub(crate) fn replace(&mut self, id: NodeId, op: Op, inputs: &[NodeId]) -> Result<NodeId, OptError> {
        let new = self.new.push(op, inputs)?;
        self.set(id, new);
        Ok(new)
    }

    /// Sets the outputs of the new graph (checking that each keeps its type) and returns it with
    /// the old → new map.
    pub(crate) fn finish(mut self) -> Result<(Graph, Vec<Option<NodeId>>), OptError> {
        let mut outs = Vec::with_capacity(self.old.outputs().len());
        for &o in self.old.outputs() {
            let new = self.get(o)?;
            let before = self.old.ty(o)?;
            let after = self.new.ty(new)?;
            if before != after {
                return Err(OptError::Invariant {
                    pass: self.pass,
                    node: o,
                    reason: format!("graph output changed type from {before} to {after}"),
                });
            }
            outs.push(new);
        }
        if !outs.is_empty() {
            self.new.set_outputs(&outs)?;
        }
        Ok((self.new, self.map))
    }
}

/// Per node, the ids of the nodes that read it (a node reading another twice appears twice).
pub(crate) fn users(g: &Graph) -> Vec<Vec<NodeId>> {
    let mut u = vec![Vec::new(); g.len()];
    for (i, n) in g.nodes().iter().enumerate() {
        for inp in &n.inputs {
            if let Some(list) = u.get_mut(inp.index()) {
                list.push(NodeId(i as u32));
            }
        }
    }
    u
}

/// Per node, whether it is one of the graph's outputs.
pub(crate) fn output_mask(g: &Graph) -> Vec<bool> {
    let mut m = vec![false; g.len()];
    for o in g.outputs() {
        if let Some(slot) = m.get_mut(o.index()) {
            *slot = true;
        }
    }
    m
}

/// The single node reading `id`, if exactly one node reads it exactly once and it is not a graph
/// output: the condition for folding `id` into its reader.
pub(crate) fn sole_user(users: &[Vec<NodeId>], is_output: &[bool], id: NodeId) -> Option<NodeId> {
    if is_output.get(id.index()).copied().unwrap_or(true) {
        return None;
    }
    match users.get(id.index())?.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}
