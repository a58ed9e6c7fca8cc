//! Norms and softmax: layer_norm, rms_norm, softmax, log_softmax (last axis natively, other axes
//! through the builder's permutes), the residual-add + norm that rlx-opt fuses, and the
//! group_norm / batch_norm composites.

use super::with_nans;
use crate::{Case, CaseCtx};
use rlx_ir::{IrError, NodeId, Tensor};
use rlx_nn::prelude::*;
use rlx_runtime::PassOptions;

pub(super) fn cases(out: &mut Vec<Case>) {
    layer_norm(out);
    rms_norm(out);
    softmax(out);
    add_norm(out);
    composites(out);
}

/// Shapes every norm runs on: (tag, dims, axis).
const NORM_SHAPES: [(&str, &[usize], isize); 6] = [
    ("5x37", &[5, 37], -1),
    ("single_col_3x1", &[3, 1], -1),
    ("4x96", &[4, 96], -1),
    ("3d_2x3x64", &[2, 3, 64], -1),
    ("long_2x4099", &[2, 4099], -1),
    ("axis0_7x5", &[7, 5], 0),
];

fn affine(c: &mut CaseCtx, dim: usize) -> Result<(NodeId, NodeId), IrError> {
    Ok((c.param_f32("gamma", &[dim], 0.5, 1.5)?, c.param_f32("beta", &[dim], -0.5, 0.5)?))
}

fn axis_dim(dims: &[usize], axis: isize) -> usize {
    let i = if axis < 0 { dims.len() as isize + axis } else { axis };
    dims.get(i as usize).copied().unwrap_or(1)
}

fn layer_norm(out: &mut Vec<Case>) {
    for (tag, dims, axis) in NORM_SHAPES {
        out.push(Case::new(format!("layer_norm_f32_{tag}"), move |c| {
            // An offset mean, as real activations have.
            let x = c.input_f32("x", dims, -1.0, 3.0)?;
            let (g, b) = affine(c, axis_dim(dims, axis))?;
            Ok(vec![c.layer_norm(x, Some(g), Some(b), axis, 1e-5)?])
        }));
    }
    out.push(Case::new("layer_norm_f32_no_affine", |c| {
        let x = c.input_f32("x", &[6, 19], -2.0, 2.0)?;
        Ok(vec![c.layer_norm(x, None, None, -1, 1e-5)?])
    }));
    out.push(Case::new("layer_norm_f32_tiny_eps", |c| {
        let x = c.input_f32("x", &[4, 33], -2.0, 2.0)?;
        let (g, b) = affine(c, 33)?;
        Ok(vec![c.layer_norm(x, Some(g), Some(b), -1, 1e-12)?])
    }));
    // Rows near 1000 with spread ~1: ulp(1000) = 6e-5 and the f32 mean of 64 such values is off
    // by ~1e-4 even when summed well, so 1e-5 is out of reach for any f32 kernel. 1e-3 still
    // fails a one-pass E[x²] − E[x]² variance (ulp(1e6) = 0.06 against a variance of 0.33).
    out.push(
        Case::new("layer_norm_f32_offset_1000", |c| {
            let x = c.input_f32("x", &[4, 64], 999.0, 1001.0)?;
            Ok(vec![c.layer_norm(x, None, None, -1, 1e-5)?])
        })
        .with_tol(1e-3),
    );
    out.push(Case::new("layer_norm_f32_nan_row", |c| {
        let mut v = with_nans(c.uniform(12, -1.0, 1.0), 20);
        v.extend(c.uniform(12, -1.0, 1.0));
        let x = c.input_tensor("x", Tensor::from_f32([2, 12], v)?)?;
        Ok(vec![c.layer_norm(x, None, None, -1, 1e-5)?])
    }));
}

fn rms_norm(out: &mut Vec<Case>) {
    for (tag, dims, axis) in NORM_SHAPES {
        out.push(Case::new(format!("rms_norm_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -2.0, 2.0)?;
            let g = c.param_f32("gamma", &[axis_dim(dims, axis)], 0.5, 1.5)?;
            Ok(vec![c.rms_norm(x, Some(g), axis, 1e-6)?])
        }));
    }
    out.push(Case::new("rms_norm_f32_no_gamma", |c| {
        let x = c.input_f32("x", &[5, 23], -2.0, 2.0)?;
        Ok(vec![c.rms_norm(x, None, -1, 1e-6)?])
    }));
    out.push(Case::new("rms_norm_f32_nan_row", |c| {
        let mut v = with_nans(c.uniform(12, -1.0, 1.0), 20);
        v.extend(c.uniform(12, -1.0, 1.0));
        let x = c.input_tensor("x", Tensor::from_f32([2, 12], v)?)?;
        Ok(vec![c.rms_norm(x, None, -1, 1e-6)?])
    }));
}

