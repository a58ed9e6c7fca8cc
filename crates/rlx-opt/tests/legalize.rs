//! legalize: decompositions (norms, softmax, attention with every mask, GQA, both layouts),
//! broadcast expansion, and Unsupported errors.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_same, basic_caps, caps_without, count, random_feeds, rel_err, run};
use rlx_ir::{
    AttentionSpec, AttnLayout, DType, EwProgram, EwStep, Graph, MaskKind, NodeId, NormKind, Op, OpKind,
    Tensor, UnaryOp,
};
use rlx_opt::passes::legalize;
use rlx_opt::{optimize, OptError, PassOptions};

const TOL: f64 = 1e-5;

fn no_kind(g: &Graph, k: OpKind) {
    assert_eq!(count(g, k), 0, "{} left in the graph", k.name());
}

#[test]
fn norms_and_softmax_decompose_when_missing() {
    let mut g = Graph::new("norms");
    let x = g.input("x", &[3, 5, 7], DType::F32).unwrap();
    let gamma = g.param("gamma", &[7], DType::F32).unwrap();
    let beta = g.param("beta", &[7], DType::F32).unwrap();
    let ln = g.layer_norm(x, Some(gamma), Some(beta), -1, 1e-5).unwrap();
    let ln_mid = g.layer_norm(x, None, None, 1, 1e-3).unwrap(); // non-last axis: permuted
    let rms = g.rms_norm(x, Some(gamma), -1, 1e-6).unwrap();
    let sm = g.softmax(x, -1).unwrap();
    let lsm = g.log_softmax(x, 0).unwrap();
    g.set_outputs(&[ln, ln_mid, rms, sm, lsm]).unwrap();

    let caps = basic_caps();
    let l = legalize(&g, &caps).unwrap();
    for k in [OpKind::LayerNorm, OpKind::RmsNorm, OpKind::Softmax, OpKind::LogSoftmax] {
        no_kind(&l, k);
    }
    assert!(count(&l, OpKind::Reduce) >= 9, "mean/var, mean-square, max/sum reductions");
    assert_same(&g, &l, 10, TOL);

    // With the ops native nothing is decomposed.
    let same = legalize(&g, &caps_without(&[])).unwrap();
    assert_eq!(same.nodes(), g.nodes());
}

#[test]
fn decomposed_softmax_subtracts_the_max() {
    let mut g = Graph::new("big");
    let x = g.input("x", &[2, 4], DType::F32).unwrap();
    let s = g.softmax(x, -1).unwrap();
    g.set_outputs(&[s]).unwrap();
    let l = legalize(&g, &basic_caps()).unwrap();
    let mut feeds = random_feeds(&g, 0);
    // exp(1000) overflows f32: only a max-subtracted softmax stays finite.
    feeds.insert(
        "x".into(),
        Tensor::from_f32(&[2, 4][..], vec![1000.0, 999.0, 998.0, 0.0, 1.0, 2.0, 3.0, 4.0]).unwrap(),
    );
    let (a, b) = (run(&l, &feeds), run(&g, &feeds));
    assert!(a[0].as_f32().unwrap().iter().all(|v| v.is_finite()));
    assert!(rel_err(&a[0], &b[0]) <= TOL);
}

#[test]
fn f16_norms_are_computed_in_f32() {
    let mut g = Graph::new("half");
    let x = g.input("x", &[4, 16], DType::F16).unwrap();
    let gamma = g.param("gamma", &[16], DType::F16).unwrap();
    let ln = g.layer_norm(x, Some(gamma), None, -1, 1e-5).unwrap();
    let sm = g.softmax(x, -1).unwrap();
    g.set_outputs(&[ln, sm]).unwrap();
    let l = legalize(&g, &basic_caps()).unwrap();
    assert!(count(&l, OpKind::Cast) >= 4, "widened to f32 and rounded back");
    assert_eq!(l.ty(l.outputs()[0]).unwrap().dtype, DType::F16);
    // Both sides round to f16 once at the end; allow one f16 ulp.
    assert_same(&g, &l, 11, 1e-3);
}

