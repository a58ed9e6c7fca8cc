//! Convolution variants built from the native ops: conv3d (depth folded into Conv2d channels),
//! conv_transpose1d/2d (by output phase: strides, paddings, output paddings, dilations and
//! groups, including phases no kernel tap reaches), and interpolate (bilinear with and without
//! align_corners, nearest; sizes and scale factors, up and down, NaN locality).

use super::with_nans;
use crate::Case;
use rlx_nn::prelude::*;

pub(super) fn cases(out: &mut Vec<Case>) {
    conv3d(out);
    conv_transpose1d(out);
    conv_transpose2d(out);
    resize(out);
}

/// The heaviest realistic workload of each: an R3D-18 video stem at batch 8, a decoder
/// upsampling stage (256 → 128 channels, 64×64 → 128×128) at batch 8, and a segmentation
/// head's bilinear ×4 upsampling.
pub(super) fn bench_cases(out: &mut Vec<Case>) {
    out.push(Case::new("bench_conv3d_r3d_stem_b8", |c| {
        let x = c.input_f32("x", &[8, 3, 16, 112, 112], -1.0, 1.0)?;
        let w = c.param_f32("w", &[64, 3, 3, 7, 7], -0.05, 0.05)?;
        Ok(vec![c.conv3d(x, w, None, [1, 2, 2], [1, 3, 3], [1, 1, 1], 1)?])
    }));
    out.push(Case::new("bench_conv_transpose2d_decoder_b8", |c| {
        let x = c.input_f32("x", &[8, 256, 64, 64], -1.0, 1.0)?;
        let w = c.param_f32("w", &[256, 128, 4, 4], -0.03, 0.03)?;
        let b = c.param_f32("b", &[128], -0.1, 0.1)?;
        Ok(vec![c.conv_transpose2d(x, w, Some(b), [2, 2], [1, 1], [0, 0], [1, 1], 1)?])
    }));
    out.push(Case::new("bench_resize_bilinear_x4_b8", |c| {
        let x = c.input_f32("x", &[8, 256, 64, 64], -1.0, 1.0)?;
        let mode = InterpolateMode::Bilinear { align_corners: false };
        Ok(vec![c.interpolate(x, InterpolateSize::Size([256, 256]), mode)?])
    }));
}

