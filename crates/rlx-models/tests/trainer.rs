//! The training driver ([`rlx_models::Trainer`]) on linear regression: the loss goes down
//! under AdamW with a warmup-cosine schedule, the weights read back equal AdamW computed on the
//! host (the warmup's first step at rate 0 included), a resumed checkpoint continues bit for
//! bit, every checkpoint error names its cause, a non-finite step is an error without loss
//! scaling and a skipped step with it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use rlx_ir::{DType, Tensor};
use rlx_models::{Device, ModelError, StepReport, TrainConfig, Trainer};
use rlx_nn::{Decay, GradScaler, LossExt, LrSchedule, Optimizer, StepOpts};
use rlx_runtime::Session;

const N: usize = 8;
const ADAMW: Optimizer = Optimizer::AdamW { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01 };

fn weights() -> Vec<(String, Vec<usize>)> {
    vec![("w".to_string(), vec![3, 1]), ("b".to_string(), vec![1])]
}

fn config(opt: Optimizer, schedule: LrSchedule, scaler: Option<GradScaler>) -> TrainConfig {
    TrainConfig { opts: opt.into(), schedule, loss_scale: scaler, compile: Default::default() }
}

fn cosine(base: f32, warmup: u64, total: u64) -> LrSchedule {
    LrSchedule { base, warmup, total, kind: Decay::Cosine }
}

/// `pred = x·w + b`, `loss = mse(pred, y)` over a batch of 8 rows of 3 features.
fn linreg(session: &Session, cfg: TrainConfig) -> Trainer {
    linreg_named(session, &weights(), cfg)
}

fn linreg_named(session: &Session, weights: &[(String, Vec<usize>)], cfg: TrainConfig) -> Trainer {
    let mut tr = Trainer::new(session, "linreg", weights, cfg, |g, p| {
        let x = g.input("x", &[N, 3], DType::F32)?;
        let y = g.input("y", &[N, 1], DType::F32)?;
        let pred = g.matmul(x, p[0])?;
        let pred = g.add(pred, p[1])?;
        g.mse(pred, y)
    })
    .unwrap();
    if weights.iter().any(|(n, _)| n == "w") {
        tr.set_weight("w", &Tensor::from_f32([3, 1], vec![0.1, -0.2, 0.3]).unwrap()).unwrap();
    }
    tr
}

/// Batch `i`: x uniform in ±1, y = x·(1, −2, 0.5) + 0.3 + a little noise.
fn batch(i: u64) -> (Vec<f32>, Vec<f32>) {
    let x = rlx_test_support::uniform(N * 3, 100 + i, 1.0);
    let noise = rlx_test_support::uniform(N, 200 + i, 0.05);
    let y = (0..N).map(|r| x[r * 3] - 2.0 * x[r * 3 + 1] + 0.5 * x[r * 3 + 2] + 0.3 + noise[r]).collect();
    (x, y)
}

fn step(tr: &mut Trainer, i: u64) -> StepReport {
    try_step(tr, i).unwrap()
}

fn try_step(tr: &mut Trainer, i: u64) -> rlx_models::Result<StepReport> {
    let (x, y) = batch(i);
    tr.step(&[("x", &x), ("y", &y)])
}

fn flat(tr: &mut Trainer) -> Vec<f32> {
    tr.weights().unwrap().into_iter().flat_map(|(_, t)| t.as_f32().unwrap().to_vec()).collect()
}

