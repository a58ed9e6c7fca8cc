//! Optimizers that update weights on the device: a training step is one graph that runs the
//! forward, its backward (`Graph::backward`) and the update, reading the weights and optimizer
//! state from [`Graph::state`]s and writing the new values with [`Graph::write_rows`] at
//! offset 0 (a whole-tensor assignment). A step moves only the batch in and the loss out.
//!
//! Why two graphs ("phases"). A state that a graph writes may be read by nothing but its one
//! `write_rows` (rlx-ir's rule, which keeps in-place writes free of read-before-write hazards
//! on every backend). A step must read the weights and then write them, so each trained tensor
//! has two states, `name@0` and `name@1` ([`state_name`]): the phase-0 step reads `@0` and
//! writes `@1`, the phase-1 step reads `@1` and writes `@0`. Steps alternate phases; compile
//! both graphs together (`Session::compile_group`) so that they share the states. The weights
//! after step t live in phase `t % 2`'s read states; the cost is twice the weights' and the
//! optimizer state's memory.
//!
//! The learning rate and AdamW's bias corrections are run-time scalars (inputs named
//! [`LR_INPUT`], [`BIAS1_INPUT`], [`BIAS2_INPUT`]), so schedules need no recompilation:
//! [`Optimizer::scalars`] gives their values for a step. So is the loss scale of a step built
//! with [`StepOpts::loss_scale`] ([`LOSS_SCALE_INPUT`]); `crate::schedule` holds the host-side
//! schedule and loss scaler that pick those values.

use rlx_ir::{BackwardOptions, DType, Graph, IrError, NodeId, Op, Shape, Tensor};

/// The input holding the learning rate (F32, rank 0).
pub const LR_INPUT: &str = "optim.lr";
/// AdamW's first bias correction 1 − β₁ᵗ (F32, rank 0).
pub const BIAS1_INPUT: &str = "optim.bias1";
/// AdamW's second bias correction 1 − β₂ᵗ (F32, rank 0).
pub const BIAS2_INPUT: &str = "optim.bias2";
/// The loss scale of a step built with [`StepOpts::loss_scale`] (F32, rank 0).
pub const LOSS_SCALE_INPUT: &str = "optim.loss_scale";

/// An update rule, with PyTorch's semantics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Optimizer {
    /// `torch.optim.SGD` (dampening 0, not Nesterov): d = g + wd·w, b = μ·b + d (b = d on the
    /// first step, since b starts at zero), w ← w − lr·b. With μ = 0 there is no momentum state.
    /// A weight exempt from decay ([`StepOpts::decay`]) has d = g.
    Sgd {
        /// μ ≥ 0.
        momentum: f32,
        /// L2 penalty added to the gradient (≥ 0).
        weight_decay: f32,
    },
    /// `torch.optim.AdamW` (not amsgrad), decoupled weight decay: w ← w·(1 − lr·wd),
    /// m ← β₁m + (1 − β₁)g, v ← β₂v + (1 − β₂)g², w ← w − lr/(1 − β₁ᵗ) · m / (√v/√(1 − β₂ᵗ) + ε).
    /// A weight exempt from decay ([`StepOpts::decay`]) skips the first factor.
    AdamW {
        /// β₁ in [0, 1).
        beta1: f32,
        /// β₂ in [0, 1).
        beta2: f32,
        /// ε > 0.
        eps: f32,
        /// Decoupled weight decay (≥ 0).
        weight_decay: f32,
    },
}

impl Optimizer {
    /// AdamW with PyTorch's defaults: β = (0.9, 0.999), ε = 1e-8, weight decay 0.01.
    pub fn adamw() -> Optimizer {
        Optimizer::AdamW { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01 }
    }

    /// SGD with momentum `momentum` and no weight decay.
    pub fn sgd(momentum: f32) -> Optimizer {
        Optimizer::Sgd { momentum, weight_decay: 0.0 }
    }

