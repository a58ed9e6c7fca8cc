//! The optimizer's host side and per-weight decay: `Optimizer::scalars` at rate 0 and its
//! refusals, and one AdamW/SGD step run on the CPU with a weight exempt from weight decay
//! (`StepOpts::decay`) against the same step without decay.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_backend::Backend;
use rlx_ir::{DType, Graph, NodeId, Tensor};
use rlx_nn::optim::{BIAS1_INPUT, BIAS2_INPUT, LR_INPUT};
use rlx_nn::{state_name, transformers_decays, OptimExt, Optimizer, StepOpts};

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

/// One step of `opts` (phase 0) on two weights `a` [2, 3] and `b` [3] with the loss
/// Σ a·c₁ + Σ b·c₂ (gradients exactly c₁, c₂), run on the CPU: the updated `a` and `b`.
fn one_step(opts: StepOpts) -> (Graph, [Vec<f32>; 2]) {
    let mut g = Graph::new("decay");
    let step = g
        .train_step(0, &[("a", &[2, 3]), ("b", &[3])], opts.clone(), |g, w| {
            let c1 = g.input("c1", &[2, 3], DType::F32)?;
            let c2 = g.input("c2", &[3], DType::F32)?;
            let p1 = g.mul(w[0], c1)?;
            let p2 = g.mul(w[1], c2)?;
            let s1 = g.sum(p1, &[0, 1], false)?;
            let s2 = g.sum(p2, &[0], false)?;
            g.add(s1, s2)
        })
        .unwrap();
    g.set_outputs(&step.updated).unwrap();
    let id = |name: &str| -> NodeId {
        g.states().into_iter().chain(g.inputs()).find(|(n, _, _)| *n == name).map(|(_, id, _)| id).unwrap()
    };
    let mut exe = rlx_cpu::CpuBackend::new().compile(&g, &Default::default()).unwrap();
    exe.set_param(
        id(&state_name("a", None, 0)),
        &Tensor::from_f32([2, 3], vec![0.5, -1.25, 2.0, 0.0, 3.5, -0.75]).unwrap(),
    )
    .unwrap();
    exe.set_param(id(&state_name("b", None, 0)), &Tensor::from_f32([3], vec![1.5, -2.0, 0.25]).unwrap())
        .unwrap();
    let mut feeds: Vec<(NodeId, Tensor)> =
        opts.optimizer.scalars(1, 0.1).unwrap().into_iter().map(|(n, v)| (id(n), v)).collect();
    feeds.push((id("c1"), Tensor::from_f32([2, 3], vec![0.3, -0.2, 0.1, 1.5, -2.0, 0.0]).unwrap()));
    feeds.push((id("c2"), Tensor::from_f32([3], vec![-0.1, 0.4, 0.1]).unwrap()));
    let refs: Vec<(NodeId, &Tensor)> = feeds.iter().map(|(id, t)| (*id, t)).collect();
    let out = exe.run(&refs).unwrap();
    let w = |i: usize| out[i].as_f32().unwrap().to_vec();
    let updated = [w(0), w(1)];
    (g, updated)
}

fn with_decay(optimizer: Optimizer, decay: Option<Vec<bool>>) -> StepOpts {
    StepOpts { decay, ..optimizer.into() }
}

#[test]
fn a_weight_exempt_from_decay_updates_as_without_decay() {
    let cases = [
        (
            Optimizer::AdamW { beta1: 0.9, beta2: 0.99, eps: 1e-6, weight_decay: 0.1 },
            Optimizer::AdamW { beta1: 0.9, beta2: 0.99, eps: 1e-6, weight_decay: 0.0 },
        ),
        (
            Optimizer::Sgd { momentum: 0.9, weight_decay: 0.1 },
            Optimizer::Sgd { momentum: 0.9, weight_decay: 0.0 },
        ),
    ];
    for (decayed, plain) in cases {
        let (_, [a_plain, b_plain]) = one_step(plain.into());
        let (_, [a_all, b_all]) = one_step(with_decay(decayed, None));
        let (_, [a_mixed, b_mixed]) = one_step(with_decay(decayed, Some(vec![false, true])));
        // `a` is exempt: bit for bit the update without decay; `b` decays as with every weight
        // decaying.
        assert_eq!(a_mixed, a_plain, "{decayed:?}");
        assert_eq!(b_mixed, b_all, "{decayed:?}");
        // And decay does change a weight's update (the weights are nonzero).
        assert_ne!(a_all, a_plain, "{decayed:?}");
        assert_ne!(b_mixed, b_plain, "{decayed:?}");
        // No weight decaying builds the graph of weight decay 0: no decay ops at all.
        let (g_none, _) = one_step(with_decay(decayed, Some(vec![false, false])));
        let (g_plain, _) = one_step(plain.into());
        let ops = |g: &Graph| g.nodes().iter().map(|n| format!("{:?}", n.op)).collect::<Vec<_>>();
        assert_eq!(ops(&g_none), ops(&g_plain), "{decayed:?}");
    }
}

#[test]
fn decay_flags_must_match_the_weights() {
    let mut g = Graph::new("bad");
    let opts = with_decay(Optimizer::adamw(), Some(vec![true]));
    let e = g
        .train_step(0, &[("a", &[2]), ("b", &[2])], opts, |g, w| {
            let s = g.add(w[0], w[1])?;
            g.sum(s, &[0], false)
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("1 decay flags for 2 weights"), "{e}");
    assert_eq!(g.len(), 0, "a failed step leaves no nodes");
}

#[test]
fn transformers_rule_exempts_biases_and_norm_weights() {
    for name in [
        "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias",
        "encoder.layer.0.attention.self.query.bias",
        "encoder.layer.3.output.LayerNorm.weight",
        "model.norm.weight",
        "model.layers.0.input_layernorm.weight",
        "model.layers.0.post_attention_layernorm.weight",
        "model.layers.0.self_attn.q_norm.weight",
        "blk.0.attn_norm.weight",
        "output_norm.weight",
        "norm.weight",
        "encoder.rmsnorm.scale",
    ] {
        assert!(!transformers_decays(name), "{name} must be exempt");
    }
    for name in [
        "embeddings.word_embeddings.weight",
        "encoder.layer.0.attention.self.query.weight",
        "model.layers.0.mlp.down_proj.weight",
        "lm_head.weight",
        "model.embed_tokens.weight",
        "normalizer.weight",
        "blk.0.attn_norm_proj.weight",
    ] {
        assert!(transformers_decays(name), "{name} must decay");
    }
}
