//! Shared by the integration tests: opening a backend with the skip/require policy, running a
//! graph by names on any backend, deterministic data and the error measure.
#![allow(dead_code)]

use rlx_backend::{Backend, BackendError, Executable};
use rlx_ir::{Graph, NodeId, Op, Tensor};
use rlx_wgpu::{WgpuBackend, WgpuOptions};

/// Reports a missing device: a failure under RLX_REQUIRE_GPU=1, a loud skip otherwise.
pub fn no_device(reason: &str) {
    rlx_test_support::no_gpu("wgpu adapter", reason);
}

/// The backend the environment selects, or `None` after a loud skip.
pub fn backend() -> Option<WgpuBackend> {
    backend_with(WgpuOptions::from_env().unwrap())
}

/// The backend `opts` selects, or `None` after a loud skip.
pub fn backend_with(opts: WgpuOptions) -> Option<WgpuBackend> {
    match WgpuBackend::with_options(opts) {
        Ok(b) => Some(b),
        Err(BackendError::DeviceUnavailable { reason, .. }) => {
            no_device(&reason);
            None
        }
        Err(e) => panic!("opening the wgpu backend: {e}"),
    }
}

/// The node of `g` that is the input or param named `name`.
pub fn leaf(g: &Graph, name: &str) -> NodeId {
    let i = g
        .nodes()
        .iter()
        .position(|n| matches!(&n.op, Op::Input { name: x } | Op::Param { name: x } if x == name))
        .unwrap_or_else(|| panic!("no leaf named {name}"));
    NodeId(i as u32)
}

/// A graph compiled for `backend` (optimized for its capabilities, constants folded on the
/// CPU as the runtime does), with its optimized form for name lookups.
pub struct Compiled {
    pub graph: Graph,
    pub exe: Box<dyn Executable>,
}

pub fn compile(backend: &dyn Backend, g: &Graph) -> Compiled {
    let fold = |op: &Op, inputs: &[&Tensor], out: &rlx_ir::TensorType| rlx_cpu::eval(op, inputs, out).ok();
    let graph = rlx_opt::optimize(g, backend.capabilities(), &rlx_opt::PassOptions::default(), Some(&fold))
        .unwrap_or_else(|e| panic!("optimizing {} for {}: {e}", g.name(), backend.name()));
    let exe = backend
        .compile(&graph, &Default::default())
        .unwrap_or_else(|e| panic!("compiling {} on {}: {e}", g.name(), backend.name()));
    Compiled { graph, exe }
}

impl Compiled {
    pub fn set(&mut self, name: &str, t: &Tensor) {
        let id = leaf(&self.graph, name);
        self.exe.set_param(id, t).unwrap();
    }

    pub fn run(&mut self, inputs: &[(&str, &Tensor)]) -> Vec<Tensor> {
        let ids: Vec<(NodeId, &Tensor)> = inputs.iter().map(|(n, t)| (leaf(&self.graph, n), *t)).collect();
        self.exe.run(&ids).unwrap()
    }
}

/// Compiles, sets `params` and runs `inputs` once.
pub fn run_once(
    backend: &dyn Backend,
    g: &Graph,
    params: &[(&str, &Tensor)],
    inputs: &[(&str, &Tensor)],
) -> Vec<Tensor> {
    let mut c = compile(backend, g);
    for (n, t) in params {
        c.set(n, t);
    }
    c.run(inputs)
}

/// The CPU reference outputs.
pub fn cpu(g: &Graph, params: &[(&str, &Tensor)], inputs: &[(&str, &Tensor)]) -> Vec<Tensor> {
    run_once(&rlx_cpu::CpuBackend::new(), g, params, inputs)
}

/// Deterministic values in [lo, hi) (rlx-test-support's generator).
pub fn data(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    rlx_test_support::Rng::new(seed).uniform(n, lo, hi)
}

pub fn tensor(dims: &[usize], seed: u64) -> Tensor {
    let n = dims.iter().product();
    Tensor::from_f32(dims.to_vec(), data(n, seed, -1.0, 1.0)).unwrap()
}

/// ‖out − ref‖₂ / ‖ref‖₂ (absolute when the reference is all zeros); NaN when one side has a
/// NaN the other lacks.
pub fn rel_err(out: &[f64], reference: &[f64]) -> f64 {
    rlx_test_support::rel_err(out, reference)
}

/// Same shapes and dtypes, values within `tol` relative.
pub fn assert_close(what: &str, out: &[Tensor], reference: &[Tensor], tol: f64) {
    assert_eq!(out.len(), reference.len(), "{what}: output count");
    for (i, (o, r)) in out.iter().zip(reference).enumerate() {
        assert_eq!(o.dims(), r.dims(), "{what}: output {i} shape");
        assert_eq!(o.dtype(), r.dtype(), "{what}: output {i} dtype");
        let e = rel_err(&o.to_f64_vec(), &r.to_f64_vec());
        assert!(e <= tol, "{what}: output {i}: relative error {e:e} > {tol:e}");
    }
}
