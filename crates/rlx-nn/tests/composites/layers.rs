use crate::{assert_msg, f32_in, tt, ty};
use rlx_ir::{verify, DType, Graph, IrError, Op, OpKind, QuantType};
use rlx_nn::prelude::*;

#[test]
fn linear_is_matmul_transposed_plus_bias() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[8, 16]);
    let w = f32_in(&mut g, "w", &[32, 16]);
    let b = f32_in(&mut g, "b", &[32]);
    let y = g.linear(x, w, Some(b)).unwrap();
    assert_eq!(ty(&g, y), tt(&[8, 32], DType::F32));
    let kinds: Vec<_> = g.nodes()[3..].iter().map(|n| n.op.kind()).collect();
    assert_eq!(kinds, [OpKind::MatMul, OpKind::Binary]);
    let y2 = g.linear(x, w, None).unwrap();
    assert_eq!(ty(&g, y2), tt(&[8, 32], DType::F32));
    let n = g.len();
    let bad = f32_in(&mut g, "bad", &[16]);
    let e = g.linear(x, w, Some(bad)).unwrap_err();
    assert_msg(&e, &["add", "[8, 32] and [16]"]);
    assert_eq!(g.len(), n + 1, "the failed linear left its matmul behind");
}

#[test]
fn fma_shape() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let b = f32_in(&mut g, "b", &[3]);
    let c = f32_in(&mut g, "c", &[2, 1]);
    let y = g.fma(a, b, c).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3], DType::F32));
    assert_eq!(g.len(), 5);
}

#[test]
fn group_norm_builds_a_valid_graph() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 6, 4, 4]);
    let gm = f32_in(&mut g, "gm", &[6]);
    let bt = f32_in(&mut g, "bt", &[6]);
    let y = g.group_norm(x, 3, Some(gm), Some(bt), 1e-5).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 6, 4, 4], DType::F32));
    // the group view is [N, G, C/G · H · W]
    assert!(g.nodes().iter().any(|n| n.op.kind() == OpKind::Reshape && n.ty == tt(&[2, 3, 32], DType::F32)));
    // mean and variance both reduce the group view
    let reduces = g.nodes().iter().filter(|n| n.op.kind() == OpKind::Reduce).count();
    assert_eq!(reduces, 2);
    g.set_outputs(&[y]).unwrap();
    verify(&g).unwrap();
    let y = g.group_norm(x, 2, None, None, 1e-5).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 6, 4, 4], DType::F32));
}

#[test]
fn group_norm_errors() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 6, 4]);
    let n = g.len();
    let e = g.group_norm(x, 4, None, None, 1e-5).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "group_norm", attr: "groups", .. }));
    assert_msg(&e, &["group_norm", "[2, 6, 4]", "divide C = 6"]);
    let gm = f32_in(&mut g, "gm", &[3]);
    let e = g.group_norm(x, 3, Some(gm), None, 1e-5).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "group_norm", .. }));
    assert_msg(&e, &["[2, 6, 4] and [3]", "[6]"]);
    assert_eq!(g.len(), n + 1, "failed composites leave no nodes");
    let v = f32_in(&mut g, "v", &[6]);
    assert!(matches!(g.group_norm(v, 1, None, None, 1e-5), Err(IrError::Attribute { attr: "rank", .. })));
}

#[test]
fn batch_norm_per_channel() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3, 5]);
    let p: Vec<_> = ["m", "v", "gm", "bt"].iter().map(|n| f32_in(&mut g, n, &[3])).collect();
    let y = g.batch_norm(x, p[0], p[1], Some(p[2]), Some(p[3]), 1e-5).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3, 5], DType::F32));
    assert!(g.nodes().iter().any(|n| n.op.kind() == OpKind::Reshape && n.ty == tt(&[3, 1], DType::F32)));
    g.set_outputs(&[y]).unwrap();
    verify(&g).unwrap();
    let x2 = f32_in(&mut g, "x2", &[4, 3]);
    let y = g.batch_norm(x2, p[0], p[1], None, None, 1e-5).unwrap();
    assert_eq!(ty(&g, y), tt(&[4, 3], DType::F32));
    let bad = f32_in(&mut g, "bad", &[4]);
    let n = g.len();
    let e = g.batch_norm(x, bad, p[1], None, None, 1e-5).unwrap_err();
    assert_msg(&e, &["batch_norm", "[2, 3, 5] and [4]", "[3]"]);
    assert_eq!(g.len(), n);
}

#[test]
fn nvfp4_matmul_scales_only_when_asked() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 128]);
    let w = g.param("w", &[5, 72], DType::U8).unwrap();
    let y = g.nvfp4_matmul(x, w, 1.0).unwrap();
    assert_eq!(g.node(y).unwrap().op, Op::QuantMatMul { quant: QuantType::NvFp4 });
    let y = g.nvfp4_matmul(x, w, 0.25).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 5], DType::F32));
    let kinds: Vec<OpKind> = g.nodes()[3..].iter().map(|n| n.op.kind()).collect();
    assert_eq!(kinds, [OpKind::QuantMatMul, OpKind::Constant, OpKind::Binary]);
    let bad = g.param("bad", &[5, 70], DType::U8).unwrap();
    let e = g.nvfp4_matmul(x, bad, 0.25).unwrap_err();
    assert_msg(&e, &["quant_matmul", "NVFP4", "[N, 72]"]);
}
