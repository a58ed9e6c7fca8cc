//! Vision ops: conv2d (stride, padding, dilation, groups, bias), max and average pooling, and
//! nearest-neighbour ×2 upsampling; conv1d and 1-D pooling (the 2-D ops on a height of one);
//! the channel-wise layer_norm2d.

use crate::Case;
use rlx_nn::prelude::*;

pub(super) fn cases(out: &mut Vec<Case>) {
    conv(out);
    pool(out);
    upsample(out);
    one_d(out);
    norm2d(out);
}

/// Whisper-base's audio stem at batch 8 (30 s of log-mel frames: conv1d 80 → 512, k3 p1, then
/// k3 s2 p1) and a SAM-style layer_norm2d over [8, 256, 64, 64].
pub(super) fn bench_cases(out: &mut Vec<Case>) {
    out.push(Case::new("bench_conv1d_whisper_stem_b8", |c| {
        let x = c.input_f32("x", &[8, 80, 3000], -1.0, 1.0)?;
        let w1 = c.param_f32("w1", &[512, 80, 3], -0.1, 0.1)?;
        let b1 = c.param_f32("b1", &[512], -0.1, 0.1)?;
        let w2 = c.param_f32("w2", &[512, 512, 3], -0.05, 0.05)?;
        let b2 = c.param_f32("b2", &[512], -0.1, 0.1)?;
        let h = c.conv1d(x, w1, Some(b1), 1, 1, 1, 1)?;
        let h = c.gelu(h)?;
        let h = c.conv1d(h, w2, Some(b2), 2, 1, 1, 1)?;
        Ok(vec![c.gelu(h)?])
    }));
    out.push(Case::new("bench_layer_norm2d_sam_b8", |c| {
        let x = c.input_f32("x", &[8, 256, 64, 64], -1.0, 1.0)?;
        let g = c.param_f32("g", &[256], 0.5, 1.5)?;
        let b = c.param_f32("b", &[256], -0.5, 0.5)?;
        Ok(vec![c.layer_norm2d(x, Some(g), Some(b), 1e-6)?])
    }));
}

