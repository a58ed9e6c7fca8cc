//! Fusion passes: matmul epilogue, residual add + norm, elementwise trees.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_same, caps_without, count, kinds};
use rlx_ir::{BinaryOp, DType, EwStep, Graph, NormKind, Op, OpKind, UnaryOp};
use rlx_nn::prelude::*;
use rlx_opt::passes::{fuse_add_norm, fuse_elementwise, fuse_matmul_epilogue};

const TOL: f64 = 1e-5;

fn all() -> rlx_backend::Capabilities {
    caps_without(&[])
}

fn fused_matmul(g: &Graph) -> Vec<&Op> {
    g.nodes().iter().map(|n| &n.op).filter(|op| matches!(op, Op::FusedMatMul { .. })).collect()
}

#[test]
fn matmul_bias_activation_fuses() {
    let acts =
        [UnaryOp::Gelu, UnaryOp::GeluTanh, UnaryOp::Relu, UnaryOp::Silu, UnaryOp::Sigmoid, UnaryOp::Tanh];
    for (i, kind) in acts.into_iter().enumerate() {
        let mut g = Graph::new("mm");
        let x = g.input("x", &[2, 3, 8], DType::F32).unwrap();
        let w = g.param("w", &[6, 8], DType::F32).unwrap();
        let b = g.param("b", &[6], DType::F32).unwrap();
        let m = g.matmul_t(x, w, false, true).unwrap();
        // Bias on either side of the add.
        let s = if i % 2 == 0 { g.add(m, b).unwrap() } else { g.add(b, m).unwrap() };
        let y = g.unary(kind, s).unwrap();
        g.set_outputs(&[y]).unwrap();
        let f = fuse_matmul_epilogue(&g, &all()).unwrap();
        assert_eq!(
            kinds(&f),
            [OpKind::Input, OpKind::Param, OpKind::Param, OpKind::FusedMatMul],
            "act {}",
            kind.name()
        );
        assert_eq!(
            fused_matmul(&f)[0],
            &Op::FusedMatMul { transpose_a: false, transpose_b: true, bias: true, activation: Some(kind) }
        );
        assert_same(&g, &f, 20 + i as u64, TOL);
    }
}

#[test]
fn matmul_epilogue_variants() {
    // A [1, N] bias is reshaped to [N]; a matmul followed only by an activation fuses too.
    let mut g = Graph::new("mm2");
    let x = g.input("x", &[4, 5], DType::F32).unwrap();
    let w = g.param("w", &[5, 3], DType::F32).unwrap();
    let b = g.param("b", &[1, 3], DType::F32).unwrap();
    let m = g.matmul(x, w).unwrap();
    let s = g.add(m, b).unwrap();
    let m2 = g.matmul_t(s, w, false, true).unwrap();
    let y = g.relu(m2).unwrap();
    g.set_outputs(&[y]).unwrap();
    let f = fuse_matmul_epilogue(&g, &all()).unwrap();
    assert_eq!(
        fused_matmul(&f),
        [
            &Op::FusedMatMul { transpose_a: false, transpose_b: false, bias: true, activation: None },
            &Op::FusedMatMul {
                transpose_a: false,
                transpose_b: true,
                bias: false,
                activation: Some(UnaryOp::Relu)
            },
        ]
    );
    assert_eq!(count(&f, OpKind::Reshape), 1);
    assert_eq!(count(&f, OpKind::Binary) + count(&f, OpKind::Unary) + count(&f, OpKind::MatMul), 0);
    assert_same(&g, &f, 30, TOL);
}

