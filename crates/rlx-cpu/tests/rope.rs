//! RoPE in both pairing styles, both layouts, full and partial rotary dims.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use rlx_ir::{AttnLayout, Op, RopeStyle};
use std::f32::consts::FRAC_PI_2;

fn rope(style: RopeStyle, layout: AttnLayout, rot: usize) -> Op {
    Op::Rope { style, layout, rotary_dims: rot }
}

/// cos/sin tables [S, half] from angles.
fn tables(angles: &[f32], half: usize) -> (rlx_ir::Tensor, rlx_ir::Tensor) {
    let s = angles.len() / half;
    (
        t32(&[s, half], angles.iter().map(|a| a.cos()).collect()),
        t32(&[s, half], angles.iter().map(|a| a.sin()).collect()),
    )
}

#[test]
fn quarter_turn_by_hand() {
    // Position 0: angle 0 (identity); position 1: angles [π/2, 0].
    let (c, s) = tables(&[0.0, 0.0, FRAC_PI_2, 0.0], 2);
    let x = t32(&[1, 2, 1, 4], vec![1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]);
    let r = evf(rope(RopeStyle::NeoX, AttnLayout::Bshd, 4), &[&x, &c, &s], &[1, 2, 1, 4]);
    // NeoX pairs (0,2), (1,3): pair (1,3) at position 1 rotates by π/2.
    assert_close(&r, &[1.0, 2.0, 3.0, 4.0, -3.0, 2.0, 1.0, 4.0], 1e-6);
    let r = evf(rope(RopeStyle::GptJ, AttnLayout::Bshd, 4), &[&x, &c, &s], &[1, 2, 1, 4]);
    // GPT-J pairs (0,1), (2,3).
    assert_close(&r, &[1.0, 2.0, 3.0, 4.0, -2.0, 1.0, 3.0, 4.0], 1e-6);
}

#[test]
fn partial_rotary_dims_pass_through() {
    let (c, s) = tables(&[FRAC_PI_2, FRAC_PI_2], 2);
    let x = t32(&[1, 1, 1, 6], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let r = evf(rope(RopeStyle::NeoX, AttnLayout::Bshd, 4), &[&x, &c, &s], &[1, 1, 1, 6]);
    // Pairs (0,2) and (1,3) both rotate by π/2: (x1, x2) -> (−x2, x1).
    assert_close(&r, &[-3.0, -4.0, 1.0, 2.0, 5.0, 6.0], 1e-6);
    let r = evf(rope(RopeStyle::GptJ, AttnLayout::Bshd, 4), &[&x, &c, &s], &[1, 1, 1, 6]);
    assert_close(&r, &[-2.0, 1.0, -4.0, 3.0, 5.0, 6.0], 1e-6);
}

/// Naive reference on [B, S, H, D] logical data, returned in `layout`.
fn reference(
    style: RopeStyle,
    layout: AttnLayout,
    x: &[f32],
    (b, s, h, d): (usize, usize, usize, usize),
    rot: usize,
    c: &[f32],
    sn: &[f32],
) -> Vec<f32> {
    let half = rot / 2;
    let idx = |bi: usize, si: usize, hi: usize, di: usize| match layout {
        AttnLayout::Bshd => ((bi * s + si) * h + hi) * d + di,
        AttnLayout::Bhsd => ((bi * h + hi) * s + si) * d + di,
    };
    let mut out = x.to_vec();
    for bi in 0..b {
        for si in 0..s {
            for hi in 0..h {
                for i in 0..half {
                    let (p, q) = if style == RopeStyle::NeoX { (i, i + half) } else { (2 * i, 2 * i + 1) };
                    let (x1, x2) = (x[idx(bi, si, hi, p)] as f64, x[idx(bi, si, hi, q)] as f64);
                    let (cc, ss) = (c[si * half + i] as f64, sn[si * half + i] as f64);
                    out[idx(bi, si, hi, p)] = (x1 * cc - x2 * ss) as f32;
                    out[idx(bi, si, hi, q)] = (x2 * cc + x1 * ss) as f32;
                }
            }
        }
    }
    out
}

#[test]
fn both_styles_both_layouts_match_reference() {
    let (b, s, h, d, rot) = (2, 5, 3, 8, 6);
    let angles: Vec<f32> = (0..s * rot / 2).map(|i| 0.37 * i as f32).collect();
    let (c, sn) = tables(&angles, rot / 2);
    let x = rand_vec(b * s * h * d, 9);
    for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
        let dims: Vec<usize> = match layout {
            AttnLayout::Bshd => vec![b, s, h, d],
            AttnLayout::Bhsd => vec![b, h, s, d],
        };
        for style in [RopeStyle::NeoX, RopeStyle::GptJ] {
            let r = evf(rope(style, layout, rot), &[&t32(&dims, x.clone()), &c, &sn], &dims);
            let want =
                reference(style, layout, &x, (b, s, h, d), rot, c.as_f32().unwrap(), sn.as_f32().unwrap());
            assert_close(&r, &want, 1e-6);
            // Dims past rotary_dims are untouched.
            for (i, (&got, &orig)) in r.iter().zip(&x).enumerate() {
                if i % d >= rot {
                    assert_eq!(got, orig);
                }
            }
        }
    }
}