fn attention_graph(
    layout: AttnLayout,
    mask: MaskKind,
    (b, hq, hkv, sq, sk, d): (usize, usize, usize, usize, usize, usize),
    mask_ty: Option<(&[usize], DType)>,
    scale: Option<f32>,
    softcap: Option<f32>,
) -> Graph {
    let dims = |h: usize, s: usize| match layout {
        AttnLayout::Bshd => vec![b, s, h, d],
        AttnLayout::Bhsd => vec![b, h, s, d],
    };
    let mut g = Graph::new("attn");
    let q = g.input("q", &dims(hq, sq), DType::F32).unwrap();
    let k = g.input("k", &dims(hkv, sk), DType::F32).unwrap();
    let v = g.input("v", &dims(hkv, sk), DType::F32).unwrap();
    let m = mask_ty.map(|(shape, dt)| g.input("mask", shape, dt).unwrap());
    let spec = AttentionSpec { layout, mask, scale, softcap, kv_lengths: false };
    let o = g.attention(q, k, v, m, spec).unwrap();
    g.set_outputs(&[o]).unwrap();
    g
}

fn check_attention(g: &Graph, seed: u64) {
    let caps = caps_without(&[OpKind::Attention]);
    let l = legalize(g, &caps).unwrap();
    no_kind(&l, OpKind::Attention);
    assert!(count(&l, OpKind::MatMul) == 2 && count(&l, OpKind::Softmax) == 1);
    assert_same(g, &l, seed, TOL);
    // Also all the way down to reductions.
    let l2 = legalize(g, &caps_without(&[OpKind::Attention, OpKind::Softmax])).unwrap();
    no_kind(&l2, OpKind::Softmax);
    assert_same(g, &l2, seed, TOL);
}

#[test]
fn attention_decomposes_for_every_mask_layout_and_gqa() {
    let mut seed = 100;
    for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
        for (hq, hkv) in [(2, 2), (6, 2), (4, 1)] {
            let dims = (2, hq, hkv, 3, 5, 4);
            for mask in
                [MaskKind::None, MaskKind::Causal, MaskKind::SlidingWindow(2), MaskKind::SlidingWindow(1)]
            {
                seed += 1;
                check_attention(&attention_graph(layout, mask, dims, None, None, None), seed);
            }
            for dt in [DType::Bool, DType::I32, DType::F32] {
                seed += 1;
                let g = attention_graph(layout, MaskKind::Padding, dims, Some((&[2, 5], dt)), None, None);
                check_attention(&g, seed);
            }
            for bias_shape in [&[2, hq, 3, 5][..], &[1, 1, 3, 5][..], &[5][..]] {
                seed += 1;
                let g =
                    attention_graph(layout, MaskKind::Bias, dims, Some((bias_shape, DType::F32)), None, None);
                check_attention(&g, seed);
            }
            seed += 1;
            let g = attention_graph(layout, MaskKind::Causal, dims, None, Some(0.3), Some(2.0));
            check_attention(&g, seed);
        }
    }
}

#[test]
fn attention_with_equal_sequence_lengths_and_gqa_heads_matches() {
    // Sq == Sk, causal, head dim 8, GQA 8 → 2.
    let g = attention_graph(AttnLayout::Bshd, MaskKind::Causal, (1, 8, 2, 6, 6, 8), None, None, Some(5.0));
    check_attention(&g, 7);
}