    /// The optimizer states each weight has besides itself ("m", "v").
    pub fn slots(&self) -> &'static [&'static str] {
        match self {
            Optimizer::Sgd { momentum, .. } if *momentum > 0.0 => &["m"],
            Optimizer::Sgd { .. } => &[],
            Optimizer::AdamW { .. } => &["m", "v"],
        }
    }

    /// The run-time scalars of step `t` (counted from 1) at learning rate `lr`: (input name,
    /// rank-0 F32 value) pairs to feed to the step's run. `lr` must be finite and ≥ 0: a rate
    /// of 0 is a real step (a warmup's first, as in PyTorch: the moments take the gradient and
    /// the weights stay). A base rate of 0 from the user is refused where it is given
    /// (`LrSchedule::check`), not here.
    pub fn scalars(&self, t: u64, lr: f32) -> Result<Vec<(&'static str, Tensor)>, IrError> {
        if !(lr.is_finite() && lr >= 0.0) || t == 0 {
            return Err(IrError::Attribute {
                op: "optimizer",
                attr: "lr",
                shape: Shape::scalar(),
                reason: format!(
                    "learning rate {lr} at step {t}: the rate must be finite and ≥ 0, and steps \
                     count from 1"
                ),
            });
        }
        let mut v = vec![(LR_INPUT, Tensor::scalar_f32(lr))];
        if let Optimizer::AdamW { beta1, beta2, .. } = *self {
            let t = i32::try_from(t).unwrap_or(i32::MAX);
            v.push((BIAS1_INPUT, Tensor::scalar_f32((1.0 - (beta1 as f64).powi(t)) as f32)));
            v.push((BIAS2_INPUT, Tensor::scalar_f32((1.0 - (beta2 as f64).powi(t)) as f32)));
        }
        Ok(v)
    }

    fn check(&self) -> Result<(), IrError> {
        let bad = |attr: &'static str, reason: String| {
            Err(IrError::Attribute { op: "optimizer", attr, shape: Shape::scalar(), reason })
        };
        match *self {
            Optimizer::Sgd { momentum, weight_decay } => {
                if !(momentum >= 0.0 && momentum.is_finite()) {
                    return bad("momentum", format!("{momentum}: use a finite value ≥ 0"));
                }
                if !(weight_decay >= 0.0 && weight_decay.is_finite()) {
                    return bad("weight_decay", format!("{weight_decay}: use a finite value ≥ 0"));
                }
            }
            Optimizer::AdamW { beta1, beta2, eps, weight_decay } => {
                for (attr, b) in [("beta1", beta1), ("beta2", beta2)] {
                    if !(0.0..1.0).contains(&b) {
                        return bad(attr, format!("{b} is outside [0, 1)"));
                    }
                }
                if !(eps > 0.0 && eps.is_finite()) {
                    return bad("eps", format!("{eps}: use a finite value > 0"));
                }
                if !(weight_decay >= 0.0 && weight_decay.is_finite()) {
                    return bad("weight_decay", format!("{weight_decay}: use a finite value ≥ 0"));
                }
            }
        }
        Ok(())
    }
}

