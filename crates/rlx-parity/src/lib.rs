//! rlx-parity: one table of op cases, run on any device and compared with the CPU reference.
//!
//! Contract:
//! - [`cases`] is the table: every op of the IR × its variants × awkward shapes (size 1, primes,
//!   non-multiples of tile sizes, broadcasts, empty where legal, ranks 7 and 8) × the dtypes it
//!   takes, graph wiring edges (leaves as outputs, constants, memory reuse), a BERT-style encoder
//!   layer, a decoder layer, and launch-grid edges (more rows or elements than one grid
//!   dimension holds). Case names are unique.
//! - A [`Case`] builds its graph and its data deterministically: the pseudo-random values are
//!   seeded from the case name, so every device (and every run) sees the same numbers.
//! - A case owns its tolerance ([`Case::tol`], default [`DEFAULT_TOL`] = 1e-5 relative, DESIGN.md
//!   "Numerics"); a looser bound carries a comment saying why at the place it is set.
//! - [`run_case`] compiles a case on a device and on `Device::Cpu` through
//!   `rlx_runtime::Session`, runs each executable twice (first with every float input and param
//!   halved, so stale state shows), and compares every output of the second run
//!   ([`compare_outputs`]): float outputs by ‖out − ref‖₂ / ‖ref‖₂ over the finite elements
//!   (absolute ‖out − ref‖₂ when ‖ref‖ = 0), with NaN and infinity positions required to match;
//!   integer and bool outputs exactly.
//! - [`run_table`] runs many cases on one pair of sessions and gives a [`Report`] that prints the
//!   failure table and the summary line `parity <device>: N passed, M failed`.
//! - [`random_graph`] generates random well-typed graphs (proptest strategies over a plain
//!   [`random_graph::GraphSpec`]) and [`diff`] runs them on a device with every optimizer pass
//!   against the CPU with none, shrinking a failing case to a minimal spec (issue 12 §2).
//! - Nothing here panics on a failing device: a compile or run error is a failed case carrying
//!   the error ([`ParityError`]).

mod cases;
pub mod cli;
mod compare;
mod ctx;
pub mod diff;
mod dump;
pub mod random_graph;
mod runner;

pub use cases::{bench_cases, cases, knn_op, F16_OPERANDS_TOL, KNN_MAX_K};
pub use compare::{compare_outputs, compare_outputs_by, Metric, OutputCheck};
pub use ctx::{trained_like, Built, CaseCtx};
pub use dump::{dump_case, json_str};
pub use runner::{run_case, run_case_in, run_table, CaseResult, ParityError, Report, Row};

use rlx_ir::{IrError, NodeId};
use rlx_runtime::{KernelOptions, MatmulKernel, PassOptions, Precision};

/// The default bound on ‖out − ref‖₂ / ‖ref‖₂ for f32 outputs (DESIGN.md "Numerics").
pub const DEFAULT_TOL: f64 = 1e-5;

/// Builds a case's graph on a [`CaseCtx`] (which also records the input and param data) and
/// returns the graph's outputs, in order.
pub type BuildFn = dyn Fn(&mut CaseCtx) -> Result<Vec<NodeId>, IrError> + Send + Sync;

/// One row of the parity table.
pub struct Case {
    /// Unique, `family_variant_shape` style, e.g. `binary_add_f32_bcast_row`.
    pub name: String,
    /// Builds the graph and its data.
    pub build: Box<BuildFn>,
    /// Bound on the relative error of float outputs. Integer and bool outputs are always exact.
    pub tol: f64,
    /// Optimizer passes for both devices (default: all, so fused forms are exercised).
    pub passes: PassOptions,
    /// How float outputs are measured against `tol` (default: the norm ratio).
    pub metric: Metric,
    /// Precision and forced matmul kernel for the device under test (the CPU reference always
    /// computes in f32). A case that forces a kernel the device lacks is reported unavailable
    /// with the device's reason, not failed.
    pub kernels: KernelOptions,
}

impl Case {
    /// A case with the default tolerance and every optimizer pass on.
    pub fn new(
        name: impl Into<String>,
        build: impl Fn(&mut CaseCtx) -> Result<Vec<NodeId>, IrError> + Send + Sync + 'static,
    ) -> Case {
        Case {
            name: name.into(),
            build: Box::new(build),
            tol: DEFAULT_TOL,
            passes: PassOptions::default(),
            metric: Metric::Norm,
            kernels: KernelOptions::default(),
        }
    }

    /// The same case at `precision`, with every matmul forced onto `matmul` (if given), under
    /// a new name (the name seeds the data).
    pub fn with_kernels(mut self, name: String, precision: Precision, matmul: Option<MatmulKernel>) -> Case {
        self.name = name;
        self.kernels = KernelOptions { precision, matmul };
        self
    }

    /// The same case with another tolerance. Callers write a comment saying why at the call.
    pub fn with_tol(mut self, tol: f64) -> Case {
        self.tol = tol;
        self
    }

    /// The same case compiled with other optimizer passes (e.g. `PassOptions::none()` to run the
    /// unfused ops).
    pub fn with_passes(mut self, passes: PassOptions) -> Case {
        self.passes = passes;
        self
    }

    /// The same case with every finite float element held to `tol` on its own
    /// ([`Metric::PerElement`]), for outputs whose tiny values matter.
    pub fn per_element(mut self) -> Case {
        self.metric = Metric::PerElement;
        self
    }

    /// The same case with every float element required equal to the reference, −0 and +0 apart
    /// ([`Metric::Exact`], tolerance 0): for casts, which are rounding rules.
    pub fn exact(mut self) -> Case {
        self.metric = Metric::Exact;
        self.tol = 0.0;
        self
    }

    /// Builds the graph and its data (deterministic: seeded from the name).
    pub fn instantiate(&self) -> Result<Built, IrError> {
        let mut ctx = CaseCtx::new(&self.name);
        let outputs = (self.build)(&mut ctx)?;
        ctx.finish(&outputs)
    }
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("tol", &self.tol)
            .field("passes", &self.passes)
            .field("metric", &self.metric)
            .field("kernels", &self.kernels)
            .finish()
    }
}