/// conv1d over [N, C, L] (strides, padding, dilation, groups, bias; audio-encoder shapes) and
/// 1-D max and average pooling.
fn one_d(out: &mut Vec<Case>) {
    // (tag, x [N, C, L], w [O, C/g, K], bias, stride, padding, dilation, groups)
    type Conv1 = (&'static str, [usize; 3], [usize; 3], bool, usize, usize, usize, usize);
    let table: [Conv1; 5] = [
        ("k3_pad1", [2, 3, 17], [5, 3, 3], true, 1, 1, 1, 1),
        ("stride2_whisper", [1, 8, 30], [8, 8, 3], true, 2, 1, 1, 1),
        ("dilation3_no_bias", [1, 4, 40], [6, 4, 5], false, 1, 6, 3, 1),
        ("groups2", [2, 6, 11], [4, 3, 4], true, 3, 0, 1, 2),
        ("depthwise", [1, 5, 23], [5, 1, 7], true, 1, 3, 1, 5),
    ];
    for (tag, xs, ws, bias, stride, padding, dilation, groups) in table {
        out.push(Case::new(format!("conv1d_{tag}"), move |c| {
            let x = c.input_f32("x", &xs, -1.0, 1.0)?;
            let w = c.param_f32("w", &ws, -0.5, 0.5)?;
            let b = if bias { Some(c.param_f32("b", &[ws[0]], -0.5, 0.5)?) } else { None };
            Ok(vec![c.conv1d(x, w, b, stride, padding, dilation, groups)?])
        }));
    }
    for (tag, max, kernel, stride, padding) in
        [("max_k3_s2_p1", true, 3, 2, 1), ("avg_k4_s4", false, 4, 4, 0), ("avg_k3_s1_p1", false, 3, 1, 1)]
    {
        out.push(Case::new(format!("pool1d_{tag}"), move |c| {
            let x = c.input_f32("x", &[2, 3, 21], -1.0, 1.0)?;
            Ok(vec![if max {
                c.max_pool1d(x, kernel, stride, padding)?
            } else {
                c.avg_pool1d(x, kernel, stride, padding)?
            }])
        }));
    }
}

/// The channel-wise layer_norm2d: channels that are not a power of two, a channel offset the
/// normalization must remove, and without affine parameters.
fn norm2d(out: &mut Vec<Case>) {
    for (tag, dims, affine) in [("c6_affine", [2, 6, 5, 7], true), ("c32_plain", [1, 32, 4, 4], false)] {
        out.push(Case::new(format!("layer_norm2d_{tag}"), move |c| {
            let x = c.input_f32("x", &dims, 2.0, 4.0)?;
            let (g, b) = if affine {
                (
                    Some(c.param_f32("g", &[dims[1]], 0.5, 1.5)?),
                    Some(c.param_f32("b", &[dims[1]], -0.5, 0.5)?),
                )
            } else {
                (None, None)
            };
            Ok(vec![c.layer_norm2d(x, g, b, 1e-6)?])
        }));
    }
}

/// One conv2d configuration.
#[derive(Clone, Copy, Debug)]
struct Conv {
    x: [usize; 4],
    /// [O, C/groups, KH, KW]
    w: [usize; 4],
    bias: bool,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
}

const BASE: Conv = Conv {
    x: [1, 3, 7, 7],
    w: [4, 3, 3, 3],
    bias: true,
    stride: [1, 1],
    padding: [1, 1],
    dilation: [1, 1],
    groups: 1,
};

fn conv(out: &mut Vec<Case>) {
    let table: [(&str, Conv); 9] = [
        ("3x3_pad1", BASE),
        ("no_bias", Conv { bias: false, ..BASE }),
        ("stride2", Conv { x: [2, 3, 9, 8], w: [5, 3, 3, 3], stride: [2, 2], ..BASE }),
        ("dilation2", Conv { x: [1, 2, 9, 9], w: [3, 2, 3, 3], padding: [2, 2], dilation: [2, 2], ..BASE }),
        ("groups2", Conv { x: [1, 4, 6, 6], w: [6, 2, 3, 3], groups: 2, ..BASE }),
        ("depthwise", Conv { x: [2, 5, 7, 7], w: [5, 1, 3, 3], groups: 5, ..BASE }),
        ("pointwise_1x1", Conv { x: [1, 8, 5, 5], w: [3, 8, 1, 1], padding: [0, 0], bias: false, ..BASE }),
        (
            "rect_kernel_stride_pad",
            Conv { x: [1, 2, 8, 11], w: [3, 2, 2, 5], stride: [2, 3], padding: [1, 2], ..BASE },
        ),
        ("output_1x1", Conv { x: [1, 3, 3, 3], w: [2, 3, 3, 3], padding: [0, 0], ..BASE }),
    ];
    for (tag, k) in table {
        out.push(Case::new(format!("conv2d_{tag}"), move |c| {
            let x = c.input_f32("x", &k.x, -1.0, 1.0)?;
            let w = c.param_f32("w", &k.w, -0.5, 0.5)?;
            let b = if k.bias { Some(c.param_f32("b", &[k.w[0]], -0.5, 0.5)?) } else { None };
            Ok(vec![c.conv2d(x, w, b, k.stride, k.padding, k.dilation, k.groups)?])
        }));
    }
}

fn pool(out: &mut Vec<Case>) {
    // (tag, max?, x, kernel, stride, padding)
    type Pool = (&'static str, bool, [usize; 4], [usize; 2], [usize; 2], [usize; 2]);
    let table: [Pool; 6] = [
        ("max_2x2_s2", true, [1, 3, 8, 8], [2, 2], [2, 2], [0, 0]),
        // All inputs negative: a padded position read as 0 would win the max.
        ("max_3x3_s2_pad1", true, [2, 2, 9, 7], [3, 3], [2, 2], [1, 1]),
        ("max_rect_2x3_s1x2", true, [1, 1, 6, 7], [2, 3], [1, 2], [0, 1]),
        ("avg_2x2_s2", false, [1, 3, 8, 8], [2, 2], [2, 2], [0, 0]),
        ("avg_3x3_s1_pad1", false, [1, 2, 5, 6], [3, 3], [1, 1], [1, 1]),
        ("avg_global_5x5", false, [2, 3, 5, 5], [5, 5], [1, 1], [0, 0]),
    ];
    for (tag, max, x, kernel, stride, padding) in table {
        out.push(Case::new(format!("pool2d_{tag}"), move |c| {
            let (lo, hi) = if max { (-2.0, -0.1) } else { (-1.0, 1.0) };
            let x = c.input_f32("x", &x, lo, hi)?;
            Ok(vec![if max {
                c.max_pool2d(x, kernel, stride, padding)?
            } else {
                c.avg_pool2d(x, kernel, stride, padding)?
            }])
        }));
    }
}

fn upsample(out: &mut Vec<Case>) {
    for (tag, dims) in [("1x3x4x5", [1, 3, 4, 5]), ("2x1x1x1", [2, 1, 1, 1])] {
        out.push(Case::new(format!("upsample2x_{tag}"), move |c| {
            let x = c.input_f32("x", &dims, -1.0, 1.0)?;
            Ok(vec![c.upsample_nearest2x(x)?])
        }));
    }
}