/// A training step's options: the optimizer, clipping of the gradients by their global norm,
/// skipping non-finite steps, loss scaling, recomputation and which weights decay. An
/// [`Optimizer`] alone converts into options with none of those (every weight decays).
#[derive(Clone, Debug, PartialEq)]
pub struct StepOpts {
    /// The update rule.
    pub optimizer: Optimizer,
    /// `torch.nn.utils.clip_grad_norm_(params, max_norm)` before the update: with
    /// n = √(Σ‖g‖²) over every weight's gradient, each gradient is scaled by
    /// min(1, max_norm / (n + 1e-6)). `None`: no clipping.
    pub clip_grad_norm: Option<f32>,
    /// When the loss or any gradient is NaN or infinite ([`StepNodes::finite`] false), write
    /// the weights and moments back unchanged: the step is skipped on the device (what loss
    /// scaling needs). Either way the flag is there for the host to warn or stop.
    pub skip_nonfinite: bool,
    /// Loss scaling (mixed precision): the step has the input [`LOSS_SCALE_INPUT`] (s), the
    /// backward is taken of loss·s, and every gradient is multiplied by 1/s before clipping
    /// and the update, so a finite step updates as the unscaled one would (exactly, for a
    /// power-of-two s). [`StepNodes::finite`] is computed on the scaled loss and gradients (an
    /// overflow there is what a loss scaler backs off from); [`StepNodes::loss`] is unscaled.
    /// The host picks s per step (`GradScaler`).
    pub loss_scale: bool,
    /// Activation checkpointing ([`rlx_ir::BackwardOptions::recompute`]) at the norms: the
    /// input and the output of every layer norm and RMS norm the forward makes (a
    /// transformer's residual stream, where its blocks meet) are kept for the backward, and
    /// every other value it needs (attention inputs, MLP activations, ...) is recomputed from
    /// them next to its use. The gradients are bit-identical; the forward's intermediates no
    /// longer live until the backward, for about one more forward of compute.
    pub recompute: bool,
    /// Which weights the optimizer's weight decay applies to, one flag per weight in
    /// `train_step`'s order (PyTorch's two parameter groups, the second with
    /// `weight_decay = 0`). A weight marked `false` is updated as with a weight decay of 0,
    /// and its update has no decay ops at all. `None`: every weight decays. [`transformers_decays`]
    /// is the rule the HF Trainer and sentence-transformers use (no decay for biases and
    /// norm weights).
    pub decay: Option<Vec<bool>>,
}

impl From<Optimizer> for StepOpts {
    fn from(optimizer: Optimizer) -> Self {
        StepOpts {
            optimizer,
            clip_grad_norm: None,
            skip_nonfinite: false,
            loss_scale: false,
            recompute: false,
            decay: None,
        }
    }
}

/// Whether the weight named `name` takes weight decay under transformers' rule
/// (`Trainer.get_decay_parameter_names`, which sentence-transformers' trainer inherits): no
/// decay when the lowercased name contains `bias`, `layernorm` or `rmsnorm`, or has a
/// dot-separated part that is `norm` or ends in `_norm`; every other weight decays. So BERT's
/// `*.bias` and `*.LayerNorm.weight`, and a Llama's `*.bias`, `*_layernorm.weight` and
/// `model.norm.weight` (GGUF's `*_norm.weight` too) are exempt: in practice every 1-D weight.
/// transformers also exempts every parameter of an `nn.LayerNorm` module whatever its name;
/// from a name alone that is the `LayerNorm` (and `*norm`) names its models give them.
pub fn transformers_decays(name: &str) -> bool {
    let lower = name.to_lowercase();
    let exempt = ["bias", "layernorm", "rmsnorm"].iter().any(|p| lower.contains(p))
        || lower.split('.').any(|part| part == "norm" || part.ends_with("_norm"));
    !exempt
}

/// The state holding weight `name` (or its optimizer `slot`, "m" or "v") that the step of
/// `phase` (0 or 1) reads: `name@phase` or `name.slot@phase`. The other phase's is where it
/// writes.
pub fn state_name(name: &str, slot: Option<&str>, phase: usize) -> String {
    match slot {
        Some(s) => format!("{name}.{s}@{}", phase % 2),
        None => format!("{name}@{}", phase % 2),
    }
}

