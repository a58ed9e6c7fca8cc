//! The graph: an append-only list of nodes in topological order, plus its outputs.

use crate::{infer, IrError, Op, TensorType};
use std::fmt;

/// Index of a node in its graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The position of the node in [`Graph::nodes`].
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
    /// What the node computes.
    pub op: Op,
    /// Its operands, in the order the op defines.
    pub inputs: Vec<NodeId>,
    /// The type of its result.
    pub ty: TensorType,
}

/// A dataflow graph. Nodes are only ever appended, each reading earlier nodes, so index order is
/// a topological order. Builders (see `builder.rs`) check every operand and infer the output type.
// No `PartialEq`: it would shadow the `eq`/`ne` builders under method syntax (`g.eq(a, b)`).
#[derive(Clone, Debug)]
pub struct Graph {
    name: String,
    nodes: Vec<Node>,
    outputs: Vec<NodeId>,
}

impl Graph {
    /// An empty graph; `name` appears in dumps and error messages.
    pub fn new(name: impl Into<String>) -> Self {
        Graph { name: name.into(), nodes: Vec::new(), outputs: Vec::new() }
    }

    /// The name given to [`Graph::new`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every node, in topological order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes [`Graph::set_outputs`] named, in order: what a run returns.
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

    /// The output type of `id`, or `UnknownNode`.
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
        if let Some(name) = op.leaf_name() {
            if let Some(existing) = self.find_leaf(name) {
                return Err(IrError::DuplicateName {
                    kind: leaf_kind(&op),
                    name: name.to_string(),
                    existing,
                });
            }
        }
        // `infer` also checks the result's element count and byte size.
        let ty = infer::infer(&op, &tys)?;
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Node { op, inputs: inputs.to_vec(), ty });
        Ok(id)
    }

    /// Appends an `Input`, `Param` or `State` leaf of type `ty` (the only ops whose type is not
    /// inferred from operands). Names must be unique across inputs, params and states. Other
    /// ops go through [`Graph::push`].
    pub fn push_leaf(&mut self, op: Op, ty: TensorType) -> Result<NodeId, IrError> {
        let kind = leaf_kind(&op);
        let Some(name) = op.leaf_name() else {
            return Err(IrError::Attribute {
                op: op.name(),
                attr: "op",
                shape: ty.shape,
                reason: "push_leaf takes only Input, Param or State; use Graph::push for other ops".into(),
            });
        };
        if let Some(existing) = self.find_leaf(name) {
            return Err(IrError::DuplicateName { kind, name: name.to_string(), existing });
        }
        ty.check_size(kind)?;
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Node { op, inputs: Vec::new(), ty });
        Ok(id)
    }

    /// Assembles a graph from raw parts without any checking (for passes that rebuild graphs,
    /// and for tests of the verifier). Run [`crate::verify`] on the result.
    #[doc(hidden)]
    pub fn from_parts(name: impl Into<String>, nodes: Vec<Node>, outputs: Vec<NodeId>) -> Graph {
        Graph { name: name.into(), nodes, outputs }
    }

    /// Runs `f`, a closure that adds nodes (a composite builder: rlx-nn's layers, or your
    /// own); if it returns an error, every node it appended is dropped again, so a failed
    /// composite leaves the graph exactly as it was (no partial nodes). Outputs are not
    /// touched: `f` should not call [`Graph::set_outputs`].
    pub fn atomically<T>(&mut self, f: impl FnOnce(&mut Graph) -> Result<T, IrError>) -> Result<T, IrError> {
        let len = self.nodes.len();
        let r = f(self);
        if r.is_err() {
            self.nodes.truncate(len);
        }
        r
    }

    /// Drops every node from index `len` on (a rolled-back trial build, as the backward's
    /// look at which forward values a gradient rule reads). Outputs are not touched.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.nodes.truncate(len);
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
        self.nodes.iter().position(|n| n.op.leaf_name() == Some(name)).map(|i| NodeId(i as u32))
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

    /// `(name, id, type)` of every `State`, in creation order.
    pub fn states(&self) -> Vec<(&str, NodeId, &TensorType)> {
        self.leaves(|op| match op {
            Op::State { name } => Some(name),
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
            // `get_mut`: graphs from `from_parts` may hold dangling ids (the verifier reports them).
            for i in &n.inputs {
                if let Some(x) = c.get_mut(i.index()) {
                    *x += 1;
                }
            }
        }
        for o in &self.outputs {
            if let Some(x) = c.get_mut(o.index()) {
                *x += 1;
            }
        }
        c
    }
}

/// A graph is its own builder target: rlx-nn's extension traits (`LayerExt`, `RecurrentExt`,
/// ...) build on any `AsMut<Graph>`.
impl AsMut<Graph> for Graph {
    fn as_mut(&mut self) -> &mut Graph {
        self
    }
}

/// "input", "param" or "state": how errors name a leaf's kind.
pub(crate) fn leaf_kind(op: &Op) -> &'static str {
    match op {
        Op::Input { .. } => "input",
        Op::State { .. } => "state",
        _ => "param",
    }
}
