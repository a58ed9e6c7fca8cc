//! rlx: compile a neural-network graph once, run it many times on whatever the machine has.
//!
//! Contract: this crate adds no behaviour of its own. It re-exports the user-facing API of the
//! rlx crates in [`prelude`] (graph building from rlx-ir, the composite layers of rlx-nn,
//! devices, sessions and executables from rlx-runtime) and gathers every error into [`Error`].
//! The `rlx` command-line tool (the rlx-cli crate) is built on exactly this API; models
//! (sentence embedders, decoder LLMs, GGUF files, the hub) are the rlx-models crate.
//!
//! Cargo features choose the backends, all three by default: `vulkan` (the native Vulkan
//! driver, [`Device::Vulkan`](prelude::Device::Vulkan)), `wgpu` (wgpu's adapter,
//! [`Device::Gpu`](prelude::Device::Gpu)) and `cpu` ([`Device::Cpu`](prelude::Device::Cpu)).
//! A device whose feature is off is still listed by [`devices`](prelude::devices), unavailable,
//! and opening it gives [`Error::DeviceUnavailable`] naming the feature.
//!
//! ```
//! use rlx::prelude::*;
//!
//! # fn main() -> Result<(), rlx::Error> {
//! let mut g = Graph::new("tiny");
//! let x = g.input("x", &[2], DType::F32)?;
//! let y = g.relu(x)?;
//! g.set_outputs(&[y])?;
//! let mut exe = Session::new(Device::Cpu)?.compile(&g)?;
//! let out = exe.run(&[("x", &[-1.0f32, 2.0])])?;
//! assert_eq!(out[0].as_f32(), Some(&[0.0f32, 2.0][..]));
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub use rlx_runtime::Error;

// The README's Rust examples, compiled and run as doctests (`cargo test -p rlx --doc`); its
// outlines are marked `ignore`. Never part of the documentation itself.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The lower crates, for what the prelude leaves out (passes, memory planning, backend traits).
pub use rlx_backend as backend;
pub use rlx_ir as ir;
pub use rlx_nn as nn;
pub use rlx_opt as opt;
pub use rlx_runtime as runtime;

/// Everything a typical program needs: `use rlx::prelude::*;`.
pub mod prelude {
    pub use half::f16;
    pub use rlx_ir::{
        dump, quantize, quantize_nvfp4, ArgReduceOp, AttentionSpec, AttnLayout, BinaryOp, CompareOp, DType,
        Graph, MaskKind, NodeId, Op, OpKind, PoolKind, QuantType, RandomDist, ReduceOp, RopeStyle, Shape,
        Tensor, TensorData, TensorType, UnaryOp,
    };
    /// The composite builders (`g.linear`, `g.lstm`, `g.sample_tokens`, ...) and their options.
    pub use rlx_nn::prelude::*;
    pub use rlx_nn::DEFAULT_TOP_K;
    pub use rlx_runtime::{
        devices, CompileOptions, Device, DeviceStatus, Error, Executable, HostData, MatmulKernel,
        PassOptions, Port, Precision, Session,
    };
}