#[test]
fn fully_masked_rows_give_zeros() {
    for (mask, mask_ty) in [(MaskKind::Padding, DType::Bool), (MaskKind::Bias, DType::F32)] {
        let shape: &[usize] = if mask == MaskKind::Padding { &[2, 4] } else { &[2, 1, 1, 4] };
        let g =
            attention_graph(AttnLayout::Bhsd, mask, (2, 2, 2, 3, 4, 4), Some((shape, mask_ty)), None, None);
        let l = legalize(&g, &caps_without(&[OpKind::Attention])).unwrap();
        let mut feeds = random_feeds(&g, 5);
        // Batch 0 sees keys 0 and 2; batch 1 sees nothing.
        let m = match mask_ty {
            DType::Bool => {
                Tensor::from_bool(&[2, 4][..], vec![true, false, true, false, false, false, false, false])
            }
            _ => {
                let ninf = f32::NEG_INFINITY;
                Tensor::from_f32(&[2, 1, 1, 4][..], vec![0.0, ninf, 0.5, ninf, ninf, ninf, ninf, ninf])
            }
        };
        feeds.insert("mask".into(), m.unwrap());
        let (a, b) = (run(&l, &feeds), run(&g, &feeds));
        assert!(rel_err(&a[0], &b[0]) <= TOL);
        let out = a[0].as_f32().unwrap();
        let (zeros, rest) = (&out[out.len() / 2..], &out[..out.len() / 2]);
        assert!(zeros.iter().all(|&v| v == 0.0), "fully masked batch must be zeros: {zeros:?}");
        assert!(rest.iter().any(|&v| v != 0.0));
    }
}

#[test]
fn fused_forms_decompose_when_not_native() {
    let mut g = Graph::new("fused");
    let a = g.input("a", &[3, 4], DType::F32).unwrap();
    let w = g.param("w", &[5, 4], DType::F32).unwrap();
    let bias = g.param("bias", &[5], DType::F32).unwrap();
    let fm = g
        .push(
            Op::FusedMatMul {
                transpose_a: false,
                transpose_b: true,
                bias: true,
                activation: Some(UnaryOp::Gelu),
            },
            &[a, w, bias],
        )
        .unwrap();
    let r = g.input("r", &[3, 5], DType::F32).unwrap();
    let gamma = g.param("gamma", &[5], DType::F32).unwrap();
    let beta = g.param("beta", &[5], DType::F32).unwrap();
    let an = g.push(Op::AddNorm { norm: NormKind::LayerNorm, eps: 1e-5 }, &[fm, r, gamma, beta]).unwrap();
    let rn = g.push(Op::AddNorm { norm: NormKind::RmsNorm, eps: 1e-5 }, &[an, r, gamma]).unwrap();
    let prog = EwProgram {
        steps: vec![
            EwStep::Input(0),
            EwStep::Scalar(2.0),
            EwStep::Binary(rlx_ir::BinaryOp::Mul, 0, 1),
            EwStep::Unary(UnaryOp::Tanh, 2),
        ],
    };
    // Input 1 ([5], unused by the program) still shapes nothing; input 2 ([2,1,1]) broadcasts.
    let extra = g.input("extra", &[2, 1, 1], DType::F32).unwrap();
    let ew = g.push(Op::FusedElementwise(prog), &[rn, bias, extra]).unwrap();
    g.set_outputs(&[ew]).unwrap();
    assert_eq!(g.ty(ew).unwrap().shape.dims(), &[2, 3, 5]);

    let l = legalize(&g, &basic_caps()).unwrap();
    for k in
        [OpKind::FusedMatMul, OpKind::AddNorm, OpKind::FusedElementwise, OpKind::LayerNorm, OpKind::RmsNorm]
    {
        no_kind(&l, k);
    }
    assert_eq!(count(&l, OpKind::Expand), 1, "the program's result broadcast to all inputs");
    assert_same(&g, &l, 12, TOL);
}

