//! conv2d, pool2d and upsample ×2 decompose into data movement + matmul on devices that lack
//! them, and give the CPU's native results.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_same, caps_without, count};
use rlx_ir::{DType, Graph, OpKind};
use rlx_opt::passes::legalize;
use rlx_opt::{optimize, PassOptions};

const TOL: f64 = 1e-5;

fn vision_caps() -> rlx_backend::Capabilities {
    caps_without(&[OpKind::Conv2d, OpKind::Pool2d, OpKind::Upsample2x])
}

fn no_vision(g: &Graph) {
    for k in [OpKind::Conv2d, OpKind::Pool2d, OpKind::Upsample2x] {
        assert_eq!(count(g, k), 0, "{} left in the graph", k.name());
    }
}

#[test]
fn conv2d_decomposes_for_strides_padding_dilation_groups_and_bias() {
    /// x dims, w dims, stride, padding, dilation, groups, bias.
    type ConvCase = ([usize; 4], [usize; 4], [usize; 2], [usize; 2], [usize; 2], usize, bool);
    let cases: &[ConvCase] = &[
        ([1, 1, 5, 5], [1, 1, 3, 3], [1, 1], [0, 0], [1, 1], 1, false),
        ([2, 3, 7, 6], [4, 3, 3, 2], [2, 1], [1, 2], [1, 1], 1, true),
        ([1, 4, 9, 9], [6, 2, 3, 3], [1, 2], [2, 1], [2, 1], 2, true),
        ([2, 6, 5, 7], [6, 1, 3, 3], [1, 1], [1, 1], [1, 1], 6, false), // depthwise
        ([1, 3, 4, 4], [5, 3, 1, 1], [1, 1], [0, 0], [1, 1], 1, true),  // 1×1 kernel: one tap
        ([1, 2, 13, 11], [3, 2, 5, 4], [3, 2], [2, 0], [1, 2], 1, false),
    ];
    for (i, &(xd, wd, stride, padding, dilation, groups, bias)) in cases.iter().enumerate() {
        let mut g = Graph::new("conv");
        let x = g.input("x", &xd, DType::F32).unwrap();
        let w = g.param("w", &wd, DType::F32).unwrap();
        let b = if bias { Some(g.param("b", &[wd[0]], DType::F32).unwrap()) } else { None };
        let y = g.conv2d(x, w, b, stride, padding, dilation, groups).unwrap();
        g.set_outputs(&[y]).unwrap();
        let l = legalize(&g, &vision_caps()).unwrap();
        no_vision(&l);
        assert!(count(&l, OpKind::MatMul) == 1, "case {i}: one matmul");
        assert_same(&g, &l, 100 + i as u64, TOL);
    }
}

#[test]
fn pools_decompose_with_padding_as_defined() {
    for (i, kind_max) in [true, false].into_iter().enumerate() {
        for (j, &(xd, k, s, p)) in [
            ([1usize, 1, 4, 4], [2usize, 2], [2usize, 2], [0usize, 0]),
            ([2, 3, 7, 5], [3, 3], [2, 1], [1, 1]),
            ([1, 2, 9, 8], [3, 2], [3, 2], [1, 0]),
        ]
        .iter()
        .enumerate()
        {
            let mut g = Graph::new("pool");
            let x = g.input("x", &xd, DType::F32).unwrap();
            let y = if kind_max { g.max_pool2d(x, k, s, p) } else { g.avg_pool2d(x, k, s, p) }.unwrap();
            g.set_outputs(&[y]).unwrap();
            let l = legalize(&g, &vision_caps()).unwrap();
            no_vision(&l);
            assert_same(&g, &l, 200 + (i * 10 + j) as u64, TOL);
        }
    }
}

#[test]
fn upsample_is_reshape_expand_reshape() {
    let mut g = Graph::new("up");
    let x = g.input("x", &[2, 3, 5, 7], DType::F32).unwrap();
    let y = g.upsample_nearest2x(x).unwrap();
    g.set_outputs(&[y]).unwrap();
    let l = legalize(&g, &vision_caps()).unwrap();
    no_vision(&l);
    assert_eq!(count(&l, OpKind::Expand), 1);
    assert_same(&g, &l, 300, TOL);
}

/// Found by fuzzing (fuzz/regressions/optimize_plan): a padding so large that the padded input
/// passes `usize` (inference allows it when a huge stride keeps the output small) overflowed the
/// decomposition's size arithmetic; it is now an error naming conv2d and the padding.
#[test]
fn conv2d_padding_past_usize_is_an_error() {
    let mut g = Graph::new("huge_pad");
    let x = g.input("x", &[1, 1, 4, 4], DType::F32).unwrap();
    let w = g.param("w", &[1, 1, 1, 1], DType::F32).unwrap();
    let huge = usize::MAX / 2;
    let y = g.conv2d(x, w, None, [huge, huge], [huge, huge], [1, 1], 1).unwrap();
    g.set_outputs(&[y]).unwrap();
    let err = optimize(&g, &caps_without(&[OpKind::Conv2d]), &PassOptions::default(), None).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("conv2d") && msg.contains("padding"), "{msg}");
}
