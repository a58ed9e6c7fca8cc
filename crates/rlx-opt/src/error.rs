//! Errors of the optimizer and the memory planner.

use rlx_ir::{IrError, NodeId};

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum OptError {
    /// An op the device does not run natively and that has no decomposition into ops it does run
    /// (or whose dtype the device does not store). `node` is the node id in the graph handed to
    /// [`crate::optimize`].
    #[error("{op} (node {node}) is not supported on {device}: {reason}")]
    Unsupported { op: String, node: NodeId, device: String, reason: String },

    /// A tensor bigger than the device's `max_tensor_bytes` (checked by legalize, so every
    /// backend gets it). `node` is the node id in the graph handed to [`crate::optimize`]; `op`
    /// names the decomposed op too when the tensor is an intermediate of a decomposition.
    #[error(
        "node {node} ({op}) of type {ty} needs {bytes} bytes, more than the {limit} bytes {device} \
         allows for one tensor; use a smaller batch or sequence, or split the op"
    )]
    TooLarge { node: NodeId, op: String, ty: String, bytes: u64, limit: u64, device: String },

    /// The memory planner was given an alignment that is not a power of two.
    #[error(
        "memory plan: alignment {alignment} is not a power of two; pass the backend's \
         buffer_alignment (for example 64)"
    )]
    BadAlignment { alignment: usize },

    /// A tensor whose byte size (or the arena holding it) does not fit in 64 bits.
    #[error(
        "memory plan: node {node} ({op}) of type {ty} needs more than 2^64 bytes; \
         use smaller shapes"
    )]
    SizeOverflow { node: NodeId, op: &'static str, ty: String },

    /// A pass broke one of its own rules (a graph output changed type, an id was left unmapped).
    /// This is a bug in rlx-opt, reported instead of producing a wrong graph.
    #[error("pass {pass} broke an invariant at node {node}: {reason}")]
    Invariant { pass: &'static str, node: NodeId, reason: String },

    /// A rewritten node failed the IR's own checks.
    #[error(transparent)]
    Ir(#[from] IrError),
}
