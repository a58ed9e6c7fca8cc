//! rlx-cpu: the CPU backend and the numerical oracle of rlx.
//!
//! Contract:
//! - Runs every [`rlx_ir::Op`], fused forms included, on every dtype the op accepts, with the
//!   semantics written in `rlx_ir::op` (which is the spec). [`CpuBackend`] declares
//!   `Capabilities::everything`, so rlx-opt decomposes nothing for it, with `max_tensor_bytes`
//!   set to the machine's memory ([`host_memory_bytes`]): a bigger tensor is refused when the
//!   graph is compiled instead of aborting in the allocator.
//! - Numerics: F32 ops compute in f32 (or in f64 rounded once, which is the correctly rounded
//!   f32 result); F16 and BF16 widen to f32 and round the result back; U8 arithmetic computes
//!   in i32 and saturates back to 0..=255 (`widen.rs`); casts round once (to nearest even for
//!   floats, truncating and saturating for integers); reductions, cumsum, norms,
//!   softmax, attention, conv and average pooling accumulate in f64. Integer arithmetic wraps,
//!   and integer division by zero gives 0. NaN inputs give NaN outputs, never a panic.
//! - Matmul runs on the `gemm` crate (f32, rayon threads); every other kernel is a plain loop.
//! - [`eval`] evaluates one op on host tensors after checking the operands; it is what parity
//!   tests compare against and what rlx-opt's constant folding calls.
//! - [`quant`] decodes the block quantizations (ggml's bit for bit as ggml does; rlx's int, fp8
//!   and nvfp4 ones) and f16/bf16 bytes to f32: the host reference for packed weights.
//! - A compiled graph ([`CpuExecutable`]) evaluates nodes in order and frees each value after
//!   its last reader; it errors (never panics) on an input or param it was not given.

mod elem;
mod eval;
mod exec;
mod index;
mod memory;
mod ops;
pub mod quant;
mod quant_ggml;
mod quant_iq;
mod quant_rlx;
mod widen;

pub use eval::eval;
pub use exec::CpuExecutable;
pub use memory::host_memory_bytes;
pub use ops::random::{philox4x32_10, philox_block, uniform_from_word};

use rlx_backend::{Backend, BackendError, Capabilities, Executable, KernelOptions};
use rlx_ir::Graph;

/// The CPU backend. Runs everything natively; threads come from rayon's global pool.
pub struct CpuBackend {
    caps: Capabilities,
}

impl CpuBackend {
    /// Capabilities: every op and dtype, and the largest tensor the machine's memory holds
    /// ([`host_memory_bytes`]).
    pub fn new() -> Self {
        let threads = rayon::current_num_threads();
        let caps = Capabilities {
            max_tensor_bytes: host_memory_bytes(),
            ..Capabilities::everything(format!("cpu ({threads} threads)"))
        };
        CpuBackend { caps }
    }
}

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// Keeps a copy of the graph. The graph is re-verified first (cheap next to running it):
    /// the kernels index by the recorded shapes, so they must agree with the operands. The
    /// options do not apply: the reference computes in f32 whatever precision is asked for.
    fn compile(&self, graph: &Graph, options: &KernelOptions) -> Result<Box<dyn Executable>, BackendError> {
        let mut group = self.compile_group(&[graph], options)?;
        group.pop().ok_or_else(|| BackendError::Driver {
            device: "cpu".into(),
            scope: "compile".into(),
            reason: "compiling one graph gave no executable".into(),
        })
    }

    /// One store of params and states for the whole group: a value set or written through one
    /// executable is the value the others read.
    fn compile_group(
        &self,
        graphs: &[&Graph],
        _options: &KernelOptions,
    ) -> Result<Vec<Box<dyn Executable>>, BackendError> {
        let store = exec::Store::default();
        graphs
            .iter()
            .map(|g| {
                rlx_ir::verify(g)?;
                Ok(Box::new(CpuExecutable::new((*g).clone(), store.clone())?) as Box<dyn Executable>)
            })
            .collect()
    }
}
