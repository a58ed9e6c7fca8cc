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

#[test]
fn quant_grouped_matmul_shapes() {
    use rlx_ir::QuantType;
    let mut g = Graph::new("g");
    let ids = g.input("ids", &[7, 2], DType::I32).unwrap();
    // 5 experts of 9 rows of K = 64 (two Q8_0 blocks of 34 bytes).
    let w = g.param("w", &[5, 9, 68], DType::U8).unwrap();
    let q = QuantType::Q8_0;
    let shared = f32_in(&mut g, "x1", &[7, 1, 64]);
    let per_slot = f32_in(&mut g, "x2", &[7, 2, 64]);
    assert_eq!(on_copy(&g, |g| g.quant_grouped_matmul(shared, w, ids, q)), tt(&[7, 2, 9], DType::F32));
    assert_eq!(on_copy(&g, |g| g.quant_grouped_matmul(per_slot, w, ids, q)), tt(&[7, 2, 9], DType::F32));
    // An f16 x still gives F32, as QuantMatMul does.
    let h = g.input("h", &[7, 1, 256], DType::F16).unwrap();
    let wk = g.param("wk", &[3, 4, 144], DType::U8).unwrap();
    assert_eq!(
        on_copy(&g, |g| g.quant_grouped_matmul(h, wk, ids, QuantType::Q4K)),
        tt(&[7, 2, 4], DType::F32)
    );
    let y = g.quant_grouped_matmul(shared, w, ids, q).unwrap();
    assert_eq!(g.node(y).unwrap().op, Op::QuantGroupedMatMul { quant: q });
    assert_eq!(g.node(y).unwrap().op.packed_operand(), Some(1));
    let text = rlx_ir::dump(&g);
    assert!(text.contains("quant_grouped_matmul(") && text.contains("quant=Q8_0"), "{text}");
    g.set_outputs(&[y]).unwrap();
    rlx_ir::verify(&g).unwrap();
}

#[test]
fn quant_grouped_matmul_errors_name_shapes_and_the_fix() {
    use rlx_ir::QuantType;
    let q = QuantType::Q8_0;
    let mut g = Graph::new("g");
    let ids = g.input("ids", &[4, 2], DType::I32).unwrap();
    let w = g.param("w", &[3, 6, 68], DType::U8).unwrap();
    let x = f32_in(&mut g, "x", &[4, 1, 96]);
    let e = g.quant_grouped_matmul(x, w, ids, q).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "quant_grouped_matmul", .. }), "{e}");
    assert_msg(
        &e,
        &["[4, 1, 96]", "[3, 6, 68]", "[4, 2]", "102 bytes", "68 (64 elements)", "[experts, N, 102]"],
    );
    let odd = f32_in(&mut g, "odd", &[4, 1, 40]);
    assert_msg(&g.quant_grouped_matmul(odd, w, ids, q).unwrap_err(), &["K = 40", "whole Q8_0 blocks"]);
    // The loader's 2-D layout is refused with the view that fixes it.
    let flat = g.param("flat", &[18, 68], DType::U8).unwrap();
    let x = f32_in(&mut g, "xok", &[4, 1, 64]);
    assert_msg(&g.quant_grouped_matmul(x, flat, ids, q).unwrap_err(), &["3-D U8 stack", "reshapes to it"]);
    let wf = g.param("wf", &[3, 6, 68], DType::F32).unwrap();
    let e = g.quant_grouped_matmul(x, wf, ids, q).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "quant_grouped_matmul", operand: 1, .. }), "{e}");
    let idf = g.input("idf", &[4, 2], DType::F32).unwrap();
    let e = g.quant_grouped_matmul(x, w, idf, q).unwrap_err();
    assert!(matches!(e, IrError::DType { operand: 2, .. }), "{e}");
    let x3 = f32_in(&mut g, "x3", &[4, 3, 64]);
    assert_msg(&g.quant_grouped_matmul(x3, w, ids, q).unwrap_err(), &["3 slots", "k = 2"]);
}