/// The nodes of an appended training step.
#[derive(Clone, Debug)]
pub struct StepNodes {
    /// The loss (rank 0) the forward returned.
    pub loss: NodeId,
    /// The weights as this step read them (the phase's read states), in order.
    pub weights: Vec<NodeId>,
    /// The updated weights (the `write_rows` results), in order: outputs only when the host
    /// must see them, since reading them back is the weight traffic the step avoids.
    pub updated: Vec<NodeId>,
    /// The gradients' global norm before clipping (rank 0), when the step clips.
    pub grad_norm: Option<NodeId>,
    /// Bool, rank 0: whether the loss and every gradient are finite (no NaN, no ±∞). With
    /// clipping it is read from the global norm, so gradients whose squares sum past f32's
    /// range (|g| of about 1.8e19) count as non-finite too.
    pub finite: NodeId,
}

/// One training step appended to a graph ([`OptimExt::train_step`]).
pub trait OptimExt: AsMut<Graph> {
    /// Appends a training step of `phase` (0 or 1, see the module doc): one F32 state per
    /// weight `(name, dims)` (rank ≥ 1) read as this phase's, `forward` (given those weight
    /// nodes, returning a scalar loss), its backward (clipped if `opts` asks), and the
    /// optimizer's update written into the other
    /// phase's states, with the run-time scalar inputs [`LR_INPUT`] (and AdamW's
    /// [`BIAS1_INPUT`], [`BIAS2_INPUT`], and [`LOSS_SCALE_INPUT`] with loss scaling; inputs of
    /// those names already in the graph are reused). Outputs are not touched.
    fn train_step(
        &mut self,
        phase: usize,
        weights: &[(&str, &[usize])],
        opts: impl Into<StepOpts>,
        forward: impl FnOnce(&mut Graph, &[NodeId]) -> Result<NodeId, IrError>,
    ) -> Result<StepNodes, IrError> {
        let StepOpts { optimizer: opt, clip_grad_norm, skip_nonfinite, loss_scale, recompute, decay } =
            opts.into();
        self.as_mut().atomically(|g| {
            opt.check()?;
            let decays = match decay {
                None => vec![true; weights.len()],
                Some(d) if d.len() == weights.len() => d,
                Some(d) => {
                    return Err(IrError::Attribute {
                        op: "train_step",
                        attr: "decay",
                        shape: Shape::scalar(),
                        reason: format!(
                            "{} decay flags for {} weights: give one per weight, in the weights' order",
                            d.len(),
                            weights.len()
                        ),
                    })
                }
            };
            if let Some(c) = clip_grad_norm {
                if !(c > 0.0 && c.is_finite()) {
                    return Err(IrError::Attribute {
                        op: "train_step",
                        attr: "clip_grad_norm",
                        shape: Shape::scalar(),
                        reason: format!("{c}: the norm to clip to must be finite and > 0"),
                    });
                }
            }
            let (p, q) = (phase % 2, (phase + 1) % 2);
            let mut read = Vec::with_capacity(weights.len());
            for (name, dims) in weights {
                if dims.is_empty() {
                    return Err(IrError::Attribute {
                        op: "train_step",
                        attr: "weights",
                        shape: Shape::scalar(),
                        reason: format!("weight '{name}' is a scalar; give it shape [1]"),
                    });
                }
                read.push(g.state(&state_name(name, None, p), dims, DType::F32)?);
            }
            let start = g.len();
            let loss = forward(g, &read)?;
            let backward = BackwardOptions { recompute: recompute.then(|| norm_boundaries(g, start)) };
            // The loss the backward starts from (times the scale, with loss scaling), and the
            // gradients of the loss itself.
            let (checked, grads) = if loss_scale {
                let scale = scalar_input(g, LOSS_SCALE_INPUT)?;
                let l32 = if g.ty(loss)?.dtype == DType::F32 { loss } else { g.cast(loss, DType::F32)? };
                let scaled = g.mul(l32, scale)?;
                let grads = g.backward_with(scaled, &read, &backward)?;
                let one = g.scalar(1.0)?;
                let inv = g.div(one, scale)?;
                let grads = grads.iter().map(|&gr| g.mul(gr, inv)).collect::<Result<Vec<_>, _>>()?;
                (scaled, grads)
            } else {
                (loss, g.backward_with(loss, &read, &backward)?)
            };
            // With clipping, the global norm already reduces every gradient: it is finite
            // exactly when they all are (or when a sum of squares passes f32's range, |g| of
            // about 1.8e19, which counts as non-finite), so the check costs no pass of its own.
            // The clip factor multiplies each gradient where the update reads it (a rank-0
            // operand of every use), so that the clipped gradient is never stored: on a GPU it
            // fuses into the moment updates.
            let (grad_norm, coef) = match clip_grad_norm {
                Some(c) => {
                    let (norm, coef) = clip(g, &grads, c)?;
                    (Some(norm), Some(coef))
                }
                None => (None, None),
            };
            let finite = match grad_norm {
                Some(norm) => all_finite(g, checked, &[norm])?,
                None => all_finite(g, checked, &grads)?,
            };
            // The value written for `new` (whose old value is `old`): unchanged on a skipped step.
            let keep = |g: &mut Graph, new: NodeId, old: NodeId| -> Result<NodeId, IrError> {
                if skip_nonfinite {
                    g.where_(finite, new, old)
                } else {
                    Ok(new)
                }
            };
            let lr = scalar_input(g, LR_INPUT)?;
            let zero = g.constant(Tensor::from_i32([1], vec![0])?)?;
            // AdamW's rank-0 factors, made once for every weight (each is a launch on a GPU):
            // the decay factor 1 − lr·wd (when some weight decays), the step size
            // lr / (1 − β₁ᵗ) and √(1 − β₂ᵗ).
            let adam = match opt {
                Optimizer::AdamW { weight_decay, .. } => {
                    let (b1, b2) = (scalar_input(g, BIAS1_INPUT)?, scalar_input(g, BIAS2_INPUT)?);
                    let decay = if weight_decay > 0.0 && decays.contains(&true) {
                        let k = g.scalar(weight_decay)?;
                        let one = g.scalar(1.0)?;
                        let lk = g.mul(lr, k)?;
                        Some(g.sub(one, lk)?)
                    } else {
                        None
                    };
                    Some((decay, g.div(lr, b1)?, g.sqrt(b2)?))
                }
                Optimizer::Sgd { .. } => None,
            };
            let mut updated = Vec::with_capacity(weights.len());
            for ((((name, dims), &w), &gr), &decays) in weights.iter().zip(&read).zip(&grads).zip(&decays) {
                let w_old = w;
                // The (clipped) gradient, as a new node for each use.
                let grad = |g: &mut Graph| match coef {
                    Some(c) => g.mul(gr, c),
                    None => Ok(gr),
                };
                // An optimizer moment: its old value (`None`), or, given its new one, the value
                // kept (the new one, or the old on a skipped step), written for the next step.
                // The weight's update reads the kept value: the same on a step that is taken,
                // and on a skipped one the weight keeps its old value anyway. So the new value
                // has one reader and fuses into the kept one (one kernel for both on a GPU).
                let slot =
                    |g: &mut Graph, s: &str, value: Option<(NodeId, NodeId)>| -> Result<NodeId, IrError> {
                        match value {
                            None => g.state(&state_name(name, Some(s), p), dims, DType::F32),
                            Some((new, old)) => {
                                let v = keep(g, new, old)?;
                                let dst = g.state(&state_name(name, Some(s), q), dims, DType::F32)?;
                                g.write_rows(dst, v, zero, 0)?;
                                Ok(v)
                            }
                        }
                    };
                let new_w = match opt {
                    Optimizer::Sgd { momentum, weight_decay } => {
                        let gc = grad(g)?;
                        let d = if weight_decay > 0.0 && decays {
                            let k = g.scalar(weight_decay)?;
                            let dw = g.mul(w, k)?;
                            g.add(gc, dw)?
                        } else {
                            gc
                        };
                        let step = if momentum > 0.0 {
                            let b_old = slot(g, "m", None)?;
                            let k = g.scalar(momentum)?;
                            let b = g.mul(b_old, k)?;
                            let b = g.add(b, d)?;
                            slot(g, "m", Some((b, b_old)))?
                        } else {
                            d
                        };
                        let s = g.mul(step, lr)?;
                        g.sub(w, s)?
                    }
                    Optimizer::AdamW { beta1, beta2, eps, .. } => {
                        let (decay, step_size, sb2) = adam.ok_or_else(|| IrError::Arity {
                            op: "train_step",
                            expected: "AdamW's bias-correction inputs".into(),
                            got: 0,
                        })?;
                        let w = match decay {
                            Some(f) if decays => g.mul(w, f)?,
                            _ => w,
                        };
                        let m_old = slot(g, "m", None)?;
                        let v_old = slot(g, "v", None)?;
                        let (kb1, kg1) = (g.scalar(beta1)?, g.scalar(1.0 - beta1)?);
                        let m = g.mul(m_old, kb1)?;
                        let gc = grad(g)?;
                        let gm = g.mul(gc, kg1)?;
                        let m = g.add(m, gm)?;
                        let (kb2, kg2) = (g.scalar(beta2)?, g.scalar(1.0 - beta2)?);
                        let v = g.mul(v_old, kb2)?;
                        let gc = grad(g)?;
                        let g2 = g.square(gc)?;
                        let g2 = g.mul(g2, kg2)?;
                        let v = g.add(v, g2)?;
                        let m = slot(g, "m", Some((m, m_old)))?;
                        let v = slot(g, "v", Some((v, v_old)))?;
                        let sv = g.sqrt(v)?;
                        let denom = g.div(sv, sb2)?;
                        let ke = g.scalar(eps)?;
                        let denom = g.add(denom, ke)?;
                        let ratio = g.div(m, denom)?;
                        let s = g.mul(ratio, step_size)?;
                        g.sub(w, s)?
                    }
                };
                let new_w = keep(g, new_w, w_old)?;
                let dst = g.state(&state_name(name, None, q), dims, DType::F32)?;
                updated.push(g.write_rows(dst, new_w, zero, 0)?);
            }
            Ok(StepNodes { loss, weights: read, updated, grad_norm, finite })
        })
    }
}

