//! Which matmuls the lowering launches together, and what the launches bind.

use super::test_util::{keys, schedule_with};
use crate::catalog::matmul::{Epilogue, MatmulKernel, VecMultiParams};
use crate::schedule::{BufferId, GpuLimits};
use crate::KernelKey;
use rlx_backend::KernelOptions;
use rlx_ir::{DType, Graph, NodeId, Op, UnaryOp};

/// x [rows, 64] times weights [n, 64] for each n (f16 params widened by casts when `f16`).
fn siblings(rows: usize, ns: &[usize], f16: bool) -> Graph {
    let mut g = Graph::new("siblings");
    let x = g.input("x", &[rows, 64], DType::F32).unwrap();
    let mut outs = Vec::new();
    for (i, &n) in ns.iter().enumerate() {
        let w = g.param(&format!("w{i}"), &[n, 64], if f16 { DType::F16 } else { DType::F32 }).unwrap();
        let w = if f16 { g.cast(w, DType::F32).unwrap() } else { w };
        outs.push(g.matmul_t(x, w, false, true).unwrap());
    }
    g.set_outputs(&outs).unwrap();
    g
}

#[test]
fn three_projections_of_one_vector_are_one_launch() {
    let g = siblings(1, &[40, 8, 8], false);
    let s = schedule_with(&g, &GpuLimits::lavapipe(), &KernelOptions::default());
    assert_eq!(
        keys(&s),
        [KernelKey::Matmul(MatmulKernel::VecSplit { bias: false, f16_b: false, norm: false })]
    );
    let ops = &s.steps[0].operands;
    // a, b0..b2 (the three params), c0..c2 (the three outputs, each in its own pool).
    assert_eq!(ops[0].buffer, BufferId::Leaf(0));
    assert_eq!(
        [ops[1].buffer, ops[2].buffer, ops[3].buffer],
        [BufferId::Leaf(1), BufferId::Leaf(2), BufferId::Leaf(3)]
    );
    let outs: Vec<_> = ops[4..7].iter().map(|o| o.buffer).collect();
    assert!(outs[0] != outs[1] && outs[1] != outs[2] && outs[0] != outs[2], "{outs:?}");
    let p: VecMultiParams = bytemuck::pod_read_unaligned(&s.steps[0].params);
    assert_eq!((p.m, p.k, p.n), (1, 64, [40, 8, 8]));
    // 56 columns, 16 per workgroup (K = 64).
    assert_eq!(s.steps[0].workgroups, [4, 1, 1]);
}

#[test]
fn four_siblings_are_three_plus_one_and_f16_weights_group_as_stored() {
    let g = siblings(2, &[9, 9, 9, 9], true);
    let s = schedule_with(&g, &GpuLimits::lavapipe(), &KernelOptions::default());
    assert_eq!(
        keys(&s),
        [
            KernelKey::Matmul(MatmulKernel::VecSplit { bias: false, f16_b: true, norm: false }),
            KernelKey::Matmul(MatmulKernel::Vec { bias: false, act: None, f16_b: true }),
        ]
    );
}

#[test]
fn a_forced_rung_or_too_few_bindings_keeps_matmuls_apart() {
    let g = siblings(1, &[40, 8, 8], false);
    let forced = KernelOptions { matmul: Some(rlx_backend::MatmulKernel::Tiled64), ..Default::default() };
    assert_eq!(schedule_with(&g, &GpuLimits::lavapipe(), &forced).steps.len(), 3);
    let few = GpuLimits { max_storage_bindings: 4, ..GpuLimits::lavapipe() };
    let s = schedule_with(&g, &few, &KernelOptions::default());
    assert_eq!(keys(&s), [KernelKey::Matmul(MatmulKernel::Vec { bias: false, act: None, f16_b: false }); 3]);
}

/// silu(x · W_gᵀ) ⊙ (x · W_uᵀ) with the silu fused into the gate matmul, as rlx-opt leaves it.
fn gated(extra: bool) -> (Graph, NodeId) {
    let mut g = Graph::new("gated");
    let x = g.input("x", &[1, 64], DType::F32).unwrap();
    let wg = g.param("gate", &[96, 64], DType::F32).unwrap();
    let wu = g.param("up", &[96, 64], DType::F32).unwrap();
    let op = Op::FusedMatMul {
        transpose_a: false,
        transpose_b: true,
        bias: false,
        activation: Some(UnaryOp::Silu),
    };
    let gate = g.push(op, &[x, wg]).unwrap();
    let up = g.matmul_t(x, wu, false, true).unwrap();
    let m = g.mul(gate, up).unwrap();
    let outs = if extra { vec![m, up] } else { vec![m] };
    g.set_outputs(&outs).unwrap();
    (g, m)
}