#[test]
fn broadcasts_become_explicit_expands() {
    let mut g = Graph::new("bcast");
    let x = g.input("x", &[2, 3], DType::F32).unwrap();
    let row = g.input("row", &[3], DType::F32).unwrap();
    let col = g.input("col", &[2, 1], DType::F32).unwrap();
    let s = g.scalar(0.25).unwrap();
    let a = g.add(x, row).unwrap();
    let b = g.mul(a, s).unwrap();
    let c = g.gt(b, col).unwrap();
    let w = g.where_(c, b, s).unwrap();
    let same = g.sub(w, x).unwrap(); // no broadcast: no expand
    let sm = g.softmax(same, -1).unwrap();
    g.set_outputs(&[sm]).unwrap();

    let mut caps = caps_without(&[OpKind::Softmax]);
    caps.native_broadcast = false;
    let l = legalize(&g, &caps).unwrap();
    for n in l.nodes() {
        if matches!(n.op, Op::Binary(_) | Op::Compare(_) | Op::Where) {
            for i in &n.inputs {
                assert_eq!(l.ty(*i).unwrap().shape, n.ty.shape, "{} still broadcasts", n.op.name());
            }
        }
    }
    // row, s (twice: mul and where), col, and softmax's max and sum (keepdim [2,1]) twice.
    assert!(count(&l, OpKind::Expand) >= 6);
    assert_same(&g, &l, 13, TOL);

    // Without native Expand, a broadcast cannot be legalized.
    let mut caps = caps_without(&[OpKind::Expand]);
    caps.native_broadcast = false;
    let err = legalize(&g, &caps).unwrap_err();
    assert!(matches!(&err, OptError::Unsupported { op, .. } if op == "expand"), "{err}");
}

