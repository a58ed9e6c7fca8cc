use crate::{assert_msg, f32_in, tt, ty};
use rlx_ir::{AttentionSpec, AttnLayout, DType, Graph, IrError, MaskKind};

#[test]
fn attention_gqa_and_layouts() {
    let mut g = Graph::new("g");
    let q = f32_in(&mut g, "q", &[2, 5, 8, 16]);
    let k = f32_in(&mut g, "k", &[2, 7, 2, 16]);
    let v = f32_in(&mut g, "v", &[2, 7, 2, 32]);
    let y = g.attention(q, k, v, None, AttentionSpec::new(AttnLayout::Bshd, MaskKind::Causal)).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 5, 8, 32], DType::F32));
    let qh = f32_in(&mut g, "qh", &[2, 8, 5, 16]);
    let kh = f32_in(&mut g, "kh", &[2, 4, 7, 16]);
    let y = g
        .attention(qh, kh, kh, None, AttentionSpec::new(AttnLayout::Bhsd, MaskKind::SlidingWindow(3)))
        .unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 8, 5, 16], DType::F32));
    let pm = g.input("pm", &[2, 7], DType::Bool).unwrap();
    let y = g.attention(q, k, v, Some(pm), AttentionSpec::new(AttnLayout::Bshd, MaskKind::Padding)).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 5, 8, 32], DType::F32));
    let bias = f32_in(&mut g, "bias", &[1, 1, 5, 7]);
    let y = g.attention(q, k, v, Some(bias), AttentionSpec::new(AttnLayout::Bshd, MaskKind::Bias)).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 5, 8, 32], DType::F32));
    let y = g.attention(k, q, q, None, AttentionSpec::new(AttnLayout::Bshd, MaskKind::None));
    assert!(y.is_err(), "q with 2 heads, k with 8 heads is not grouped-query");
    // Sq > Sk is fine without a causal mask.
    let k8 = f32_in(&mut g, "k8", &[2, 3, 8, 16]);
    let y = g.attention(q, k8, k8, None, AttentionSpec::new(AttnLayout::Bshd, MaskKind::None)).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 5, 8, 16], DType::F32));
}

#[test]
fn attention_errors() {
    let mut g = Graph::new("g");
    let s = |m| AttentionSpec::new(AttnLayout::Bshd, m);
    let q = f32_in(&mut g, "q", &[2, 5, 8, 16]);
    let k3 = f32_in(&mut g, "k3", &[2, 7, 3, 16]);
    let e = g.attention(q, k3, k3, None, s(MaskKind::None)).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "attention", .. }));
    assert_msg(&e, &["attention", "[2, 5, 8, 16]", "[2, 7, 3, 16]", "8 heads", "multiple"]);
    let short = f32_in(&mut g, "short", &[2, 4, 2, 16]);
    let e = g.attention(q, short, short, None, s(MaskKind::Causal)).unwrap_err();
    assert_msg(&e, &["attention", "Sk = 4 < Sq = 5"]);
    let k = f32_in(&mut g, "k", &[2, 7, 2, 16]);
    let e = g.attention(q, k, k, None, s(MaskKind::SlidingWindow(0))).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "attention", attr: "window", .. }));
    let kd = f32_in(&mut g, "kd", &[2, 7, 2, 8]);
    assert_msg(&g.attention(q, kd, kd, None, s(MaskKind::None)).unwrap_err(), &["head dims differ"]);
    let kb = f32_in(&mut g, "kb", &[3, 7, 2, 16]);
    assert_msg(&g.attention(q, kb, kb, None, s(MaskKind::None)).unwrap_err(), &["batch"]);
    let v5 = f32_in(&mut g, "v5", &[2, 5, 2, 16]);
    assert_msg(&g.attention(q, k, v5, None, s(MaskKind::None)).unwrap_err(), &["k and v"]);
    // mask presence must match the mask kind
    assert!(matches!(g.attention(q, k, k, None, s(MaskKind::Padding)), Err(IrError::Arity { .. })));
    let pm = g.input("pm", &[2, 7], DType::I32).unwrap();
    assert!(matches!(g.attention(q, k, k, Some(pm), s(MaskKind::Causal)), Err(IrError::Arity { .. })));
    let bad_pm = g.input("bad_pm", &[2, 5], DType::Bool).unwrap();
    assert_msg(&g.attention(q, k, k, Some(bad_pm), s(MaskKind::Padding)).unwrap_err(), &["[2, 7]"]);
    let u = g.input("u", &[2, 7], DType::U32).unwrap();
    assert!(matches!(
        g.attention(q, k, k, Some(u), s(MaskKind::Padding)),
        Err(IrError::DType { operand: 3, .. })
    ));
    let bias = f32_in(&mut g, "bias", &[2, 3, 5, 7]);
    assert_msg(&g.attention(q, k, k, Some(bias), s(MaskKind::Bias)).unwrap_err(), &["[2, 8, 5, 7]"]);
    let q3 = f32_in(&mut g, "q3", &[2, 5, 16]);
    assert!(matches!(
        g.attention(q3, k, k, None, s(MaskKind::None)),
        Err(IrError::Attribute { attr: "rank", .. })
    ));
    let mut bad = s(MaskKind::None);
    bad.softcap = Some(0.0);
    assert!(matches!(g.attention(q, k, k, None, bad), Err(IrError::Attribute { attr: "softcap", .. })));
}

