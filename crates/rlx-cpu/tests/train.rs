//! Losses and optimizers (rlx-nn's `loss` and `optim`) on the CPU: loss values against host
//! computations, their gradients against finite differences, one AdamW and one SGD step bit for
//! bit against the same arithmetic on the host, and a few steps of linear regression.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod grad_common;
use grad_common::Check;
use rlx_backend::{Backend, Executable};
use rlx_ir::{DType, Graph, IrError, NodeId, Tensor};
use rlx_nn::optim::{BIAS1_INPUT, BIAS2_INPUT, LR_INPUT};
use rlx_nn::prelude::*;
use rlx_nn::{state_name, train_graphs, StepOpts};

/// Host cross-entropy in f64, PyTorch's definition (mean over the rows not ignored); a target
/// outside [0, C) that is not ignored contributes only its smoothing term (rlx's rule).
fn host_cross_entropy(logits: &[f32], c: usize, targets: &[i32], ignore: Option<i32>, eps: f64) -> f64 {
    let (mut total, mut count) = (0.0, 0.0);
    for (row, &t) in logits.chunks(c).zip(targets) {
        if Some(t) == ignore {
            continue;
        }
        let m = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
        let lse = m + row.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln();
        let lp: Vec<f64> = row.iter().map(|&x| x as f64 - lse).collect();
        let nll = usize::try_from(t).ok().and_then(|t| lp.get(t)).map_or(0.0, |&p| -p);
        let smooth = -lp.iter().sum::<f64>() / c as f64;
        total += (1.0 - eps) * nll + eps * smooth;
        count += 1.0;
    }
    total / count
}

fn run_scalar(g: &Graph, inputs: &[(NodeId, Tensor)]) -> f64 {
    let mut exe = rlx_cpu::CpuBackend::new().compile(g, &Default::default()).unwrap();
    let feeds: Vec<(NodeId, &Tensor)> = inputs.iter().map(|(id, t)| (*id, t)).collect();
    exe.run(&feeds).unwrap()[0].to_f64_vec()[0]
}

#[test]
fn cross_entropy_matches_pytorchs_definition() {
    let logits: Vec<f32> = rlx_test_support::uniform(2 * 3 * 5, 7, 3.0);
    let targets = vec![4, 0, -100, 2, 2, 1];
    for (ignore, eps) in [(None, 0.0), (Some(-100), 0.0), (Some(-100), 0.1), (Some(2), 0.25)] {
        let mut g = Graph::new("ce");
        let x = g.input("x", &[2, 3, 5], DType::F32).unwrap();
        let t = g.input("t", &[2, 3], DType::I32).unwrap();
        let l =
            g.cross_entropy(x, t, CrossEntropyOpts { ignore_index: ignore, label_smoothing: eps }).unwrap();
        g.set_outputs(&[l]).unwrap();
        let got = run_scalar(
            &g,
            &[
                (x, Tensor::from_f32([2, 3, 5], logits.clone()).unwrap()),
                (t, Tensor::from_i32([2, 3], targets.clone()).unwrap()),
            ],
        );
        // Without an ignore id of −100, the −100 row is out of range: only smoothing counts.
        let want = host_cross_entropy(&logits, 5, &targets, ignore, eps as f64);
        assert!(
            (got - want).abs() <= 1e-6 * want.abs().max(1.0),
            "ignore {ignore:?} ε {eps}: {got} vs {want}"
        );
    }
}