#[test]
fn matmul_epilogue_respects_other_readers_outputs_and_shapes() {
    let mut g = Graph::new("blocked");
    let x = g.input("x", &[4, 5], DType::F32).unwrap();
    let w = g.param("w", &[5, 3], DType::F32).unwrap();
    let b = g.param("b", &[3], DType::F32).unwrap();
    let col = g.param("col", &[4, 1], DType::F32).unwrap();
    // m1 has two readers: nothing fuses.
    let m1 = g.matmul(x, w).unwrap();
    let a1 = g.add(m1, b).unwrap();
    let t1 = g.tanh(m1).unwrap();
    // The biased sum is an output: bias fuses, the activation stays.
    let m2 = g.matmul(x, w).unwrap();
    let a2 = g.add(m2, b).unwrap();
    let r2 = g.relu(a2).unwrap();
    // A column "bias" is no bias: not fused (but the later activation alone neither, as the
    // add sits between).
    let m3 = g.matmul(x, w).unwrap();
    let a3 = g.add(m3, col).unwrap();
    let r3 = g.sigmoid(a3).unwrap();
    // exp is not an epilogue activation.
    let m4 = g.matmul(x, w).unwrap();
    let e4 = g.exp(m4).unwrap();
    g.set_outputs(&[a1, t1, a2, r2, r3, e4]).unwrap();
    let f = fuse_matmul_epilogue(&g, &all()).unwrap();
    assert_eq!(
        fused_matmul(&f),
        [&Op::FusedMatMul { transpose_a: false, transpose_b: false, bias: true, activation: None }]
    );
    assert_eq!(count(&f, OpKind::MatMul), 3);
    assert_same(&g, &f, 31, TOL);

    // Nothing happens on a device without FusedMatMul.
    let none = fuse_matmul_epilogue(&g, &caps_without(&[OpKind::FusedMatMul])).unwrap();
    assert_eq!(none.nodes(), g.nodes());
}

#[test]
fn add_of_two_matmuls_fuses_once() {
    let mut g = Graph::new("two");
    let x = g.input("x", &[1, 4], DType::F32).unwrap();
    let w = g.param("w", &[4, 4], DType::F32).unwrap();
    let m1 = g.matmul(x, w).unwrap();
    let m2 = g.matmul(x, w).unwrap();
    let s = g.add(m1, m2).unwrap(); // each [1, 4] is a valid bias of the other
    let y = g.gelu(s).unwrap();
    g.set_outputs(&[y]).unwrap();
    let f = fuse_matmul_epilogue(&g, &all()).unwrap();
    assert_eq!(count(&f, OpKind::FusedMatMul), 1);
    assert_eq!(count(&f, OpKind::MatMul), 1);
    assert_same(&g, &f, 32, TOL);
}

#[test]
fn residual_add_and_norm_fuse() {
    let mut g = Graph::new("addnorm");
    let x = g.input("x", &[3, 8], DType::F32).unwrap();
    let r = g.input("r", &[3, 8], DType::F32).unwrap();
    let gamma = g.param("gamma", &[8], DType::F32).unwrap();
    let beta = g.param("beta", &[8], DType::F32).unwrap();
    let s = g.add(x, r).unwrap();
    let ln = g.layer_norm(s, Some(gamma), Some(beta), -1, 1e-5).unwrap();
    let s2 = g.add(ln, r).unwrap();
    let rms = g.rms_norm(s2, Some(gamma), -1, 1e-6).unwrap();
    // Blocked: the sum has a second reader.
    let s3 = g.add(rms, x).unwrap();
    let ln3 = g.layer_norm(s3, None, None, -1, 1e-5).unwrap();
    let out3 = g.mul(ln3, s3).unwrap();
    // Blocked: broadcasting add.
    let s4 = g.add(out3, beta).unwrap();
    let ln4 = g.layer_norm(s4, None, None, -1, 1e-5).unwrap();
    g.set_outputs(&[ln4]).unwrap();

    let f = fuse_add_norm(&g, &all()).unwrap();
    let fused: Vec<_> = f
        .nodes()
        .iter()
        .filter_map(|n| match n.op {
            Op::AddNorm { norm, .. } => Some(norm),
            _ => None,
        })
        .collect();
    assert_eq!(fused, [NormKind::LayerNorm, NormKind::RmsNorm]);
    assert_eq!(count(&f, OpKind::LayerNorm), 2);
    assert_same(&g, &f, 40, TOL);

    let none = fuse_add_norm(&g, &caps_without(&[OpKind::AddNorm])).unwrap();
    assert_eq!(none.nodes(), g.nodes());
}

