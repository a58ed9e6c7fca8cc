//! Gradients (rlx_ir's `Graph::backward`): forward + backward graphs in f32 for each family of
//! rules, so that the GPUs' backward (built from the same forward ops) is compared with the
//! CPU's. Each case's outputs are the loss `Σ out·R` (R a random input) and the gradient of
//! every param; the finite-difference checks of the rules themselves are rlx-cpu's
//! `grad_check*.rs`.

use crate::{Case, CaseCtx};
use rlx_ir::{AttnLayout, BinaryOp, IrError, NodeId, ReduceOp, RopeStyle, Tensor, UnaryOp};

pub(super) fn cases(out: &mut Vec<Case>) {
    elementwise(out);
    reductions(out);
    matmul(out);
    norms(out);
    super::grad_attention::cases(out);
    conv(out);
    shapes(out);
    composites(out);
}

/// `[loss, d loss / d wrt…]` for the loss `Σ out·R`.
pub(super) fn backward(c: &mut CaseCtx, out: NodeId, wrt: &[NodeId]) -> Result<Vec<NodeId>, IrError> {
    let d = c.shape_of("grad", out)?.dims().to_vec();
    let r = c.input_f32("r", &d, -1.0, 1.0)?;
    let y = c.mul(out, r)?;
    let axes: Vec<isize> = (0..d.len() as isize).collect();
    let loss = if axes.is_empty() { y } else { c.sum(y, &axes, false)? };
    let mut outs = vec![loss];
    outs.extend(c.backward(loss, wrt)?);
    Ok(outs)
}

fn elementwise(out: &mut Vec<Case>) {
    for op in UnaryOp::ALL {
        out.push(Case::new(format!("grad_unary_{}_f32_4x33", op.name()), move |c| {
            let (lo, hi) = match op {
                UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip => (0.5, 2.0),
                _ => (-2.5, 2.5),
            };
            let x = c.param_f32("x", &[4, 33], lo, hi)?;
            let y = c.unary(op, x)?;
            backward(c, y, &[x])
        }));
    }
    for op in BinaryOp::ALL {
        out.push(Case::new(format!("grad_binary_{}_f32_bcast_5x7_7", op.name()), move |c| {
            let a = match op {
                BinaryOp::Pow => c.param_f32("a", &[5, 7], 0.5, 2.0)?,
                _ => c.param_f32("a", &[5, 7], -2.0, 2.0)?,
            };
            let b = match op {
                BinaryOp::Div => c.param_f32("b", &[7], 0.5, 2.0)?,
                BinaryOp::Pow => c.param_f32("b", &[7], -1.5, 1.5)?,
                _ => c.param_f32("b", &[7], -2.0, 2.0)?,
            };
            let y = c.binary(op, a, b)?;
            backward(c, y, &[a, b])
        }));
    }
    out.push(Case::new("grad_where_f32_bcast_6x9", |c| {
        let cond = c.input_bool("cond", &[6, 9])?;
        let a = c.param_f32("a", &[6, 9], -2.0, 2.0)?;
        let b = c.param_f32("b", &[9], -2.0, 2.0)?;
        let y = c.where_(cond, a, b)?;
        backward(c, y, &[a, b])
    }));
    out.push(Case::new("grad_cast_f32_f16_roundtrip", |c| {
        let x = c.param_f32("x", &[5, 8], -2.0, 2.0)?;
        let h = c.cast(x, rlx_ir::DType::F16)?;
        let h = c.cast(h, rlx_ir::DType::F32)?;
        let y = c.mul(h, x)?;
        backward(c, y, &[x])
    }));
}

fn reductions(out: &mut Vec<Case>) {
    let shapes: [(&str, &[isize], bool); 3] =
        [("last", &[-1], false), ("first_keep", &[0], true), ("outer", &[0, 2], false)];
    for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod] {
        for (tag, axes, keep) in shapes {
            out.push(Case::new(format!("grad_reduce_{}_f32_{tag}_3x5x17", op.name()), move |c| {
                let x = c.param_f32("x", &[3, 5, 17], -2.0, 2.0)?;
                let y = c.reduce(op, x, axes, keep)?;
                backward(c, y, &[x])
            }));
        }
    }
    out.push(Case::new("grad_cumsum_f32_4x37", |c| {
        let x = c.param_f32("x", &[4, 37], -1.0, 1.0)?;
        let y = c.cumsum(x, -1)?;
        backward(c, y, &[x])
    }));
}