/// (tag, x [N, C, D, H, W], w [O, C/g, KD, KH, KW], bias, stride, padding, dilation, groups)
type Conv3 = (&'static str, [usize; 5], [usize; 5], bool, [usize; 3], [usize; 3], [usize; 3], usize);

fn conv3d(out: &mut Vec<Case>) {
    let table: [Conv3; 5] = [
        ("k3_pad1", [1, 2, 4, 5, 6], [3, 2, 3, 3, 3], true, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1),
        ("stride2_groups2", [2, 4, 5, 6, 7], [4, 2, 2, 3, 3], true, [2, 2, 1], [0, 1, 1], [1, 1, 1], 2),
        (
            "dilation_rect_no_bias",
            [1, 3, 7, 5, 6],
            [2, 3, 2, 2, 3],
            false,
            [1, 2, 1],
            [1, 0, 2],
            [2, 1, 2],
            1,
        ),
        ("depthwise_kd1", [1, 4, 3, 4, 4], [4, 1, 1, 3, 3], true, [1, 1, 1], [0, 1, 1], [1, 1, 1], 4),
        ("stem_k3x7x7_s1x2x2", [1, 3, 5, 13, 11], [5, 3, 3, 7, 7], true, [1, 2, 2], [1, 3, 3], [1, 1, 1], 1),
    ];
    for (tag, xs, ws, bias, stride, padding, dilation, groups) in table {
        out.push(Case::new(format!("conv3d_{tag}"), move |c| {
            let x = c.input_f32("x", &xs, -1.0, 1.0)?;
            let w = c.param_f32("w", &ws, -0.5, 0.5)?;
            let b = if bias { Some(c.param_f32("b", &[ws[0]], -0.5, 0.5)?) } else { None };
            Ok(vec![c.conv3d(x, w, b, stride, padding, dilation, groups)?])
        }));
    }
}

/// (tag, x [N, C_in, L], w [C_in, C_out/g, K], bias, stride, padding, output_padding,
/// dilation, groups)
type Tconv1 = (&'static str, [usize; 3], [usize; 3], bool, usize, usize, usize, usize, usize);

fn conv_transpose1d(out: &mut Vec<Case>) {
    let table: [Tconv1; 5] = [
        ("k3_s2_p1_op1", [2, 4, 9], [4, 3, 3], true, 2, 1, 1, 1, 1),
        ("groups2_s3_d2_op2", [1, 6, 7], [6, 2, 4], true, 3, 2, 2, 2, 2),
        ("s1_p2_no_bias", [2, 3, 8], [3, 5, 5], false, 1, 2, 0, 1, 1),
        // Kernel 1, stride 3: two of the three phases meet no tap and hold the bias alone.
        ("k1_s3_op2_bias_phases", [1, 2, 5], [2, 3, 1], true, 3, 0, 2, 1, 1),
        ("k5_s4_p3", [1, 3, 6], [3, 2, 5], true, 4, 3, 0, 1, 1),
    ];
    for (tag, xs, ws, bias, stride, padding, output_padding, dilation, groups) in table {
        out.push(Case::new(format!("conv_transpose1d_{tag}"), move |c| {
            let x = c.input_f32("x", &xs, -1.0, 1.0)?;
            let w = c.param_f32("w", &ws, -0.5, 0.5)?;
            let b = if bias { Some(c.param_f32("b", &[ws[1] * groups], -0.5, 0.5)?) } else { None };
            Ok(vec![c.conv_transpose1d(x, w, b, stride, padding, output_padding, dilation, groups)?])
        }));
    }
}

/// One conv_transpose2d configuration.
#[derive(Clone, Copy, Debug)]
struct Tconv2 {
    x: [usize; 4],
    /// [C_in, C_out/groups, KH, KW]
    w: [usize; 4],
    bias: bool,
    stride: [usize; 2],
    padding: [usize; 2],
    output_padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
}

const T2: Tconv2 = Tconv2 {
    x: [2, 6, 5, 7],
    w: [6, 4, 4, 4],
    bias: true,
    stride: [2, 2],
    padding: [1, 1],
    output_padding: [0, 0],
    dilation: [1, 1],
    groups: 1,
};

fn conv_transpose2d(out: &mut Vec<Case>) {
    let table: [(&str, Tconv2); 9] = [
        ("k4_s2_p1_decoder", T2),
        ("k3_s2_p1_op1", Tconv2 { x: [1, 3, 6, 5], w: [3, 5, 3, 3], output_padding: [1, 1], ..T2 }),
        (
            "groups3_rect_op",
            Tconv2 {
                x: [1, 6, 4, 5],
                w: [6, 2, 3, 2],
                stride: [2, 3],
                padding: [1, 0],
                output_padding: [1, 2],
                groups: 3,
                ..T2
            },
        ),
        // stride 2, dilation 2: odd output rows and columns meet no tap (bias only).
        (
            "s2_d2_bias_phases",
            Tconv2 {
                x: [2, 2, 5, 5],
                w: [2, 3, 3, 3],
                padding: [2, 1],
                output_padding: [1, 1],
                dilation: [2, 2],
                ..T2
            },
        ),
        (
            "s3_d2_coprime",
            Tconv2 {
                x: [1, 3, 4, 4],
                w: [3, 2, 3, 3],
                stride: [3, 3],
                output_padding: [2, 1],
                dilation: [2, 2],
                ..T2
            },
        ),
        (
            "depthwise_op1",
            Tconv2 { x: [1, 4, 6, 6], w: [4, 1, 3, 3], output_padding: [1, 1], groups: 4, ..T2 },
        ),
        (
            "s1_no_pad_no_bias",
            Tconv2 { x: [1, 3, 5, 5], w: [3, 2, 3, 3], stride: [1, 1], padding: [0, 0], bias: false, ..T2 },
        ),
        // The same without bias: those phases are zeros.
        (
            "s2_d2_zero_phases_no_bias",
            Tconv2 {
                x: [1, 2, 4, 4],
                w: [2, 2, 2, 2],
                bias: false,
                padding: [0, 0],
                output_padding: [1, 1],
                dilation: [2, 2],
                ..T2
            },
        ),
        // Padding larger than the kernel reach on one axis: the output is an inner crop.
        ("k2_s2_pad_crop", Tconv2 { x: [1, 2, 7, 3], w: [2, 3, 2, 2], padding: [2, 0], ..T2 }),
    ];
    for (tag, k) in table {
        out.push(Case::new(format!("conv_transpose2d_{tag}"), move |c| {
            let x = c.input_f32("x", &k.x, -1.0, 1.0)?;
            let w = c.param_f32("w", &k.w, -0.5, 0.5)?;
            let b = if k.bias { Some(c.param_f32("b", &[k.w[1] * k.groups], -0.5, 0.5)?) } else { None };
            Ok(vec![c.conv_transpose2d(
                x,
                w,
                b,
                k.stride,
                k.padding,
                k.output_padding,
                k.dilation,
                k.groups,
            )?])
        }));
    }
}

fn resize(out: &mut Vec<Case>) {
    use InterpolateMode::{Bilinear, Nearest};
    use InterpolateSize::{Scale, Size};
    let (free, corners) = (Bilinear { align_corners: false }, Bilinear { align_corners: true });
    // (tag, x, size, mode)
    let table: [(&str, [usize; 4], InterpolateSize, InterpolateMode); 9] = [
        ("bilinear_up_5x7_to_9x12", [2, 3, 5, 7], Size([9, 12]), free),
        ("bilinear_align_corners_8x13", [2, 3, 5, 7], Size([8, 13]), corners),
        // Downscale: the source index of output 0 is clamped at 0.
        ("bilinear_down_11x9_to_4x5", [2, 3, 11, 9], Size([4, 5]), free),
        ("bilinear_scale_1p5_2p3", [1, 2, 6, 5], Scale([1.5, 2.3]), free),
        ("bilinear_align_corners_to_1x4", [1, 2, 5, 6], Size([1, 4]), corners),
        ("bilinear_align_corners_scale_0p6", [1, 2, 9, 10], Scale([0.6, 0.75]), corners),
        ("nearest_up_4x5_to_7x11", [1, 3, 4, 5], Size([7, 11]), Nearest),
        ("nearest_down_9x10_to_4x3", [1, 2, 9, 10], Size([4, 3]), Nearest),
        ("nearest_scale_1p7_0p6", [1, 2, 5, 8], Scale([1.7, 0.6]), Nearest),
    ];
    for (tag, xs, size, mode) in table {
        out.push(Case::new(format!("resize_{tag}"), move |c| {
            let x = c.input_f32("x", &xs, -1.0, 1.0)?;
            Ok(vec![c.interpolate(x, size, mode)?])
        }));
    }
    // A NaN reaches only the outputs that read it (its bilinear neighbourhood).
    out.push(Case::new("resize_bilinear_nan_stays_local", move |c| {
        let dims = [1, 2, 6, 7];
        let v = c.uniform(dims.iter().product(), -1.0, 1.0);
        let x = c.input_tensor("x", rlx_ir::Tensor::from_f32(&dims[..], with_nans(v, 37))?)?;
        Ok(vec![c.interpolate(x, Size([11, 10]), free)?])
    }));
}