impl OptimExt for Graph {}

/// The checkpoints of [`StepOpts::recompute`]: the operand and the value of every layer norm
/// and RMS norm from node `start` on.
fn norm_boundaries(g: &Graph, start: usize) -> Vec<NodeId> {
    let mut keep = Vec::new();
    for (i, n) in g.nodes().iter().enumerate().skip(start) {
        if matches!(n.op, Op::LayerNorm { .. } | Op::RmsNorm { .. }) {
            keep.extend(n.inputs.first().copied());
            keep.push(NodeId(i as u32));
        }
    }
    keep
}

/// Whether `loss` and every one of `values` (the gradients, or their global norm) are finite:
/// Σ x·0 over all of them is 0, or NaN when any element is NaN or ±∞.
fn all_finite(g: &mut Graph, loss: NodeId, grads: &[NodeId]) -> Result<NodeId, IrError> {
    let lt = g.ty(loss)?.dtype;
    let lzero = g.full(&[], lt, 0.0)?;
    let total = g.mul(loss, lzero)?;
    let mut total = if lt == DType::F32 { total } else { g.cast(total, DType::F32)? };
    let zero = g.scalar(0.0)?;
    for &gr in grads {
        let z = g.mul(gr, zero)?;
        let r = g.ty(z)?.shape.rank() as isize;
        let s = if r == 0 {
            z
        } else {
            let axes: Vec<isize> = (0..r).collect();
            g.sum(z, &axes, false)?
        };
        total = g.add(total, s)?;
    }
    g.eq(total, zero)
}

