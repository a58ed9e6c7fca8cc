//! Training: the losses' gradients (`grad_loss_*`: cross-entropy, in-batch-negatives ranking,
//! MSE) and one optimizer step (`optim_*`) as rlx-nn builds them, forward + backward + update
//! in one graph. The step reads its weights
//! from zeroed states (a case runs once), so each forward adds a random param to them: the
//! gradients are those of the random weights, and the outputs are the loss, the updated
//! weights (the states' writes) and the optimizer moments.

use crate::{Case, CaseCtx};
use rlx_ir::{IrError, NodeId, Tensor};
use rlx_nn::optim::{StepNodes, LR_INPUT};
use rlx_nn::prelude::*;

pub(super) fn cases(out: &mut Vec<Case>) {
    losses(out);
    steps(out);
}

fn losses(out: &mut Vec<Case>) {
    for (tag, ignore, eps) in [("plain", None, 0.0), ("ignore_smoothing", Some(3), 0.1)] {
        out.push(Case::new(format!("grad_loss_cross_entropy_{tag}_f32_7x41"), move |c| {
            let x = c.param_f32("x", &[7, 41], -4.0, 4.0)?;
            let t = c.input_i32("t", &[7], 0, 40)?;
            let opts = CrossEntropyOpts { ignore_index: ignore, label_smoothing: eps };
            let l = c.cross_entropy(x, t, opts)?;
            let mut outs = vec![l];
            outs.extend(c.backward(l, &[x])?);
            Ok(outs)
        }));
    }
    out.push(Case::new("grad_loss_mnrl_f32_b8_m16_d24", |c| {
        let a = c.param_f32("a", &[8, 24], -1.0, 1.0)?;
        let p = c.param_f32("p", &[16, 24], -1.0, 1.0)?;
        let l = c.multiple_negatives_ranking(a, p, 20.0)?;
        let mut outs = vec![l];
        outs.extend(c.backward(l, &[a, p])?);
        Ok(outs)
    }));
    out.push(Case::new("grad_loss_mse_f32_6x13", |c| {
        let p = c.param_f32("p", &[6, 13], -2.0, 2.0)?;
        let y = c.param_f32("y", &[13], -2.0, 2.0)?;
        let l = c.mse(p, y)?;
        let mut outs = vec![l];
        outs.extend(c.backward(l, &[p, y])?);
        Ok(outs)
    }));
}

/// The optimizer's run-time scalars at step `t`, as inputs of the case.
fn scalars(c: &mut CaseCtx, opt: Optimizer, t: u64, lr: f32) -> Result<(), IrError> {
    for (name, v) in opt.scalars(t, lr)? {
        c.input_tensor(name, v)?;
    }
    Ok(())
}

/// `[loss, updated weights…, every write of an optimizer moment…]`.
fn step_outputs(c: &CaseCtx, step: &StepNodes) -> Vec<NodeId> {
    let mut outs = vec![step.loss];
    outs.extend(&step.updated);
    let moments = c.nodes().iter().enumerate().filter(|(i, n)| {
        matches!(n.op, rlx_ir::Op::WriteRows { .. }) && !step.updated.contains(&NodeId(*i as u32))
    });
    outs.extend(moments.map(|(i, _)| NodeId(i as u32)));
    outs
}

fn steps(out: &mut Vec<Case>) {
    let opts = [
        ("sgd_momentum", Optimizer::Sgd { momentum: 0.9, weight_decay: 1e-3 }),
        ("sgd_plain", Optimizer::sgd(0.0)),
        ("adamw", Optimizer::AdamW { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01 }),
    ];
    for (tag, opt) in opts {
        // Linear regression with MSE; step 3 (bias corrections past the first step).
        out.push(Case::new(format!("optim_{tag}_linreg_f32_16x5"), move |c| {
            let x = c.input_f32("x", &[16, 5], -1.0, 1.0)?;
            let y = c.input_f32("y", &[16, 2], -1.0, 1.0)?;
            let w0 = c.param_f32("w_init", &[5, 2], -1.0, 1.0)?;
            scalars(c, opt, 3, 0.05)?;
            let step = c.train_step(0, &[("w", &[5, 2]), ("b", &[2])], opt, |g, p| {
                let w = g.add(p[0], w0)?;
                let pred = g.matmul(x, w)?;
                let pred = g.add(pred, p[1])?;
                g.mse(pred, y)
            })?;
            Ok(step_outputs(c, &step))
        }));
    }
    // A classifier step: embedding, layer norm, GELU MLP and cross-entropy with an ignored id.
    out.push(Case::new("optim_adamw_classifier_f32", |c| {
        let ids = c.input_i32("ids", &[3, 5], 0, 19)?;
        let t = c.input_i32("t", &[3], -1, 6)?;
        let e0 = c.param_f32("e_init", &[20, 12], -1.0, 1.0)?;
        let w0 = c.param_f32("w_init", &[12, 7], -0.5, 0.5)?;
        let opt = Optimizer::adamw();
        scalars(c, opt, 1, 1e-3)?;
        let step = c.train_step(1, &[("emb", &[20, 12]), ("w", &[12, 7])], opt, |g, p| {
            let e = g.add(p[0], e0)?;
            let w = g.add(p[1], w0)?;
            let h = g.embedding(e, ids)?;
            let h = g.mean(h, &[1], false)?;
            let h = g.layer_norm(h, None, None, -1, 1e-5)?;
            let h = g.gelu(h)?;
            let logits = g.matmul(h, w)?;
            g.cross_entropy(logits, t, CrossEntropyOpts { ignore_index: Some(-1), label_smoothing: 0.05 })
        })?;
        Ok(step_outputs(c, &step))
    }));
    // The learning rate is a run-time input: the same graph at another rate.
    out.push(Case::new("optim_sgd_lr_input_f32", |c| {
        let opt = Optimizer::sgd(0.5);
        c.input_tensor(LR_INPUT, Tensor::scalar_f32(0.3))?;
        let x = c.input_f32("x", &[4, 3], -1.0, 1.0)?;
        let step = c.train_step(0, &[("w", &[3])], opt, |g, p| {
            let s = g.mul(x, p[0])?;
            let s = g.sin(s)?;
            g.sum(s, &[0, 1], false)
        })?;
        Ok(step_outputs(c, &step))
    }));
}
