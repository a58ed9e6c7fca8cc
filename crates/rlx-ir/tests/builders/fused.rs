//! The fused forms are created by passes through `Graph::push`; inference must check them too.

use crate::{assert_msg, f32_in, tt, ty};
use rlx_ir::{BinaryOp, DType, EwProgram, EwStep, Graph, IrError, NormKind, Op, UnaryOp};

#[test]
fn fused_matmul() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[4, 8]);
    let w = f32_in(&mut g, "w", &[16, 8]);
    let b = f32_in(&mut g, "b", &[16]);
    let op = Op::FusedMatMul {
        transpose_a: false,
        transpose_b: true,
        bias: true,
        activation: Some(UnaryOp::Gelu),
    };
    let y = g.push(op.clone(), &[a, w, b]).unwrap();
    assert_eq!(ty(&g, y), tt(&[4, 16], DType::F32));
    assert!(matches!(g.push(op.clone(), &[a, w]), Err(IrError::Arity { op: "fused_matmul", .. })));
    let b8 = f32_in(&mut g, "b8", &[8]);
    assert_msg(&g.push(op, &[a, w, b8]).unwrap_err(), &["fused_matmul", "[16]"]);
}

#[test]
fn add_norm() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 8]);
    let r = f32_in(&mut g, "r", &[2, 8]);
    let gm = f32_in(&mut g, "gm", &[8]);
    let y = g.push(Op::AddNorm { norm: NormKind::LayerNorm, eps: 1e-5 }, &[x, r, gm, gm]).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 8], DType::F32));
    let y = g.push(Op::AddNorm { norm: NormKind::RmsNorm, eps: 1e-5 }, &[x, r, gm]).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 8], DType::F32));
    assert!(matches!(
        g.push(Op::AddNorm { norm: NormKind::LayerNorm, eps: 1e-5 }, &[x, r, gm]),
        Err(IrError::Arity { .. })
    ));
    let g4 = f32_in(&mut g, "g4", &[4]);
    let e = g.push(Op::AddNorm { norm: NormKind::RmsNorm, eps: 1e-5 }, &[x, r, g4]).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "add_norm", .. }));
    assert_msg(&e, &["add_norm", "[2, 8], [2, 8] and [4]"]);
}

#[test]
fn fused_elementwise() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let b = f32_in(&mut g, "b", &[3]);
    let prog = |steps| Op::FusedElementwise(EwProgram { steps });
    let good = prog(vec![
        EwStep::Input(0),
        EwStep::Input(1),
        EwStep::Binary(BinaryOp::Add, 0, 1),
        EwStep::Scalar(2.0),
        EwStep::Binary(BinaryOp::Mul, 2, 3),
        EwStep::Unary(UnaryOp::Relu, 4),
    ]);
    let y = g.push(good, &[a, b]).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3], DType::F32));
    let forward = prog(vec![EwStep::Input(0), EwStep::Unary(UnaryOp::Exp, 1)]);
    let e = g.push(forward, &[a]).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "fused_elementwise", attr: "program", .. }));
    assert_msg(&e, &["fused_elementwise", "step 1"]);
    assert!(g.push(prog(vec![EwStep::Input(2)]), &[a, b]).is_err());
    assert!(g.push(prog(vec![]), &[a]).is_err());
    let i = g.input("i", &[3], DType::I32).unwrap();
    assert!(matches!(
        g.push(prog(vec![EwStep::Input(0)]), &[a, i]),
        Err(IrError::DType { op: "fused_elementwise", operand: 1, .. })
    ));
    let c = f32_in(&mut g, "c", &[4]);
    assert!(matches!(g.push(prog(vec![EwStep::Input(0)]), &[a, c]), Err(IrError::ShapeMismatch { .. })));
}

#[test]
fn fused_where_reads_a_bool_input_as_its_condition_only() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let k = g.input("k", &[3], DType::Bool).unwrap();
    let prog = |steps| Op::FusedElementwise(EwProgram { steps });
    let good = prog(vec![
        EwStep::Input(0),
        EwStep::Input(1),
        EwStep::Unary(UnaryOp::Exp, 0),
        EwStep::Where(1, 2, 0),
    ]);
    let y = g.push(good, &[a, k]).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3], DType::F32));
    // A condition that is not a Bool input, arithmetic on a Bool input, a Bool output.
    let f32_cond = prog(vec![EwStep::Input(0), EwStep::Where(0, 0, 0)]);
    let e = g.push(f32_cond, &[a]).unwrap_err();
    assert_msg(&e, &["fused_elementwise", "condition"]);
    let on_bool = prog(vec![EwStep::Input(0), EwStep::Input(1), EwStep::Binary(BinaryOp::Add, 0, 1)]);
    let e = g.push(on_bool, &[a, k]).unwrap_err();
    assert_msg(&e, &["fused_elementwise", "Bool input"]);
    let bool_out = prog(vec![EwStep::Input(1)]);
    assert!(g.push(bool_out, &[a, k]).is_err());
}