/// The global norm of `grads` and the factor min(1, max / (norm + 1e-6)) that clips them.
fn clip(g: &mut Graph, grads: &[NodeId], max: f32) -> Result<(NodeId, NodeId), IrError> {
    let mut total: Option<NodeId> = None;
    for &gr in grads {
        let sq = g.square(gr)?;
        let r = g.ty(sq)?.shape.rank() as isize;
        let axes: Vec<isize> = (0..r).collect();
        let s = g.sum(sq, &axes, false)?;
        total = Some(match total {
            None => s,
            Some(t) => g.add(t, s)?,
        });
    }
    let total = match total {
        Some(t) => t,
        None => g.scalar(0.0)?,
    };
    let norm = g.sqrt(total)?;
    let tiny = g.scalar(1e-6)?;
    let denom = g.add(norm, tiny)?;
    let limit = g.scalar(max)?;
    let coef = g.div(limit, denom)?;
    let one = g.scalar(1.0)?;
    let coef = g.minimum(coef, one)?;
    Ok((norm, coef))
}

/// The graph's rank-0 F32 input `name`, made if it has none (so that steps appended to one
/// graph, or inputs the caller made first, share it).
fn scalar_input(g: &mut Graph, name: &str) -> Result<NodeId, IrError> {
    let found = g.inputs().into_iter().find(|(n, _, _)| *n == name).map(|(_, id, ty)| (id, ty.clone()));
    match found {
        Some((id, ty)) if ty.dtype == DType::F32 && ty.shape.rank() == 0 => Ok(id),
        Some((_, ty)) => Err(IrError::Attribute {
            op: "train_step",
            attr: "input",
            shape: ty.shape,
            reason: format!("input '{name}' exists as {}; the optimizer needs it F32 of rank 0", ty.dtype),
        }),
        None => g.input(name, &[], DType::F32),
    }
}

