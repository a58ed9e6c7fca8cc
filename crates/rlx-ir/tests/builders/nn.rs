use crate::{assert_msg, f32_in, on_copy, tt, ty};
use rlx_ir::{AttentionSpec, AttnLayout, DType, Graph, IrError, MaskKind, OpKind, RopeStyle};

#[test]
fn matmul_shapes() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let b = f32_in(&mut g, "b", &[3, 4]);
    assert_eq!(on_copy(&g, |g| g.matmul(a, b)), tt(&[2, 4], DType::F32));
    let bt = f32_in(&mut g, "bt", &[4, 3]);
    assert_eq!(on_copy(&g, |g| g.matmul_t(a, bt, false, true)), tt(&[2, 4], DType::F32));
    let at = f32_in(&mut g, "at", &[3, 2]);
    assert_eq!(on_copy(&g, |g| g.matmul_t(at, bt, true, true)), tt(&[2, 4], DType::F32));
    let x = f32_in(&mut g, "x", &[5, 1, 2, 3]);
    let y = f32_in(&mut g, "y", &[4, 3, 6]);
    assert_eq!(on_copy(&g, |g| g.matmul(x, y)), tt(&[5, 4, 2, 6], DType::F32));
}

#[test]
fn matmul_errors() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let b = f32_in(&mut g, "b", &[4, 5]);
    let e = g.matmul(a, b).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "matmul", .. }));
    assert_msg(&e, &["matmul", "[2, 3] and [4, 5]", "K = 3", "K = 4"]);
    let v = f32_in(&mut g, "v", &[3]);
    let e = g.matmul(v, b).unwrap_err();
    assert_msg(&e, &["matmul", "[3]", "[1, K]"]);
    let x = f32_in(&mut g, "x", &[2, 2, 3]);
    let y = f32_in(&mut g, "y", &[3, 3, 4]);
    assert_msg(&g.matmul(x, y).unwrap_err(), &["matmul", "batch"]);
    let i = g.input("i", &[3, 4], DType::I32).unwrap();
    let j = g.input("j", &[4, 4], DType::I32).unwrap();
    assert!(matches!(g.matmul(i, j), Err(IrError::DType { op: "matmul", .. })));
    let h = g.input("h", &[3, 4], DType::F16).unwrap();
    assert!(matches!(g.matmul(a, h), Err(IrError::DType { op: "matmul", operand: 1, .. })));
}

#[test]
fn layer_norm_defaults_and_axis() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3, 8]);
    let y = g.layer_norm(x, None, None, -1, 1e-5).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3, 8], DType::F32));
    // ones and zeros of the last dim were created
    let consts: Vec<_> = g.nodes().iter().filter(|n| n.op.kind() == OpKind::Constant).collect();
    assert_eq!(consts.len(), 2);
    assert_eq!(consts[0].ty, tt(&[8], DType::F32));
    let gamma = f32_in(&mut g, "gamma", &[3]);
    let before = g.len();
    let y = g.layer_norm(x, Some(gamma), None, 1, 1e-5).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3, 8], DType::F32));
    let kinds: Vec<_> = g.nodes()[before..].iter().map(|n| n.op.kind()).collect();
    assert_eq!(kinds, [OpKind::Constant, OpKind::Permute, OpKind::LayerNorm, OpKind::Permute]);
    assert_eq!(g.nodes()[before + 1].ty, tt(&[2, 8, 3], DType::F32));
}

#[test]
fn layer_norm_errors_leave_graph_unchanged() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 8]);
    let gamma = f32_in(&mut g, "gamma", &[4]);
    let n = g.len();
    let e = g.layer_norm(x, Some(gamma), None, -1, 1e-5).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "layer_norm", .. }));
    assert_msg(&e, &["layer_norm", "[2, 8]", "[4]", "[8]"]);
    assert_eq!(g.len(), n);
    let i = g.input("i", &[2, 8], DType::I32).unwrap();
    assert!(matches!(g.layer_norm(i, None, None, -1, 1e-5), Err(IrError::DType { op: "layer_norm", .. })));
    assert!(matches!(g.layer_norm(x, None, None, 2, 1e-5), Err(IrError::Attribute { op: "layer_norm", .. })));
    assert!(matches!(g.layer_norm(x, None, None, -1, f32::NAN), Err(IrError::Attribute { attr: "eps", .. })));
    assert_eq!(g.len(), n + 1);
}

