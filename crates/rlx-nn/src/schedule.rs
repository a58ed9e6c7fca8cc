//! Host-side training state that is not a graph: the learning-rate schedule
//! ([`LrSchedule`], transformers' warmup schedules) and the dynamic loss scaler
//! ([`GradScaler`], `torch.cuda.amp.GradScaler`). Both give per-step numbers the host feeds to
//! a training step as run-time scalars ([`crate::optim::LR_INPUT`],
//! [`crate::optim::LOSS_SCALE_INPUT`]), so neither ever recompiles a graph.

use rlx_ir::{IrError, Shape};

/// How the rate decays after the warmup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decay {
    /// `get_constant_schedule_with_warmup`: the base rate after the warmup.
    Constant,
    /// `get_linear_schedule_with_warmup`: linearly down to 0 at step `total`.
    Linear,
    /// `get_cosine_schedule_with_warmup` (half a cycle): a cosine from the base rate down to 0
    /// at step `total`.
    Cosine,
}

/// A learning-rate schedule with linear warmup, with the semantics of transformers'
/// `get_{constant,linear,cosine}_schedule_with_warmup`. The rate of step `t` (counted from 1,
/// as [`crate::Optimizer::scalars`] counts) is `base · λ(t − 1)`: PyTorch's scheduler gives the
/// k-th `optimizer.step()` (k from 0) the factor λ(k).
///
/// The factor is 0 where transformers' is: at the first step of a warmup (λ(0) = 0 for
/// `warmup > 0`), for `Linear` from step `total + 1` on, and for `Cosine` at step
/// `total + 1` (past it transformers' half cycle climbs again, and so does this). A rate of exactly 0
/// is a real step, as in PyTorch: the optimizer's moments take the gradient and the weights
/// stay as they are (w·(1 − 0·wd) − 0·u = w); `Optimizer::scalars` takes it. A user's own
/// base rate of 0 (always a mistake) is refused by [`LrSchedule::check`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LrSchedule {
    /// The peak rate, reached at the end of the warmup (finite, > 0).
    pub base: f32,
    /// Warmup steps (≤ `total`); 0 starts at the base rate.
    pub warmup: u64,
    /// Training steps in all (≥ 1): where `Linear` and `Cosine` reach 0.
    pub total: u64,
    /// The shape after the warmup.
    pub kind: Decay,
}

impl LrSchedule {
    /// The base rate for `total` steps, no warmup, no decay.
    pub fn constant(base: f32, total: u64) -> LrSchedule {
        LrSchedule { base, warmup: 0, total, kind: Decay::Constant }
    }

    /// Refuses a base rate that is not finite and > 0, a warmup longer than `total`, and a
    /// `total` of 0.
    pub fn check(&self) -> Result<(), IrError> {
        let bad = |attr: &'static str, reason: String| {
            Err(IrError::Attribute { op: "lr_schedule", attr, shape: Shape::scalar(), reason })
        };
        if !(self.base.is_finite() && self.base > 0.0) {
            return bad("base", format!("learning rate {}: use a finite rate > 0", self.base));
        }
        if self.total == 0 {
            return bad("total", "0 steps: the schedule needs at least one step".into());
        }
        if self.warmup > self.total {
            return bad(
                "warmup",
                format!(
                    "{} warmup steps exceed the {} steps in all; shorten the warmup",
                    self.warmup, self.total
                ),
            );
        }
        Ok(())
    }

    /// The rate of step `t` (from 1; `t = 0` is taken as 1): `base · λ(t − 1)`, in [0, base].
    pub fn lr(&self, t: u64) -> f32 {
        (self.base as f64 * self.factor(t.saturating_sub(1))) as f32
    }

    /// transformers' λ(k), k counted from 0, in f64.
    fn factor(&self, k: u64) -> f64 {
        let (k, warmup, total) = (k as f64, self.warmup as f64, self.total as f64);
        if k < warmup {
            return k / warmup.max(1.0);
        }
        let progress = (k - warmup) / (total - warmup).max(1.0);
        match self.kind {
            Decay::Constant => 1.0,
            Decay::Linear => ((total - k) / (total - warmup).max(1.0)).max(0.0),
            Decay::Cosine => (0.5 * (1.0 + (std::f64::consts::PI * progress).cos())).max(0.0),
        }
    }
}

