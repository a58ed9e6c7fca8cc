//! Fused elementwise programs (rlx-opt's FusedElementwise, one generated kernel per program on
//! the GPU backends): every unary and binary op inside a program on special values, wheres on
//! Bool conditions, each input indexing (whole, scalar, row, column), seven inputs (the GPUs'
//! most) and chains past the limits (cut by the fusion pass), prebuilt nodes the GPU must decompose
//! (too many inputs, a broadcast that is not one run), and an AdamW update with a finite-step
//! guard, the training step's pattern.

use super::elementwise_edges::with_specials;
use crate::{Case, CaseCtx};
use rlx_ir::{BinaryOp, CompareOp, EwProgram, EwStep, IrError, NodeId, Op, Tensor, UnaryOp};

pub(super) fn cases(out: &mut Vec<Case>) {
    ops(out);
    wheres(out);
    limits(out);
    prebuilt(out);
    adamw(out);
}

/// x [3, 37] with specials, y a row [37].
fn xy(c: &mut CaseCtx, lo: f32, hi: f32) -> Result<(NodeId, NodeId), IrError> {
    let v = with_specials(c.uniform(3 * 37, lo, hi));
    let x = c.input_tensor("x", Tensor::from_f32([3, 37], v)?)?;
    let y = c.input_f32("y", &[37], 0.5, 2.0)?;
    Ok((x, y))
}

fn ops(out: &mut Vec<Case>) {
    for op in UnaryOp::ALL {
        // op(x) · y + 0.5: the unary op runs inside the program.
        out.push(Case::new(format!("fused_unary_{}_in_program", op.name()), move |c| {
            let (lo, hi) = match op {
                UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip => (0.05, 20.0),
                _ => (-6.0, 6.0),
            };
            let (x, y) = xy(c, lo, hi)?;
            let u = c.unary(op, x)?;
            let m = c.mul(u, y)?;
            let h = c.scalar(0.5)?;
            Ok(vec![c.add(m, h)?])
        }));
    }
    for op in BinaryOp::ALL {
        // op(−x, y) · 2 with y broadcast as a row.
        out.push(Case::new(format!("fused_binary_{}_in_program", op.name()), move |c| {
            let (x, y) = xy(c, -3.0, 3.0)?;
            let n = c.neg(x)?;
            let b = c.binary(op, n, y)?;
            let two = c.scalar(2.0)?;
            Ok(vec![c.mul(b, two)?])
        }));
    }
    // Each indexing at once: the whole tensor, a scalar input, a row, a column, and a middle
    // run of a rank-3 output.
    out.push(Case::new("fused_inputs_whole_scalar_row_column", |c| {
        let x = c.input_f32("x", &[4, 6, 5], -1.0, 1.0)?;
        let s = c.input_f32("s", &[], 0.5, 1.5)?;
        let row = c.input_f32("row", &[5], -1.0, 1.0)?;
        let col = c.input_f32("col", &[4, 1, 1], -1.0, 1.0)?;
        let mid = c.input_f32("mid", &[6, 1], -1.0, 1.0)?;
        let a = c.mul(x, s)?;
        let a = c.add(a, row)?;
        let a = c.mul(a, col)?;
        let a = c.sub(a, mid)?;
        Ok(vec![c.tanh(a)?])
    }));
}

fn wheres(out: &mut Vec<Case>) {
    // where(x > 0, x·y + 1, sqrt(|x|)): the condition is a Bool input of the fused node.
    out.push(Case::new("fused_where_bool_condition", |c| {
        let (x, y) = xy(c, -2.0, 2.0)?;
        let zero = c.scalar(0.0)?;
        let pos = c.compare(CompareOp::Gt, x, zero)?;
        let a = c.mul(x, y)?;
        let one = c.scalar(1.0)?;
        let a = c.add(a, one)?;
        let b = c.abs(x)?;
        let b = c.sqrt(b)?;
        let w = c.where_(pos, a, b)?;
        Ok(vec![c.mul(w, y)?])
    }));
    // A rank-0 Bool condition (a training step's "every gradient finite") and a row one.
    out.push(Case::new("fused_where_scalar_and_row_conditions", |c| {
        let x = c.input_f32("x", &[5, 8], -2.0, 2.0)?;
        let flag = c.input_bool("flag", &[])?;
        let row = c.input_bool("row", &[8])?;
        let a = c.exp(x)?;
        let b = c.neg(x)?;
        let w = c.where_(flag, a, b)?;
        let d = c.scalar(3.0)?;
        let e = c.add(w, d)?;
        let f = c.where_(row, e, x)?;
        Ok(vec![c.mul(f, x)?])
    }));
}