#[test]
fn a_gated_product_is_one_launch_that_writes_the_product() {
    let (g, m) = gated(false);
    let s = schedule_with(&g, &GpuLimits::lavapipe(), &KernelOptions::default());
    assert_eq!(
        keys(&s),
        [KernelKey::Matmul(MatmulKernel::VecGated { act: Some(Epilogue::Silu), f16_b: false, norm: false })]
    );
    let ops = &s.steps[0].operands;
    assert_eq!([ops[1].buffer, ops[2].buffer], [BufferId::Leaf(1), BufferId::Leaf(2)]);
    assert_eq!(ops[3].size, 96 * 4);
    assert!(s.steps[0].label.starts_with(&m.to_string()), "{}", s.steps[0].label);
    // K = 64: eight output columns per workgroup.
    assert_eq!(s.steps[0].workgroups, [12, 1, 1]);
    // x stays live until the product is written: it never shares the product's pool.
    assert_ne!(ops[0].buffer, ops[3].buffer);
}

#[test]
fn a_product_whose_factor_is_read_elsewhere_is_not_gated() {
    let (g, _) = gated(true);
    let s = schedule_with(&g, &GpuLimits::lavapipe(), &KernelOptions::default());
    assert!(
        !keys(&s).iter().any(|k| matches!(k, KernelKey::Matmul(MatmulKernel::VecGated { .. }))),
        "{:?}",
        keys(&s)
    );
}

/// x [rows, 896] through q, k and v projections with biases (896, 128, 128 outputs).
fn qkv(rows: usize) -> Graph {
    let mut g = Graph::new("qkv");
    let x = g.input("x", &[rows, 896], DType::F32).unwrap();
    let mut outs = Vec::new();
    for (i, n) in [896, 128, 128].into_iter().enumerate() {
        let w = g.param(&format!("w{i}"), &[n, 896], DType::F32).unwrap();
        let b = g.param(&format!("b{i}"), &[n], DType::F32).unwrap();
        let op = Op::FusedMatMul { transpose_a: false, transpose_b: true, bias: true, activation: None };
        outs.push(g.push(op, &[x, w, b]).unwrap());
    }
    g.set_outputs(&outs).unwrap();
    g
}

#[test]
fn a_prompt_s_q_k_v_are_one_tensor_core_launch_with_three_outputs() {
    use crate::catalog::matmul::CoopSplitParams;
    let mixed = KernelOptions { precision: rlx_backend::Precision::Mixed, ..Default::default() };
    let s = schedule_with(&qkv(512), &GpuLimits::hopper(), &mixed);
    assert_eq!(
        keys(&s),
        [KernelKey::Matmul(MatmulKernel::CoopSplit { wide: false, bias: true, f16_b: false })]
    );
    let ops = &s.steps[0].operands;
    assert_eq!(ops.len(), 10);
    // Each output has its own pool; the biases are the three bias params.
    let outs: Vec<_> = ops[4..7].iter().map(|o| o.buffer).collect();
    assert!(outs[0] != outs[1] && outs[1] != outs[2] && outs[0] != outs[2], "{outs:?}");
    assert_eq!([ops[7].size, ops[8].size, ops[9].size], [896 * 4, 128 * 4, 128 * 4]);
    let p: CoopSplitParams = bytemuck::pod_read_unaligned(&s.steps[0].params);
    assert_eq!((p.mm.m, p.mm.n, p.n1, p.n2, p.tiles0, p.tiles1), (512, 896, 128, 128, 14, 2));
    assert_eq!(s.steps[0].workgroups, [18, 8, 1]);
    // Without tensor cores (lavapipe) each projection is its own launch.
    let s = schedule_with(&qkv(512), &GpuLimits::lavapipe(), &mixed);
    assert!(
        !keys(&s).iter().any(|k| matches!(k, KernelKey::Matmul(MatmulKernel::CoopSplit { .. }))),
        "{:?}",
        keys(&s)
    );
}

#[test]
fn an_rms_norm_read_only_by_a_group_is_computed_by_its_launch() {
    let build = |norm_is_output: bool| {
        let mut g = Graph::new("prenorm");
        let x = g.input("x", &[1, 64], DType::F32).unwrap();
        let gamma = g.param("gamma", &[64], DType::F32).unwrap();
        let n = g.rms_norm(x, Some(gamma), -1, 1e-6).unwrap();
        let mut outs = Vec::new();
        for (i, rows) in [40, 8, 8].into_iter().enumerate() {
            let w = g.param(&format!("w{i}"), &[rows, 64], DType::F32).unwrap();
            outs.push(g.matmul_t(n, w, false, true).unwrap());
        }
        if norm_is_output {
            outs.push(n);
        }
        g.set_outputs(&outs).unwrap();
        schedule_with(&g, &GpuLimits::lavapipe(), &KernelOptions::default())
    };
    let s = build(false);
    assert_eq!(
        keys(&s),
        [KernelKey::Matmul(MatmulKernel::VecSplit { bias: false, f16_b: false, norm: true })]
    );
    let ops = &s.steps[0].operands;
    // A is the norm's input x, γ is bound last.
    assert_eq!((ops[0].buffer, ops[7].buffer), (BufferId::Leaf(0), BufferId::Leaf(1)));
    let p: VecMultiParams = bytemuck::pod_read_unaligned(&s.steps[0].params);
    assert_eq!(p.eps, 1e-6);
    // A norm that is also an output still runs, and the group reads it.
    let s = build(true);
    assert_eq!(s.steps.len(), 2);
    assert_eq!(
        s.steps[1].key,
        KernelKey::Matmul(MatmulKernel::VecSplit { bias: false, f16_b: false, norm: false })
    );
}
