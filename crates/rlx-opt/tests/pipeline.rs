//! The whole pipeline on a BERT-style encoder layer: same results with the passes on and off,
//! on a device with every op and on devices that need decompositions.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_same, basic_caps, caps_without, count, random_feeds, run};
use rlx_ir::{AttentionSpec, AttnLayout, DType, Graph, MaskKind, NodeId, Op, OpKind, Tensor, TensorType};
use rlx_nn::prelude::*;
use rlx_opt::memory::plan;
use rlx_opt::{optimize, FoldFn, PassOptions};

const TOL: f64 = 1e-5;

fn cpu_fold(op: &Op, inputs: &[&Tensor], out: &TensorType) -> Option<Tensor> {
    rlx_cpu::eval(op, inputs, out).ok()
}

fn linear(g: &mut Graph, x: NodeId, name: &str, d_in: usize, d_out: usize) -> NodeId {
    let w = g.param(&format!("{name}.weight"), &[d_out, d_in], DType::F32).unwrap();
    let b = g.param(&format!("{name}.bias"), &[d_out], DType::F32).unwrap();
    g.linear(x, w, Some(b)).unwrap()
}

/// One post-LN encoder layer: x [batch·seq, hidden] with a padding mask [batch, seq].
fn bert_layer(batch: usize, seq: usize, hidden: usize, heads: usize, ffn: usize) -> Graph {
    let mut g = Graph::new("bert_layer");
    let x = g.input("x", &[batch * seq, hidden], DType::F32).unwrap();
    let mask = g.input("mask", &[batch, seq], DType::I32).unwrap();
    let split = |g: &mut Graph, t| g.reshape(t, &[batch, seq, heads, hidden / heads]).unwrap();
    let q = linear(&mut g, x, "q", hidden, hidden);
    let k = linear(&mut g, x, "k", hidden, hidden);
    let v = linear(&mut g, x, "v", hidden, hidden);
    let (q, k, v) = (split(&mut g, q), split(&mut g, k), split(&mut g, v));
    let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Padding);
    let a = g.attention(q, k, v, Some(mask), spec).unwrap();
    let a = g.reshape(a, &[batch * seq, hidden]).unwrap();
    let o = linear(&mut g, a, "o", hidden, hidden);
    let h = g.add(o, x).unwrap();
    let ln1_g = g.param("ln1.weight", &[hidden], DType::F32).unwrap();
    let ln1_b = g.param("ln1.bias", &[hidden], DType::F32).unwrap();
    let h = g.layer_norm(h, Some(ln1_g), Some(ln1_b), -1, 1e-12).unwrap();
    let f = linear(&mut g, h, "ffn1", hidden, ffn);
    let f = g.gelu(f).unwrap();
    let f = linear(&mut g, f, "ffn2", ffn, hidden);
    let y = g.add(f, h).unwrap();
    let ln2_g = g.param("ln2.weight", &[hidden], DType::F32).unwrap();
    let ln2_b = g.param("ln2.bias", &[hidden], DType::F32).unwrap();
    let y = g.layer_norm(y, Some(ln2_g), Some(ln2_b), -1, 1e-12).unwrap();
    // A constant subexpression for the folder: a scale computed from constants.
    let c = g.scalar(4.0).unwrap();
    let c = g.sqrt(c).unwrap();
    let c = g.recip(c).unwrap();
    let c = g.mul(c, c).unwrap(); // 0.25
    let y2 = g.mul(y, c).unwrap();
    g.set_outputs(&[y, y2]).unwrap();
    g
}

#[test]
fn bert_layer_same_results_with_passes_on_and_off() {
    let g = bert_layer(2, 5, 16, 4, 32);
    let caps = caps_without(&[]);
    let fold: FoldFn = &cpu_fold;
    let on = optimize(&g, &caps, &PassOptions::default(), Some(fold)).unwrap();
    let off = optimize(&g, &caps, &PassOptions::none(), None).unwrap();

    assert_eq!(count(&on, OpKind::FusedMatMul), 6, "q, k, v, o, ffn1 (with gelu), ffn2");
    assert!(on.nodes().iter().any(|n| matches!(
        n.op,
        Op::FusedMatMul { activation: Some(rlx_ir::UnaryOp::Gelu), bias: true, transpose_b: true, .. }
    )));
    assert_eq!(count(&on, OpKind::AddNorm), 2);
    assert_eq!(count(&on, OpKind::Attention), 1);
    assert_eq!(count(&on, OpKind::MatMul) + count(&on, OpKind::LayerNorm), 0);
    // sqrt/recip/mul of constants folded into one constant.
    assert_eq!(count(&on, OpKind::Unary), 0);
    assert_eq!(off.nodes(), g.nodes(), "nothing to do without fusion on a device with every op");
    assert_same(&g, &on, 60, TOL);
    assert_same(&g, &off, 61, 0.0);

    // Names and output types survive.
    let names = |g: &Graph| {
        let mut v: Vec<String> =
            g.inputs().iter().chain(&g.params()).map(|(n, _, _)| n.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&on), names(&g));
    for (a, b) in on.outputs().iter().zip(g.outputs()) {
        assert_eq!(on.ty(*a).unwrap(), g.ty(*b).unwrap());
    }
}

