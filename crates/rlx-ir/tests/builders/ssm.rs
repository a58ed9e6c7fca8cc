use crate::{assert_msg, f32_in, on_copy, tt};
use rlx_ir::{DType, Graph, IrError, ScanOutput};

#[test]
fn selective_scan_errors_name_shapes_and_the_fix() {
    let mut g = Graph::new("g");
    let u = f32_in(&mut g, "u", &[2, 6, 9]);
    let a = g.param("A", &[6, 4], DType::F32).unwrap();
    let b = f32_in(&mut g, "B", &[2, 4, 4, 9]);
    let e = g.selective_scan_op(u, u, a, b, b, false, ScanOutput::Y).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "selective_scan", .. }), "{e}");
    assert_msg(&e, &["[2, 6, 9]", "[6, 4]", "[2, 4, 4, 9]", "4 groups", "divide D = 6"]);
    let short = f32_in(&mut g, "short", &[2, 6, 8]);
    assert_msg(
        &g.selective_scan_op(u, short, a, b, b, false, ScanOutput::Y).unwrap_err(),
        &["delta must have u's shape"],
    );
    let a5 = g.param("A5", &[5, 4], DType::F32).unwrap();
    let b1 = f32_in(&mut g, "B1", &[2, 1, 4, 9]);
    assert_msg(
        &g.selective_scan_op(u, u, a5, b1, b1, false, ScanOutput::Y).unwrap_err(),
        &["A has 5 rows", "D = 6"],
    );
    let bn = f32_in(&mut g, "Bn", &[2, 1, 3, 9]);
    assert_msg(
        &g.selective_scan_op(u, u, a, bn, bn, false, ScanOutput::Y).unwrap_err(),
        &["B must be [2, G, 4, 9]"],
    );
    let h = g.input("h", &[2, 6, 9], DType::F16).unwrap();
    let e = g.selective_scan_op(h, u, a, b1, b1, false, ScanOutput::Y).unwrap_err();
    assert!(matches!(e, IrError::DType { operand: 0, .. }), "{e}");
}

#[test]
fn gated_delta_rule_shapes_and_errors() {
    let mut g = Graph::new("g");
    let q = f32_in(&mut g, "q", &[2, 7, 3, 8]);
    let v = f32_in(&mut g, "v", &[2, 7, 3, 5]);
    let gg = f32_in(&mut g, "g", &[2, 7, 3]);
    assert_eq!(
        on_copy(&g, |g| g.gated_delta_rule_op(q, q, v, gg, gg, 0.5, ScanOutput::LastState)),
        tt(&[2, 3, 8, 5], DType::F32)
    );
    let bad_g = f32_in(&mut g, "bad_g", &[2, 7, 4]);
    assert_msg(
        &g.gated_delta_rule_op(q, q, v, bad_g, gg, 1.0, ScanOutput::Y).unwrap_err(),
        &["g must be [2, 7, 3]"],
    );
    let bad_v = f32_in(&mut g, "bad_v", &[2, 6, 3, 5]);
    assert_msg(
        &g.gated_delta_rule_op(q, q, bad_v, gg, gg, 1.0, ScanOutput::Y).unwrap_err(),
        &["v must be [2, 7, 3, V]"],
    );
    let e = g.gated_delta_rule_op(q, q, v, gg, gg, f32::NAN, ScanOutput::Y).unwrap_err();
    assert!(matches!(e, IrError::Attribute { attr: "scale", .. }), "{e}");
}
