//! The graph: an append-only list of nodes in topological order, plus its outputs.

use crate::{infer, IrError, Op, TensorType};
use std::fmt;

/// Index of a node in its graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// One node: what it computes, what it reads, and what it produces.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub op: Op,
    pub inputs: Vec<NodeId>,
    pub ty: TensorType,
}

/// A dataflow graph. Nodes are only ever appended, each reading earlier nodes, so index order is
/// a topological order. Builders (see `builder.rs`) check every operand and infer the output type.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    name: String,
    nodes: Vec<Node>,
    outputs: Vec<NodeId>,
}

impl Graph {
    pub fn new(name: impl Into<String>) -> Self {
        Graph { name: name.into(), nodes: Vec::new(), outputs: Vec::new() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    /// The node behind `id`, or `UnknownNode`.
    pub fn node(&self, id: NodeId) -> Result<&Node, IrError> {
        self.nodes.get(id.index()).ok_or_else(|| self.unknown("node", id))
    }

    /// The output type of `id`, or `UnknownNode` (naming `op`, the builder that asked).
    pub fn ty_for(&self, op: &'static str, id: NodeId) -> Result<&TensorType, IrError> {
        self.nodes.get(id.index()).map(|n| &n.ty).ok_or_else(|| self.unknown(op, id))
    }

    pub fn ty(&self, id: NodeId) -> Result<&TensorType, IrError> {
        self.ty_for("node", id)
    }

    fn unknown(&self, op: &'static str, id: NodeId) -> IrError {
        IrError::UnknownNode { op, id, graph: self.name.clone(), len: self.nodes.len() }
    }

    /// Appends a node after checking its operands and inferring its type. All builders and all
    /// passes go through here, so a graph never holds an unchecked node.
    pub fn push(&mut self, op: Op, inputs: &[NodeId]) -> Result<NodeId, IrError> {
        let op_name = op.name();
        let tys = inputs.iter().map(|&i| self.ty_for(op_name, i)).collect::<Result<Vec<_>, _>>()?;
        if let Op::Input { name } | Op::Param { name } = &op {
            if let Some(existing) = self.find_leaf(name) {
                let kind = if matches!(op, Op::Input { .. }) { "input" } else { "param" };
                return Err(IrError::DuplicateName { kind, name: name.clone(), existing });
            }
        }
        let ty = infer::infer(&op, &tys)?;
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Node { op, inputs: inputs.to_vec(), ty });
        Ok(id)
    }

    /// Marks the graph's results, in order. Every id must exist; at least one is required.
    pub fn set_outputs(&mut self, outputs: &[NodeId]) -> Result<(), IrError> {
        if outputs.is_empty() {
            return Err(IrError::NoOutputs { graph: self.name.clone() });
        }
        for &o in outputs {
            self.ty_for("set_outputs", o)?;
        }
        self.outputs = outputs.to_vec();
        Ok(())
    }

    fn find_leaf(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| matches!(&n.op, Op::Input { name: m } | Op::Param { name: m } if m == name))
            .map(|i| NodeId(i as u32))
    }

    /// `(name, id, type)` of every `Input`, in creation order.
    pub fn inputs(&self) -> Vec<(&str, NodeId, &TensorType)> {
        self.leaves(|op| match op {
            Op::Input { name } => Some(name),
            _ => None,
        })
    }

    /// `(name, id, type)` of every `Param`, in creation order.
    pub fn params(&self) -> Vec<(&str, NodeId, &TensorType)> {
        self.leaves(|op| match op {
            Op::Param { name } => Some(name),
            _ => None,
        })
    }

    fn leaves<'a>(
        &'a self,
        f: impl Fn(&'a Op) -> Option<&'a String>,
    ) -> Vec<(&'a str, NodeId, &'a TensorType)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| f(&n.op).map(|name| (name.as_str(), NodeId(i as u32), &n.ty)))
            .collect()
    }

    /// Number of nodes that read each node (outputs count as one reader each).
    pub fn use_counts(&self) -> Vec<usize> {
        let mut c = vec![0; self.nodes.len()];
        for n in &self.nodes {
            for i in &n.inputs {
                c[i.index()] += 1;
            }
        }
        for o in &self.outputs {
            c[o.index()] += 1;
        }
        c
    }
}
