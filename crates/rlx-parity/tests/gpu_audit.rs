//! The op audit: every `OpKind` runs on the GPU backends as kernels, with no host step.
//!
//! rlx has no host fallback: a GPU backend either lowers a node into kernel launches (a native
//! op, or one rlx-opt decomposed into native ops for the GPU capabilities) or refuses the graph.
//! This test proves the first for every op kind, without a device: each parity case's graph is
//! optimized for the GPU capabilities of two reference devices (lavapipe's limits and an H200's)
//! exactly as `Session::compile` does, then lowered by rlx-gpu into a `Schedule`. Every case must
//! lower (a case that forces the tensor-core rung may be refused only where the limits lack
//! cooperative matrices), and every op kind must occur in some case, before or after
//! optimization (fused kinds exist only after it), so that a new op without GPU coverage fails
//! here.

use rlx_backend::{Capabilities, KernelOptions};
use rlx_gpu::GpuLimits;
use rlx_ir::{Graph, Op, OpKind, Tensor, TensorType};
use std::collections::BTreeSet;

fn kinds(g: &Graph, into: &mut BTreeSet<OpKind>) {
    for n in g.nodes() {
        into.insert(n.op.kind());
    }
}

#[test]
fn every_op_kind_lowers_to_gpu_kernels_without_a_host_step() {
    let fold = |op: &Op, inputs: &[&Tensor], out: &TensorType| rlx_cpu::eval(op, inputs, out).ok();
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    let cases = rlx_parity::cases();
    for (label, limits) in [("lavapipe", GpuLimits::lavapipe()), ("hopper", GpuLimits::hopper())] {
        let caps = rlx_gpu::capabilities(label, &limits);
        for case in &cases {
            let built = match case.instantiate() {
                Ok(b) => b,
                Err(e) => {
                    failures.push(format!("{}: does not build: {e}", case.name));
                    continue;
                }
            };
            kinds(&built.graph, &mut seen);
            let optimized = match rlx_opt::optimize(&built.graph, &caps, &case.passes, Some(&fold)) {
                Ok(g) => g,
                Err(e) => {
                    failures.push(format!("{} on {label}: optimize: {e}", case.name));
                    continue;
                }
            };
            kinds(&optimized, &mut seen);
            let options = KernelOptions { precision: case.kernels.precision, matmul: case.kernels.matmul };
            let lowered = rlx_gpu::lower(&optimized, &limits, &options);
            let forced_coop = case.kernels.matmul.is_some() && !limits.cooperative_matrix;
            // An empty tensor or a folded constant lowers to no launches at all: success too.
            match lowered {
                Ok(_) => {}
                Err(_) if forced_coop => {}
                Err(e) => failures.push(format!("{} on {label}: lower: {e}", case.name)),
            }
        }
    }
    assert!(failures.is_empty(), "{} case(s) do not lower:\n{}", failures.len(), failures.join("\n"));
    let missing: Vec<&str> =
        Capabilities::all_ops().into_iter().filter(|k| !seen.contains(k)).map(OpKind::name).collect();
    assert!(missing.is_empty(), "op kinds no parity case exercises on the GPU path: {missing:?}");
}

#[test]
fn every_kind_a_gpu_lacks_is_one_rlx_opt_decomposes() {
    let caps = rlx_gpu::capabilities("hopper", &GpuLimits::hopper());
    let lacking: Vec<OpKind> =
        Capabilities::all_ops().into_iter().filter(|k| !caps.native_ops.contains(k)).collect();
    assert!(!lacking.is_empty(), "the GPU set should leave vision ops to decomposition");
    for k in lacking {
        assert!(rlx_opt::passes::DECOMPOSABLE.contains(&k), "{} is neither native nor decomposed", k.name());
    }
}
