//! The optimizer's host side and per-weight decay: `Optimizer::scalars` at rate 0 and its
//! refusals, and one AdamW/SGD step run on the CPU with a weight exempt from weight decay
//! (`StepOpts::decay`) against the same step without decay.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_nn::optim::{BIAS1_INPUT, BIAS2_INPUT, LR_INPUT};
use rlx_nn::Optimizer;

fn value(scalars: &[(&'static str, rlx_ir::Tensor)], name: &str) -> f32 {
    let (_, t) = scalars.iter().find(|(n, _)| *n == name).unwrap();
    t.as_f32().unwrap()[0]
}

#[test]
fn scalars_take_a_rate_of_zero_with_the_right_bias_corrections() {
    let opt = Optimizer::AdamW { beta1: 0.9, beta2: 0.99, eps: 1e-8, weight_decay: 0.01 };
    for t in [1u64, 2, 7] {
        let s = opt.scalars(t, 0.0).unwrap();
        let names: Vec<&str> = s.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, [LR_INPUT, BIAS1_INPUT, BIAS2_INPUT]);
        assert_eq!(value(&s, LR_INPUT), 0.0);
        // 1 − βᵗ in f64 of the f32 β, rounded to f32 (PyTorch's `1 - beta ** step`).
        let want1 = (1.0 - (0.9f32 as f64).powi(t as i32)) as f32;
        let want2 = (1.0 - (0.99f32 as f64).powi(t as i32)) as f32;
        assert_eq!(value(&s, BIAS1_INPUT), want1, "step {t}");
        assert_eq!(value(&s, BIAS2_INPUT), want2, "step {t}");
        // The corrections do not depend on the rate.
        let at_one = opt.scalars(t, 1.0).unwrap();
        assert_eq!(value(&at_one, BIAS1_INPUT), want1);
        assert_eq!(value(&at_one, BIAS2_INPUT), want2);
    }
    let sgd = Optimizer::sgd(0.9).scalars(1, 0.0).unwrap();
    assert_eq!(sgd.len(), 1);
    assert_eq!(value(&sgd, LR_INPUT), 0.0);
}

#[test]
fn scalars_refuse_nan_infinite_and_negative_rates_and_step_zero() {
    for opt in [Optimizer::adamw(), Optimizer::sgd(0.0)] {
        for (t, lr) in [(1, f32::NAN), (1, f32::INFINITY), (1, f32::NEG_INFINITY), (1, -1e-6), (0, 0.1)] {
            let e = opt.scalars(t, lr).unwrap_err().to_string();
            assert!(e.contains("learning rate") && e.contains("finite and ≥ 0"), "{lr} at {t}: {e}");
            assert!(e.contains(&format!("step {t}")), "{e}");
        }
    }
}