fn softmax(out: &mut Vec<Case>) {
    let shapes: [(&str, &[usize], isize); 6] = [
        ("5x37", &[5, 37], -1),
        ("single_col_3x1", &[3, 1], -1),
        ("long_2x1000", &[2, 1000], -1),
        ("long_1x4099", &[1, 4099], -1),
        ("axis0_7x5", &[7, 5], 0),
        ("middle_2x3x4x5", &[2, 3, 4, 5], 1),
    ];
    for (tag, dims, axis) in shapes {
        out.push(Case::new(format!("softmax_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -4.0, 4.0)?;
            Ok(vec![c.softmax(x, axis)?])
        }));
        out.push(Case::new(format!("log_softmax_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -4.0, 4.0)?;
            Ok(vec![c.log_softmax(x, axis)?])
        }));
    }
    // exp(100) overflows f32: only a max-subtracting kernel gets these right.
    out.push(Case::new("softmax_f32_large_logits", |c| {
        let x = c.input_f32("x", &[4, 29], 50.0, 100.0)?;
        Ok(vec![c.softmax(x, -1)?])
    }));
    out.push(Case::new("log_softmax_f32_large_logits", |c| {
        let x = c.input_f32("x", &[4, 29], -100.0, 100.0)?;
        Ok(vec![c.log_softmax(x, -1)?])
    }));
    // −inf entries (an additive mask) get probability 0; the rest of the row is unaffected.
    out.push(Case::new("softmax_f32_neg_inf_entries", |c| {
        let mut v = c.uniform(24, -2.0, 2.0);
        for i in [0, 5, 6, 13, 23] {
            v[i] = f32::NEG_INFINITY;
        }
        let x = c.input_tensor("x", Tensor::from_f32([3, 8], v)?)?;
        Ok(vec![c.softmax(x, -1)?])
    }));
    out.push(Case::new("softmax_f32_nan_row", |c| {
        let mut v = with_nans(c.uniform(10, -1.0, 1.0), 20);
        v.extend(c.uniform(10, -1.0, 1.0));
        let x = c.input_tensor("x", Tensor::from_f32([2, 10], v)?)?;
        Ok(vec![c.softmax(x, -1)?, c.log_softmax(x, -1)?])
    }));
}

/// norm(x + residual) over rows of 40, where rlx-opt fuses the add into the norm.
fn residual_norm(c: &mut CaseCtx, rms: bool) -> Result<Vec<NodeId>, IrError> {
    let x = c.input_f32("x", &[6, 40], -2.0, 2.0)?;
    let r = c.input_f32("residual", &[6, 40], -2.0, 2.0)?;
    let s = c.add(x, r)?;
    let (g, b) = affine(c, 40)?;
    Ok(vec![if rms {
        c.rms_norm(s, Some(g), -1, 1e-6)?
    } else {
        c.layer_norm(s, Some(g), Some(b), -1, 1e-5)?
    }])
}

fn add_norm(out: &mut Vec<Case>) {
    out.push(Case::new("add_layer_norm_fused", |c| residual_norm(c, false)));
    out.push(Case::new("add_rms_norm_fused", |c| residual_norm(c, true)));
    out.push(
        Case::new("add_layer_norm_unfused", |c| residual_norm(c, false)).with_passes(PassOptions::none()),
    );
    out.push(Case::new("add_rms_norm_unfused", |c| residual_norm(c, true)).with_passes(PassOptions::none()));
    // The sum is also an output: the fused op must still let it be stored.
    out.push(Case::new("add_layer_norm_sum_also_output", |c| {
        let x = c.input_f32("x", &[3, 16], -2.0, 2.0)?;
        let r = c.input_f32("residual", &[3, 16], -2.0, 2.0)?;
        let s = c.add(x, r)?;
        let (g, b) = affine(c, 16)?;
        Ok(vec![c.layer_norm(s, Some(g), Some(b), -1, 1e-5)?, s])
    }));
}

fn composites(out: &mut Vec<Case>) {
    out.push(Case::new("group_norm_2x6x5x3_g3", |c| {
        let x = c.input_f32("x", &[2, 6, 5, 3], -2.0, 2.0)?;
        let (g, b) = affine(c, 6)?;
        Ok(vec![c.group_norm(x, 3, Some(g), Some(b), 1e-5)?])
    }));
    out.push(Case::new("group_norm_1x4x7_g1_no_affine", |c| {
        let x = c.input_f32("x", &[1, 4, 7], -2.0, 2.0)?;
        Ok(vec![c.group_norm(x, 1, None, None, 1e-5)?])
    }));
    out.push(Case::new("batch_norm_2x4x3x3", |c| {
        let x = c.input_f32("x", &[2, 4, 3, 3], -2.0, 2.0)?;
        let mean = c.param_f32("mean", &[4], -0.5, 0.5)?;
        let var = c.param_f32("var", &[4], 0.5, 2.0)?;
        let (g, b) = affine(c, 4)?;
        Ok(vec![c.batch_norm(x, mean, var, Some(g), Some(b), 1e-5)?])
    }));
}