/// Dynamic loss scaling with `torch.cuda.amp.GradScaler`'s semantics: the loss is multiplied
/// by [`GradScaler::scale`] before the backward; after each step [`GradScaler::update`] is told
/// whether the (scaled) gradients were finite. A non-finite step (skipped) multiplies the
/// scale by the backoff factor and restarts the count of good steps; `growth_interval` finite
/// steps in a row multiply it by the growth factor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScaler {
    scale: f32,
    growth_factor: f32,
    backoff_factor: f32,
    growth_interval: u64,
    good_steps: u64,
}

impl Default for GradScaler {
    /// PyTorch's defaults: scale 65536 (2¹⁶), growth 2, backoff 0.5, growth interval 2000.
    fn default() -> Self {
        GradScaler {
            scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            good_steps: 0,
        }
    }
}

impl GradScaler {
    /// A scaler starting at `init_scale` (finite, > 0) that grows by `growth_factor` (> 1)
    /// after `growth_interval` (≥ 1) finite steps in a row and backs off by `backoff_factor`
    /// (in (0, 1)) on a non-finite one.
    pub fn new(
        init_scale: f32,
        growth_factor: f32,
        backoff_factor: f32,
        growth_interval: u64,
    ) -> Result<GradScaler, IrError> {
        let bad = |attr: &'static str, reason: String| {
            Err(IrError::Attribute { op: "grad_scaler", attr, shape: Shape::scalar(), reason })
        };
        if !(init_scale.is_finite() && init_scale > 0.0) {
            return bad("init_scale", format!("{init_scale}: use a finite scale > 0 (PyTorch: 65536)"));
        }
        if !(growth_factor.is_finite() && growth_factor > 1.0) {
            return bad("growth_factor", format!("{growth_factor}: use a finite factor > 1 (PyTorch: 2)"));
        }
        if !(backoff_factor > 0.0 && backoff_factor < 1.0) {
            return bad("backoff_factor", format!("{backoff_factor}: use a factor in (0, 1) (PyTorch: 0.5)"));
        }
        if growth_interval == 0 {
            return bad("growth_interval", "0: use at least 1 step (PyTorch: 2000)".into());
        }
        Ok(GradScaler { scale: init_scale, growth_factor, backoff_factor, growth_interval, good_steps: 0 })
    }

    /// The scale to multiply this step's loss by.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Finite steps in a row since the last change of the scale (PyTorch's growth tracker).
    pub fn good_steps(&self) -> u64 {
        self.good_steps
    }

    /// Puts back a scale and growth count saved from [`GradScaler::scale`] and
    /// [`GradScaler::good_steps`] (resuming from a checkpoint). The scale must be finite and
    /// > 0.
    pub fn restore(&mut self, scale: f32, good_steps: u64) -> Result<(), IrError> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(IrError::Attribute {
                op: "grad_scaler",
                attr: "scale",
                shape: Shape::scalar(),
                reason: format!("{scale}: a saved scale must be finite and > 0"),
            });
        }
        self.scale = scale;
        self.good_steps = good_steps.min(self.growth_interval.saturating_sub(1));
        Ok(())
    }

    /// After a step: `finite` is whether its scaled gradients were all finite.
    pub fn update(&mut self, finite: bool) {
        if !finite {
            self.scale *= self.backoff_factor;
            self.good_steps = 0;
            return;
        }
        self.good_steps += 1;
        if self.good_steps >= self.growth_interval {
            let grown = self.scale * self.growth_factor;
            // PyTorch keeps the scale where growing it would overflow.
            if grown.is_finite() {
                self.scale = grown;
            }
            self.good_steps = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(warmup: u64, total: u64, kind: Decay) -> LrSchedule {
        LrSchedule { base: 1.0, warmup, total, kind }
    }

    #[test]
    fn warmup_and_decay_follow_transformers() {
        // Step t uses λ(t − 1): warmup 2 of 6 gives 0, 0.5, then the decay.
        let lin = sched(2, 6, Decay::Linear);
        let got: Vec<f32> = (1..=8).map(|t| lin.lr(t)).collect();
        assert_eq!(got, [0.0, 0.5, 1.0, 0.75, 0.5, 0.25, 0.0, 0.0]);
        let constant = sched(2, 6, Decay::Constant);
        let got: Vec<f32> = (1..=8).map(|t| constant.lr(t)).collect();
        assert_eq!(got, [0.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        let cos = sched(2, 6, Decay::Cosine);
        // Progress (k − 2)/4 for k = 2..: 0.5·(1 + cos(π·p)).
        for (t, want) in [(3, 1.0), (4, 0.853_553_4), (5, 0.5), (6, 0.146_446_6), (7, 0.0), (9, 0.5)] {
            let got = cos.lr(t);
            assert!((got - want).abs() < 1e-6, "cosine step {t}: {got} vs {want}");
        }
        assert_eq!(cos.lr(1), 0.0);
        // No warmup: the first step has the base rate.
        let s = LrSchedule { base: 3e-4, warmup: 0, total: 10, kind: Decay::Cosine };
        assert_eq!(s.lr(1), 3e-4);
    }

    #[test]
    fn bad_schedules_are_refused() {
        for (s, attr) in [
            (LrSchedule { base: 0.0, ..sched(0, 5, Decay::Linear) }, "base"),
            (LrSchedule { base: f32::NAN, ..sched(0, 5, Decay::Linear) }, "base"),
            (LrSchedule { base: -1.0, ..sched(0, 5, Decay::Linear) }, "base"),
            (sched(6, 5, Decay::Cosine), "warmup"),
            (sched(0, 0, Decay::Constant), "total"),
        ] {
            match s.check() {
                Err(IrError::Attribute { attr: a, .. }) => assert_eq!(a, attr, "{s:?}"),
                other => panic!("{s:?}: {other:?}"),
            }
        }
        assert!(sched(5, 5, Decay::Linear).check().is_ok());
    }

    #[test]
    fn grad_scaler_backs_off_and_grows_like_torch() {
        let mut s = GradScaler::default();
        assert_eq!(s.scale(), 65536.0);
        s.update(false);
        assert_eq!(s.scale(), 32768.0);
        for _ in 0..1999 {
            s.update(true);
        }
        assert_eq!((s.scale(), s.good_steps()), (32768.0, 1999));
        s.update(true);
        assert_eq!((s.scale(), s.good_steps()), (65536.0, 0));
        // A non-finite step restarts the count.
        let mut s = GradScaler::new(8.0, 2.0, 0.25, 3).unwrap();
        s.update(true);
        s.update(true);
        s.update(false);
        assert_eq!((s.scale(), s.good_steps()), (2.0, 0));
        s.update(true);
        s.update(true);
        assert_eq!(s.scale(), 2.0);
        s.update(true);
        assert_eq!(s.scale(), 4.0);
        // Growth that would overflow keeps the scale.
        let mut s = GradScaler::new(f32::MAX, 2.0, 0.5, 1).unwrap();
        s.update(true);
        assert_eq!(s.scale(), f32::MAX);
    }

    #[test]
    fn bad_scalers_are_refused() {
        assert!(GradScaler::new(0.0, 2.0, 0.5, 10).is_err());
        assert!(GradScaler::new(1.0, 1.0, 0.5, 10).is_err());
        assert!(GradScaler::new(1.0, 2.0, 1.0, 10).is_err());
        assert!(GradScaler::new(1.0, 2.0, 0.5, 0).is_err());
        let mut s = GradScaler::default();
        assert!(s.restore(f32::INFINITY, 0).is_err());
        s.restore(1024.0, 7).unwrap();
        assert_eq!((s.scale(), s.good_steps()), (1024.0, 7));
    }
}
