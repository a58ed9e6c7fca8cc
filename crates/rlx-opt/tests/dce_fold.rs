//! dce and const_fold: structure and numerics.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_same, count, kinds};
use rlx_ir::{DType, Graph, Op, OpKind, Tensor, TensorType};
use rlx_opt::passes::{const_fold, dce};

fn cpu_fold(op: &Op, inputs: &[&Tensor], out: &TensorType) -> Option<Tensor> {
    rlx_cpu::eval(op, inputs, out).ok()
}

#[test]
fn dce_drops_unreachable_nodes_but_keeps_every_leaf_name() {
    let mut g = Graph::new("dce");
    let x = g.input("x", &[3, 4], DType::F32).unwrap();
    let unused_in = g.input("unused", &[2], DType::F32).unwrap();
    let w = g.param("w", &[4], DType::F32).unwrap();
    let dead_const = g.scalar(2.0).unwrap();
    let dead1 = g.exp(x).unwrap();
    let _dead2 = g.mul(dead1, dead_const).unwrap();
    let _dead3 = g.exp(unused_in).unwrap();
    let live = g.add(x, w).unwrap();
    let out = g.tanh(live).unwrap();
    g.set_outputs(&[out]).unwrap();

    let d = dce(&g).unwrap();
    assert_eq!(
        kinds(&d),
        vec![OpKind::Input, OpKind::Input, OpKind::Param, OpKind::Binary, OpKind::Unary],
        "only the leaves and the two live ops remain"
    );
    let names: Vec<&str> = d.inputs().iter().map(|(n, _, _)| *n).collect();
    assert_eq!(names, ["x", "unused"]);
    assert_eq!(d.params()[0].0, "w");
    assert_eq!(d.ty(d.outputs()[0]).unwrap(), g.ty(out).unwrap());
    assert_same(&g, &d, 1, 1e-6);
}

#[test]
fn dce_keeps_output_order_and_duplicates() {
    let mut g = Graph::new("outs");
    let x = g.input("x", &[5], DType::F32).unwrap();
    let a = g.exp(x).unwrap();
    let b = g.sin(x).unwrap();
    g.set_outputs(&[b, a, b, x]).unwrap();
    let d = dce(&g).unwrap();
    assert_eq!(d.outputs().len(), 4);
    assert_eq!(d.outputs()[0], d.outputs()[2]);
    assert!(matches!(d.node(d.outputs()[3]).unwrap().op, Op::Input { .. }));
    assert_same(&g, &d, 2, 0.0);
}

#[test]
fn const_fold_replaces_constant_subgraphs() {
    let mut g = Graph::new("fold");
    let x = g.input("x", &[2, 3], DType::F32).unwrap();
    let c1 = g.constant_f32(&[3], vec![1.0, 2.0, 3.0]).unwrap();
    let c2 = g.scalar(0.5).unwrap();
    let s = g.mul(c1, c2).unwrap(); // foldable
    let e = g.exp(s).unwrap(); // foldable through the folded s
    let y = g.add(x, e).unwrap(); // reads x: stays
    g.set_outputs(&[y]).unwrap();

    let f = const_fold(&g, &cpu_fold).unwrap();
    assert_eq!(f.len(), g.len(), "folding keeps ids; dce drops the dead constants");
    let Op::Constant(t) = &f.node(e).unwrap().op else { panic!("exp of constants not folded") };
    let want: Vec<f32> = [0.5f32, 1.0, 1.5].iter().map(|v| v.exp()).collect();
    for (a, b) in t.as_f32().unwrap().iter().zip(&want) {
        assert!((a - b).abs() <= 1e-6 * b.abs(), "{a} vs {b}");
    }
    assert_eq!(f.node(y).unwrap().op.kind(), OpKind::Binary);
    let d = dce(&f).unwrap();
    assert_eq!(kinds(&d), vec![OpKind::Input, OpKind::Constant, OpKind::Binary]);
    assert_same(&g, &d, 3, 1e-6);
}

#[test]
fn const_fold_respects_declines_and_the_size_limit() {
    let mut g = Graph::new("limits");
    let big = g.full(&[1025, 1024], DType::F32, 1.0).unwrap();
    let big_exp = g.exp(big).unwrap(); // 1,049,600 elements > 1M: stays
    let small = g.scalar(1.0).unwrap();
    let small_exp = g.exp(small).unwrap();
    g.set_outputs(&[big_exp, small_exp]).unwrap();
    let f = const_fold(&g, &cpu_fold).unwrap();
    assert_eq!(f.node(big_exp).unwrap().op.kind(), OpKind::Unary);
    assert_eq!(f.node(small_exp).unwrap().op.kind(), OpKind::Constant);

    // A fold function that declines everything changes nothing.
    let none = |_: &Op, _: &[&Tensor], _: &TensorType| None;
    let f = const_fold(&g, &none).unwrap();
    assert_eq!((f.nodes(), f.outputs()), (g.nodes(), g.outputs()));

    // One that answers with the wrong type is ignored rather than trusted.
    let wrong =
        |_: &Op, _: &[&Tensor], _: &TensorType| Some(Tensor::scalar_f32(0.0).reshape(&[1][..]).unwrap());
    let f = const_fold(&g, &wrong).unwrap();
    assert_eq!(count(&f, OpKind::Unary), 2);
}
