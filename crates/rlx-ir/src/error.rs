//! Errors of graph construction and verification. Every variant names the op (or node) and the
//! shapes involved, and the message says what to change.

use crate::{DType, NodeId, Shape};

/// Why a graph could not be built or does not verify.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum IrError {
    /// Operand shapes that cannot go together (broadcasting, matmul inner dims, concat, …).
    #[error("{op}: shapes {shapes} are incompatible: {reason}")]
    ShapeMismatch {
        /// The builder or op.
        op: &'static str,
        /// The operands' shapes.
        shapes: ShapeList,
        /// What does not fit.
        reason: String,
    },

    /// An operand has a dtype the op does not accept.
    #[error("{op}: operand {operand} has dtype {got}, expected {expected}")]
    DType {
        /// The builder or op.
        op: &'static str,
        /// Which operand (from 0).
        operand: usize,
        /// Its dtype.
        got: DType,
        /// The dtypes the op accepts there.
        expected: String,
    },

    /// An attribute (axis, k, stride, permutation, …) is out of range for the operand shape.
    #[error("{op}: invalid {attr} for input shape {shape}: {reason}")]
    Attribute {
        /// The builder or op.
        op: &'static str,
        /// The attribute's name.
        attr: &'static str,
        /// The shape it applies to.
        shape: Shape,
        /// What is out of range.
        reason: String,
    },

    /// A node id that this graph does not hold (for example one from another graph).
    #[error("{op}: node {id} does not exist in graph '{graph}' (it has {len} nodes); use ids returned by this graph's builder")]
    UnknownNode {
        /// The builder or op that was given the id.
        op: &'static str,
        /// The id.
        id: NodeId,
        /// The graph's name.
        graph: String,
        /// How many nodes the graph has.
        len: usize,
    },

    /// Two inputs or params with one name.
    #[error(
        "{kind} name '{name}' is already used by node {existing}; names of inputs and params must be unique"
    )]
    DuplicateName {
        /// "input", "param" or "state".
        kind: &'static str,
        /// The name.
        name: String,
        /// The node that already has it.
        existing: NodeId,
    },

    /// Host data whose element count does not match its shape.
    #[error("data has {got} elements but shape {shape} needs {expected}")]
    DataLength {
        /// The shape.
        shape: Shape,
        /// Its element count.
        expected: usize,
        /// The element count of the data.
        got: usize,
    },

    /// A shape whose element count overflows `usize`, or whose byte size is past `limit`
    /// ([`crate::MAX_TENSOR_BYTES`]). `what` spells out the size, computed without wrapping.
    #[error(
        "{op}: a {dtype} tensor of shape {shape} needs {what}, more than the limit of {limit} bytes \
         for any tensor; use smaller dims (a smaller batch or sequence) or split the op into pieces"
    )]
    TooLarge {
        /// The builder or op.
        op: &'static str,
        /// The shape.
        shape: Shape,
        /// The element type.
        dtype: DType,
        /// The size, spelled out.
        what: String,
        /// The limit in bytes.
        limit: u64,
    },

    /// A custom op's shape rule refused its operands ([`crate::CustomOp`]).
    #[error("custom op {op}: operands of shapes {shapes}: {reason}")]
    Custom {
        /// The custom op's name.
        op: String,
        /// The operands' shapes.
        shapes: ShapeList,
        /// The shape rule's message.
        reason: String,
    },

    /// Wrong operand count for an op.
    #[error("{op}: takes {expected} operands, got {got}")]
    Arity {
        /// The op.
        op: &'static str,
        /// The operand counts it takes.
        expected: String,
        /// The count given.
        got: usize,
    },

    /// A graph compiled (or verified) before `set_outputs`.
    #[error("graph '{graph}' has no outputs; call set_outputs before compiling")]
    NoOutputs {
        /// The graph's name.
        graph: String,
    },
    /// A node that reads a node not defined before it (found by the verifier in a graph
    /// assembled from parts or rewritten by a pass).
    #[error("graph '{graph}': node {node} ({op}) reads node {input}, which is not defined before it (dangling id or cycle)")]
    NotTopological {
        /// The graph's name.
        graph: String,
        /// The node.
        node: NodeId,
        /// Its op.
        op: &'static str,
        /// The operand that is not defined before it.
        input: NodeId,
    },
    /// A node on the path from a differentiated value to the loss whose op has no gradient
    /// rule ([`crate::grad()`]): an integer or index op, a sampler, a quantized weight, a fused
    /// form or a custom op.
    #[error(
        "grad: {op} (node {node}, operands {shapes}) has no gradient, and the gradient of '{wrt}' \
         flows through it: {reason}"
    )]
    NoGradient {
        /// The op without a gradient.
        op: &'static str,
        /// Its node.
        node: NodeId,
        /// Its operands' shapes.
        shapes: ShapeList,
        /// The name of the param or input whose gradient needs it.
        wrt: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A node whose recorded type differs from the one its inputs give (verifier).
    #[error("graph '{graph}': node {node} ({op}) records type {recorded} but its inputs give {inferred}")]
    TypeDrift {
        /// The graph's name.
        graph: String,
        /// The node.
        node: NodeId,
        /// Its op.
        op: &'static str,
        /// The type the node records.
        recorded: String,
        /// The type inference gives.
        inferred: String,
    },
}

/// A list of shapes that prints as `[2, 3] and [4]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeList(pub Vec<Shape>);

impl std::fmt::Display for ShapeList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(if i + 1 == self.0.len() { " and " } else { ", " })?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl From<Vec<Shape>> for ShapeList {
    fn from(v: Vec<Shape>) -> Self {
        ShapeList(v)
    }
}
