//! Elementwise fusion with wheres and under a device's fusion limits (the GPUs': seven inputs,
//! twelve program words, inputs read as one run of the output's dims).
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_same, caps_without, count};
use rlx_backend::{Capabilities, FusionLimits};
use rlx_ir::{BinaryOp, DType, EwProgram, EwStep, Graph, Op, OpKind};
use rlx_opt::passes::fuse_elementwise;
use rlx_opt::{optimize, PassOptions};

const TOL: f64 = 1e-5;
const LIMITS: FusionLimits = FusionLimits { max_inputs: 7, max_words: 12 };

fn limited() -> Capabilities {
    Capabilities { fusion_limits: Some(LIMITS), ..caps_without(&[]) }
}

/// Every fused node of `g` fits `LIMITS`.
fn all_fit(g: &Graph) -> usize {
    let mut n = 0;
    for node in g.nodes() {
        if let Op::FusedElementwise(p) = &node.op {
            let shapes: Vec<&[usize]> = node.inputs.iter().map(|&i| g.ty(i).unwrap().shape.dims()).collect();
            assert!(LIMITS.admits(p, &shapes, node.ty.shape.dims()), "{p:?} over {shapes:?}");
            n += 1;
        }
    }
    n
}

#[test]
fn wheres_fuse_with_their_condition_as_a_bool_input() {
    let mut g = Graph::new("where");
    let x = g.input("x", &[4, 6], DType::F32).unwrap();
    let y = g.input("y", &[6], DType::F32).unwrap();
    let zero = g.scalar(0.0).unwrap();
    let cond = g.gt(x, zero).unwrap();
    let a = g.mul(x, y).unwrap();
    let b = g.exp(x).unwrap();
    let w = g.where_(cond, a, b).unwrap();
    let out = g.sqrt(w).unwrap();
    g.set_outputs(&[out]).unwrap();
    for caps in [caps_without(&[]), limited()] {
        let f = fuse_elementwise(&g, &caps).unwrap();
        assert_eq!(count(&f, OpKind::FusedElementwise), 1);
        assert_eq!(count(&f, OpKind::Where) + count(&f, OpKind::Binary) + count(&f, OpKind::Unary), 0);
        let node = f.nodes().iter().find(|n| matches!(n.op, Op::FusedElementwise(_))).unwrap();
        let dtypes: Vec<DType> = node.inputs.iter().map(|&i| f.ty(i).unwrap().dtype).collect();
        assert_eq!(dtypes.iter().filter(|&&d| d == DType::Bool).count(), 1, "{dtypes:?}");
        let Op::FusedElementwise(p) = &node.op else { unreachable!() };
        assert!(p.steps.iter().any(|s| matches!(s, EwStep::Where(..))));
        assert_same(&g, &f, 61, TOL);
    }
}

#[test]
fn long_chains_become_nodes_of_about_the_word_limit() {
    let mut g = Graph::new("long");
    let x = g.input("x", &[3], DType::F32).unwrap();
    let mut cur = x;
    for i in 0..600 {
        cur = if i % 2 == 0 { g.sin(cur).unwrap() } else { g.binary(BinaryOp::Mul, cur, x).unwrap() };
    }
    g.set_outputs(&[cur]).unwrap();
    let f = fuse_elementwise(&g, &limited()).unwrap();
    let nodes = all_fit(&f);
    assert_eq!(count(&f, OpKind::Unary) + count(&f, OpKind::Binary), 0, "every op is in some node");
    assert!(nodes <= 600 / 11 + 1, "{nodes} fused nodes for 600 ops");
    assert_same(&g, &f, 62, TOL);
}

#[test]
fn wide_trees_are_cut_to_the_input_limit() {
    let mut g = Graph::new("wide");
    let ins: Vec<_> = (0..20).map(|k| g.input(&format!("x{k}"), &[5], DType::F32).unwrap()).collect();
    let mut acc = ins[0];
    for &x in &ins[1..] {
        let t = g.tanh(x).unwrap();
        acc = g.add(acc, t).unwrap();
    }
    g.set_outputs(&[acc]).unwrap();
    let f = fuse_elementwise(&g, &limited()).unwrap();
    assert!(all_fit(&f) >= 3);
    assert_eq!(count(&f, OpKind::Unary) + count(&f, OpKind::Binary), 0);
    assert_same(&g, &f, 63, TOL);
}

#[test]
fn inputs_that_are_not_one_run_stay_out_of_the_tree() {
    // y [2, 1, 4] read as [2, 3, 4] has two runs: the add reading it is not fused with it.
    let mut g = Graph::new("runs");
    let x = g.input("x", &[2, 3, 4], DType::F32).unwrap();
    let y = g.input("y", &[2, 1, 4], DType::F32).unwrap();
    let ey = g.exp(y).unwrap();
    let a = g.add(x, ey).unwrap();
    let out = g.tanh(a).unwrap();
    g.set_outputs(&[out]).unwrap();
    let f = fuse_elementwise(&g, &limited()).unwrap();
    all_fit(&f);
    assert_same(&g, &f, 64, TOL);
    // Without limits the whole tree is one node.
    let free = fuse_elementwise(&g, &caps_without(&[])).unwrap();
    assert_eq!(count(&free, OpKind::FusedElementwise), 1);
}

#[test]
fn prebuilt_nodes_past_the_limits_are_decomposed() {
    let mut g = Graph::new("prebuilt");
    let ins: Vec<_> = (0..9).map(|k| g.input(&format!("x{k}"), &[7], DType::F32).unwrap()).collect();
    let mut steps: Vec<EwStep> = (0..9).map(EwStep::Input).collect();
    let mut acc = 0;
    for k in 1..9 {
        steps.push(EwStep::Binary(BinaryOp::Add, acc, k));
        acc = steps.len() - 1;
    }
    let y = g.push(Op::FusedElementwise(EwProgram { steps }), &ins).unwrap();
    g.set_outputs(&[y]).unwrap();
    let caps = limited();
    let opt = optimize(&g, &caps, &PassOptions::default(), None).unwrap();
    all_fit(&opt);
    assert_same(&g, &opt, 65, TOL);
    // Unfused, the node is decomposed into its adds.
    let plain = optimize(&g, &caps, &PassOptions::none(), None).unwrap();
    assert_eq!(count(&plain, OpKind::FusedElementwise), 0);
    assert_eq!(count(&plain, OpKind::Binary), 8);
}
