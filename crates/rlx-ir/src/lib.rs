//! rlx-ir: the graph users build.
//!
//! Contract: a [`Graph`] only ever holds nodes whose operands were checked and whose output
//! [`TensorType`] was inferred by [`Graph::push`] (every builder method goes through it). Nodes
//! are in topological order by construction. Every node's and every [`Tensor`]'s element count
//! fits `usize` and its byte size [`MAX_TENSOR_BYTES`]; a bigger shape is `IrError::TooLarge`. [`verify`] re-checks a whole graph (for graphs
//! rewritten by passes); [`dump`] prints it. Backends receive verified graphs and never
//! re-validate shapes.
//!
//! The builders here are the primitives: one op node each (with the reshapes or transposes
//! its own op needs). Composites made of several ops (linear, recurrent layers, sampling, the
//! STFT, SSD, MoE blocks, ...) live in the rlx-nn crate, built on [`Graph::atomically`].
//!
//! [`grad()`] (and [`Graph::backward`]) differentiate a graph: reverse-mode autodiff as a graph
//! transform that appends the backward, built from the same primitives, to the forward graph.

#![warn(missing_docs)]

mod builder;
mod custom;
mod dtype;
mod dump;
mod error;
mod grad;
mod graph;
pub mod infer;
pub mod minifloat;
mod op;
mod op_attrs;
mod op_kind;
pub mod quant;
pub mod quant_grids;
mod quantize;
mod round;
mod shape;
pub mod spectral;
pub mod ssm;
mod tensor;
mod verify;

pub use builder::complex_rows;
pub use custom::{CpuRef, CustomCall, CustomLaunch, CustomOp, CustomOpBuilder, CustomWgsl, ShapeRule};
pub use dtype::DType;
pub use dump::dump;
pub use error::{IrError, ShapeList};
pub use grad::{attention_grad_composed, grad, BackwardOptions, Gradients};
pub use graph::{Graph, Node, NodeId};
pub use op::*;
pub use op_attrs::*;
pub use op_kind::OpFamily;
pub use quant::{iq1m_write_d, QuantError, QuantType, IQ4NL_VALUES};
pub use quantize::{quantize, quantize_nvfp4};
pub use round::{bf16_from_f64, f16_from_f64};
pub use shape::{Shape, TensorType, MAX_TENSOR_BYTES};
pub use ssm::ScanOutput;
pub use tensor::{Tensor, TensorData};
pub use verify::verify;