#[test]
fn every_row_ignored_gives_zero_and_mse_matches() {
    let mut g = Graph::new("ce_all_ignored");
    let x = g.input("x", &[2, 3], DType::F32).unwrap();
    let t = g.input("t", &[2], DType::I32).unwrap();
    let l = g.cross_entropy(x, t, CrossEntropyOpts { ignore_index: Some(-1), label_smoothing: 0.1 }).unwrap();
    g.set_outputs(&[l]).unwrap();
    let inputs = [
        (x, Tensor::from_f32([2, 3], vec![1.0; 6]).unwrap()),
        (t, Tensor::from_i32([2], vec![-1, -1]).unwrap()),
    ];
    assert_eq!(run_scalar(&g, &inputs), 0.0);

    let mut g = Graph::new("mse");
    let p = g.input("p", &[2, 2], DType::F32).unwrap();
    let y = g.input("y", &[2], DType::F32).unwrap();
    let l = g.mse(p, y).unwrap();
    g.set_outputs(&[l]).unwrap();
    let inputs = [
        (p, Tensor::from_f32([2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap()),
        (y, Tensor::from_f32([2], vec![0.0, 4.0]).unwrap()),
    ];
    // ((1)² + (−2)² + 3² + 0²) / 4 = 3.5
    assert_eq!(run_scalar(&g, &inputs), 3.5);
}

#[test]
fn loss_gradients_against_finite_differences() {
    for (ignore, eps) in [(None, 0.0), (Some(3), 0.2)] {
        let mut c = Check::new(&format!("grad_cross_entropy_{ignore:?}_{eps}"));
        let x = c.var("x", &[4, 6], -2.0, 2.0);
        let t = c.fixed("t", Tensor::from_i32([4], vec![1, 3, 5, 0]).unwrap());
        let l =
            c.g.cross_entropy(x, t, CrossEntropyOpts { ignore_index: ignore, label_smoothing: eps }).unwrap();
        c.run(l);
    }
    let mut c = Check::new("grad_mse");
    let p = c.var("p", &[3, 4], -2.0, 2.0);
    let y = c.var("y", &[4], -2.0, 2.0);
    let l = c.g.mse(p, y).unwrap();
    c.run(l);
}

/// A compiled pair of phase graphs sharing their states.
struct Trainer {
    graphs: [Graph; 2],
    exes: Vec<Box<dyn Executable>>,
    opt: Optimizer,
    t: u64,
}

impl Trainer {
    fn new(graphs: [Graph; 2], opt: Optimizer) -> Trainer {
        let exes =
            rlx_cpu::CpuBackend::new().compile_group(&[&graphs[0], &graphs[1]], &Default::default()).unwrap();
        Trainer { graphs, exes, opt, t: 0 }
    }

    fn id(g: &Graph, name: &str) -> NodeId {
        let leaves = g.states().into_iter().chain(g.inputs());
        leaves.filter(|(n, _, _)| *n == name).map(|(_, id, _)| id).next().unwrap()
    }

    fn set_state(&mut self, name: &str, t: &Tensor) {
        let id = Self::id(&self.graphs[0], name);
        self.exes[0].set_param(id, t).unwrap();
    }

    /// One step; returns the outputs (the loss first).
    fn step(&mut self, lr: f32, data: &[(&str, Tensor)]) -> Vec<Tensor> {
        self.t += 1;
        let phase = ((self.t - 1) % 2) as usize;
        let g = &self.graphs[phase];
        let mut feeds: Vec<(NodeId, Tensor)> =
            self.opt.scalars(self.t, lr).unwrap().into_iter().map(|(n, v)| (Self::id(g, n), v)).collect();
        feeds.extend(data.iter().map(|(n, v)| (Self::id(g, n), v.clone())));
        let refs: Vec<(NodeId, &Tensor)> = feeds.iter().map(|(id, t)| (*id, t)).collect();
        self.exes[phase].run(&refs).unwrap()
    }
}

/// `loss = Σ w·c`, whose gradient is exactly c: the update is the only arithmetic, so the
/// device's new weights equal the same f32 operations done on the host, bit for bit, over
/// three steps (both phases, and the moments carried between them).
#[test]
fn adamw_and_sgd_steps_match_host_arithmetic_exactly() {
    let w0: Vec<f32> = vec![0.5, -1.25, 2.0, 0.0, 3.5, -0.75];
    let grads: [Vec<f32>; 3] = [
        vec![0.3, -0.2, 0.1, 1.5, -2.0, 0.0],
        vec![-0.1, 0.4, 0.1, -1.0, 0.5, 0.25],
        vec![0.2, 0.2, -0.3, 0.0, 1.0, -0.5],
    ];
    for opt in [
        Optimizer::AdamW { beta1: 0.9, beta2: 0.99, eps: 1e-6, weight_decay: 0.05 },
        Optimizer::Sgd { momentum: 0.9, weight_decay: 0.01 },
    ] {
        let graphs = train_graphs("lin", &[("w", &[2, 3])], opt, |g, w| {
            let c = g.input("c", &[2, 3], DType::F32)?;
            let p = g.mul(w[0], c)?;
            g.sum(p, &[0, 1], false)
        })
        .unwrap();
        // Outputs: the loss and the updated weights.
        let graphs = graphs.map(|mut g| {
            let upd = g.nodes().iter().rposition(|n| matches!(n.op, rlx_ir::Op::WriteRows { .. })).unwrap();
            let loss = g.outputs()[0];
            g.set_outputs(&[loss, NodeId(upd as u32)]).unwrap();
            g
        });
        let mut tr = Trainer::new(graphs, opt);
        tr.set_state(&state_name("w", None, 0), &Tensor::from_f32([2, 3], w0.clone()).unwrap());
        let (mut w, mut m, mut v) = (w0.clone(), vec![0.0f32; 6], vec![0.0f32; 6]);
        let lr = 0.01f32;
        for (step, gr) in grads.iter().enumerate() {
            let out = tr.step(lr, &[("c", Tensor::from_f32([2, 3], gr.clone()).unwrap())]);
            let s = opt.scalars(step as u64 + 1, lr).unwrap();
            let sc = |i: usize| s[i].1.as_f32().unwrap()[0];
            for i in 0..6 {
                match opt {
                    Optimizer::AdamW { beta1, beta2, eps, weight_decay } => {
                        let (b1, b2) = (sc(1), sc(2));
                        let wd = w[i] * (1.0 - lr * weight_decay);
                        m[i] = m[i] * beta1 + gr[i] * (1.0 - beta1);
                        v[i] = v[i] * beta2 + gr[i] * gr[i] * (1.0 - beta2);
                        let denom = v[i].sqrt() / b2.sqrt() + eps;
                        w[i] = wd - m[i] / denom * (lr / b1);
                    }
                    Optimizer::Sgd { momentum, weight_decay } => {
                        let d = gr[i] + w[i] * weight_decay;
                        m[i] = m[i] * momentum + d;
                        w[i] -= m[i] * lr;
                    }
                }
            }
            assert_eq!(out[1].as_f32().unwrap(), &w[..], "{opt:?} step {}", step + 1);
        }
    }
}

/// y = X·w* + b* (+ small noise): a few steps of each optimizer lower the MSE, and AdamW's
/// losses follow an f64 host run of the same steps.
#[test]
fn linear_regression_loss_goes_down() {
    let (n, k) = (16, 3);
    let x: Vec<f32> = rlx_test_support::uniform(n * k, 11, 1.0);
    let noise: Vec<f32> = rlx_test_support::uniform(n, 12, 0.01);
    let w_true = [1.5f32, -2.0, 0.5];
    let y: Vec<f32> =
        (0..n).map(|i| (0..k).map(|j| x[i * k + j] * w_true[j]).sum::<f32>() + 0.3 + noise[i]).collect();
    let data = [
        ("x", Tensor::from_f32([n, k], x.clone()).unwrap()),
        ("y", Tensor::from_f32([n, 1], y.clone()).unwrap()),
    ];
    for (opt, lr) in [(Optimizer::sgd(0.9), 0.05), (Optimizer::adamw(), 0.1)] {
        let graphs = train_graphs("linreg", &[("w", &[3, 1]), ("b", &[1])], opt, |g, p| {
            let x = g.input("x", &[n, k], DType::F32)?;
            let y = g.input("y", &[n, 1], DType::F32)?;
            let pred = g.matmul(x, p[0])?;
            let pred = g.add(pred, p[1])?;
            g.mse(pred, y)
        })
        .unwrap();
        let mut tr = Trainer::new(graphs, opt);
        let losses: Vec<f64> = (0..8).map(|_| tr.step(lr, &data)[0].to_f64_vec()[0]).collect();
        assert!(losses[7] < 0.5 * losses[0], "{opt:?}: {losses:?}");
        if let Optimizer::AdamW { beta1, beta2, eps, weight_decay } = opt {
            let (b1, b2, eps, wd, lr) =
                (beta1 as f64, beta2 as f64, eps as f64, weight_decay as f64, lr as f64);
            let mut p = [0.0f64; 4]; // w0, w1, w2, b
            let (mut m, mut v) = ([0.0f64; 4], [0.0f64; 4]);
            for (t, &got) in losses.iter().enumerate() {
                let r: Vec<f64> = (0..n)
                    .map(|i| (0..k).map(|j| x[i * k + j] as f64 * p[j]).sum::<f64>() + p[3] - y[i] as f64)
                    .collect();
                let loss = r.iter().map(|e| e * e).sum::<f64>() / n as f64;
                assert!((got - loss).abs() <= 1e-5 * loss, "step {}: {got} vs host {loss}", t + 1);
                let mut gr = [0.0f64; 4];
                for (i, e) in r.iter().enumerate() {
                    for j in 0..k {
                        gr[j] += 2.0 * e * x[i * k + j] as f64 / n as f64;
                    }
                    gr[3] += 2.0 * e / n as f64;
                }
                let tt = t as i32 + 1;
                for j in 0..4 {
                    p[j] *= 1.0 - lr * wd;
                    m[j] = b1 * m[j] + (1.0 - b1) * gr[j];
                    v[j] = b2 * v[j] + (1.0 - b2) * gr[j] * gr[j];
                    let denom = v[j].sqrt() / (1.0 - b2.powi(tt)).sqrt() + eps;
                    p[j] -= lr / (1.0 - b1.powi(tt)) * m[j] / denom;
                }
            }
        }
    }
}

#[test]
fn optimizer_arguments_are_checked() {
    let opt = Optimizer::adamw();
    for (t, lr) in [(1, f32::INFINITY), (1, f32::NAN), (0, 0.1), (1, -1.0)] {
        let e = opt.scalars(t, lr).unwrap_err();
        assert!(e.to_string().contains("learning rate"), "{e}");
    }
    let names: Vec<&str> = opt.scalars(3, 0.1).unwrap().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, [LR_INPUT, BIAS1_INPUT, BIAS2_INPUT]);
    let forward = |g: &mut Graph, w: &[NodeId]| -> Result<NodeId, IrError> { g.sum(w[0], &[0], false) };
    let bad = Optimizer::AdamW { beta1: 1.0, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 };
    let e = train_graphs("bad", &[("w", &[2])], bad, forward).unwrap_err();
    assert!(e.to_string().contains("beta1"), "{e}");
    let e = train_graphs("scalar", &[("w", &[])], opt, forward).unwrap_err();
    assert!(e.to_string().contains("shape [1]"), "{e}");
    let e = train_graphs("neg", &[("w", &[2])], Optimizer::sgd(-0.5), forward).unwrap_err();
    assert!(e.to_string().contains("momentum"), "{e}");
}

/// Clipping by the global norm over every weight's gradient (PyTorch's `clip_grad_norm_`):
/// with `loss = Σ w₁·c₁ + Σ w₂·c₂` the gradients are c₁ and c₂, so the clipped SGD step and
/// the reported norm are known; a norm under the limit leaves the step alone.
#[test]
fn gradient_clipping_by_global_norm() {
    let c1: Vec<f32> = vec![3.0, 0.0, -4.0, 1.0, 2.0, -2.0];
    let c2: Vec<f32> = vec![0.5, -0.5, 6.0, 0.0];
    let norm = (c1.iter().chain(&c2).map(|x| (x * x) as f64).sum::<f64>()).sqrt();
    for max in [1.0f32, 100.0] {
        let mut g = Graph::new("clip");
        let opts = StepOpts { clip_grad_norm: Some(max), ..Optimizer::sgd(0.0).into() };
        let step = g
            .train_step(0, &[("a", &[2, 3]), ("b", &[4])], opts, |g, w| {
                let k1 = g.input("c1", &[2, 3], DType::F32)?;
                let k2 = g.input("c2", &[4], DType::F32)?;
                let p1 = g.mul(w[0], k1)?;
                let p2 = g.mul(w[1], k2)?;
                let s1 = g.sum(p1, &[0, 1], false)?;
                let s2 = g.sum(p2, &[0], false)?;
                g.add(s1, s2)
            })
            .unwrap();
        let mut outs = vec![step.loss];
        outs.extend(&step.updated);
        outs.push(step.grad_norm.unwrap());
        g.set_outputs(&outs).unwrap();
        let id = |name: &str| g.inputs().into_iter().find(|(n, _, _)| *n == name).unwrap().1;
        let feeds = [
            (id("c1"), Tensor::from_f32([2, 3], c1.clone()).unwrap()),
            (id("c2"), Tensor::from_f32([4], c2.clone()).unwrap()),
            (id(LR_INPUT), Tensor::scalar_f32(0.5)),
        ];
        let mut exe = rlx_cpu::CpuBackend::new().compile(&g, &Default::default()).unwrap();
        let refs: Vec<(NodeId, &Tensor)> = feeds.iter().map(|(i, t)| (*i, t)).collect();
        let out = exe.run(&refs).unwrap();
        let got_norm = out[3].to_f64_vec()[0];
        assert!((got_norm - norm).abs() < 1e-5 * norm, "norm {got_norm} vs {norm}");
        let coef = (max as f64 / (norm + 1e-6)).min(1.0);
        // The weights start at zero: new w = −lr·coef·c.
        for (got, c) in [(&out[1], &c1), (&out[2], &c2)] {
            let want: Vec<f64> = c.iter().map(|&x| -0.5 * coef * x as f64).collect();
            for (a, b) in got.to_f64_vec().iter().zip(&want) {
                assert!((a - b).abs() <= 1e-6 * (1.0 + b.abs()), "max {max}: {a} vs {b}");
            }
        }
    }
    let mut g = Graph::new("bad_clip");
    let opts = StepOpts { clip_grad_norm: Some(0.0), ..Optimizer::sgd(0.0).into() };
    let e = g.train_step(0, &[("w", &[2])], opts, |g, w| g.sum(w[0], &[0], false)).unwrap_err();
    assert!(e.to_string().contains("clip_grad_norm"), "{e}");
}

/// A NaN or infinite gradient clears the `finite` flag (read from the gradients, or from the
/// global norm when the step clips); with `skip_nonfinite` the weights and moments are written
/// back unchanged, without it the step goes through (and the host sees the flag).
#[test]
fn non_finite_steps_are_flagged_and_skipped_on_request() {
    for (skip, clip) in [(true, None), (false, None), (true, Some(1.0)), (false, Some(1.0))] {
        for bad in [f32::INFINITY, f32::NAN, 1.0] {
            let mut g = Graph::new("nonfinite");
            let opts = StepOpts { skip_nonfinite: skip, clip_grad_norm: clip, ..Optimizer::adamw().into() };
            let step = g
                .train_step(0, &[("w", &[3])], opts, |g, w| {
                    let c = g.input("c", &[3], DType::F32)?;
                    let p = g.mul(w[0], c)?;
                    g.sum(p, &[0], false)
                })
                .unwrap();
            let moments: Vec<NodeId> = (0..g.len() as u32)
                .map(NodeId)
                .filter(|id| matches!(g.nodes()[id.index()].op, rlx_ir::Op::WriteRows { .. }))
                .filter(|id| !step.updated.contains(id))
                .collect();
            let mut outs = vec![step.finite, step.updated[0]];
            outs.extend(&moments);
            g.set_outputs(&outs).unwrap();
            let id = |name: &str| g.inputs().into_iter().find(|(n, _, _)| *n == name).unwrap().1;
            let mut feeds = vec![(id("c"), Tensor::from_f32([3], vec![0.5, bad, -1.0]).unwrap())];
            for (n, v) in Optimizer::adamw().scalars(1, 0.1).unwrap() {
                feeds.push((id(n), v));
            }
            let mut exe = rlx_cpu::CpuBackend::new().compile(&g, &Default::default()).unwrap();
            let w_id = g.states().into_iter().find(|(n, _, _)| *n == "w@0").unwrap().1;
            exe.set_param(w_id, &Tensor::from_f32([3], vec![1.0, 2.0, 3.0]).unwrap()).unwrap();
            let refs: Vec<(NodeId, &Tensor)> = feeds.iter().map(|(i, t)| (*i, t)).collect();
            let out = exe.run(&refs).unwrap();
            let finite = out[0].as_bool().unwrap()[0];
            assert_eq!(finite, bad.is_finite(), "skip {skip}, clip {clip:?}, c[1] = {bad}");
            let w = out[1].as_f32().unwrap();
            if !finite && skip {
                assert_eq!(w, &[1.0, 2.0, 3.0], "a skipped step keeps the weights");
                for m in &out[2..] {
                    assert_eq!(m.as_f32().unwrap(), &[0.0; 3], "a skipped step keeps the moments");
                }
            } else if !finite {
                assert!(!w[1].is_finite(), "without skipping the bad gradient reaches w: {w:?}");
            } else {
                assert!(w.iter().zip([1.0, 2.0, 3.0]).all(|(a, b)| (a - b).abs() > 1e-3), "{w:?}");
            }
        }
    }
}

/// Loss scaling: with a scale of 1024 the step (clipped, so the gradients must be unscaled
/// before the clip) equals the unscaled one and the reported loss is the unscaled loss; a
/// scale that overflows the gradients clears `finite`, and with `skip_nonfinite` the weights
/// stay as they were.
#[test]
fn loss_scaling_unscales_before_the_update_and_flags_overflow() {
    let x: Vec<f32> = rlx_test_support::uniform(4 * 3, 41, 2.0);
    let y: Vec<f32> = rlx_test_support::uniform(4, 42, 2.0);
    let w0 = vec![0.25f32, -0.5, 1.0];
    // (outputs: loss, finite, new w, grad norm) of one AdamW step, scaled by `scale` if any.
    let run = |scale: Option<f32>| -> Vec<Tensor> {
        let mut g = Graph::new("scaled");
        let opts = StepOpts {
            clip_grad_norm: Some(0.5),
            skip_nonfinite: true,
            loss_scale: scale.is_some(),
            ..Optimizer::adamw().into()
        };
        let step = g
            .train_step(0, &[("w", &[3, 1])], opts, |g, w| {
                let xi = g.input("x", &[4, 3], DType::F32)?;
                let yi = g.input("y", &[4, 1], DType::F32)?;
                let p = g.matmul(xi, w[0])?;
                g.mse(p, yi)
            })
            .unwrap();
        g.set_outputs(&[step.loss, step.finite, step.updated[0], step.grad_norm.unwrap()]).unwrap();
        let id = |name: &str| g.inputs().into_iter().find(|(n, _, _)| *n == name).unwrap().1;
        let mut feeds = vec![
            (id("x"), Tensor::from_f32([4, 3], x.clone()).unwrap()),
            (id("y"), Tensor::from_f32([4, 1], y.clone()).unwrap()),
        ];
        for (n, v) in Optimizer::adamw().scalars(1, 0.1).unwrap() {
            feeds.push((id(n), v));
        }
        if let Some(s) = scale {
            feeds.push((id(rlx_nn::optim::LOSS_SCALE_INPUT), Tensor::scalar_f32(s)));
        }
        let mut exe = rlx_cpu::CpuBackend::new().compile(&g, &Default::default()).unwrap();
        let w_id = g.states().into_iter().find(|(n, _, _)| *n == "w@0").unwrap().1;
        exe.set_param(w_id, &Tensor::from_f32([3, 1], w0.clone()).unwrap()).unwrap();
        let refs: Vec<(NodeId, &Tensor)> = feeds.iter().map(|(i, t)| (*i, t)).collect();
        exe.run(&refs).unwrap()
    };
    let plain = run(None);
    let scaled = run(Some(1024.0));
    assert!(plain[1].as_bool().unwrap()[0] && scaled[1].as_bool().unwrap()[0]);
    for (i, what) in [(0, "loss"), (2, "new weights"), (3, "grad norm")] {
        let (a, b) = (plain[i].to_f64_vec(), scaled[i].to_f64_vec());
        for (p, s) in a.iter().zip(&b) {
            assert!((p - s).abs() <= 1e-6 * (1.0 + p.abs()), "{what}: unscaled {a:?} vs scaled {b:?}");
        }
    }
    assert_ne!(plain[2].as_f32().unwrap(), &w0[..], "the step moved the weights");
    let over = run(Some(1e38));
    assert!(!over[1].as_bool().unwrap()[0], "a scale of 1e38 overflows the gradients");
    assert_eq!(over[2].as_f32().unwrap(), &w0[..], "the skipped step keeps the weights");
    assert_eq!(over[0].to_f64_vec(), plain[0].to_f64_vec(), "the loss is reported unscaled");
}

/// MultipleNegativesRankingLoss against sentence-transformers' definition computed on the
/// host (cosine scores × scale, cross-entropy with anchor i's positive at column i), with hard
/// negatives after the positives; its gradients by finite differences.
#[test]
fn multiple_negatives_ranking_loss() {
    let (b, m, d) = (3, 5, 4);
    let a: Vec<f32> = rlx_test_support::uniform(b * d, 31, 1.0);
    let c: Vec<f32> = rlx_test_support::uniform(m * d, 32, 1.0);
    let mut g = Graph::new("mnrl");
    let an = g.input("a", &[b, d], DType::F32).unwrap();
    let cn = g.input("c", &[m, d], DType::F32).unwrap();
    let l = g.multiple_negatives_ranking(an, cn, 20.0).unwrap();
    g.set_outputs(&[l]).unwrap();
    let got = run_scalar(
        &g,
        &[
            (an, Tensor::from_f32([b, d], a.clone()).unwrap()),
            (cn, Tensor::from_f32([m, d], c.clone()).unwrap()),
        ],
    );
    let unit = |v: &[f32]| {
        let n = v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
        v.iter().map(|x| *x as f64 / n).collect::<Vec<f64>>()
    };
    let mut want = 0.0;
    for i in 0..b {
        let ai = unit(&a[i * d..(i + 1) * d]);
        let s: Vec<f64> = (0..m)
            .map(|j| 20.0 * unit(&c[j * d..(j + 1) * d]).iter().zip(&ai).map(|(x, y)| x * y).sum::<f64>())
            .collect();
        let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = mx + s.iter().map(|x| (x - mx).exp()).sum::<f64>().ln();
        want += (lse - s[i]) / b as f64;
    }
    assert!((got - want).abs() <= 1e-5 * want.abs(), "{got} vs {want}");

    let mut ch = Check::new("grad_mnrl");
    let an = ch.var("a", &[b, d], -1.0, 1.0);
    let cn = ch.var("c", &[m, d], -1.0, 1.0);
    let l = ch.g.multiple_negatives_ranking(an, cn, 5.0).unwrap();
    ch.run(l);

    let mut g = Graph::new("mnrl_bad");
    let an = g.input("a", &[4, 3], DType::F32).unwrap();
    let cn = g.input("c", &[2, 3], DType::F32).unwrap();
    let e = g.multiple_negatives_ranking(an, cn, 20.0).unwrap_err();
    assert!(e.to_string().contains("M ≥ B"), "{e}");
}