/// AdamW on the host in f64 over `w` (3 weights then the bias): the gradient of the mse.
struct HostAdamW {
    p: Vec<f64>,
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

impl HostAdamW {
    fn step(&mut self, i: u64, lr: f64) {
        let (x, y) = batch(i);
        let mut g = [0.0f64; 4];
        for r in 0..N {
            // The features and a 1 for the bias.
            let f = [x[r * 3] as f64, x[r * 3 + 1] as f64, x[r * 3 + 2] as f64, 1.0];
            let pred: f64 = f.iter().zip(&self.p).map(|(a, b)| a * b).sum();
            let d = 2.0 * (pred - y[r] as f64) / N as f64;
            for (gc, fc) in g.iter_mut().zip(f) {
                *gc += d * fc;
            }
        }
        self.t += 1;
        let (b1, b2, eps, wd) = (0.9f64, 0.999f64, 1e-8f64, 0.01f64);
        let (c1, c2) = (1.0 - b1.powi(self.t), 1.0 - b2.powi(self.t));
        for (((p, m), v), g) in self.p.iter_mut().zip(&mut self.m).zip(&mut self.v).zip(g) {
            *p *= 1.0 - lr * wd;
            *m = b1 * *m + (1.0 - b1) * g;
            *v = b2 * *v + (1.0 - b2) * g * g;
            *p -= lr * (*m / c1) / ((*v / c2).sqrt() + eps);
        }
    }
}

/// On `device`: 3 steps against host AdamW (the first at rate 0: weights unchanged, moments
/// filled), then the loss goes down over 60 steps of warmup-cosine.
fn trains_and_matches_host_adamw(device: Device) {
    let Some(session) = rlx_test_support::open(device, "trainer") else { return };
    let schedule = cosine(0.2, 2, 60);
    let mut tr = linreg(&session, config(ADAMW, schedule, None));
    let w0 = flat(&mut tr);
    assert_eq!(w0, [0.1, -0.2, 0.3, 0.0]);
    let mut host =
        HostAdamW { p: w0.iter().map(|&x| x as f64).collect(), m: vec![0.0; 4], v: vec![0.0; 4], t: 0 };
    let first = step(&mut tr, 0);
    assert_eq!((first.step, first.lr, first.skipped, first.grad_norm), (1, 0.0, false, None));
    assert_eq!(flat(&mut tr), w0, "{device}: a step at rate 0 leaves the weights exactly");
    host.step(0, 0.0);
    for i in 1..3 {
        let r = step(&mut tr, i);
        assert_eq!(r.lr, schedule.lr(i + 1));
        host.step(i, r.lr as f64);
        let got = flat(&mut tr);
        for (a, b) in got.iter().zip(&host.p) {
            assert!(
                (*a as f64 - b).abs() <= 1e-5 * (1.0 + b.abs()),
                "{device} step {}: {got:?} vs {:?}",
                i + 1,
                host.p
            );
        }
    }
    let mut losses = vec![first.loss];
    for i in 3..60 {
        losses.push(step(&mut tr, i).loss);
    }
    assert_eq!(tr.steps(), 60);
    // The batches differ, so the loss is noisy: the mean of the last 5 against the first.
    let (start, end) = (losses[0], losses[55..].iter().sum::<f32>() / 5.0);
    assert!(end < 0.05 * start, "{device}: the loss went from {start} to {end}: {losses:?}");
}

support::device_tests!(trains_and_matches_host_adamw => trains_on_cpu, trains_on_vulkan, trains_on_wgpu);

/// On `device`, compiled with `Precision::Mixed` and PyTorch's default loss scaler: the loss
/// goes down, every step reports the scale it used, and a skipped step (if the scaled
/// gradients overflow) halves the scale.
fn mixed_precision_with_loss_scaling(device: Device) {
    let Some(session) = rlx_test_support::open(device, "trainer mixed") else { return };
    let mut cfg = config(ADAMW, cosine(0.2, 2, 60), Some(GradScaler::default()));
    cfg.compile.precision = rlx_runtime::Precision::Mixed;
    let mut tr = linreg(&session, cfg);
    let mut losses = Vec::new();
    for i in 0..60 {
        let before = tr.loss_scale().unwrap();
        let r = step(&mut tr, i);
        assert_eq!(r.loss_scale, Some(before));
        let after = tr.loss_scale().unwrap();
        assert_eq!(after, if r.skipped { before / 2.0 } else { before }, "{device} step {}", r.step);
        losses.push(r.loss);
    }
    let (start, end) = (losses[0], losses[55..].iter().sum::<f32>() / 5.0);
    assert!(end < 0.05 * start, "{device}: the loss went from {start} to {end}: {losses:?}");
}

support::device_tests!(mixed_precision_with_loss_scaling => mixed_on_cpu, mixed_on_vulkan, mixed_on_wgpu);

fn cpu() -> Session {
    rlx_test_support::open(Device::Cpu, "trainer").unwrap()
}

/// A fresh folder for test `test`'s files (removed by the test when it passes).
fn tmp_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-trainer-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Save after 3 steps, resume in a fresh trainer, 3 more steps: bit-equal to 6 in a row, with
/// clipping and a loss scaler whose state is carried too.
#[test]
fn a_resumed_checkpoint_continues_bit_for_bit() {
    let session = cpu();
    let cfg = || {
        let mut c = config(ADAMW, cosine(0.05, 2, 10), Some(GradScaler::new(1024.0, 2.0, 0.5, 2).unwrap()));
        c.opts = StepOpts { clip_grad_norm: Some(1.0), ..c.opts };
        c
    };
    let mut straight = linreg(&session, cfg());
    let reports: Vec<StepReport> = (0..6).map(|i| step(&mut straight, i)).collect();
    assert!(reports.iter().all(|r| !r.skipped && r.grad_norm.is_some()));
    assert_eq!(reports[2].loss_scale, Some(2048.0), "the scale grows after 2 good steps");

    let mut first = linreg(&session, cfg());
    for i in 0..3 {
        step(&mut first, i);
    }
    let dir = tmp_dir("resume");
    let path = dir.join("resume.safetensors");
    first.save_checkpoint(&path).unwrap();
    let mut second = linreg(&session, cfg());
    second.resume(&path).unwrap();
    assert_eq!(second.steps(), 3);
    assert_eq!(second.loss_scale(), first.loss_scale());
    assert_eq!(flat(&mut second), flat(&mut first));
    let resumed: Vec<StepReport> = (3..6).map(|i| step(&mut second, i)).collect();
    assert_eq!(resumed, reports[3..], "the resumed steps report what the straight run did");
    assert_eq!(flat(&mut second), flat(&mut straight), "bit-equal weights after 6 steps");
    // And the moments: one more step on each stays equal.
    assert_eq!(step(&mut second, 6), step(&mut straight, 6));
    assert_eq!(flat(&mut second), flat(&mut straight));
    std::fs::remove_dir_all(dir).unwrap();
}

fn resume_err(tr: &mut Trainer, path: &std::path::Path) -> (ModelError, String) {
    let e = tr.resume(path).unwrap_err();
    let text = e.to_string();
    (e, text)
}

#[test]
fn checkpoint_errors_name_their_cause_and_leave_the_trainer_alone() {
    let session = cpu();
    let cfg = || config(ADAMW, LrSchedule::constant(0.01, 100), None);
    let mut tr = linreg(&session, cfg());
    step(&mut tr, 0);
    let dir = tmp_dir("errors");
    let tmp = |name: &str| dir.join(name);
    let good = tmp("good.safetensors");
    tr.save_checkpoint(&good).unwrap();
    let before = flat(&mut tr);

    let (e, text) = resume_err(&mut tr, &tmp("absent.safetensors"));
    assert!(matches!(e, ModelError::Io { .. }) && text.contains("absent.safetensors"), "{text}");

    let junk = tmp("junk.safetensors");
    std::fs::write(&junk, b"this is not a safetensors file at all").unwrap();
    let (e, text) = resume_err(&mut tr, &junk);
    assert!(matches!(e, ModelError::Safetensors { .. }) && text.contains("junk.safetensors"), "{text}");

    // A plain weights file (no trainer metadata).
    let plain = tmp("plain.safetensors");
    let bytes: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![3, 1], &bytes).unwrap();
    safetensors::serialize_to_file([("w", view)], None, &plain).unwrap();
    let (_, text) = resume_err(&mut tr, &plain);
    assert!(text.contains("not a trainer checkpoint"), "{text}");