#[test]
fn rms_norm_and_softmax() {
    let mut g = Graph::new("g");
    let x = g.input("x", &[4, 6], DType::F16).unwrap();
    assert_eq!(on_copy(&g, |g| g.rms_norm(x, None, -1, 1e-6)), tt(&[4, 6], DType::F16));
    let gm = f32_in(&mut g, "gm", &[6]);
    assert!(matches!(g.rms_norm(x, Some(gm), -1, 1e-6), Err(IrError::DType { op: "rms_norm", .. })));
    let before = g.len();
    let s = g.softmax(x, 0).unwrap();
    assert_eq!(ty(&g, s), tt(&[4, 6], DType::F16));
    let kinds: Vec<_> = g.nodes()[before..].iter().map(|n| n.op.kind()).collect();
    assert_eq!(kinds, [OpKind::Permute, OpKind::Softmax, OpKind::Permute]);
    let l = g.log_softmax(x, -1).unwrap();
    assert_eq!(g.node(l).unwrap().op.kind(), OpKind::LogSoftmax);
    let i = g.input("i", &[3], DType::I32).unwrap();
    assert!(matches!(g.softmax(i, 0), Err(IrError::DType { op: "softmax", .. })));
    assert!(matches!(g.softmax(x, 2), Err(IrError::Attribute { op: "softmax", .. })));
}

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
fn rope_checks() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 4, 2, 8]);
    let cos = f32_in(&mut g, "cos", &[4, 3]);
    let sin = f32_in(&mut g, "sin", &[4, 3]);
    let y = g.rope(x, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, 6).unwrap();
    assert_eq!(ty(&g, y), tt(&[1, 4, 2, 8], DType::F32));
    let xh = f32_in(&mut g, "xh", &[1, 2, 4, 8]);
    assert!(g.rope(xh, cos, sin, RopeStyle::GptJ, AttnLayout::Bhsd, 6).is_ok());
    assert!(g.rope(xh, cos, sin, RopeStyle::GptJ, AttnLayout::Bshd, 6).is_err());
    for rd in [5, 10, 0] {
        let e = g.rope(x, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, rd).unwrap_err();
        assert!(matches!(e, IrError::Attribute { op: "rope", attr: "rotary_dims", .. }));
        assert_msg(&e, &["rope", "[1, 4, 2, 8]", "even"]);
    }
    let e = g.rope(x, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, 4).unwrap_err();
    assert_msg(&e, &["rope", "[4, 3]", "[4, 2]"]);
    let ci = g.input("ci", &[4, 3], DType::F16).unwrap();
    assert!(matches!(
        g.rope(x, ci, sin, RopeStyle::NeoX, AttnLayout::Bshd, 6),
        Err(IrError::DType { op: "rope", operand: 1, .. })
    ));
}

