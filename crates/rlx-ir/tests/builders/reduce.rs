use crate::{assert_msg, f32_in, on_copy, tt, ty};
use rlx_ir::{DType, Graph, IrError, Op, ReduceOp};

#[test]
fn reduce_drops_or_keeps_axes() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3, 4]);
    let y = g.sum(x, &[-1, 0], false).unwrap();
    assert_eq!(ty(&g, y), tt(&[3], DType::F32));
    assert_eq!(g.node(y).unwrap().op, Op::Reduce { op: ReduceOp::Sum, axes: vec![0, 2], keepdim: false });
    let y = g.mean(x, &[0, 2], true).unwrap();
    assert_eq!(ty(&g, y), tt(&[1, 3, 1], DType::F32));
    let y = g.max(x, &[0, 1, 2], false).unwrap();
    assert_eq!(ty(&g, y), tt(&[], DType::F32));
    for r in [g.min(x, &[1], false), g.prod(x, &[1], false)] {
        assert_eq!(ty(&g, r.unwrap()), tt(&[2, 4], DType::F32));
    }
    let i = g.input("i", &[5, 6], DType::I32).unwrap();
    assert_eq!(on_copy(&g, |g| g.sum(i, &[1], false)), tt(&[5], DType::I32));
}

#[test]
fn reduce_errors() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3, 4]);
    let e = g.sum(x, &[], false).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "sum", attr: "axes", .. }));
    assert_msg(&e, &["sum", "[2, 3, 4]", "reshape"]);
    let e = g.max(x, &[3], false).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "max", attr: "axis", .. }));
    assert_msg(&e, &["max", "[2, 3, 4]", "axis 3"]);
    let e = g.sum(x, &[1, -2], false).unwrap_err();
    assert_msg(&e, &["sum", "without repeats"]);
    assert!(g.sum(x, &[-4], false).is_err());
    let i = g.input("i", &[5], DType::I32).unwrap();
    assert!(matches!(g.mean(i, &[0], false), Err(IrError::DType { op: "mean", .. })));
    let b = g.input("b", &[5], DType::Bool).unwrap();
    assert!(matches!(g.sum(b, &[0], false), Err(IrError::DType { op: "sum", .. })));
}

#[test]
fn argmax_argmin_give_i32() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3, 4]);
    assert_eq!(on_copy(&g, |g| g.argmax(x, 1, false)), tt(&[2, 4], DType::I32));
    assert_eq!(on_copy(&g, |g| g.argmin(x, -1, true)), tt(&[2, 3, 1], DType::I32));
    let e = g.argmax(x, -4, false).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "argmax", attr: "axis", .. }));
    assert_msg(&e, &["argmax", "[2, 3, 4]", "-4"]);
    let z = f32_in(&mut g, "z", &[2, 0]);
    assert_msg(&g.argmin(z, 1, false).unwrap_err(), &["argmin", "size 0"]);
}

#[test]
fn cumsum_keeps_type() {
    let mut g = Graph::new("g");
    let x = g.input("x", &[3, 4], DType::I32).unwrap();
    let y = g.cumsum(x, -1).unwrap();
    assert_eq!(ty(&g, y), tt(&[3, 4], DType::I32));
    assert_eq!(g.node(y).unwrap().op, Op::Cumsum { axis: 1 });
    assert!(matches!(g.cumsum(x, 2), Err(IrError::Attribute { op: "cumsum", .. })));
}

#[test]
fn topk_makes_values_and_indices() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 5]);
    let (v, i) = g.topk(x, 2, -1, true).unwrap();
    assert_eq!(ty(&g, v), tt(&[2, 2], DType::F32));
    assert_eq!(ty(&g, i), tt(&[2, 2], DType::I32));
    let (v, _) = g.topk(x, 5, -1, false).unwrap();
    assert_eq!(ty(&g, v), tt(&[2, 5], DType::F32));
    for k in [0, 6] {
        let e = g.topk(x, k, 1, true).unwrap_err();
        assert!(matches!(e, IrError::Attribute { op: "topk", attr: "k", .. }));
        assert_msg(&e, &["topk", "[2, 5]", "1 ≤ k ≤ 5"]);
    }
}
