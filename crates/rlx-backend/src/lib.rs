//! rlx-backend: the contract every backend implements.
//!
//! Contract:
//! - A [`Backend`] describes itself once with [`Capabilities`]; rlx-opt's pipeline reads them to
//!   decide what to decompose and fuse. Passes never ask "which backend is this?".
//! - [`Backend::compile`] receives a verified, optimized [`Graph`] whose ops all satisfy
//!   [`Capabilities::supports`], whose values all have a dtype in `dtypes`, and whose ops other
//!   than casts and views compute only in `compute_dtypes`. It does not re-validate shapes.
//! - [`Executable::set_param`] and [`Executable::run`] receive values already checked by
//!   rlx-runtime (known name, matching dtype and shape). Backends return errors only for what the
//!   caller could not foresee: device loss, out of memory, driver refusal, limits.
//! - State (`Op::State`) lives in the executable across runs: zeros at compile time, written
//!   in place by `WriteRows`, set with `set_param` like a param. [`Backend::compile_group`]
//!   compiles graphs whose params and states of the same name and type are one value on the
//!   device (a prefill and a decode graph sharing weights and a KV cache).
//! - Async forms ([`Backend::compile_async`], [`Executable::set_param_async`],
//!   [`Executable::run_async`]) serve callers that cannot block: the web, where a GPU wait
//!   completes on the browser's event loop. A backend that waits on its device implements them
//!   and keeps the sync methods as `pollster` wrappers over the same code (native only); the
//!   defaults run the sync methods to completion (the CPU).

mod cache_dir;
mod caps;
mod error;
mod live;
mod options;

pub use cache_dir::{rlx_cache_dir, rlx_cache_dir_from, user_cache_dir};
pub use caps::{Capabilities, FusionLimits};
pub use error::BackendError;
pub use live::{LiveCounters, LiveGuard, LiveKind, LiveObjects};
pub use options::{KernelOptions, MatmulKernel, Precision};
pub use rlx_ir::{DType, Graph, NodeId, OpKind, Shape, Tensor, TensorData, TensorType};

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The future of an async backend call. Not `Send`: on the web (wasm32) GPU objects live on
/// the page's one thread, and the browser's event loop drives the future.
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Where the time of one [`Executable::run`] went, for benchmarks: host → device copies, the
/// device work alone, device → host copies. Reported by backends that can separate them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunProfile {
    pub upload: Duration,
    pub compute: Duration,
    pub readback: Duration,
}

/// A device family that can compile graphs.
pub trait Backend: Send + Sync {
    /// Short name: "cpu", "vulkan", "wgpu".
    fn name(&self) -> &'static str;

    /// What this backend runs natively and how it wants graphs prepared.
    fn capabilities(&self) -> &Capabilities;

    /// Lowers an optimized graph into something that runs, with the precision and kernel
    /// choices of `options`.
    fn compile(&self, graph: &Graph, options: &KernelOptions) -> Result<Box<dyn Executable>, BackendError>;

    /// [`Backend::compile`] for callers that cannot block (the web). A backend whose compile
    /// waits on its device (wgpu: error scopes) implements this and makes `compile` a
    /// `pollster` wrapper over it; the default runs `compile` to completion.
    fn compile_async<'a>(
        &'a self,
        graph: &'a Graph,
        options: &'a KernelOptions,
    ) -> LocalFuture<'a, Result<Box<dyn Executable>, BackendError>> {
        Box::pin(std::future::ready(self.compile(graph, options)))
    }

    /// Compiles `graphs` (each as [`Backend::compile`] would) so that params and states with the
    /// same name and type are one value: set through any executable of the group, it is set for
    /// all; a state one of them writes is what the next run of any of them reads. Runs of the
    /// group must not overlap (each executable is used through `&mut`, one at a time). The
    /// default serves a single graph and refuses more; every backend of this workspace shares.
    fn compile_group(
        &self,
        graphs: &[&Graph],
        options: &KernelOptions,
    ) -> Result<Vec<Box<dyn Executable>>, BackendError> {
        match graphs {
            [g] => Ok(vec![self.compile(g, options)?]),
            _ => Err(BackendError::Unsupported {
                op: "compile_group".into(),
                device: self.name().into(),
                reason: format!(
                    "this backend compiles one graph at a time, not {} sharing params and states",
                    graphs.len()
                ),
            }),
        }
    }

    /// The device objects this backend holds right now (buffers, pipelines, bind groups,
    /// command buffers, ...), for leak checks; `None` where the backend does not count them
    /// (the CPU, whose memory is the process's own).
    fn live_objects(&self) -> Option<LiveObjects> {
        None
    }
}

/// A compiled graph, bound to one device.
pub trait Executable: Send {
    /// Stores a parameter or the value of a state. `id` is a `Param` or `State` node of the
    /// compiled graph and `value` matches its type.
    fn set_param(&mut self, id: NodeId, value: &Tensor) -> Result<(), BackendError>;

    /// Runs the graph once. `inputs` holds one tensor for every `Input` node, each matching its
    /// type; every param has been set. Returns the graph's outputs in order.
    fn run(&mut self, inputs: &[(NodeId, &Tensor)]) -> Result<Vec<Tensor>, BackendError>;

    /// [`Executable::set_param`] for callers that cannot block (the web); the default runs
    /// `set_param` to completion.
    fn set_param_async<'a>(
        &'a mut self,
        id: NodeId,
        value: &'a Tensor,
    ) -> LocalFuture<'a, Result<(), BackendError>> {
        Box::pin(std::future::ready(self.set_param(id, value)))
    }

    /// [`Executable::run`] for callers that cannot block (the web: a GPU readback completes
    /// on the browser's event loop); the default runs `run` to completion.
    fn run_async<'a>(
        &'a mut self,
        inputs: &'a [(NodeId, &'a Tensor)],
    ) -> LocalFuture<'a, Result<Vec<Tensor>, BackendError>> {
        Box::pin(std::future::ready(self.run(inputs)))
    }

    /// The time breakdown of the last successful `run`; `None` before the first run or when the
    /// backend does not separate copies from compute (the CPU, where data never moves).
    fn last_profile(&self) -> Option<RunProfile> {
        None
    }

    /// Each kernel launch of the last run, in order: the kernel's name and its GPU time.
    /// Empty unless the backend was asked to time launches (`RLX_PROFILE=1` on Vulkan).
    fn kernel_times(&self) -> Vec<(&'static str, Duration)> {
        Vec::new()
    }
}