/// Seven inputs (the GPU kernels' most), and chains past the input and word limits.
fn limits(out: &mut Vec<Case>) {
    out.push(Case::new("fused_seven_inputs", |c| {
        let ins = (0..7)
            .map(|k| c.input_f32(&format!("x{k}"), &[129], -1.0, 1.0))
            .collect::<Result<Vec<_>, _>>()?;
        let mut acc = ins[0];
        for (k, &x) in ins.iter().enumerate().skip(1) {
            acc = c.add(acc, x)?;
            if k % 2 == 0 {
                let s = c.scalar(0.5 + k as f32)?;
                acc = c.mul(acc, s)?;
            }
        }
        Ok(vec![acc])
    }));
    for (n_in, n_ops) in [(11usize, 10usize), (3, 90)] {
        out.push(Case::new(format!("fused_past_limits_{n_in}_inputs_{n_ops}_ops"), move |c| {
            let ins = (0..n_in)
                .map(|k| c.input_f32(&format!("x{k}"), &[2, 65], -1.0, 1.0))
                .collect::<Result<Vec<_>, _>>()?;
            let mut acc = ins[0];
            for k in 1..=n_ops {
                let x = ins[k % n_in];
                acc = if k % 3 == 0 { c.mul(acc, x)? } else { c.add(acc, x)? };
                if k % 4 == 0 {
                    acc = c.tanh(acc)?;
                }
            }
            Ok(vec![acc])
        }));
    }
}

/// Nodes built as FusedElementwise that a GPU cannot run as they are: legalize decomposes them.
fn prebuilt(out: &mut Vec<Case>) {
    out.push(Case::new("fused_prebuilt_nine_inputs", |c| {
        let ins =
            (0..9).map(|k| c.input_f32(&format!("x{k}"), &[33], -1.0, 1.0)).collect::<Result<Vec<_>, _>>()?;
        let mut steps: Vec<EwStep> = (0..9).map(EwStep::Input).collect();
        let mut acc = 0;
        for k in 1..9 {
            steps.push(EwStep::Binary(BinaryOp::Add, acc, k));
            acc = steps.len() - 1;
        }
        Ok(vec![c.push(Op::FusedElementwise(EwProgram { steps }), &ins)?])
    }));
    out.push(Case::new("fused_prebuilt_two_run_broadcast", |c| {
        let x = c.input_f32("x", &[2, 3, 4], -1.0, 1.0)?;
        let y = c.input_f32("y", &[2, 1, 4], -1.0, 1.0)?;
        let steps = vec![EwStep::Input(0), EwStep::Input(1), EwStep::Binary(BinaryOp::Mul, 0, 1)];
        Ok(vec![c.push(Op::FusedElementwise(EwProgram { steps }), &[x, y])?])
    }));
}

/// AdamW's moment and weight updates over a [64, 48] weight, each kept only when the step is
/// finite, with the rate and bias corrections as rank-0 inputs (what rlx-nn's train_step makes).
fn adamw(out: &mut Vec<Case>) {
    out.push(Case::new("fused_adamw_guarded_update", |c| {
        let dims = [64, 48];
        let w = c.input_f32("w", &dims, -1.0, 1.0)?;
        let g = c.input_f32("g", &dims, -0.1, 0.1)?;
        let m = c.input_f32("m", &dims, -0.01, 0.01)?;
        let v = c.input_f32("v", &dims, 0.0, 0.001)?;
        let lr = c.input_f32("lr", &[], 1e-3, 2e-3)?;
        let finite = c.input_bool("finite", &[])?;
        let (b1, b2) = (c.scalar(0.9)?, c.scalar(0.999)?);
        let (c1, c2) = (c.scalar(0.1)?, c.scalar(0.001)?);
        let m1 = c.mul(m, b1)?;
        let g1 = c.mul(g, c1)?;
        let m_new = c.add(m1, g1)?;
        let v1 = c.mul(v, b2)?;
        let gg = c.square(g)?;
        let g2 = c.mul(gg, c2)?;
        let v_new = c.add(v1, g2)?;
        let m_kept = c.where_(finite, m_new, m)?;
        let v_kept = c.where_(finite, v_new, v)?;
        let root = c.sqrt(v_new)?;
        let eps = c.scalar(1e-8)?;
        let den = c.add(root, eps)?;
        let step = c.div(m_new, den)?;
        let step = c.mul(step, lr)?;
        let decay = c.scalar(0.9999)?;
        let wd = c.mul(w, decay)?;
        let w_new = c.sub(wd, step)?;
        let w_kept = c.where_(finite, w_new, w)?;
        Ok(vec![m_kept, v_kept, w_kept])
    }));
}