#[test]
fn unsupported_names_the_op_the_node_and_the_device() {
    let mut g = Graph::new("cumsum");
    let x = g.input("x", &[1, 2, 5, 5], DType::F32).unwrap();
    let dead = g.exp(x).unwrap();
    let _dead2 = g.exp(dead).unwrap();
    let c = g.cumsum(x, 1).unwrap();
    g.set_outputs(&[c]).unwrap();
    let mut caps = caps_without(&[OpKind::Cumsum]);
    caps.device_name = "Imaginary GPU 9000".into();
    let err = optimize(&g, &caps, &PassOptions::none(), None).unwrap_err();
    match &err {
        OptError::Unsupported { op, node, device, .. } => {
            assert_eq!(op, "cumsum");
            assert_eq!(*node, c, "node id of the user's graph, not of the dce'd one");
            assert_eq!(device, "Imaginary GPU 9000");
        }
        other => panic!("wrong error {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("cumsum") && msg.contains("Imaginary GPU 9000") && msg.contains(&c.to_string()),
        "{msg}"
    );
}

#[test]
fn unsupported_inside_a_decomposition_names_the_users_op() {
    let mut g = Graph::new("ln");
    let x = g.input("x", &[2, 8], DType::F32).unwrap();
    let y = g.layer_norm(x, None, None, -1, 1e-5).unwrap();
    g.set_outputs(&[y]).unwrap();
    let err = legalize(&g, &caps_without(&[OpKind::LayerNorm, OpKind::Reduce])).unwrap_err();
    let msg = err.to_string();
    match &err {
        OptError::Unsupported { op, node, .. } => {
            assert_eq!(op, "layer_norm");
            assert_eq!(*node, y);
        }
        other => panic!("wrong error {other}"),
    }
    assert!(msg.contains("mean") || msg.contains("reduce"), "{msg}");
}

#[test]
fn dtypes_the_device_lacks_are_unsupported() {
    let g = rlx_test_support::exp_graph("f16", &[4], DType::F16);
    let mut caps = caps_without(&[]);
    caps.dtypes.remove(&DType::F16);
    let err = legalize(&g, &caps).unwrap_err();
    assert!(matches!(&err, OptError::Unsupported { node, .. } if *node == NodeId(0)), "{err}");
    assert!(err.to_string().contains("f16"), "{err}");
}

#[test]
fn f16_attention_is_computed_in_f32() {
    let mut g = Graph::new("attn16");
    let q = g.input("q", &[1, 2, 3, 8], DType::F16).unwrap();
    let k = g.input("k", &[1, 2, 4, 8], DType::F16).unwrap();
    let v = g.input("v", &[1, 2, 4, 8], DType::F16).unwrap();
    let bias = g.input("bias", &[1, 1, 3, 4], DType::F32).unwrap();
    let spec = AttentionSpec::new(AttnLayout::Bhsd, MaskKind::Bias);
    let o = g.attention(q, k, v, Some(bias), spec).unwrap();
    g.set_outputs(&[o]).unwrap();
    let l = legalize(&g, &caps_without(&[OpKind::Attention])).unwrap();
    assert_eq!(count(&l, OpKind::Cast), 4, "q, k, v widened; the result rounded back");
    assert_eq!(l.ty(l.outputs()[0]).unwrap().dtype, DType::F16);
    assert_same(&g, &l, 14, 1e-3);
}

/// A GPU-like device: every dtype stored, kernels on 32-bit words only, no native layer norm.
fn words_only() -> rlx_backend::Capabilities {
    let mut caps = caps_without(&[OpKind::LayerNorm]);
    caps.compute_dtypes = [DType::F32, DType::I32, DType::U32, DType::Bool].into_iter().collect();
    caps
}

#[test]
fn a_missing_device_feature_is_named() {
    let g = rlx_test_support::exp_graph("f16", &[4], DType::F16);
    let mut caps = words_only();
    caps.dtypes.remove(&DType::F16);
    caps.missing_dtype_features
        .insert(DType::F16, "f16 storage (shaderFloat16 / storageBuffer16BitAccess)".into());
    let err = optimize(&g, &caps, &PassOptions::default(), None).unwrap_err();
    assert!(matches!(&err, OptError::Unsupported { node, .. } if *node == NodeId(0)), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("shaderFloat16 / storageBuffer16BitAccess") && msg.contains("bf16"), "{msg}");
}

#[test]
fn stored_only_dtypes_compute_in_words_through_the_whole_pipeline() {
    let mut g = Graph::new("typed");
    let x = g.input("x", &[3, 8], DType::F16).unwrap();
    let w = g.param("w", &[8, 8], DType::F16).unwrap();
    let b = g.param("b", &[8], DType::F16).unwrap();
    let h = g.matmul(x, w).unwrap();
    let h = g.add(h, b).unwrap();
    let h = g.gelu(h).unwrap();
    let s = g.softmax(h, -1).unwrap();
    let xb = g.cast(x, DType::BF16).unwrap();
    let n = g.layer_norm(xb, None, None, -1, 1e-5).unwrap();
    let q = g.input("q", &[3, 8], DType::U8).unwrap();
    let q2 = g.add(q, q).unwrap();
    let qs = g.sum(q2, &[1], false).unwrap();
    g.set_outputs(&[s, n, qs]).unwrap();
    let caps = words_only();
    let opt = optimize(&g, &caps, &PassOptions::default(), None).unwrap();
    for (i, node) in opt.nodes().iter().enumerate() {
        if node.op.is_leaf() || matches!(node.op, Op::Cast(_)) || node.op.is_view() {
            continue;
        }
        let dtypes = node.inputs.iter().map(|&i| opt.ty(i).unwrap().dtype).chain([node.ty.dtype]);
        for d in dtypes {
            assert!(caps.compute_dtypes.contains(&d), "%{i} {} on {d}", node.op.name());
        }
    }
    let outs: Vec<DType> = opt.outputs().iter().map(|&o| opt.ty(o).unwrap().dtype).collect();
    assert_eq!(outs, [DType::F16, DType::BF16, DType::U8]);
    assert_eq!(opt.inputs().iter().map(|i| i.2.dtype).collect::<Vec<_>>(), [DType::F16, DType::U8]);
    // The CPU computes these dtypes the same way, so the values agree to f16/bf16 rounding.
    assert_same(&g, &opt, 21, 1e-2);
}
