use crate::{assert_msg, f32_in, on_copy, tt, ty};
use rlx_ir::{DType, Graph, IrError};

#[test]
fn conv2d_output_sizes() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 3, 32, 32]);
    let w = f32_in(&mut g, "w", &[16, 3, 3, 3]);
    let b = f32_in(&mut g, "b", &[16]);
    let c = |g: &mut Graph, s, p, d| g.conv2d(x, w, Some(b), [s, s], [p, p], [d, d], 1).unwrap();
    let y = c(&mut g, 1, 1, 1);
    assert_eq!(ty(&g, y), tt(&[1, 16, 32, 32], DType::F32));
    let y = c(&mut g, 2, 1, 1); // floor((32 + 2 - 2 - 1) / 2) + 1 = 16
    assert_eq!(ty(&g, y), tt(&[1, 16, 16, 16], DType::F32));
    let y = c(&mut g, 1, 0, 2); // 32 - 4 - 1 + 1 = 28
    assert_eq!(ty(&g, y), tt(&[1, 16, 28, 28], DType::F32));
    let xr = f32_in(&mut g, "xr", &[2, 3, 10, 7]);
    let y = g.conv2d(xr, w, None, [3, 2], [0, 1], [1, 1], 1).unwrap(); // (7/3)+1 = 3, (6/2)+1 = 4
    assert_eq!(ty(&g, y), tt(&[2, 16, 3, 4], DType::F32));
    let xd = f32_in(&mut g, "xd", &[1, 4, 8, 8]);
    let wd = f32_in(&mut g, "wd", &[8, 1, 3, 3]);
    let y = g.conv2d(xd, wd, None, [1, 1], [0, 0], [1, 1], 4).unwrap();
    assert_eq!(ty(&g, y), tt(&[1, 8, 6, 6], DType::F32));
}

#[test]
fn conv2d_errors() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 3, 32, 32]);
    let w4 = f32_in(&mut g, "w4", &[16, 4, 3, 3]);
    let e = g.conv2d(x, w4, None, [1, 1], [0, 0], [1, 1], 1).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "conv2d", .. }));
    assert_msg(&e, &["conv2d", "[1, 3, 32, 32] and [16, 4, 3, 3]", "channels"]);
    let w = f32_in(&mut g, "w", &[16, 3, 3, 3]);
    let e = g.conv2d(x, w, None, [1, 1], [0, 0], [1, 1], 2).unwrap_err();
    assert_msg(&e, &["conv2d", "groups = 2", "divide"]);
    let small = f32_in(&mut g, "small", &[1, 3, 2, 2]);
    let e = g.conv2d(small, w, None, [1, 1], [0, 0], [1, 1], 1).unwrap_err();
    assert_msg(&e, &["conv2d", "[1, 3, 2, 2]", "empty output"]);
    let bb = f32_in(&mut g, "bb", &[3]);
    assert_msg(&g.conv2d(x, w, Some(bb), [1, 1], [0, 0], [1, 1], 1).unwrap_err(), &["bias", "[16]"]);
    assert!(matches!(
        g.conv2d(x, w, None, [0, 1], [0, 0], [1, 1], 1),
        Err(IrError::Attribute { op: "conv2d", .. })
    ));
    let x3 = f32_in(&mut g, "x3", &[3, 32, 32]);
    assert!(matches!(
        g.conv2d(x3, w, None, [1, 1], [0, 0], [1, 1], 1),
        Err(IrError::Attribute { attr: "rank", .. })
    ));
}

#[test]
fn pooling_and_upsample() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 3, 7, 7]);
    assert_eq!(on_copy(&g, |g| g.max_pool2d(x, [2, 2], [2, 2], [0, 0])), tt(&[1, 3, 3, 3], DType::F32));
    assert_eq!(on_copy(&g, |g| g.avg_pool2d(x, [3, 3], [2, 2], [1, 1])), tt(&[1, 3, 4, 4], DType::F32));
    let e = g.max_pool2d(x, [2, 2], [1, 1], [2, 0]).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "pool2d", attr: "padding", .. }));
    assert_msg(&e, &["pool2d", "[1, 3, 7, 7]", "kernel / 2"]);
    assert_msg(&g.max_pool2d(x, [8, 8], [1, 1], [0, 0]).unwrap_err(), &["pool2d", "empty output"]);
    let u = g.upsample_nearest2x(x).unwrap();
    assert_eq!(ty(&g, u), tt(&[1, 3, 14, 14], DType::F32));
    let r3 = f32_in(&mut g, "r3", &[3, 7, 7]);
    assert!(matches!(g.upsample_nearest2x(r3), Err(IrError::Attribute { op: "upsample2x", .. })));
}
