//! Dead-code elimination.

use super::Rewriter;
use crate::OptError;
use rlx_ir::{Graph, NodeId, Op};

/// Drops every node that no output depends on. Input, Param and State nodes stay even when
/// unused, so the runtime still knows (and validates) every name the user declared, and so do
/// state writes ([`Op::writes_in_place`]): their effect outlives the run.
pub fn dce(g: &Graph) -> Result<Graph, OptError> {
    dce_mapped(g).map(|(g, _)| g)
}

/// [`dce`] plus the old → new id map (`None` for removed nodes).
pub(crate) fn dce_mapped(g: &Graph) -> Result<(Graph, Vec<Option<NodeId>>), OptError> {
    let live = live_nodes(g);
    let mut rw = Rewriter::new(g, "dce");
    for (i, node) in g.nodes().iter().enumerate() {
        let keep = live.get(i).copied().unwrap_or(false)
            || matches!(node.op, Op::Input { .. } | Op::Param { .. } | Op::State { .. });
        if keep {
            rw.copy(NodeId(i as u32))?;
        }
    }
    rw.finish()
}

/// Per node, whether an output depends on it. One backward sweep suffices because every node
/// reads only earlier nodes.
fn live_nodes(g: &Graph) -> Vec<bool> {
    let mut live: Vec<bool> = g.nodes().iter().map(|n| n.op.writes_in_place()).collect();
    for o in g.outputs() {
        if let Some(l) = live.get_mut(o.index()) {
            *l = true;
        }
    }
    for (i, node) in g.nodes().iter().enumerate().rev() {
        if live.get(i).copied().unwrap_or(false) {
            for inp in &node.inputs {
                if let Some(l) = live.get_mut(inp.index()) {
                    *l = true;
                }
            }
        }
    }
    live
}
