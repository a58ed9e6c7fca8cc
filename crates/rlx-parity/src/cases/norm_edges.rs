//! Norm-family edges: norms on offset rows, row ops on NaN and −∞ rows, AddNorm with broadcast
//! operands.

use crate::Case;
use rlx_ir::{NormKind, Op, Tensor};
use rlx_runtime::PassOptions;

pub(super) fn cases(out: &mut Vec<Case>) {
    norms(out);
}

fn norms(out: &mut Vec<Case>) {
    for (rows, cols) in [(1, 1), (5, 7), (3, 300), (2, 1031)] {
        // Rows offset by 100: the variance must be taken about the mean.
        out.push(Case::new(format!("norms_f32_{rows}x{cols}_offset_100"), move |c| {
            let v = c.uniform(rows * cols, 99.0, 101.0);
            let x = c.input_tensor("x", Tensor::from_f32([rows, cols], v)?)?;
            let g = c.param_f32("gamma", &[cols], -1.5, 1.5)?;
            let b = c.param_f32("beta", &[cols], -1.5, 1.5)?;
            let ln = c.layer_norm(x, Some(g), Some(b), -1, 1e-5)?;
            let rms = c.rms_norm(x, Some(g), -1, 1e-6)?;
            Ok(vec![ln, rms])
        }));
    }
    out.push(Case::new("softmax_f32_300x33_many_rows", |c| {
        let x = c.input_f32("x", &[300, 33], -8.0, 8.0)?;
        Ok(vec![c.softmax(x, -1)?, c.log_softmax(x, -1)?])
    }));
    out.push(Case::new("softmax_f32_1x1", |c| {
        let x = c.input_f32("x", &[1, 1], -8.0, 8.0)?;
        Ok(vec![c.softmax(x, -1)?])
    }));
    // Rows: one −inf entry; a NaN; all −inf (NaN out); huge logits 1000, 1001, 999.
    out.push(Case::new("softmax_f32_special_rows", |c| {
        let inf = f32::INFINITY;
        let v = vec![-inf, 0.0, 1.0, f32::NAN, 1.0, 2.0, -inf, -inf, -inf, 1000.0, 1001.0, 999.0];
        let x = c.input_tensor("x", Tensor::from_f32([4, 3], v)?)?;
        Ok(vec![c.softmax(x, -1)?, c.log_softmax(x, -1)?])
    }));
    // Every row op on a NaN row, a row with one −∞, an all −∞ row and a finite row.
    out.push(Case::new("row_ops_f32_nan_and_neg_inf_rows", |c| {
        let cols = 9;
        let mut v = c.uniform(4 * cols, -2.0, 2.0);
        v[3] = f32::NAN;
        v[cols + 2] = f32::NEG_INFINITY;
        for x in &mut v[2 * cols..3 * cols] {
            *x = f32::NEG_INFINITY;
        }
        let x = c.input_tensor("x", Tensor::from_f32([4, cols], v)?)?;
        Ok(vec![
            c.softmax(x, -1)?,
            c.log_softmax(x, -1)?,
            c.layer_norm(x, None, None, -1, 1e-5)?,
            c.rms_norm(x, None, -1, 1e-5)?,
        ])
    }));
    // AddNorm nodes as built by fusion, residual or x broadcast.
    let shapes: [(&str, &[usize], &[usize]); 3] = [
        ("same", &[3, 5, 37], &[3, 5, 37]),
        ("bcast_residual", &[3, 5, 37], &[5, 37]),
        ("bcast_x", &[3, 1, 37], &[5, 37]),
    ];
    for (tag, xs, rs) in shapes {
        for norm in [NormKind::LayerNorm, NormKind::RmsNorm] {
            let kind = if norm == NormKind::LayerNorm { "layer" } else { "rms" };
            out.push(
                Case::new(format!("add_norm_{kind}_{tag}"), move |c| {
                    let x = c.input_f32("x", xs, -1.5, 1.5)?;
                    let r = c.input_f32("r", rs, -1.5, 1.5)?;
                    let g = c.input_f32("gamma", &[37], -1.5, 1.5)?;
                    let mut ins = vec![x, r, g];
                    if norm == NormKind::LayerNorm {
                        ins.push(c.input_f32("beta", &[37], -1.5, 1.5)?);
                    }
                    Ok(vec![c.push(Op::AddNorm { norm, eps: 1e-5 }, &ins)?])
                })
                .with_passes(PassOptions::none()),
            );
        }
    }
}
