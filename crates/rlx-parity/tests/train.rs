//! Training on every device: rlx-nn's two phase graphs (forward, backward and AdamW or SGD
//! update, weights and moments kept in states) compiled as a group and run for several steps.
//! Each device's losses and final weights follow the CPU's; the loss goes down. A GPU device
//! that cannot be opened skips loudly, unless RLX_REQUIRE_GPU=1 makes it fail.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_ir::{DType, Graph, NodeId, Op, Tensor};
use rlx_nn::prelude::*;
use rlx_nn::{state_name, train_graphs};
use rlx_runtime::{CompileOptions, Device, HostData};
use rlx_test_support::devices::{open, GPU_DEVICES};

const STEPS: usize = 6;

/// Linear regression y = x·w + b with the MSE; outputs: the loss and the updated w.
fn graphs(opt: Optimizer) -> [Graph; 2] {
    let gs = train_graphs("linreg", &[("w", &[4, 2]), ("b", &[2])], opt, |g, p| {
        let x = g.input("x", &[12, 4], DType::F32)?;
        let y = g.input("y", &[12, 2], DType::F32)?;
        let pred = g.matmul(x, p[0])?;
        let pred = g.add(pred, p[1])?;
        g.mse(pred, y)
    })
    .unwrap();
    let mut phase = 0;
    gs.map(|mut g| {
        // The write into the other phase's w.
        let dst = state_name("w", None, 1 - phase);
        phase += 1;
        let dst = g.states().into_iter().find(|(n, _, _)| *n == dst).map(|(_, id, _)| id).unwrap();
        let w_new = g.nodes().iter().position(|n| matches!(n.op, Op::WriteRows { .. }) && n.inputs[0] == dst);
        let loss = g.outputs()[0];
        g.set_outputs(&[loss, NodeId(w_new.unwrap() as u32)]).unwrap();
        g
    })
}

/// (losses per step, w after the last step) on `device`, or None when it does not open.
fn train(device: Device, opt: Optimizer, lr: f32) -> Option<(Vec<f32>, Vec<f32>)> {
    let session = open(device, "training")?;
    let gs = graphs(opt);
    let mut exes = session.compile_group(&[&gs[0], &gs[1]], &CompileOptions::default()).unwrap();
    let x = rlx_test_support::uniform(12 * 4, 21, 1.0);
    let y = rlx_test_support::uniform(12 * 2, 22, 1.0);
    let w0 = Tensor::from_f32([4, 2], rlx_test_support::uniform(8, 23, 0.5)).unwrap();
    exes[0].set_state(&state_name("w", None, 0), &w0).unwrap();
    let (mut losses, mut w) = (Vec::new(), Vec::new());
    for t in 1..=STEPS {
        let scalars = opt.scalars(t as u64, lr).unwrap();
        let mut feeds: Vec<(&str, &dyn HostData)> = vec![("x", &x), ("y", &y)];
        feeds.extend(scalars.iter().map(|(n, v)| (*n, v as &dyn HostData)));
        let out = exes[(t - 1) % 2].run(&feeds).unwrap();
        losses.push(out[0].to_f32_vec()[0]);
        w = out[1].to_f32_vec();
    }
    Some((losses, w))
}

fn rel(a: &[f32], b: &[f32]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).powi(2)).sum::<f64>().sqrt();
    let n: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum::<f64>().sqrt();
    d / n.max(1e-12)
}

#[test]
fn training_steps_follow_the_cpu_on_every_device() {
    for (opt, lr) in [(Optimizer::adamw(), 0.05), (Optimizer::sgd(0.9), 0.1)] {
        let (cpu_losses, cpu_w) = train(Device::Cpu, opt, lr).unwrap();
        assert!(cpu_losses[STEPS - 1] < 0.8 * cpu_losses[0], "{opt:?}: {cpu_losses:?}");
        for device in GPU_DEVICES {
            let Some((losses, w)) = train(device, opt, lr) else { continue };
            let (el, ew) = (rel(&losses, &cpu_losses), rel(&w, &cpu_w));
            assert!(
                el < 1e-5 && ew < 1e-5,
                "{device} {opt:?}: losses {losses:?} vs {cpu_losses:?} ({el:.1e}), w off by {ew:.1e}"
            );
            eprintln!("{device} {opt:?}: {STEPS} steps, losses within {el:.1e}, weights within {ew:.1e}");
        }
    }
}