#[test]
fn elementwise_trees_fuse_with_scalars() {
    let mut g = Graph::new("ew");
    let x = g.input("x", &[4, 5], DType::F32).unwrap();
    let y = g.input("y", &[5], DType::F32).unwrap();
    let two = g.scalar(2.0).unwrap();
    let a = g.exp(x).unwrap();
    let b = g.mul(a, two).unwrap();
    let c = g.sin(y).unwrap();
    let d = g.add(b, c).unwrap();
    let e = g.mul(d, x).unwrap(); // x read twice in the tree: one input
    let out = g.tanh(e).unwrap();
    g.set_outputs(&[out]).unwrap();

    let f = fuse_elementwise(&g, &all()).unwrap();
    let progs: Vec<_> = f
        .nodes()
        .iter()
        .filter_map(|n| match &n.op {
            Op::FusedElementwise(p) => Some((p.clone(), n.inputs.len())),
            _ => None,
        })
        .collect();
    assert_eq!(progs.len(), 1, "one region");
    let (prog, n_inputs) = &progs[0];
    assert_eq!(*n_inputs, 2, "x and y, each once");
    assert!(prog.steps.contains(&EwStep::Scalar(2.0)));
    assert_eq!(prog.steps.iter().filter(|s| matches!(s, EwStep::Unary(..) | EwStep::Binary(..))).count(), 6);
    assert_eq!(count(&f, OpKind::Unary) + count(&f, OpKind::Binary), 0);
    assert_same(&g, &f, 50, TOL);
}

#[test]
fn elementwise_fusion_stops_at_outputs_shared_values_and_other_dtypes() {
    let mut g = Graph::new("ew_blocked");
    let x = g.input("x", &[6], DType::F32).unwrap();
    let h = g.input("h", &[6], DType::F16).unwrap();
    let a = g.exp(x).unwrap();
    let b = g.sin(a).unwrap(); // output and read again: a region boundary
    let c = g.cos(b).unwrap();
    let d = g.neg(c).unwrap();
    let shared = g.abs(x).unwrap(); // two readers
    let s1 = g.sqrt(shared).unwrap();
    let s2 = g.square(shared).unwrap();
    let s = g.sub(s1, s2).unwrap();
    let single = g.relu(x).unwrap(); // one op alone: left as is
    let h1 = g.exp(h).unwrap(); // f16: not fused
    let h2 = g.neg(h1).unwrap();
    let cmp = g.gt(d, s).unwrap(); // compare: a boundary
    g.set_outputs(&[b, d, cmp, single, h2]).unwrap();

    let f = fuse_elementwise(&g, &all()).unwrap();
    // Regions: {exp, sin}, {cos, neg}, {sqrt, square, sub}.
    assert_eq!(count(&f, OpKind::FusedElementwise), 3);
    // abs (shared), relu (single), the two f16 ops.
    assert_eq!(count(&f, OpKind::Unary), 4);
    assert_eq!(count(&f, OpKind::Compare), 1);
    assert_same(&g, &f, 51, TOL);

    let none = fuse_elementwise(&g, &caps_without(&[OpKind::FusedElementwise])).unwrap();
    assert_eq!(none.nodes(), g.nodes());
}

#[test]
fn elementwise_scalar_only_operands_keep_the_output_shape() {
    // Every leaf is a rank-0 constant: the output shape must come from an input.
    let mut g = Graph::new("scalars");
    let a = g.scalar(0.5).unwrap();
    let b = g.scalar(3.0).unwrap();
    let c = g.add(a, b).unwrap();
    let d = g.exp(c).unwrap();
    g.set_outputs(&[d]).unwrap();
    let f = fuse_elementwise(&g, &all()).unwrap();
    assert_eq!(count(&f, OpKind::FusedElementwise), 1);
    assert_eq!(f.ty(f.outputs()[0]).unwrap(), g.ty(d).unwrap());
    assert_same(&g, &f, 52, TOL);
}

