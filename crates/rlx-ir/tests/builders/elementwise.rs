use crate::{assert_msg, f32_in, on_copy, tt, ty};
use rlx_ir::infer::broadcast_shapes;
use rlx_ir::{BinaryOp, CompareOp, DType, Graph, IrError, NodeId, Op, Shape, Tensor, UnaryOp};

#[test]
fn leaves_record_their_types() {
    let mut g = Graph::new("g");
    let x = g.input("x", &[2, 4], DType::F16).unwrap();
    let w = g.param("w", &[4], DType::I32).unwrap();
    let s = g.scalar(2.5).unwrap();
    let c = g.constant_f32(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    let f = g.full(&[3], DType::Bool, 1.0).unwrap();
    assert_eq!(ty(&g, x), tt(&[2, 4], DType::F16));
    assert_eq!(ty(&g, w), tt(&[4], DType::I32));
    assert_eq!(ty(&g, s), tt(&[], DType::F32));
    assert_eq!(ty(&g, c), tt(&[2, 2], DType::F32));
    assert_eq!(ty(&g, f), tt(&[3], DType::Bool));
    assert_eq!(g.inputs().len(), 1);
    assert_eq!(g.params()[0].0, "w");
    let i = g.constant(Tensor::from_i32([3], vec![1, 2, 3]).unwrap()).unwrap();
    assert_eq!(ty(&g, i), tt(&[3], DType::I32));
}

#[test]
fn duplicate_names_are_refused() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2]);
    let e = g.param("x", &[3], DType::F32).unwrap_err();
    assert_eq!(e, IrError::DuplicateName { kind: "param", name: "x".into(), existing: x });
    let e = g.input("x", &[3], DType::F32).unwrap_err();
    assert!(matches!(e, IrError::DuplicateName { kind: "input", .. }));
    assert_msg(&e, &["'x'", "unique"]);
    assert_eq!(g.len(), 1);
}

#[test]
fn constant_with_wrong_length_is_refused() {
    let mut g = Graph::new("g");
    let e = g.constant_f32(&[2, 3], vec![1.0; 5]).unwrap_err();
    assert_eq!(e, IrError::DataLength { shape: Shape::new(&[2, 3]), expected: 6, got: 5 });
}

#[test]
fn node_from_another_graph_is_unknown() {
    let mut other = Graph::new("other");
    for i in 0..4 {
        f32_in(&mut other, &format!("x{i}"), &[2]);
    }
    let foreign = f32_in(&mut other, "y", &[2]);
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2]);
    let e = g.add(x, foreign).unwrap_err();
    assert_eq!(e, IrError::UnknownNode { op: "add", id: foreign, graph: "g".into(), len: 1 });
    assert_msg(&e, &["add", "%4", "'g'"]);
    assert!(matches!(g.relu(NodeId(7)), Err(IrError::UnknownNode { op: "relu", .. })));
    assert!(matches!(g.set_outputs(&[NodeId(3)]), Err(IrError::UnknownNode { .. })));
}

#[test]
fn binary_broadcasts_numpy_style() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 1, 3]);
    let b = f32_in(&mut g, "b", &[4, 1]);
    for op in BinaryOp::ALL {
        let y = g.binary(op, a, b).unwrap();
        assert_eq!(ty(&g, y), tt(&[2, 4, 3], DType::F32), "{op:?}");
    }
    let s = g.scalar(1.0).unwrap();
    let y = g.mul(s, a).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 1, 3], DType::F32));
    let named = [g.add(a, b), g.sub(a, b), g.div(a, b), g.pow(a, b), g.maximum(a, b), g.minimum(a, b)];
    assert!(named.iter().all(|r| r.is_ok()));
}

#[test]
fn binary_on_ints_keeps_int() {
    let mut g = Graph::new("g");
    let a = g.input("a", &[3], DType::I32).unwrap();
    let b = g.input("b", &[3], DType::I32).unwrap();
    for op in BinaryOp::ALL {
        assert_eq!(on_copy(&g, |g| g.binary(op, a, b)), tt(&[3], DType::I32));
    }
}

#[test]
fn binary_broadcast_mismatch_names_op_and_shapes() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let b = f32_in(&mut g, "b", &[4]);
    let e = g.add(a, b).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "add", .. }));
    assert_msg(&e, &["add", "[2, 3]", "[4]", "equal or 1"]);
    assert_eq!(g.len(), 2);
}

#[test]
fn binary_dtype_checks() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2]);
    let i = g.input("i", &[2], DType::I32).unwrap();
    let bl = g.input("b", &[2], DType::Bool).unwrap();
    let e = g.mul(a, i).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "mul", operand: 1, got: DType::I32, .. }));
    assert_msg(&e, &["mul", "i32", "f32"]);
    let e = g.add(bl, bl).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "add", got: DType::Bool, .. }));
}

