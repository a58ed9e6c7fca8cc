//! Whole-graph verifier, for graphs rewritten by passes or assembled with `Graph::from_parts`.
//! Builders already guarantee all of this for graphs they make.

use crate::{infer::infer, Graph, IrError, NodeId, Op};
use std::collections::HashMap;

/// Checks that `g` has outputs that exist, that every node reads only earlier nodes (no
/// dangling ids, no cycles), that every recorded type equals the type inferred from the node's
/// inputs, and that input/param names are unique.
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
            Op::Input { name } | Op::Param { name } => {
                let kind = if matches!(node.op, Op::Input { .. }) { "input" } else { "param" };
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
