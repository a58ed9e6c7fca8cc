use crate::{assert_msg, f32_in, on_copy, tt, ty};
use rlx_ir::{DType, Graph, IrError, OpKind};

#[test]
fn layer_norm_defaults_and_axis() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3, 8]);
    let y = g.layer_norm(x, None, None, -1, 1e-5).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3, 8], DType::F32));
    // ones and zeros of the last dim were created
    let consts: Vec<_> = g.nodes().iter().filter(|n| n.op.kind() == OpKind::Constant).collect();
    assert_eq!(consts.len(), 2);
    assert_eq!(consts[0].ty, tt(&[8], DType::F32));
    let gamma = f32_in(&mut g, "gamma", &[3]);
    let before = g.len();
    let y = g.layer_norm(x, Some(gamma), None, 1, 1e-5).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3, 8], DType::F32));
    let kinds: Vec<_> = g.nodes()[before..].iter().map(|n| n.op.kind()).collect();
    assert_eq!(kinds, [OpKind::Constant, OpKind::Permute, OpKind::LayerNorm, OpKind::Permute]);
    assert_eq!(g.nodes()[before + 1].ty, tt(&[2, 8, 3], DType::F32));
}

#[test]
fn layer_norm_errors_leave_graph_unchanged() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 8]);
    let gamma = f32_in(&mut g, "gamma", &[4]);
    let n = g.len();
    let e = g.layer_norm(x, Some(gamma), None, -1, 1e-5).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "layer_norm", .. }));
    assert_msg(&e, &["layer_norm", "[2, 8]", "[4]", "[8]"]);
    assert_eq!(g.len(), n);
    let i = g.input("i", &[2, 8], DType::I32).unwrap();
    assert!(matches!(g.layer_norm(i, None, None, -1, 1e-5), Err(IrError::DType { op: "layer_norm", .. })));
    assert!(matches!(g.layer_norm(x, None, None, 2, 1e-5), Err(IrError::Attribute { op: "layer_norm", .. })));
    assert!(matches!(g.layer_norm(x, None, None, -1, f32::NAN), Err(IrError::Attribute { attr: "eps", .. })));
    assert_eq!(g.len(), n + 1);
}

#[test]
fn rms_norm_and_softmax() {
    let mut g = Graph::new("g");
    let x = g.input("x", &[4, 6], DType::F16).unwrap();
    assert_eq!(on_copy(&g, |g| g.rms_norm(x, None, -1, 1e-6)), tt(&[4, 6], DType::F16));
    let gm = f32_in(&mut g, "gm", &[6]);
    assert!(matches!(g.rms_norm(x, Some(gm), -1, 1e-6), Err(IrError::DType { op: "rms_norm", .. })));
    let before = g.len();
    let s = g.softmax(x, 0).unwrap();
    assert_eq!(ty(&g, s), tt(&[4, 6], DType::F16));
    let kinds: Vec<_> = g.nodes()[before..].iter().map(|n| n.op.kind()).collect();
    assert_eq!(kinds, [OpKind::Permute, OpKind::Softmax, OpKind::Permute]);
    let l = g.log_softmax(x, -1).unwrap();
    assert_eq!(g.node(l).unwrap().op.kind(), OpKind::LogSoftmax);
    let i = g.input("i", &[3], DType::I32).unwrap();
    assert!(matches!(g.softmax(i, 0), Err(IrError::DType { op: "softmax", .. })));
    assert!(matches!(g.softmax(x, 2), Err(IrError::Attribute { op: "softmax", .. })));
}
