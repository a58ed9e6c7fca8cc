use crate::{assert_msg, f32_in, on_copy, tt};
use rlx_ir::{DType, Graph, IrError};

#[test]
fn matmul_shapes() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let b = f32_in(&mut g, "b", &[3, 4]);
    assert_eq!(on_copy(&g, |g| g.matmul(a, b)), tt(&[2, 4], DType::F32));
    let bt = f32_in(&mut g, "bt", &[4, 3]);
    assert_eq!(on_copy(&g, |g| g.matmul_t(a, bt, false, true)), tt(&[2, 4], DType::F32));
    let at = f32_in(&mut g, "at", &[3, 2]);
    assert_eq!(on_copy(&g, |g| g.matmul_t(at, bt, true, true)), tt(&[2, 4], DType::F32));
    let x = f32_in(&mut g, "x", &[5, 1, 2, 3]);
    let y = f32_in(&mut g, "y", &[4, 3, 6]);
    assert_eq!(on_copy(&g, |g| g.matmul(x, y)), tt(&[5, 4, 2, 6], DType::F32));
}

#[test]
fn matmul_errors() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let b = f32_in(&mut g, "b", &[4, 5]);
    let e = g.matmul(a, b).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "matmul", .. }));
    assert_msg(&e, &["matmul", "[2, 3] and [4, 5]", "K = 3", "K = 4"]);
    let v = f32_in(&mut g, "v", &[3]);
    let e = g.matmul(v, b).unwrap_err();
    assert_msg(&e, &["matmul", "[3]", "[1, K]"]);
    let x = f32_in(&mut g, "x", &[2, 2, 3]);
    let y = f32_in(&mut g, "y", &[3, 3, 4]);
    assert_msg(&g.matmul(x, y).unwrap_err(), &["matmul", "batch"]);
    let i = g.input("i", &[3, 4], DType::I32).unwrap();
    let j = g.input("j", &[4, 4], DType::I32).unwrap();
    assert!(matches!(g.matmul(i, j), Err(IrError::DType { op: "matmul", .. })));
    let h = g.input("h", &[3, 4], DType::F16).unwrap();
    assert!(matches!(g.matmul(a, h), Err(IrError::DType { op: "matmul", operand: 1, .. })));
}