#[test]
fn conv2d_output_sizes() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 3, 32, 32]);
    let w = f32_in(&mut g, "w", &[16, 3, 3, 3]);
    let b = f32_in(&mut g, "b", &[16]);
    let c = |g: &mut Graph, s, p, d| g.conv2d(x, w, Some(b), [s, s], [p, p], [d, d], 1).unwrap();
    let y = c(&mut g, 1, 1, 1);
    assert_eq!(ty(&g, y), tt(&[1, 16, 32, 32], DType::F32));
    let y = c(&mut g, 2, 1, 1); // floor((32 + 2 - 2 - 1) / 2) + 1 = 16
    assert_eq!(ty(&g, y), tt(&[1, 16, 16, 16], DType::F32));
    let y = c(&mut g, 1, 0, 2); // 32 - 4 - 1 + 1 = 28
    assert_eq!(ty(&g, y), tt(&[1, 16, 28, 28], DType::F32));
    let xr = f32_in(&mut g, "xr", &[2, 3, 10, 7]);
    let y = g.conv2d(xr, w, None, [3, 2], [0, 1], [1, 1], 1).unwrap(); // (7/3)+1 = 3, (6/2)+1 = 4
    assert_eq!(ty(&g, y), tt(&[2, 16, 3, 4], DType::F32));
    let xd = f32_in(&mut g, "xd", &[1, 4, 8, 8]);
    let wd = f32_in(&mut g, "wd", &[8, 1, 3, 3]);
    let y = g.conv2d(xd, wd, None, [1, 1], [0, 0], [1, 1], 4).unwrap();
    assert_eq!(ty(&g, y), tt(&[1, 8, 6, 6], DType::F32));
}

#[test]
fn conv2d_errors() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 3, 32, 32]);
    let w4 = f32_in(&mut g, "w4", &[16, 4, 3, 3]);
    let e = g.conv2d(x, w4, None, [1, 1], [0, 0], [1, 1], 1).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "conv2d", .. }));
    assert_msg(&e, &["conv2d", "[1, 3, 32, 32] and [16, 4, 3, 3]", "channels"]);
    let w = f32_in(&mut g, "w", &[16, 3, 3, 3]);
    let e = g.conv2d(x, w, None, [1, 1], [0, 0], [1, 1], 2).unwrap_err();
    assert_msg(&e, &["conv2d", "groups = 2", "divide"]);
    let small = f32_in(&mut g, "small", &[1, 3, 2, 2]);
    let e = g.conv2d(small, w, None, [1, 1], [0, 0], [1, 1], 1).unwrap_err();
    assert_msg(&e, &["conv2d", "[1, 3, 2, 2]", "empty output"]);
    let bb = f32_in(&mut g, "bb", &[3]);
    assert_msg(&g.conv2d(x, w, Some(bb), [1, 1], [0, 0], [1, 1], 1).unwrap_err(), &["bias", "[16]"]);
    assert!(matches!(
        g.conv2d(x, w, None, [0, 1], [0, 0], [1, 1], 1),
        Err(IrError::Attribute { op: "conv2d", .. })
    ));
    let x3 = f32_in(&mut g, "x3", &[3, 32, 32]);
    assert!(matches!(
        g.conv2d(x3, w, None, [1, 1], [0, 0], [1, 1], 1),
        Err(IrError::Attribute { attr: "rank", .. })
    ));
}

#[test]
fn pooling_and_upsample() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 3, 7, 7]);
    assert_eq!(on_copy(&g, |g| g.max_pool2d(x, [2, 2], [2, 2], [0, 0])), tt(&[1, 3, 3, 3], DType::F32));
    assert_eq!(on_copy(&g, |g| g.avg_pool2d(x, [3, 3], [2, 2], [1, 1])), tt(&[1, 3, 4, 4], DType::F32));
    let e = g.max_pool2d(x, [2, 2], [1, 1], [2, 0]).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "pool2d", attr: "padding", .. }));
    assert_msg(&e, &["pool2d", "[1, 3, 7, 7]", "kernel / 2"]);
    assert_msg(&g.max_pool2d(x, [8, 8], [1, 1], [0, 0]).unwrap_err(), &["pool2d", "empty output"]);
    let u = g.upsample_nearest2x(x).unwrap();
    assert_eq!(ty(&g, u), tt(&[1, 3, 14, 14], DType::F32));
    let r3 = f32_in(&mut g, "r3", &[3, 7, 7]);
    assert!(matches!(g.upsample_nearest2x(r3), Err(IrError::Attribute { op: "upsample2x", .. })));
}
