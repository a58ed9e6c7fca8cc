//! rlx: compile a neural-network graph once, run it many times on whatever the machine has.
//!
//! Contract: this crate adds no behaviour of its own. It re-exports the user-facing API of the
//! rlx crates in [`prelude`] (graph building from rlx-ir, the composite layers of rlx-nn,
//! devices, sessions and executables from rlx-runtime) and gathers every error into [`Error`]. The `rlx` binary (`rlx devices`,
//! `rlx demo`) is built on exactly this API.
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

pub use rlx_runtime::Error;

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
