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
