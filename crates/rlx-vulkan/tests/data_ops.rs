//! The data-family lowerings (elementwise on every dtype, data movement, reductions) through
//! `VulkanBackend`, against the CPU backend, on every available device: f32 within 1e-5
//! relative (NaN and infinities in the same places), integers and bools exactly, pure data
//! movement bit for bit.

mod support;

#[path = "data_ops/elementwise.rs"]
mod elementwise;
#[path = "data_ops/movement.rs"]
mod movement;
#[path = "data_ops/reduce.rs"]
mod reduce;

use rlx_backend::Backend;
use rlx_ir::{DType, Graph, NodeId, Tensor, TensorData};
use rlx_opt::PassOptions;
use rlx_vulkan::VulkanBackend;
use std::sync::OnceLock;

/// One backend per available context, opened once for the whole file so that pipelines are
/// compiled once (empty after a loud skip when there is no device).
fn backends() -> &'static [VulkanBackend] {
    static B: OnceLock<Vec<VulkanBackend>> = OnceLock::new();
    B.get_or_init(|| support::contexts().into_iter().map(VulkanBackend::with_context).collect())
}

fn name_of(b: &VulkanBackend) -> String {
    format!("{} ({:?})", b.info().name, b.context().memory_strategy())
}

/// The node of input `name` in `g`.
fn input_id(g: &Graph, name: &str) -> NodeId {
    g.inputs().into_iter().find(|(n, _, _)| *n == name).map(|(_, id, _)| id).unwrap()
}

/// Optimizes `g` for `backend` without fusion (so each op reaches its own lowering),
/// compiles it and runs it once.
fn run(backend: &dyn Backend, g: &Graph, inputs: &[(&str, &Tensor)]) -> Vec<Tensor> {
    let device = backend.capabilities().device_name.clone();
    let g = rlx_opt::optimize(g, backend.capabilities(), &PassOptions::none(), None)
        .unwrap_or_else(|e| panic!("optimizing {} for {device}: {e}", g.name()));
    let mut exe = backend.compile(&g).unwrap_or_else(|e| panic!("compiling {} for {device}: {e}", g.name()));
    let feeds: Vec<(NodeId, &Tensor)> = inputs.iter().map(|(n, t)| (input_id(&g, n), *t)).collect();
    exe.run(&feeds).unwrap_or_else(|e| panic!("running {} on {device}: {e}", g.name()))
}

/// How an output must match the CPU's.
#[derive(Clone, Copy, PartialEq)]
enum Match {
    /// f32 within 1e-5 relative (DESIGN.md's numerics); other dtypes exactly.
    Close,
    /// Every value identical (f32 compared by bits, any NaN equal to any NaN).
    Exact,
}

fn same_f32(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// Runs `g` on the CPU and on every Vulkan device and compares every output.
fn check(g: &Graph, inputs: &[(&str, &Tensor)], how: Match) {
    let want = run(&rlx_cpu::CpuBackend::new(), g, inputs);
    for b in backends() {
        let got = run(b, g, inputs);
        let what = format!("{} on {}", g.name(), name_of(b));
        assert_eq!(got.len(), want.len(), "{what}: output count");
        for (i, (o, r)) in got.iter().zip(&want).enumerate() {
            assert_eq!((o.dtype(), o.dims()), (r.dtype(), r.dims()), "{what}: output {i} type");
            match (o.data(), r.data(), how) {
                (TensorData::F32(a), TensorData::F32(e), Match::Close) => {
                    let err = support::rel_err(a, &r.to_f64_vec());
                    assert!(
                        err <= 1e-5,
                        "{what}: output {i}: relative error {err:e}\n got {a:?}\nwant {e:?}"
                    );
                }
                (TensorData::F32(a), TensorData::F32(e), Match::Exact) => {
                    let bad = a.iter().zip(e).position(|(x, y)| !same_f32(*x, *y));
                    assert!(bad.is_none(), "{what}: output {i} differs at {bad:?}\n got {a:?}\nwant {e:?}");
                }
                (a, e, _) => assert_eq!(a, e, "{what}: output {i}"),
            }
        }
    }
}

/// Deterministic f32 data in [lo, hi).
fn f32s(dims: &[usize], seed: u64, lo: f32, hi: f32) -> Tensor {
    Tensor::from_f32(dims, support::data(dims.iter().product(), seed, lo, hi)).unwrap()
}

/// f32 data with NaN, ±inf and ±0 sprinkled in at fixed places.
fn f32s_special(dims: &[usize], seed: u64) -> Tensor {
    let mut v = support::data(dims.iter().product(), seed, -3.0, 3.0);
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
    for (k, slot) in v.iter_mut().enumerate().filter(|(k, _)| k % 7 == 3) {
        *slot = specials[(k / 7) % specials.len()];
    }
    Tensor::from_f32(dims, v).unwrap()
}

/// Deterministic i32 data in [lo, hi].
fn i32s(dims: &[usize], seed: u64, lo: i32, hi: i32) -> Tensor {
    let n = dims.iter().product();
    let span = (hi as i64 - lo as i64 + 1) as f64;
    let v = support::data(n, seed, 0.0, 1.0)
        .iter()
        .map(|&u| (lo as i64 + (u as f64 * span) as i64) as i32)
        .collect();
    Tensor::from_i32(dims, v).unwrap()
}

fn u32s(dims: &[usize], seed: u64, hi: u32) -> Tensor {
    let n = dims.iter().product();
    let v =
        support::data(n, seed, 0.0, 1.0).iter().map(|&u| ((u as f64) * (hi as f64 + 1.0)) as u32).collect();
    Tensor::from_u32(dims, v).unwrap()
}

fn bools(dims: &[usize], seed: u64) -> Tensor {
    let n = dims.iter().product();
    Tensor::from_bool(dims, support::data(n, seed, 0.0, 1.0).iter().map(|&u| u < 0.5).collect()).unwrap()
}

/// A tensor of `dtype` with deterministic data (small integers for the integer types).
fn tensor_of(dtype: DType, dims: &[usize], seed: u64) -> Tensor {
    match dtype {
        DType::F32 => f32s_special(dims, seed),
        DType::I32 => i32s(dims, seed, -50, 50),
        DType::U32 => u32s(dims, seed, 100),
        DType::Bool => bools(dims, seed),
        DType::F16 => panic!("f16 is not stored on GPUs"),
    }
}
