//! Errors of graph construction and verification. Every variant names the op (or node) and the
//! shapes involved, and the message says what to change.

use crate::{DType, NodeId, Shape};

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum IrError {
    /// Operand shapes that cannot go together (broadcasting, matmul inner dims, concat, …).
    #[error("{op}: shapes {shapes} are incompatible: {reason}")]
    ShapeMismatch { op: &'static str, shapes: ShapeList, reason: String },

    /// An operand has a dtype the op does not accept.
    #[error("{op}: operand {operand} has dtype {got}, expected {expected}")]
    DType { op: &'static str, operand: usize, got: DType, expected: String },

    /// An attribute (axis, k, stride, permutation, …) is out of range for the operand shape.
    #[error("{op}: invalid {attr} for input shape {shape}: {reason}")]
    Attribute { op: &'static str, attr: &'static str, shape: Shape, reason: String },

    /// A node id that this graph does not hold (for example one from another graph).
    #[error("{op}: node {id} does not exist in graph '{graph}' (it has {len} nodes); use ids returned by this graph's builder")]
    UnknownNode { op: &'static str, id: NodeId, graph: String, len: usize },

    /// Two inputs or params with one name.
    #[error(
        "{kind} name '{name}' is already used by node {existing}; names of inputs and params must be unique"
    )]
    DuplicateName { kind: &'static str, name: String, existing: NodeId },

    /// Host data whose element count does not match its shape.
    #[error("data has {got} elements but shape {shape} needs {expected}")]
    DataLength { shape: Shape, expected: usize, got: usize },

    /// A shape whose element count overflows `usize`, or whose byte size is past `limit`
    /// ([`crate::MAX_TENSOR_BYTES`]). `what` spells out the size, computed without wrapping.
    #[error(
        "{op}: a {dtype} tensor of shape {shape} needs {what}, more than the limit of {limit} bytes \
         for any tensor; use smaller dims (a smaller batch or sequence) or split the op into pieces"
    )]
    TooLarge { op: &'static str, shape: Shape, dtype: DType, what: String, limit: u64 },

    /// A custom op's shape rule refused its operands ([`crate::CustomOp`]).
    #[error("custom op {op}: operands of shapes {shapes}: {reason}")]
    Custom { op: String, shapes: ShapeList, reason: String },

    /// Wrong operand count for an op.
    #[error("{op}: takes {expected} operands, got {got}")]
    Arity { op: &'static str, expected: String, got: usize },

    /// Verifier findings.
    #[error("graph '{graph}' has no outputs; call set_outputs before compiling")]
    NoOutputs { graph: String },
    #[error("graph '{graph}': node {node} ({op}) reads node {input}, which is not defined before it (dangling id or cycle)")]
    NotTopological { graph: String, node: NodeId, op: &'static str, input: NodeId },
    #[error("graph '{graph}': node {node} ({op}) records type {recorded} but its inputs give {inferred}")]
    TypeDrift { graph: String, node: NodeId, op: &'static str, recorded: String, inferred: String },
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
