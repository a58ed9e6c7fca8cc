use crate::{assert_msg, f32_in, on_copy, tt};
use rlx_ir::{DType, Graph, IrError, OpKind};
use rlx_nn::prelude::*;

#[test]
fn conv3d_shapes_follow_pytorch() {
    let mut g = Graph::new("c3");
    let x = f32_in(&mut g, "x", &[2, 4, 7, 9, 8]);
    let w = f32_in(&mut g, "w", &[6, 2, 3, 3, 2]);
    let b = f32_in(&mut g, "b", &[6]);
    // D: ⌊(7 + 2 − 2·2 − 1) / 2⌋ + 1 = 3; H: ⌊(9 + 0 − 2 − 1) / 1⌋ + 1 = 7; W: ⌊(8 + 4 − 1 − 1) / 3⌋ + 1 = 4
    let t = on_copy(&g, |g| g.conv3d(x, w, Some(b), [2, 1, 3], [1, 0, 2], [2, 1, 1], 2));
    assert_eq!(t, tt(&[2, 6, 3, 7, 4], DType::F32));
}

#[test]
fn conv3d_errors_name_the_op_and_shapes() {
    let mut g = Graph::new("c3");
    let x = f32_in(&mut g, "x", &[1, 4, 5, 5, 5]);
    let w = f32_in(&mut g, "w", &[6, 3, 3, 3, 3]);
    let len = g.len();
    let e = g.conv3d(x, w, None, [1; 3], [0; 3], [1; 3], 1).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "conv3d", .. }), "{e}");
    assert_msg(&e, &["conv3d", "[1, 4, 5, 5, 5] and [6, 3, 3, 3, 3]", "C / groups"]);
    assert_eq!(g.len(), len, "a failed composite leaves no nodes");
    let flat = f32_in(&mut g, "flat", &[4, 5, 5, 5]);
    assert_msg(
        &g.conv3d(flat, w, None, [1; 3], [0; 3], [1; 3], 1).unwrap_err(),
        &["conv3d", "[N, C, D, H, W]"],
    );
    let w4 = f32_in(&mut g, "w4", &[6, 4, 7, 1, 1]);
    let e = g.conv3d(x, w4, None, [1; 3], [0; 3], [1; 3], 1).unwrap_err();
    assert_msg(&e, &["conv3d", "depth window spans 7", "padded depth is only 5"]);
    let w1 = f32_in(&mut g, "w1", &[6, 4, 1, 1, 1]);
    let e = g.conv3d(x, w1, None, [1, 0, 1], [0; 3], [1; 3], 1).unwrap_err();
    assert_msg(&e, &["conv3d", "stride [1, 0, 1]"]);
    let b5 = f32_in(&mut g, "b5", &[5]);
    assert_msg(
        &g.conv3d(x, w1, Some(b5), [1; 3], [0; 3], [1; 3], 1).unwrap_err(),
        &["conv3d", "bias", "[6]"],
    );
}

#[test]
fn conv_transpose_shapes_follow_pytorch() {
    let mut g = Graph::new("ct");
    let x = f32_in(&mut g, "x", &[2, 6, 5, 7]);
    let w = f32_in(&mut g, "w", &[6, 2, 3, 4]);
    let b = f32_in(&mut g, "b", &[6]);
    // H: 4·2 − 2 + 1·2 + 1 + 1 = 10; W: 6·3 − 0 + 2·3 + 2 + 1 = 27
    let t = on_copy(&g, |g| g.conv_transpose2d(x, w, Some(b), [2, 3], [1, 0], [1, 2], [1, 2], 3));
    assert_eq!(t, tt(&[2, 6, 10, 27], DType::F32));
    let x1 = f32_in(&mut g, "x1", &[3, 4, 9]);
    let w1 = f32_in(&mut g, "w1", &[4, 5, 3]);
    // 8·2 − 2 + 2 + 1 + 1 = 18
    let t = on_copy(&g, |g| g.conv_transpose1d(x1, w1, None, 2, 1, 1, 1, 1));
    assert_eq!(t, tt(&[3, 5, 18], DType::F32));
    // No op of its own: conv2d phases, never a Conv2d over a zero-dilated input.
    let y = g.conv_transpose2d(x, w, None, [2, 2], [0, 0], [0, 0], [1, 1], 3).unwrap();
    let convs = g.nodes().iter().filter(|n| n.op.kind() == OpKind::Conv2d).count();
    assert_eq!(convs, 4, "one conv2d per output phase of stride 2×2");
    assert_eq!(g.ty(y).unwrap().shape.dims(), [2, 6, 11, 16]);
}