#[test]
fn attention_grad_parts_types_and_errors() {
    use rlx_ir::{AttnGradPart, Op};
    let mut g = Graph::new("g");
    let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Causal);
    let q = f32_in(&mut g, "q", &[2, 5, 8, 16]);
    let k = f32_in(&mut g, "k", &[2, 7, 2, 16]);
    let v = f32_in(&mut g, "v", &[2, 7, 2, 32]);
    let o = g.attention(q, k, v, None, spec).unwrap();
    let dy = f32_in(&mut g, "dy", &[2, 5, 8, 32]);
    let [dq, dk, dv] = g.attention_grad([q, k, v], o, dy, None, spec, [true, true, true]).unwrap();
    assert_eq!(ty(&g, dq.unwrap()), tt(&[2, 5, 8, 16], DType::F32));
    assert_eq!(ty(&g, dk.unwrap()), tt(&[2, 7, 2, 16], DType::F32));
    assert_eq!(ty(&g, dv.unwrap()), tt(&[2, 7, 2, 32], DType::F32));
    let stats = g.node(dq.unwrap()).unwrap().inputs[4];
    assert_eq!(ty(&g, stats), tt(&[2, 8, 5, 2], DType::F32));
    assert!(matches!(g.node(stats).unwrap().op, Op::AttentionGrad { part: AttnGradPart::Stats, .. }));
    // Only the parts asked for.
    let n = g.len();
    let [dq, dk, dv] = g.attention_grad([q, k, v], o, dy, None, spec, [false, false, true]).unwrap();
    assert!(dq.is_none() && dk.is_none() && dv.is_some());
    assert_eq!(g.len(), n + 2, "the statistics and dv");
    // dy of the wrong shape names the operand.
    let e = g.attention_grad([q, k, v], o, q, None, spec, [true, false, false]).unwrap_err();
    assert_msg(&e, &["attention_grad", "dy"]);
    // The stats must be the statistics' shape.
    let op = Op::AttentionGrad { spec, part: AttnGradPart::Q };
    let e = g.push(op, &[q, k, v, dy, dy]).unwrap_err();
    assert_msg(&e, &["attention_grad", "stats", "[2, 8, 5, 2]"]);
    // A bias mask has no flash gradient.
    let bias = f32_in(&mut g, "bias", &[1, 1, 5, 7]);
    let bspec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Bias);
    let e = g.attention_grad([q, k, v], o, dy, Some(bias), bspec, [true, true, true]).unwrap_err();
    assert_msg(&e, &["attention_grad", "bias"]);
}

#[test]
fn grad_uses_the_flash_backward_except_for_a_bias() {
    use rlx_ir::{grad, Op};
    for (mask, flash) in [(MaskKind::Causal, true), (MaskKind::None, true), (MaskKind::Bias, false)] {
        let mut g = Graph::new("g");
        let q = g.param("q", &[1, 2, 4, 8], DType::F32).unwrap();
        let k = g.param("k", &[1, 2, 4, 8], DType::F32).unwrap();
        let bias = (mask == MaskKind::Bias).then(|| f32_in(&mut g, "bias", &[1, 1, 4, 4]));
        let y = g.attention(q, k, k, bias, AttentionSpec::new(AttnLayout::Bhsd, mask)).unwrap();
        let loss = g.sum(y, &[0, 1, 2, 3], false).unwrap();
        let gr = grad(&g, loss, &[q, k]).unwrap();
        let parts = gr.graph.nodes().iter().filter(|n| matches!(n.op, Op::AttentionGrad { .. })).count();
        // Stats, dq and dk (k is both k and v: dk and dv).
        assert_eq!(parts, if flash { 4 } else { 0 }, "{mask:?}");
    }
}

#[test]
fn attention_takes_keys_and_values_narrower_than_the_queries() {
    let mut g = Graph::new("g");
    let s = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Causal);
    let q = f32_in(&mut g, "q", &[1, 2, 4, 8]);
    let k = g.input("k", &[1, 6, 2, 8], DType::F16).unwrap();
    let v = g.input("v", &[1, 6, 2, 8], DType::F16).unwrap();
    let y = g.attention(q, k, v, None, s).unwrap();
    assert_eq!(ty(&g, y), tt(&[1, 2, 4, 8], DType::F32), "the output takes q's dtype");
    // k and v still share one dtype, and a float one.
    let vf = f32_in(&mut g, "vf", &[1, 6, 2, 8]);
    assert!(matches!(g.attention(q, k, vf, None, s), Err(IrError::DType { operand: 2, .. })));
    let ki = g.input("ki", &[1, 6, 2, 8], DType::I32).unwrap();
    assert!(matches!(g.attention(q, ki, ki, None, s), Err(IrError::DType { operand: 1, .. })));
    // The gradient keeps one dtype for q, k and v.
    let dy = f32_in(&mut g, "dy", &[1, 2, 4, 8]);
    let e = g.attention_grad([q, k, v], y, dy, None, s, [true, true, true]);
    assert!(matches!(e, Err(IrError::DType { operand: 1, .. })), "{e:?}");
}
