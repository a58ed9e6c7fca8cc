//! Helpers for builder tests (rlx-ir's primitive builders, rlx-nn's composites): F32 inputs,
//! the type a builder gives, and the parts an error message must contain.

// A failed unwrap is the test failure these helpers report.
#![allow(clippy::unwrap_used)]

use rlx_ir::{DType, Graph, IrError, NodeId, TensorType};

/// Asserts that the error's message contains every part (op name, shapes, advice).
pub fn assert_msg(e: &IrError, parts: &[&str]) {
    let m = e.to_string();
    for p in parts {
        assert!(m.contains(p), "message {m:?} lacks {p:?}");
    }
}

pub fn f32_in(g: &mut Graph, name: &str, dims: &[usize]) -> NodeId {
    g.input(name, dims, DType::F32).unwrap()
}

pub fn ty(g: &Graph, id: NodeId) -> TensorType {
    g.ty(id).unwrap().clone()
}

pub fn tt(dims: &[usize], dtype: DType) -> TensorType {
    TensorType::new(dims, dtype)
}

/// The type a builder gives on a copy of `g` (so one graph serves several independent cases).
pub fn on_copy(g: &Graph, f: impl FnOnce(&mut Graph) -> Result<NodeId, IrError>) -> TensorType {
    let mut c = g.clone();
    let id = f(&mut c).unwrap();
    ty(&c, id)
}