#[test]
fn unary_ops_take_floats() {
    let mut g = Graph::new("g");
    let x = g.input("x", &[2, 3], DType::F16).unwrap();
    for op in UnaryOp::ALL {
        let y = g.unary(op, x).unwrap();
        assert_eq!(ty(&g, y), tt(&[2, 3], DType::F16), "{op:?}");
    }
    let named = [
        g.gelu(x),
        g.gelu_tanh(x),
        g.silu(x),
        g.relu(x),
        g.sigmoid(x),
        g.tanh(x),
        g.exp(x),
        g.log(x),
        g.sqrt(x),
        g.rsqrt(x),
        g.neg(x),
        g.abs(x),
        g.sin(x),
        g.cos(x),
        g.recip(x),
        g.square(x),
    ];
    for (r, op) in named.iter().zip(UnaryOp::ALL) {
        let id = *r.as_ref().unwrap();
        assert_eq!(g.node(id).unwrap().op, Op::Unary(op));
    }
}

#[test]
fn unary_on_ints_only_neg_and_abs() {
    let mut g = Graph::new("g");
    let i = g.input("i", &[4], DType::I32).unwrap();
    assert_eq!(on_copy(&g, |g| g.neg(i)), tt(&[4], DType::I32));
    assert_eq!(on_copy(&g, |g| g.abs(i)), tt(&[4], DType::I32));
    let e = g.exp(i).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "exp", got: DType::I32, .. }));
    assert_msg(&e, &["exp", "i32", "cast"]);
    let u = g.input("u", &[4], DType::U32).unwrap();
    assert!(matches!(g.neg(u), Err(IrError::DType { op: "neg", .. })));
}

#[test]
fn compare_gives_bool() {
    let mut g = Graph::new("g");
    let a = g.input("a", &[3, 1], DType::I32).unwrap();
    let b = g.input("b", &[4], DType::I32).unwrap();
    for op in CompareOp::ALL {
        let y = g.compare(op, a, b).unwrap();
        assert_eq!(ty(&g, y), tt(&[3, 4], DType::Bool));
    }
    let all = [g.eq(a, b), g.ne(a, b), g.lt(a, b), g.le(a, b), g.gt(a, b), g.ge(a, b)];
    assert!(all.iter().all(|r| r.is_ok()));
    let f = f32_in(&mut g, "f", &[4]);
    assert!(matches!(g.lt(a, f), Err(IrError::DType { op: "lt", .. })));
    let c = g.input("c", &[2], DType::I32).unwrap();
    assert_msg(&g.eq(b, c).unwrap_err(), &["eq", "[4]", "[2]"]);
}

#[test]
fn where_broadcasts_three_ways() {
    let mut g = Graph::new("g");
    let c = g.input("c", &[2, 1], DType::Bool).unwrap();
    let a = f32_in(&mut g, "a", &[1, 3]);
    let b = g.scalar(0.0).unwrap();
    let y = g.where_(c, a, b).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3], DType::F32));
    let e = g.where_(a, a, b).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "where", operand: 0, got: DType::F32, .. }));
    let i = g.input("i", &[1], DType::I32).unwrap();
    assert!(matches!(g.where_(c, a, i), Err(IrError::DType { op: "where", operand: 2, .. })));
    let d = f32_in(&mut g, "d", &[4]);
    let e = g.where_(c, a, d).unwrap_err();
    assert_msg(&e, &["where", "[2, 1]", "[1, 3]", "[4]"]);
}

#[test]
fn cast_changes_dtype_only() {
    let mut g = Graph::new("g");
    let x = g.input("x", &[2, 5], DType::I32).unwrap();
    for d in [DType::F32, DType::F16, DType::U32, DType::Bool, DType::I32] {
        let y = g.cast(x, d).unwrap();
        assert_eq!(ty(&g, y), tt(&[2, 5], d));
    }
}

#[test]
fn broadcast_shapes_rules() {
    let s = |d: &[usize]| Shape::new(d);
    assert_eq!(broadcast_shapes("t", &s(&[]), &s(&[2, 3])).unwrap(), s(&[2, 3]));
    assert_eq!(broadcast_shapes("t", &s(&[5, 1, 4]), &s(&[3, 1])).unwrap(), s(&[5, 3, 4]));
    assert_eq!(broadcast_shapes("t", &s(&[0, 1]), &s(&[1, 7])).unwrap(), s(&[0, 7]));
    assert_eq!(broadcast_shapes("t", &s(&[1]), &s(&[0])).unwrap(), s(&[0]));
    let e = broadcast_shapes("myop", &s(&[2, 3]), &s(&[3, 2])).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "myop", .. }));
    assert_msg(&e, &["myop", "[2, 3] and [3, 2]"]);
}

#[test]
fn push_refuses_leaves_without_type() {
    let mut g = Graph::new("g");
    let e = g.push(Op::Input { name: "x".into() }, &[]).unwrap_err();
    assert_msg(&e, &["input", "Graph::input"]);
    assert!(g.is_empty());
    let e = g.push_leaf(Op::Softmax, tt(&[2], DType::F32)).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "softmax", .. }));
}

#[test]
fn arity_is_checked_by_push() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2]);
    let e = g.push(Op::Binary(BinaryOp::Add), &[x]).unwrap_err();
    assert_eq!(e, IrError::Arity { op: "add", expected: "2".into(), got: 1 });
    assert!(matches!(g.push(Op::Where, &[x, x]), Err(IrError::Arity { op: "where", .. })));
}