#[test]
fn conv_transpose_refuses_what_pytorch_refuses() {
    let mut g = Graph::new("ct");
    let x = f32_in(&mut g, "x", &[1, 4, 5, 5]);
    let w = f32_in(&mut g, "w", &[4, 2, 3, 3]);
    let e = g.conv_transpose2d(x, w, None, [2, 2], [0, 0], [2, 0], [1, 1], 1).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "conv_transpose2d", attr: "output_padding", .. }), "{e}");
    assert_msg(&e, &["smaller than either stride", "[2, 2]"]);
    // Below the dilation is allowed even at or past the stride.
    assert!(g.conv_transpose2d(x, w, None, [1, 1], [0, 0], [1, 1], [2, 2], 1).is_ok());
    let wrong = f32_in(&mut g, "wrong", &[2, 4, 3, 3]);
    let e = g.conv_transpose2d(x, wrong, None, [1, 1], [0, 0], [0, 0], [1, 1], 1).unwrap_err();
    assert_msg(&e, &["conv_transpose2d", "[1, 4, 5, 5] and [2, 4, 3, 3]", "[C_in, C_out / groups, KH, KW]"]);
    let e = g.conv_transpose2d(x, w, None, [1, 1], [0, 0], [0, 0], [1, 1], 3).unwrap_err();
    assert_msg(&e, &["conv_transpose2d", "groups = 3", "C_in = 4"]);
    let e = g.conv_transpose2d(x, w, None, [1, 1], [4, 0], [0, 0], [1, 1], 1).unwrap_err();
    assert_msg(&e, &["conv_transpose2d", "below 1", "less padding"]);
    let b = f32_in(&mut g, "b", &[4]);
    let e = g.conv_transpose2d(x, w, Some(b), [1, 1], [0, 0], [0, 0], [1, 1], 1).unwrap_err();
    assert_msg(&e, &["conv_transpose2d", "bias", "[2]"]);
    let x1 = f32_in(&mut g, "x1", &[4, 5]);
    let w1 = f32_in(&mut g, "w1", &[4, 2, 3]);
    assert_msg(
        &g.conv_transpose1d(x1, w1, None, 1, 0, 0, 1, 1).unwrap_err(),
        &["conv_transpose1d", "[4, 5]"],
    );
    let x3 = f32_in(&mut g, "x3", &[1, 4, 5]);
    let e = g.conv_transpose1d(x3, w1, None, 2, 0, 3, 1, 1).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "conv_transpose1d", .. }), "{e}");
}

#[test]
fn interpolate_sizes_follow_pytorch() {
    let mut g = Graph::new("rs");
    let x = f32_in(&mut g, "x", &[2, 3, 5, 7]);
    let bilinear = InterpolateMode::Bilinear { align_corners: false };
    let t = on_copy(&g, |g| g.interpolate(x, InterpolateSize::Size([9, 4]), bilinear));
    assert_eq!(t, tt(&[2, 3, 9, 4], DType::F32));
    // ⌊5·1.5⌋ = 7, ⌊7·0.3⌋ = 2
    let t = on_copy(&g, |g| g.interpolate(x, InterpolateSize::Scale([1.5, 0.3]), InterpolateMode::Nearest));
    assert_eq!(t, tt(&[2, 3, 7, 2], DType::F32));
    // Nearest is two gathers of constant indices; bilinear two per axis.
    let before = g.len();
    g.interpolate(x, InterpolateSize::Size([10, 14]), InterpolateMode::Nearest).unwrap();
    let gathers = g.nodes()[before..].iter().filter(|n| n.op.kind() == OpKind::Gather).count();
    assert_eq!(gathers, 2);
}

#[test]
fn interpolate_errors() {
    let mut g = Graph::new("rs");
    let x = f32_in(&mut g, "x", &[1, 1, 4, 4]);
    let mode = InterpolateMode::Bilinear { align_corners: true };
    let e = g.interpolate(x, InterpolateSize::Size([0, 3]), mode).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "interpolate", attr: "size", .. }), "{e}");
    assert_msg(&e, &["[0, 3]", "≥ 1"]);
    let e = g.interpolate(x, InterpolateSize::Scale([0.1, 1.0]), mode).unwrap_err();
    assert_msg(&e, &["interpolate", "[0, 4]"]);
    let e = g.interpolate(x, InterpolateSize::Scale([f64::NAN, 1.0]), mode).unwrap_err();
    assert_msg(&e, &["interpolate", "scale factors", "finite"]);
    let flat = f32_in(&mut g, "flat", &[4, 4]);
    assert_msg(
        &g.interpolate(flat, InterpolateSize::Size([2, 2]), mode).unwrap_err(),
        &["interpolate", "[N, C, H, W]"],
    );
    let ints = g.input("ints", &[1, 1, 2, 2], DType::I32).unwrap();
    let e = g.interpolate(ints, InterpolateSize::Size([4, 4]), InterpolateMode::Nearest).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "interpolate", .. }), "{e}");
}
