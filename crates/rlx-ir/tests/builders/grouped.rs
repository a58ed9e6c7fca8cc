use crate::{assert_msg, f32_in, on_copy, tt};
use rlx_ir::{DType, Graph, IrError, Op};

#[test]
fn grouped_matmul_shapes() {
    let mut g = Graph::new("g");
    let ids = g.input("ids", &[7, 2], DType::I32).unwrap();
    let w = g.param("w", &[5, 9, 3], DType::F32).unwrap();
    let shared = f32_in(&mut g, "x1", &[7, 1, 3]);
    let per_slot = f32_in(&mut g, "x2", &[7, 2, 3]);
    assert_eq!(on_copy(&g, |g| g.grouped_matmul(shared, w, ids)), tt(&[7, 2, 9], DType::F32));
    assert_eq!(on_copy(&g, |g| g.grouped_matmul(per_slot, w, ids)), tt(&[7, 2, 9], DType::F32));
    let h = g.input("h", &[7, 1, 3], DType::F16).unwrap();
    let wh = g.param("wh", &[1, 4, 3], DType::F16).unwrap();
    assert_eq!(on_copy(&g, |g| g.grouped_matmul(h, wh, ids)), tt(&[7, 2, 4], DType::F16));
    let y = g.grouped_matmul(shared, w, ids).unwrap();
    assert_eq!(g.node(y).unwrap().op, Op::GroupedMatMul);
    assert!(rlx_ir::dump(&g).contains("grouped_matmul("), "{}", rlx_ir::dump(&g));
    g.set_outputs(&[y]).unwrap();
    rlx_ir::verify(&g).unwrap();
}

#[test]
fn grouped_matmul_errors_name_shapes_and_the_fix() {
    let mut g = Graph::new("g");
    let ids = g.input("ids", &[4, 2], DType::I32).unwrap();
    let w = g.param("w", &[3, 6, 5], DType::F32).unwrap();
    let x = f32_in(&mut g, "x", &[4, 1, 8]);
    let e = g.grouped_matmul(x, w, ids).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "grouped_matmul", .. }), "{e}");
    assert_msg(&e, &["grouped_matmul", "[4, 1, 8]", "[3, 6, 5]", "[4, 2]", "K = 8", "[experts, N, 8]"]);
    let x3 = f32_in(&mut g, "x3", &[4, 3, 5]);
    assert_msg(&g.grouped_matmul(x3, w, ids).unwrap_err(), &["3 slots", "k = 2"]);
    let x5 = f32_in(&mut g, "x5", &[5, 1, 5]);
    assert_msg(&g.grouped_matmul(x5, w, ids).unwrap_err(), &["5 tokens", "4 rows"]);
    let x2d = f32_in(&mut g, "x2d", &[4, 5]);
    assert_msg(&g.grouped_matmul(x2d, w, ids).unwrap_err(), &["x must be 3-D", "reshape"]);
    let w2d = g.param("w2d", &[6, 5], DType::F32).unwrap();
    let x = f32_in(&mut g, "xok", &[4, 1, 5]);
    assert_msg(&g.grouped_matmul(x, w2d, ids).unwrap_err(), &["w must be 3-D [experts, N, K]"]);
    let ids1 = g.input("ids1", &[8], DType::I32).unwrap();
    assert_msg(&g.grouped_matmul(x, w, ids1).unwrap_err(), &["ids must be 2-D"]);
    let idf = g.input("idf", &[4, 2], DType::F32).unwrap();
    let e = g.grouped_matmul(x, w, idf).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "grouped_matmul", operand: 2, .. }), "{e}");
    let wh = g.param("wh", &[3, 6, 5], DType::F16).unwrap();
    let e = g.grouped_matmul(x, wh, ids).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "grouped_matmul", operand: 1, .. }), "{e}");
    let xi = g.input("xi", &[4, 1, 5], DType::I32).unwrap();
    let e = g.grouped_matmul(xi, w, ids).unwrap_err();
    assert!(matches!(e, IrError::DType { operand: 0, .. }), "{e}");
}
