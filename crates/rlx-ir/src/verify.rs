//! Whole-graph verifier, for graphs rewritten by passes or assembled with `Graph::from_parts`.
//! Builders already guarantee all of this for graphs they make.

use crate::{infer::infer, Graph, IrError, NodeId, Op};
use std::collections::HashMap;

/// Checks that `g` has outputs that exist, that every node reads only earlier nodes (no
/// dangling ids, no cycles), that every recorded type equals the type inferred from the node's
/// inputs, that input/param/state names are unique, and that every `WriteRows` writes a
/// `State` that nothing else reads (see `check_state_write`).
pub fn verify(g: &Graph) -> Result<(), IrError> {
    if g.outputs().is_empty() {
        return Err(IrError::NoOutputs { graph: g.name().to_string() });
    }
    let nodes = g.nodes();
    for &o in g.outputs() {
        if o.index() >= nodes.len() {
            return Err(IrError::UnknownNode {
                op: "outputs",
                id: o,
                graph: g.name().to_string(),
                len: nodes.len(),
            });
        }
    }
    let mut names: HashMap<&str, NodeId> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        let id = NodeId(i as u32);
        let op_name = node.op.name();
        let mut tys = Vec::with_capacity(node.inputs.len());
        for &input in &node.inputs {
            match nodes.get(input.index()) {
                Some(n) if input.index() < i => tys.push(&n.ty),
                _ => {
                    return Err(IrError::NotTopological {
                        graph: g.name().to_string(),
                        node: id,
                        op: op_name,
                        input,
                    })
                }
            }
        }
        let inferred = match &node.op {
            Op::Input { name } | Op::Param { name } | Op::State { name } => {
                let kind = crate::graph::leaf_kind(&node.op);
                if let Some(&existing) = names.get(name.as_str()) {
                    return Err(IrError::DuplicateName { kind, name: name.clone(), existing });
                }
                names.insert(name, id);
                if !node.inputs.is_empty() {
                    return Err(IrError::Arity { op: op_name, expected: "0".into(), got: node.inputs.len() });
                }
                // Leaves carry their type; there is nothing to infer it from, but its size is
                // checked as `push_leaf` does.
                node.ty.check_size(kind)?;
                node.ty.clone()
            }
            Op::WriteRows { .. } => {
                check_state_write(g, id, node)?;
                infer(&node.op, &tys)?
            }
            op => infer(op, &tys)?,
        };
        if inferred != node.ty {
            return Err(IrError::TypeDrift {
                graph: g.name().to_string(),
                node: id,
                op: op_name,
                recorded: node.ty.to_string(),
                inferred: inferred.to_string(),
            });
        }
    }
    Ok(())
}

/// A `WriteRows` must write a `State` leaf, and that state must have no other reader and not be
/// an output: every read of a state goes through its write, so no step can see it half-updated
/// and the order of reads and the in-place write never matters.
pub(crate) fn check_state_write(g: &Graph, id: NodeId, node: &crate::Node) -> Result<(), IrError> {
    let bad = |reason: String| IrError::Attribute {
        op: "write_rows",
        attr: "state",
        shape: node.ty.shape.clone(),
        reason,
    };
    let Some(&target) = node.inputs.first() else {
        return Err(IrError::Arity { op: "write_rows", expected: "3".into(), got: 0 });
    };
    let name = match g.node(target).map(|n| &n.op) {
        Ok(Op::State { name }) => name,
        Ok(other) => {
            return Err(bad(format!(
                "{id} writes into {target}, a {} node; write_rows writes only into a state \
                 (Graph::state)",
                other.name()
            )))
        }
        Err(e) => return Err(e),
    };
    let readers = g.nodes().iter().filter(|n| n.inputs.contains(&target)).count()
        + g.outputs().iter().filter(|&&o| o == target).count();
    if readers != 1 {
        return Err(bad(format!(
            "state '{name}' ({target}) is read {readers} times; a written state must be read only \
             by its one write_rows — read the write's result instead"
        )));
    }
    Ok(())
}
