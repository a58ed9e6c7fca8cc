//! Activation checkpointing (`BackwardOptions::recompute`): a stack of residual MLP blocks
//! differentiated with the block outputs as checkpoints gives bit-identical gradients to the
//! plain backward on every device, and the memory plan of the compiled graph is smaller (the
//! CPU's arena and the GPU backends' pools), since the blocks' wide intermediates die inside
//! the forward.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_ir::{BackwardOptions, DType, Graph, NodeId, Tensor};
use rlx_runtime::{Device, HostData, Session};
use rlx_test_support::devices::{open, GPU_DEVICES};

const ROWS: usize = 64;
const WIDTH: usize = 32;
const WIDE: usize = 256;
const BLOCKS: usize = 6;

/// The blocks x ← x + gelu(x·W1ᵢ)·W2ᵢ, a mean-square loss, and its gradients with respect to
/// every weight and the input; `recompute` checkpoints every block's output.
fn graph(recompute: bool) -> Graph {
    let mut g = Graph::new(if recompute { "mlp_recompute" } else { "mlp" });
    let mut x = g.input("x", &[ROWS, WIDTH], DType::F32).unwrap();
    let x0 = x;
    let (mut wrt, mut outs) = (vec![x0], Vec::<NodeId>::new());
    for i in 0..BLOCKS {
        let w1 = g.param(&format!("w1_{i}"), &[WIDTH, WIDE], DType::F32).unwrap();
        let w2 = g.param(&format!("w2_{i}"), &[WIDE, WIDTH], DType::F32).unwrap();
        let u = g.matmul(x, w1).unwrap();
        let a = g.gelu(u).unwrap();
        let v = g.matmul(a, w2).unwrap();
        x = g.add(x, v).unwrap();
        outs.push(x);
        wrt.extend([w1, w2]);
    }
    let sq = g.square(x).unwrap();
    let loss = g.mean(sq, &[0, 1], false).unwrap();
    let opts = BackwardOptions { recompute: recompute.then_some(outs) };
    let grads = g.backward_with(loss, &wrt, &opts).unwrap();
    let mut outputs = vec![loss];
    outputs.extend(grads);
    g.set_outputs(&outputs).unwrap();
    g
}

/// The outputs (loss, then gradients) on `device`, and the compiled graph's planned memory:
/// the arena bytes (what the CPU allocates) and the GPU backends' pool bytes for that plan.
fn run(session: &Session, recompute: bool) -> (Vec<Tensor>, (u64, u64)) {
    let g = graph(recompute);
    let mut exe = session.compile(&g).unwrap();
    for i in 0..BLOCKS {
        let w1 = rlx_test_support::uniform(WIDTH * WIDE, 10 + i as u64, 0.3);
        let w2 = rlx_test_support::uniform(WIDE * WIDTH, 20 + i as u64, 0.1);
        exe.set_param(&format!("w1_{i}"), &w1).unwrap();
        exe.set_param(&format!("w2_{i}"), &w2).unwrap();
    }
    let x = rlx_test_support::uniform(ROWS * WIDTH, 3, 1.0);
    let out = exe.run(&[("x", &x as &dyn HostData)]).unwrap();
    let plan = rlx_opt::memory::plan(exe.graph(), 64).unwrap();
    let pools: u64 = rlx_gpu::assign_pools(&plan).1.iter().sum();
    (out, (plan.peak_bytes, pools))
}

fn same_bits(a: &[Tensor], b: &[Tensor], what: &str) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (x, y) = (x.to_f32_vec(), y.to_f32_vec());
        assert!(x.iter().any(|v| *v != 0.0), "{what}: output {i} is all zeros");
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&x), bits(&y), "{what}: output {i} differs with recompute");
    }
}

#[test]
fn recomputed_gradients_are_bit_identical_and_need_less_memory() {
    let cpu = Session::new(Device::Cpu).unwrap();
    let (plain, plain_peak) = run(&cpu, false);
    let (re, re_peak) = run(&cpu, true);
    same_bits(&plain, &re, "cpu");
    // The plain backward keeps every block's [64, 256] pre-activation and activation (64 KiB
    // each) from the forward; with recompute they are rebuilt one block at a time. The
    // gradients (outputs, live to the end) are the same in both. At least four blocks' worth
    // of one such value must be saved, in the CPU's arena and in the GPU's pools (measured:
    // arena 1 073 216 → 712 768 bytes; pools 1 064 976 → 704 528).
    let block_value = (ROWS * WIDE * 4) as u64;
    for (what, plain, re) in [("arena", plain_peak.0, re_peak.0), ("gpu pools", plain_peak.1, re_peak.1)] {
        assert!(
            re + 4 * block_value <= plain,
            "{what}: recompute planned {re} bytes, the plain backward {plain}"
        );
    }
    // The copies are really there: the recompute graph is longer.
    assert!(graph(true).len() > graph(false).len());
}

#[test]
fn recomputed_gradients_are_bit_identical_on_the_gpu_backends() {
    for device in GPU_DEVICES {
        let Some(session) = open(device, "recompute") else { continue };
        let (plain, _) = run(&session, false);
        let (re, _) = run(&session, true);
        same_bits(&plain, &re, &device.to_string());
    }
}