    // A trainer with a weight the checkpoint lacks.
    let mut other = linreg_named(&session, &[("w".into(), vec![3, 1]), ("bias".into(), vec![1])], cfg());
    let (e, text) = resume_err(&mut other, &good);
    assert!(matches!(e, ModelError::TrainCheckpoint { .. }), "{text}");
    assert!(text.contains("'bias'") && text.contains("missing"), "{text}");

    // A weight of another shape: the tensor, both shapes and the fix.
    let mut wide =
        Trainer::new(&session, "wide", &[("w".into(), vec![3, 2]), ("b".into(), vec![1])], cfg(), |g, p| {
            let s = g.sum(p[0], &[0, 1], false)?;
            let b = g.sum(p[1], &[0], false)?;
            g.add(s, b)
        })
        .unwrap();
    let (_, text) = resume_err(&mut wide, &good);
    assert!(
        text.contains("'w'")
            && text.contains("[3, 1]")
            && text.contains("[3, 2]")
            && text.contains("resume with"),
        "{text}"
    );

    // Another optimizer.
    let mut sgd = linreg(&session, config(Optimizer::sgd(0.9), LrSchedule::constant(0.01, 100), None));
    let (_, text) = resume_err(&mut sgd, &good);
    assert!(text.contains("optimizer") && text.contains("AdamW") && text.contains("Sgd"), "{text}");