/// The two phases' step graphs (outputs: the loss), named `{name}_step0` and `{name}_step1`:
/// run `[0]` for steps 1, 3, 5, … and `[1]` for steps 2, 4, …, both compiled together. Set
/// the initial weights on the phase-0 read states (`state_name(name, None, 0)`).
///
/// ```
/// use rlx_ir::{DType, Graph};
/// use rlx_nn::prelude::*;
/// // Linear regression: weights w [3, 1] and b [1], data x [8, 3] and y [8, 1] as inputs.
/// let weights: [(&str, &[usize]); 2] = [("w", &[3, 1]), ("b", &[1])];
/// let [even, odd] = rlx_nn::train_graphs("linreg", &weights, Optimizer::adamw(), |g, p| {
///     let x = g.input("x", &[8, 3], DType::F32)?;
///     let y = g.input("y", &[8, 1], DType::F32)?;
///     let pred = g.matmul(x, p[0])?;
///     let pred = g.add(pred, p[1])?;
///     g.mse(pred, y)
/// })?;
/// // Step t runs `even` (t odd) or `odd` (t even), fed x, y and `Optimizer::scalars(t, lr)`.
/// assert_eq!(even.states().len(), 12); // w, b and their m, v: read and written
/// assert_eq!(odd.outputs().len(), 1);
/// # Ok::<(), rlx_ir::IrError>(())
/// ```
pub fn train_graphs(
    name: &str,
    weights: &[(&str, &[usize])],
    opts: impl Into<StepOpts>,
    forward: impl Fn(&mut Graph, &[NodeId]) -> Result<NodeId, IrError>,
) -> Result<[Graph; 2], IrError> {
    let opts = opts.into();
    let build = |phase: usize| -> Result<Graph, IrError> {
        let mut g = Graph::new(format!("{name}_step{phase}"));
        let step = g.train_step(phase, weights, opts.clone(), &forward)?;
        g.set_outputs(&[step.loss])?;
        Ok(g)
    };
    Ok([build(0)?, build(1)?])
}