/// (tag, a's dims, b's dims, [transpose_a, transpose_b]).
type MatmulCase = (&'static str, &'static [usize], &'static [usize], [bool; 2]);

fn matmul(out: &mut Vec<Case>) {
    let cases: [MatmulCase; 6] = [
        ("nn_13x17x11", &[13, 17], &[17, 11], [false, false]),
        ("tn_13x17x11", &[17, 13], &[17, 11], [true, false]),
        ("nt_13x17x11", &[13, 17], &[11, 17], [false, true]),
        ("tt_13x17x11", &[17, 13], &[11, 17], [true, true]),
        ("batched_3x9x16_16x5", &[3, 9, 16], &[16, 5], [false, false]),
        ("bcast_2x1x7x8_3x8x6", &[2, 1, 7, 8], &[3, 8, 6], [false, false]),
    ];
    for (tag, ad, bd, [ta, tb]) in cases {
        out.push(Case::new(format!("grad_matmul_f32_{tag}"), move |c| {
            let a = c.param_f32("a", ad, -1.0, 1.0)?;
            let b = c.param_f32("b", bd, -1.0, 1.0)?;
            let y = c.matmul_t(a, b, ta, tb)?;
            backward(c, y, &[a, b])
        }));
    }
}

fn norms(out: &mut Vec<Case>) {
    for (tag, axis) in [("last", -1), ("axis0", 0)] {
        out.push(Case::new(format!("grad_softmax_f32_{tag}_6x29"), move |c| {
            let x = c.param_f32("x", &[6, 29], -3.0, 3.0)?;
            let y = c.softmax(x, axis)?;
            backward(c, y, &[x])
        }));
        out.push(Case::new(format!("grad_log_softmax_f32_{tag}_6x29"), move |c| {
            let x = c.param_f32("x", &[6, 29], -3.0, 3.0)?;
            let y = c.log_softmax(x, axis)?;
            backward(c, y, &[x])
        }));
    }
    out.push(Case::new("grad_layer_norm_f32_5x37", |c| {
        let x = c.param_f32("x", &[5, 37], -1.0, 3.0)?;
        let g = c.param_f32("gamma", &[37], 0.5, 1.5)?;
        let b = c.param_f32("beta", &[37], -0.5, 0.5)?;
        let y = c.layer_norm(x, Some(g), Some(b), -1, 1e-5)?;
        backward(c, y, &[x, g, b])
    }));
    out.push(Case::new("grad_rms_norm_f32_2x3x64", |c| {
        let x = c.param_f32("x", &[2, 3, 64], -2.0, 2.0)?;
        let g = c.param_f32("gamma", &[64], 0.5, 1.5)?;
        let y = c.rms_norm(x, Some(g), -1, 1e-6)?;
        backward(c, y, &[x, g])
    }));
}

/// Convolution (transposed convolution for the input, a batch-as-channels convolution for the
/// weight) and pooling backward.
fn conv(out: &mut Vec<Case>) {
    out.push(Case::new("grad_conv2d_f32_2x6x9x11_s2_p1_d1x2_g2_bias", |c| {
        let x = c.param_f32("x", &[2, 6, 9, 11], -1.0, 1.0)?;
        let w = c.param_f32("w", &[8, 3, 3, 3], -0.5, 0.5)?;
        let b = c.param_f32("b", &[8], -0.5, 0.5)?;
        let y = c.conv2d(x, w, Some(b), [2, 2], [1, 1], [1, 2], 2)?;
        backward(c, y, &[x, w, b])
    }));
    out.push(Case::new("grad_conv2d_f32_1x5x8x8_k3_same", |c| {
        let x = c.param_f32("x", &[1, 5, 8, 8], -1.0, 1.0)?;
        let w = c.param_f32("w", &[7, 5, 3, 3], -0.5, 0.5)?;
        let y = c.conv2d(x, w, None, [1, 1], [1, 1], [1, 1], 1)?;
        backward(c, y, &[x, w])
    }));
    out.push(Case::new("grad_max_pool_f32_2x3x9x10_k3_s2_p1", |c| {
        let x = c.param_f32("x", &[2, 3, 9, 10], -2.0, 2.0)?;
        let y = c.max_pool2d(x, [3, 3], [2, 2], [1, 1])?;
        backward(c, y, &[x])
    }));
    out.push(Case::new("grad_avg_pool_f32_2x3x9x10_k2x3_s1x2_p1", |c| {
        let x = c.param_f32("x", &[2, 3, 9, 10], -2.0, 2.0)?;
        let y = c.avg_pool2d(x, [2, 3], [1, 2], [1, 1])?;
        backward(c, y, &[x])
    }));
}

fn shapes(out: &mut Vec<Case>) {
    out.push(Case::new("grad_reshape_permute_f32_2x3x20", |c| {
        let x = c.param_f32("x", &[2, 3, 20], -1.0, 1.0)?;
        let y = c.reshape(x, &[6, 4, 5])?;
        let y = c.permute(y, &[2, 0, 1])?;
        backward(c, y, &[x])
    }));
    out.push(Case::new("grad_slice_step3_concat_f32_5x23", |c| {
        let x = c.param_f32("x", &[5, 23], -1.0, 1.0)?;
        let w = c.param_f32("w", &[5, 4], -1.0, 1.0)?;
        let s = c.slice(x, 1, 2, 21, 3)?;
        let y = c.concat(&[s, w, s], 1)?;
        backward(c, y, &[x, w])
    }));
    out.push(Case::new("grad_expand_pad_reverse_f32_7x1", |c| {
        let x = c.param_f32("x", &[7, 1], -1.0, 1.0)?;
        let y = c.expand(x, &[3, 7, 9])?;
        let y = c.pad(y, &[(0, 0), (1, 2), (0, 3)], 0.25)?;
        let y = c.reverse(y, &[1, 2])?;
        backward(c, y, &[x])
    }));
    out.push(Case::new("grad_embedding_f32_v50x24_ids3x7", |c| {
        let table = c.param_f32("table", &[50, 24], -1.0, 1.0)?;
        // A few ids outside [0, 50): they gather zeros and scatter nothing.
        let ids = c.input_i32("ids", &[3, 7], -2, 52)?;
        let y = c.embedding(table, ids)?;
        backward(c, y, &[table])
    }));
    // The embedding gradient with many repeats (4096 ids over 50 rows): one scatter-add.
    out.push(Case::new("grad_embedding_f32_v50x96_ids4096", |c| {
        let table = c.param_f32("table", &[50, 96], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[4096], 0, 49)?;
        let y = c.embedding(table, ids)?;
        backward(c, y, &[table])
    }));
    out.push(Case::new("grad_gather_axis1_f32_4x9x5", |c| {
        let x = c.param_f32("x", &[4, 9, 5], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[11], 0, 8)?;
        let y = c.gather(x, ids, 1)?;
        backward(c, y, &[x])
    }));
    // Scatter-add's own gradient (a gather of dy), on a middle axis with repeats.
    out.push(Case::new("grad_scatter_add_axis1_f32_3x40x6_v7", |c| {
        let src = c.param_f32("src", &[3, 40, 6], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[40], -1, 7)?;
        let y = c.scatter_add(ids, src, 1, 7)?;
        backward(c, y, &[src])
    }));
    for style in [RopeStyle::NeoX, RopeStyle::GptJ] {
        out.push(Case::new(format!("grad_rope_{style:?}_f32_bshd_2x5x3x16").to_lowercase(), move |c| {
            let x = c.param_f32("x", &[2, 5, 3, 16], -1.0, 1.0)?;
            let ang: Vec<f32> = (0..5 * 6).map(|i| 0.1 * i as f32).collect();
            let cos =
                c.input_tensor("cos", Tensor::from_f32([5, 6], ang.iter().map(|a| a.cos()).collect())?)?;
            let sin =
                c.input_tensor("sin", Tensor::from_f32([5, 6], ang.iter().map(|a| a.sin()).collect())?)?;
            let y = c.rope(x, cos, sin, style, AttnLayout::Bshd, 12)?;
            backward(c, y, &[x])
        }));
    }
    out.push(Case::new("grad_topk_values_f32_3x40x2_k5", |c| {
        let x = c.param_f32("x", &[3, 40, 2], -3.0, 3.0)?;
        let (v, _) = c.topk(x, 5, 1, true)?;
        backward(c, v, &[x])
    }));
    for inverse in [false, true] {
        out.push(Case::new(format!("grad_fft_inverse_{inverse}_f32_3x64x2"), move |c| {
            let x = c.param_f32("x", &[3, 64, 2], -1.0, 1.0)?;
            let y = c.fft(x, inverse)?;
            backward(c, y, &[x])
        }));
    }
    out.push(Case::new("grad_upsample_f32_1x3x5x4", |c| {
        let x = c.param_f32("x", &[1, 3, 5, 4], -1.0, 1.0)?;
        let y = c.upsample_nearest2x(x)?;
        backward(c, y, &[x])
    }));
}

/// A small transformer-style block: embedding, layer norm, two linears with GELU, a residual
/// and log-softmax over a vocabulary; parameters used twice (tied embedding).
fn composites(out: &mut Vec<Case>) {
    out.push(Case::new("grad_mlp_block_f32_tied_embedding", |c| {
        let table = c.param_f32("table", &[31, 16], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[2, 6], 0, 30)?;
        let w1 = c.param_f32("w1", &[16, 40], -0.3, 0.3)?;
        let b1 = c.param_f32("b1", &[40], -0.1, 0.1)?;
        let w2 = c.param_f32("w2", &[40, 16], -0.3, 0.3)?;
        let h = c.embedding(table, ids)?;
        let n = c.layer_norm(h, None, None, -1, 1e-5)?;
        let u = c.matmul(n, w1)?;
        let u = c.add(u, b1)?;
        let u = c.gelu(u)?;
        let d = c.matmul(u, w2)?;
        let r = c.add(d, h)?;
        let logits = c.matmul_t(r, table, false, true)?;
        let y = c.log_softmax(logits, -1)?;
        backward(c, y, &[table, w1, b1, w2])
    }));
}