#[test]
fn bert_layer_on_devices_that_need_decompositions() {
    let g = bert_layer(2, 4, 8, 2, 16);
    let fold: FoldFn = &cpu_fold;
    // Basic ops only.
    let basic = optimize(&g, &basic_caps(), &PassOptions::default(), Some(fold)).unwrap();
    for k in [OpKind::Attention, OpKind::LayerNorm, OpKind::Softmax, OpKind::FusedMatMul, OpKind::AddNorm] {
        assert_eq!(count(&basic, k), 0, "{}", k.name());
    }
    assert_same(&g, &basic, 62, TOL);

    // No composites, but fused forms: decomposed ops get fused again where they can.
    let mut caps = caps_without(&[OpKind::Attention, OpKind::LayerNorm, OpKind::Softmax]);
    caps.native_broadcast = false;
    let mixed = optimize(&g, &caps, &PassOptions::default(), Some(fold)).unwrap();
    assert!(count(&mixed, OpKind::FusedElementwise) >= 2, "norm arithmetic fused");
    assert!(count(&mixed, OpKind::FusedMatMul) >= 5);
    assert_same(&g, &mixed, 63, TOL);
    let unfused = optimize(&g, &caps, &PassOptions::none(), None).unwrap();
    assert_same(&g, &unfused, 64, TOL);

    // The optimized graphs plan without overlap of the outputs.
    for opt in [&basic, &mixed] {
        let p = plan(opt, 64).unwrap();
        assert!(p.peak_bytes < p.total_bytes());
    }
}

#[test]
fn fully_padded_sequences_stay_finite() {
    let g = bert_layer(2, 3, 8, 2, 8);
    let basic = optimize(&g, &basic_caps(), &PassOptions::default(), None).unwrap();
    let mut feeds = random_feeds(&g, 70);
    feeds.insert("mask".into(), Tensor::from_i32(&[2, 3][..], vec![1, 1, 0, 0, 0, 0]).unwrap());
    let (a, b) = (run(&basic, &feeds), run(&g, &feeds));
    for (x, y) in a.iter().zip(&b) {
        assert!(x.as_f32().unwrap().iter().all(|v| v.is_finite()));
        assert!(common::rel_err(x, y) <= TOL);
    }
}

// ---------------------------------------------------------------- random graphs

use proptest::prelude::*;
use rlx_ir::UnaryOp;

/// A random graph of bounded ops (values stay O(1), so relative errors are meaningful).
fn random_graph(steps: &[(u8, usize, usize)], n_outputs: usize) -> Graph {
    let mut g = Graph::new("random");
    let x = g.input("x", &[3, 4], DType::F32).unwrap();
    let bias = g.param("bias", &[4], DType::F32).unwrap();
    let w = g.param("w", &[4, 4], DType::F32).unwrap();
    let mut vals = vec![x];
    let unary = [UnaryOp::Sin, UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Gelu, UnaryOp::Relu, UnaryOp::Silu];
    for &(op, a, b) in steps {
        let a = vals[a % vals.len()];
        let b = vals[b % vals.len()];
        let new = match op % 10 {
            0 | 1 => g.unary(unary[b.index() % unary.len()], a),
            2 => g.add(a, b),
            3 => g.mul(a, b),
            4 => g.add(a, bias),
            5 => {
                let c = g.scalar(0.5).unwrap();
                g.mul(a, c)
            }
            6 => {
                let m = g.matmul_t(a, w, false, true).unwrap();
                let m = g.add(m, bias).unwrap();
                g.tanh(m)
            }
            7 => g.layer_norm(a, None, Some(bias), -1, 1e-5),
            8 => g.softmax(a, -1),
            _ => {
                let s = g.mean(a, &[-1], true).unwrap();
                g.sub(a, s)
            }
        };
        vals.push(new.unwrap());
    }
    let mut outs = vec![*vals.last().unwrap()];
    for k in 0..n_outputs {
        outs.push(vals[(k * 5 + 1) % vals.len()]);
    }
    g.set_outputs(&outs).unwrap();
    g
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_graphs_keep_their_values(
        steps in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..24),
        n_outputs in 0usize..3,
        seed in 0u64..1000,
    ) {
        let g = random_graph(&steps, n_outputs);
        let fold: FoldFn = &cpu_fold;
        let mut no_bcast = basic_caps();
        no_bcast.native_broadcast = false;
        let mut fused_only = caps_without(&[OpKind::LayerNorm, OpKind::Softmax]);
        fused_only.native_broadcast = false;
        for caps in [caps_without(&[]), basic_caps(), no_bcast, fused_only] {
            for opts in [PassOptions::default(), PassOptions::none()] {
                let opt = optimize(&g, &caps, &opts, Some(fold)).unwrap();
                let feeds = random_feeds(&g, seed);
                let (a, b) = (run(&opt, &feeds), run(&g, &feeds));
                for (x, y) in a.iter().zip(&b) {
                    let e = common::rel_err(x, y);
                    prop_assert!(e <= 1e-5, "relative error {} on {}", e, caps.device_name);
                }
                let p = plan(&opt, caps.buffer_alignment).unwrap();
                prop_assert!(p.peak_bytes <= p.buffers.iter().map(|b| b.size.div_ceil(64) * 64).sum::<u64>());
            }
        }
    }
}