    // Every failure left the trainer as it was.
    assert_eq!(tr.steps(), 1);
    assert_eq!(flat(&mut tr), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without loss scaling a non-finite step is an error naming the step and the fixes, and the
/// weights stay the pre-step ones; the next good step goes on from them.
#[test]
fn a_non_finite_step_without_loss_scaling_is_an_error() {
    let session = cpu();
    let mut tr = linreg(&session, config(ADAMW, LrSchedule::constant(0.01, 100), None));
    step(&mut tr, 0);
    let before = flat(&mut tr);
    let (mut x, y) = batch(1);
    x[4] = f32::INFINITY;
    let e = tr.step(&[("x", &x), ("y", &y)]).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ModelError::NonFiniteStep { step: 2, .. }), "{text}");
    assert!(
        text.contains("step 2") && text.contains("loss scaling") && text.contains("learning rate"),
        "{text}"
    );
    assert_eq!(tr.steps(), 1);
    assert_eq!(flat(&mut tr), before);
    let r = step(&mut tr, 1);
    assert_eq!(r.step, 2);
    assert_ne!(flat(&mut tr), before);
}

/// With loss scaling, a scale that overflows the gradients skips the step (weights kept), the
/// scale backs off, and the next step is the first update (neither AdamW's count nor the
/// schedule includes the skipped step, as with PyTorch's GradScaler and transformers'
/// Trainer): it equals one unscaled step, on a warmup schedule too.
#[test]
fn an_overflowing_loss_scale_skips_the_step_and_backs_off() {
    let session = cpu();
    let scaler = GradScaler::new(3e38, 2.0, 2f32.powi(-100), 2000).unwrap();
    let schedule = LrSchedule { base: 0.01, warmup: 1, total: 100, kind: Decay::Linear };
    let mut tr = linreg(&session, config(ADAMW, schedule, Some(scaler)));
    let before = flat(&mut tr);
    let r = step(&mut tr, 0);
    assert!(r.skipped && r.loss.is_finite(), "{r:?}");
    assert_eq!(r.loss_scale, Some(3e38));
    assert_eq!(flat(&mut tr), before, "a skipped step keeps the weights");
    let backed_off = 3e38 * 2f32.powi(-100);
    assert_eq!(tr.loss_scale(), Some(backed_off));
    let r = step(&mut tr, 0);
    assert!(!r.skipped && r.step == 2 && r.loss_scale == Some(backed_off), "{r:?}");

    let mut plain = linreg(&session, config(ADAMW, schedule, None));
    // Rate 0 (the warmup's first step) on both: the skipped step did not advance the schedule.
    assert_eq!(r.lr, 0.0);
    step(&mut plain, 0);
    let r = step(&mut tr, 1);
    assert_eq!((r.step, r.lr), (3, schedule.lr(2)));
    step(&mut plain, 1);
    let (a, b) = (flat(&mut tr), flat(&mut plain));
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()), "scaled {a:?} vs plain {b:?}");
    }
    assert_ne!(a, before);
}

#[test]
fn bad_settings_and_weights_are_errors() {
    let session = cpu();
    for base in [0.0, f32::NAN] {
        let cfg = config(ADAMW, LrSchedule::constant(base, 10), None);
        let e =
            Trainer::new(&session, "bad", &weights(), cfg, |g, p| g.sum(p[0], &[0, 1], false)).unwrap_err();
        assert!(e.to_string().contains("learning rate"), "{e}");
    }
    let cfg = config(
        Optimizer::AdamW { beta1: 1.5, beta2: 0.9, eps: 1e-8, weight_decay: 0.0 },
        LrSchedule::constant(0.1, 10),
        None,
    );
    let e = Trainer::new(&session, "bad", &weights(), cfg, |g, p| g.sum(p[0], &[0, 1], false)).unwrap_err();
    assert!(e.to_string().contains("beta1"), "{e}");
    let cfg = || config(ADAMW, LrSchedule::constant(0.1, 10), None);
    let e = Trainer::new(&session, "none", &[], cfg(), |g, _| g.scalar(0.0)).unwrap_err();
    assert!(e.to_string().contains("no weights"), "{e}");
    let mut tr = linreg(&session, cfg());
    let e = tr.set_weight("w", &Tensor::from_f32([1, 3], vec![0.0; 3]).unwrap()).unwrap_err();
    assert!(matches!(e, ModelError::WrongShape { .. }) && e.to_string().contains("[3, 1]"), "{e}");
    let e = tr.set_weight("nope", &Tensor::from_f32([1], vec![0.0]).unwrap()).unwrap_err();
    assert!(e.to_string().contains("'nope'") && e.to_string().contains("w, b"), "{e}");
    // A weight set between steps lands where the next step reads it.
    step(&mut tr, 0);
    tr.set_weight("b", &Tensor::from_f32([1], vec![7.0]).unwrap()).unwrap();
    assert_eq!(tr.weights().unwrap()[1].1.as_f32().unwrap(), &[7.0]);
}