#[test]
fn long_chains_fuse_without_recursion_limits() {
    let mut g = Graph::new("long");
    let x = g.input("x", &[3], DType::F32).unwrap();
    let mut cur = x;
    for i in 0..5000 {
        cur = if i % 2 == 0 { g.sin(cur).unwrap() } else { g.binary(BinaryOp::Mul, cur, x).unwrap() };
    }
    g.set_outputs(&[cur]).unwrap();
    let f = fuse_elementwise(&g, &all()).unwrap();
    assert_eq!(kinds(&f), [OpKind::Input, OpKind::FusedElementwise]);
    assert_same(&g, &f, 53, TOL);
}

#[test]
fn fusion_sees_through_broadcast_expands() {
    // On a device without native broadcasting legalize expands the bias and the scalar; the
    // fusions still recognise them.
    let mut g = Graph::new("no_bcast");
    let x = g.input("x", &[4, 5], DType::F32).unwrap();
    let w = g.param("w", &[5, 3], DType::F32).unwrap();
    let b = g.param("b", &[3], DType::F32).unwrap();
    let half = g.scalar(0.5).unwrap();
    let m = g.matmul(x, w).unwrap();
    let s = g.add(m, b).unwrap();
    let e = g.exp(s).unwrap();
    let y = g.mul(e, half).unwrap();
    let z = g.tanh(y).unwrap();
    g.set_outputs(&[z]).unwrap();
    let mut caps = all();
    caps.native_broadcast = false;
    let opt = rlx_opt::optimize(&g, &caps, &rlx_opt::PassOptions::default(), None).unwrap();
    assert_eq!(
        fused_matmul(&opt),
        [&Op::FusedMatMul { transpose_a: false, transpose_b: false, bias: true, activation: None }]
    );
    let progs: Vec<_> = opt
        .nodes()
        .iter()
        .filter_map(|n| match &n.op {
            Op::FusedElementwise(p) => Some((p.steps.clone(), n.inputs.len())),
            _ => None,
        })
        .collect();
    assert_eq!(progs.len(), 1);
    assert!(progs[0].0.contains(&EwStep::Scalar(0.5)));
    assert_eq!(progs[0].1, 1, "only the matmul result is an input");
    assert_eq!(count(&opt, OpKind::Expand), 0, "the expands became dead");
    assert_same(&g, &opt, 54, TOL);
}

#[test]
fn lora_update_folds_into_the_matmul_epilogue_for_decode_rows() {
    // lora_matmul at M = 1: the [1, N] rank-r update is a bias of the base matmul, so the add
    // disappears into a FusedMatMul; at M = 3 it stays one elementwise add.
    for (m, fused_add) in [(1, true), (3, false)] {
        let mut g = Graph::new("lora");
        let x = g.input("x", &[m, 8], DType::F32).unwrap();
        let w = g.param("w", &[6, 8], DType::F32).unwrap();
        let a = g.param("a", &[2, 8], DType::F32).unwrap();
        let b = g.param("b", &[6, 2], DType::F32).unwrap();
        let y = g.lora_matmul(x, w, a, b, 0.5).unwrap();
        g.set_outputs(&[y]).unwrap();
        let f = fuse_matmul_epilogue(&g, &all()).unwrap();
        let with_bias =
            fused_matmul(&f).iter().filter(|op| matches!(op, Op::FusedMatMul { bias: true, .. })).count();
        assert_eq!(with_bias, usize::from(fused_add), "M = {m}");
        let adds = f.nodes().iter().filter(|n| n.op == Op::Binary(BinaryOp::Add)).count();
        assert_eq!(adds, usize::from(!fused_add), "M = {m}");
        // The scale multiplies the [M, r] intermediate, the smallest tensor on the path.
        assert_eq!(count(&f, OpKind::Binary), 1 + adds, "M = {m}");
        assert_same(&g, &f, 40 + m as u64, TOL);
    }
}
