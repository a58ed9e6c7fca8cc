//! The nn-family ops (matmul and its fused epilogues, layer/RMS norm, add + norm, softmax,
//! log-softmax, attention, RoPE) compiled by `VulkanBackend` on every available device and
//! compared with the CPU backend within 1e-5 relative (‖out − ref‖ / ‖ref‖, NaN where the
//! reference has NaN). Shapes are awkward on purpose: 1, primes, non-multiples of the tiles,
//! broadcasts, empty inner dims. Without a device: a loud skip, or a failure when
//! RLX_REQUIRE_GPU=1.

mod support;

use rlx_backend::{Backend, BackendError};
use rlx_ir::{
    AttentionSpec, AttnLayout, DType, Graph, MaskKind, NodeId, NormKind, Op, RopeStyle, Tensor, UnaryOp,
};
use rlx_opt::PassOptions;
use rlx_vulkan::VulkanBackend;
use support::*;

fn backends() -> Vec<VulkanBackend> {
    contexts().into_iter().map(VulkanBackend::with_context).collect()
}

fn name_of(b: &VulkanBackend) -> String {
    format!("{} ({:?})", b.info().name, b.context().memory_strategy())
}

/// Optimizes `g` for `backend` with `passes`, compiles, feeds every input by name, runs once.
fn run(
    backend: &dyn Backend,
    g: &Graph,
    passes: PassOptions,
    inputs: &[(&str, Tensor)],
) -> Result<Vec<Tensor>, BackendError> {
    let g = rlx_opt::optimize(g, backend.capabilities(), &passes, None)
        .unwrap_or_else(|e| panic!("optimizing for {}: {e}", backend.capabilities().device_name));
    let mut exe = backend.compile(&g)?;
    let leaves = g.inputs();
    let feeds: Vec<(NodeId, &Tensor)> = inputs
        .iter()
        .map(|(n, t)| {
            let id = leaves.iter().find(|(name, _, _)| name == n).map(|(_, id, _)| *id);
            (id.unwrap_or_else(|| panic!("no input {n}")), t)
        })
        .collect();
    exe.run(&feeds)
}

/// Runs `g` on the CPU and on every Vulkan device (exactly as built, and through the default
/// passes, which fuse) and asserts every output within 1e-5 relative of the CPU's.
fn check(what: &str, g: &Graph, inputs: &[(&str, Tensor)]) {
    let cpu = rlx_cpu::CpuBackend::new();
    let reference =
        run(&cpu, g, PassOptions::none(), inputs).unwrap_or_else(|e| panic!("{what} on the CPU: {e}"));
    for backend in backends() {
        for passes in [PassOptions::none(), PassOptions::default()] {
            let tag = format!("{what} on {} with {passes:?}", name_of(&backend));
            let out = run(&backend, g, passes, inputs).unwrap_or_else(|e| panic!("{tag}: {e}"));
            assert_eq!(out.len(), reference.len(), "{tag}");
            for (i, (o, r)) in out.iter().zip(&reference).enumerate() {
                assert_eq!(o.dims(), r.dims(), "{tag}: output {i}");
                assert_close(&format!("{tag}: output {i}"), &o.to_f32_vec(), &r.to_f64_vec());
            }
        }
    }
}

fn rand(dims: &[usize], seed: u64) -> Tensor {
    Tensor::from_f32(dims, data(dims.iter().product(), seed, -1.5, 1.5)).unwrap()
}

// ---- matmul ----

/// `op(a) @ op(b)` for the given operand shapes as stored.
fn matmul_graph(a: &[usize], b: &[usize], ta: bool, tb: bool) -> Graph {
    let mut g = Graph::new("matmul");
    let x = g.input("a", a, DType::F32).unwrap();
    let y = g.input("b", b, DType::F32).unwrap();
    let z = g.matmul_t(x, y, ta, tb).unwrap();
    g.set_outputs(&[z]).unwrap();
    g
}

fn check_matmul(a: &[usize], b: &[usize], ta: bool, tb: bool) {
    let g = matmul_graph(a, b, ta, tb);
    check(&format!("matmul {a:?}·{b:?} ta={ta} tb={tb}"), &g, &[("a", rand(a, 1)), ("b", rand(b, 2))]);
}

#[test]
fn matmul_tiny_large_and_transposed() {
    check_matmul(&[1, 1], &[1, 1], false, false);
    check_matmul(&[300, 257], &[257, 129], false, false);
    for (ta, tb) in [(true, false), (false, true), (true, true)] {
        // Stored shapes so that M = 67, K = 13, N = 65 (one past a tile).
        let a: &[usize] = if ta { &[13, 67] } else { &[67, 13] };
        let b: &[usize] = if tb { &[65, 13] } else { &[13, 65] };
        check_matmul(a, b, ta, tb);
    }
}

#[test]
fn matmul_batch_broadcasts() {
    check_matmul(&[3, 1, 5, 7], &[1, 4, 7, 6], false, false);
    check_matmul(&[2, 3, 17, 9], &[9, 11], false, false);
    check_matmul(&[5, 3], &[4, 3, 2], false, false);
    // Batch [2, 1, 3] · [1, 4, 3] alternates three times: several launches with offsets.
    check_matmul(&[2, 1, 3, 5, 7], &[1, 4, 3, 6, 7], false, true);
}

#[test]
fn matmul_with_zero_k_is_zeros_and_nan_propagates() {
    check_matmul(&[4, 0], &[0, 3], false, false);
    let mut a = data(6 * 5, 3, -1.0, 1.0);
    a[7] = f32::NAN;
    let g = matmul_graph(&[6, 5], &[5, 4], false, false);
    let inputs = [("a", Tensor::from_f32([6, 5], a).unwrap()), ("b", rand(&[5, 4], 4))];
    check("matmul with a NaN", &g, &inputs);
    let out = run(&*backends_or_cpu(), &g, PassOptions::none(), &inputs).unwrap();
    let v = out[0].to_f32_vec();
    // a[7] is row 1: that row is NaN, the others are not.
    assert!(v[4..8].iter().all(|x| x.is_nan()) && !v[..4].iter().any(|x| x.is_nan()), "{v:?}");
}

/// The first Vulkan backend, or the CPU when there is none (for value checks that also make
/// sense on the reference).
fn backends_or_cpu() -> Box<dyn Backend> {
    match backends().into_iter().next() {
        Some(b) => Box::new(b),
        None => Box::new(rlx_cpu::CpuBackend::new()),
    }
}

/// A FusedMatMul node built directly (as rlx-opt's fusion would), so that PassOptions::none()
/// runs it as such.
fn fused_graph(a: &[usize], b: &[usize], tb: bool, bias: bool, act: Option<UnaryOp>) -> Graph {
    let mut g = Graph::new("fused_matmul");
    let x = g.input("a", a, DType::F32).unwrap();
    let y = g.input("b", b, DType::F32).unwrap();
    let n = if tb { b[b.len() - 2] } else { b[b.len() - 1] };
    let mut ins = vec![x, y];
    if bias {
        ins.push(g.input("bias", &[n], DType::F32).unwrap());
    }
    let op = Op::FusedMatMul { transpose_a: false, transpose_b: tb, bias, activation: act };
    let z = g.push(op, &ins).unwrap();
    g.set_outputs(&[z]).unwrap();
    g
}

#[test]
fn fused_matmul_every_epilogue() {
    let acts = [
        None,
        Some(UnaryOp::Gelu),
        Some(UnaryOp::GeluTanh),
        Some(UnaryOp::Relu),
        Some(UnaryOp::Silu),
        Some(UnaryOp::Sigmoid),
        Some(UnaryOp::Tanh),
        // No epilogue variant: a unary step after the matmul.
        Some(UnaryOp::Exp),
    ];
    for act in acts {
        for bias in [false, true] {
            if act.is_none() && !bias {
                continue;
            }
            let (a, b) = ([37, 67], [29, 67]);
            let g = fused_graph(&a, &b, true, bias, act);
            let mut inputs = vec![("a", rand(&a, 5)), ("b", rand(&b, 6))];
            if bias {
                inputs.push(("bias", rand(&[29], 7)));
            }
            check(&format!("fused matmul bias={bias} act={act:?}"), &g, &inputs);
        }
    }
}

#[test]
fn fused_matmul_with_zero_k_is_act_of_bias() {
    let g = fused_graph(&[2, 5, 0], &[0, 3], false, true, Some(UnaryOp::Gelu));
    let bias = Tensor::from_f32([3], vec![-1.0, 0.5, 2.0]).unwrap();
    let inputs = [("a", rand(&[2, 5, 0], 1)), ("b", rand(&[0, 3], 2)), ("bias", bias)];
    check("fused matmul K = 0", &g, &inputs);
}

#[test]
fn matmul_bias_activation_fused_by_the_passes() {
    // MatMul → Add → Silu as a user writes it: the default passes fuse it (checked below).
    let mut g = Graph::new("linear_silu");
    let x = g.input("x", &[2, 33, 19], DType::F32).unwrap();
    let w = g.input("w", &[19, 70], DType::F32).unwrap();
    let b = g.input("b", &[70], DType::F32).unwrap();
    let y = g.matmul(x, w).unwrap();
    let y = g.add(y, b).unwrap();
    let y = g.silu(y).unwrap();
    g.set_outputs(&[y]).unwrap();
    for backend in backends() {
        let opt = rlx_opt::optimize(&g, backend.capabilities(), &PassOptions::default(), None).unwrap();
        assert!(opt.nodes().iter().any(|n| matches!(n.op, Op::FusedMatMul { .. })), "not fused");
    }
    check(
        "linear + silu",
        &g,
        &[("x", rand(&[2, 33, 19], 1)), ("w", rand(&[19, 70], 2)), ("b", rand(&[70], 3))],
    );
}

// ---- norms and softmax ----

fn row_data(rows: usize, cols: usize, seed: u64, offset: f32) -> Tensor {
    let v = data(rows * cols, seed, -1.0, 1.0).into_iter().map(|x| x + offset).collect();
    Tensor::from_f32([rows, cols], v).unwrap()
}

#[test]
fn layer_and_rms_norm_on_awkward_rows() {
    for (rows, cols) in [(1, 1), (5, 7), (3, 300), (2, 1031)] {
        for offset in [0.0, 100.0] {
            let mut g = Graph::new("norms");
            let x = g.input("x", &[rows, cols], DType::F32).unwrap();
            let gamma = g.input("gamma", &[cols], DType::F32).unwrap();
            let beta = g.input("beta", &[cols], DType::F32).unwrap();
            let ln = g.layer_norm(x, Some(gamma), Some(beta), -1, 1e-5).unwrap();
            let rms = g.rms_norm(x, Some(gamma), -1, 1e-6).unwrap();
            g.set_outputs(&[ln, rms]).unwrap();
            let inputs = [
                ("x", row_data(rows, cols, 11, offset)),
                ("gamma", rand(&[cols], 12)),
                ("beta", rand(&[cols], 13)),
            ];
            check(&format!("norms [{rows}, {cols}] + {offset}"), &g, &inputs);
        }
    }
}

#[test]
fn softmax_and_log_softmax() {
    for (rows, cols) in [(1, 1), (4, 13), (3, 257), (2, 2000)] {
        let mut g = Graph::new("softmax");
        let x = g.input("x", &[rows, cols], DType::F32).unwrap();
        let s = g.softmax(x, -1).unwrap();
        let l = g.log_softmax(x, -1).unwrap();
        g.set_outputs(&[s, l]).unwrap();
        let x = Tensor::from_f32([rows, cols], data(rows * cols, 21, -8.0, 8.0)).unwrap();
        check(&format!("softmax [{rows}, {cols}]"), &g, &[("x", x)]);
    }
}

#[test]
fn row_ops_propagate_nan_and_handle_infinities() {
    let cols = 9;
    let mut v = data(4 * cols, 31, -2.0, 2.0);
    v[3] = f32::NAN; // row 0: NaN
    v[cols + 2] = f32::NEG_INFINITY; // row 1: one −∞
    for x in &mut v[2 * cols..3 * cols] {
        *x = f32::NEG_INFINITY; // row 2: all −∞
    }
    let mut g = Graph::new("nan_rows");
    let x = g.input("x", &[4, cols], DType::F32).unwrap();
    let s = g.softmax(x, -1).unwrap();
    let l = g.log_softmax(x, -1).unwrap();
    let ln = g.layer_norm(x, None, None, -1, 1e-5).unwrap();
    let rms = g.rms_norm(x, None, -1, 1e-5).unwrap();
    g.set_outputs(&[s, l, ln, rms]).unwrap();
    let x = Tensor::from_f32([4, cols], v).unwrap();
    check("NaN and −∞ rows", &g, &[("x", x.clone())]);
    let out = run(&*backends_or_cpu(), &g, PassOptions::none(), &[("x", x)]).unwrap();
    for o in &out {
        let v = o.to_f32_vec();
        assert!(v[..cols].iter().all(|x| x.is_nan()), "a NaN row stays NaN: {v:?}");
        assert!(v[3 * cols..].iter().all(|x| !x.is_nan()), "a finite row stays finite: {v:?}");
    }
}

/// AddNorm nodes built directly: x and residual of the output's shape, and broadcast ones.
#[test]
fn add_norm_plain_and_broadcast() {
    let shapes: [(&[usize], &[usize]); 3] =
        [(&[3, 5, 37], &[3, 5, 37]), (&[3, 5, 37], &[5, 37]), (&[3, 1, 37], &[5, 37])];
    for (xs, rs) in shapes {
        for norm in [NormKind::LayerNorm, NormKind::RmsNorm] {
            let mut g = Graph::new("add_norm");
            let x = g.input("x", xs, DType::F32).unwrap();
            let r = g.input("r", rs, DType::F32).unwrap();
            let gamma = g.input("gamma", &[37], DType::F32).unwrap();
            let mut ins = vec![x, r, gamma];
            if norm == NormKind::LayerNorm {
                ins.push(g.input("beta", &[37], DType::F32).unwrap());
            }
            let y = g.push(Op::AddNorm { norm, eps: 1e-5 }, &ins).unwrap();
            g.set_outputs(&[y]).unwrap();
            let mut inputs = vec![("x", rand(xs, 41)), ("r", rand(rs, 42)), ("gamma", rand(&[37], 43))];
            if norm == NormKind::LayerNorm {
                inputs.push(("beta", rand(&[37], 44)));
            }
            check(&format!("add_norm {norm:?} {xs:?} + {rs:?}"), &g, &inputs);
        }
    }
}

// ---- attention ----

/// Attention dims: batch, query/key lengths, query/kv heads, head dims of q·k and v.
#[derive(Clone, Copy, Debug)]
struct Attn {
    b: usize,
    sq: usize,
    sk: usize,
    hq: usize,
    hkv: usize,
    d: usize,
    dv: usize,
}

fn dims4(layout: AttnLayout, b: usize, s: usize, h: usize, d: usize) -> Vec<usize> {
    match layout {
        AttnLayout::Bshd => vec![b, s, h, d],
        AttnLayout::Bhsd => vec![b, h, s, d],
    }
}

/// Builds and checks one attention case; `mask` is the fourth operand (name "m") if any.
fn check_attention(a: Attn, spec: AttentionSpec, mask: Option<Tensor>) {
    let l = spec.layout;
    let (qd, kd, vd) =
        (dims4(l, a.b, a.sq, a.hq, a.d), dims4(l, a.b, a.sk, a.hkv, a.d), dims4(l, a.b, a.sk, a.hkv, a.dv));
    let mut g = Graph::new("attention");
    let q = g.input("q", &qd, DType::F32).unwrap();
    let k = g.input("k", &kd, DType::F32).unwrap();
    let v = g.input("v", &vd, DType::F32).unwrap();
    let m = mask.as_ref().map(|t| g.input("m", t.dims(), t.dtype()).unwrap());
    let o = g.attention(q, k, v, m, spec).unwrap();
    g.set_outputs(&[o]).unwrap();
    let mut inputs = vec![("q", rand(&qd, 51)), ("k", rand(&kd, 52)), ("v", rand(&vd, 53))];
    inputs.extend(mask.map(|t| ("m", t)));
    check(&format!("attention {a:?} {spec:?}"), &g, &inputs);
}

fn spec(layout: AttnLayout, mask: MaskKind) -> AttentionSpec {
    AttentionSpec { layout, mask, scale: None, softcap: None }
}

#[test]
fn attention_layouts_gqa_and_head_dims() {
    for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
        check_attention(
            Attn { b: 2, sq: 37, sk: 53, hq: 4, hkv: 2, d: 40, dv: 24 },
            spec(layout, MaskKind::None),
            None,
        );
        check_attention(
            Attn { b: 1, sq: 1, sk: 1, hq: 1, hkv: 1, d: 1, dv: 1 },
            spec(layout, MaskKind::None),
            None,
        );
    }
    // Multi-query, head dim 256 (several Q·K chunks, the largest column block).
    check_attention(
        Attn { b: 1, sq: 19, sk: 23, hq: 3, hkv: 1, d: 256, dv: 256 },
        spec(AttnLayout::Bshd, MaskKind::Causal),
        None,
    );
    // Value head dim past one column block: split across workgroups.
    check_attention(
        Attn { b: 1, sq: 5, sk: 17, hq: 2, hkv: 2, d: 72, dv: 300 },
        spec(AttnLayout::Bhsd, MaskKind::None),
        None,
    );
    // Head dim 128 with an explicit scale and a soft-cap.
    let s = AttentionSpec { scale: Some(0.3), softcap: Some(5.0), ..spec(AttnLayout::Bshd, MaskKind::None) };
    check_attention(Attn { b: 2, sq: 16, sk: 33, hq: 2, hkv: 1, d: 128, dv: 100 }, s, None);
}

#[test]
fn attention_causal_and_sliding_window() {
    for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
        // Sk > Sq: a KV cache, query i at position i + 18.
        let a = Attn { b: 2, sq: 35, sk: 53, hq: 4, hkv: 2, d: 16, dv: 16 };
        check_attention(a, spec(layout, MaskKind::Causal), None);
        check_attention(a, spec(layout, MaskKind::SlidingWindow(7)), None);
        // A window wider than any sequence is the causal mask (and must not wrap in u32).
        check_attention(a, spec(layout, MaskKind::SlidingWindow(1 << 40)), None);
        let square = Attn { sq: 53, ..a };
        check_attention(square, spec(layout, MaskKind::SlidingWindow(1)), None);
        check_attention(square, spec(layout, MaskKind::Causal), None);
    }
    // Decode: one query over 41 keys.
    check_attention(
        Attn { b: 1, sq: 1, sk: 41, hq: 8, hkv: 2, d: 64, dv: 64 },
        spec(AttnLayout::Bshd, MaskKind::Causal),
        None,
    );
}

#[test]
fn attention_padding_masks_of_every_dtype() {
    let (b, sk) = (3, 21);
    // Batch 0: keys ≥ 15 hidden; batch 1: every key hidden (zeros out); batch 2: alternate.
    let attend = |bi: usize, j: usize| match bi {
        0 => j < 15,
        1 => false,
        _ => j.is_multiple_of(2),
    };
    let flags: Vec<bool> = (0..b * sk).map(|i| attend(i / sk, i % sk)).collect();
    let masks = [
        Tensor::from_bool([b, sk], flags.clone()).unwrap(),
        Tensor::from_i32([b, sk], flags.iter().map(|&f| if f { 7 } else { 0 }).collect()).unwrap(),
        // F32: −0.0 hides, NaN attends (nonzero), like the reference.
        Tensor::from_f32(
            [b, sk],
            flags
                .iter()
                .enumerate()
                .map(|(i, &f)| match (f, i % 3) {
                    (true, 0) => f32::NAN,
                    (true, _) => 0.25,
                    (false, 0) => -0.0,
                    (false, _) => 0.0,
                })
                .collect(),
        )
        .unwrap(),
    ];
    let a = Attn { b, sq: 19, sk, hq: 2, hkv: 1, d: 8, dv: 12 };
    for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
        for m in &masks {
            check_attention(a, spec(layout, MaskKind::Padding), Some(m.clone()));
        }
    }
}

#[test]
fn attention_bias_masks_broadcast() {
    let a = Attn { b: 2, sq: 17, sk: 29, hq: 3, hkv: 3, d: 20, dv: 20 };
    for dims in [vec![2, 3, 17, 29], vec![2, 1, 17, 29], vec![29], vec![3, 1, 1]] {
        let mut v = data(dims.iter().product(), 61, -3.0, 3.0);
        // A −∞ bias hides a key the way a mask would.
        v[0] = f32::NEG_INFINITY;
        let t = Tensor::from_f32(dims.as_slice(), v).unwrap();
        check_attention(a, spec(AttnLayout::Bhsd, MaskKind::Bias), Some(t));
    }
}

#[test]
fn attention_with_no_keys_is_zeros_and_nan_propagates() {
    check_attention(
        Attn { b: 2, sq: 5, sk: 0, hq: 2, hkv: 2, d: 8, dv: 8 },
        spec(AttnLayout::Bshd, MaskKind::None),
        None,
    );

    // A NaN in q of (batch 0, row 3, head 1) makes exactly that output row NaN.
    let (qd, kd) = ([1, 6, 2, 8], [1, 9, 2, 8]);
    let mut q = data(96, 71, -1.0, 1.0);
    q[(3 * 2 + 1) * 8 + 5] = f32::NAN;
    let mut g = Graph::new("attention_nan");
    let qi = g.input("q", &qd, DType::F32).unwrap();
    let ki = g.input("k", &kd, DType::F32).unwrap();
    let vi = g.input("v", &kd, DType::F32).unwrap();
    let o = g.attention(qi, ki, vi, None, spec(AttnLayout::Bshd, MaskKind::None)).unwrap();
    g.set_outputs(&[o]).unwrap();
    let inputs = [("q", Tensor::from_f32(qd, q).unwrap()), ("k", rand(&kd, 72)), ("v", rand(&kd, 73))];
    check("attention with a NaN query", &g, &inputs);
    let out = run(&*backends_or_cpu(), &g, PassOptions::none(), &inputs).unwrap()[0].to_f32_vec();
    for (i, x) in out.iter().enumerate() {
        assert_eq!(x.is_nan(), i / 8 == 3 * 2 + 1, "element {i}: {x}");
    }
}

// ---- rope ----

#[test]
fn rope_styles_layouts_and_partial_rotation() {
    let (b, s, h, d) = (2, 7, 3, 12);
    for style in [RopeStyle::NeoX, RopeStyle::GptJ] {
        for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
            for rot in [2, 8, 12] {
                let xd = dims4(layout, b, s, h, d);
                let mut g = Graph::new("rope");
                let x = g.input("x", &xd, DType::F32).unwrap();
                let c = g.input("cos", &[s, rot / 2], DType::F32).unwrap();
                let sn = g.input("sin", &[s, rot / 2], DType::F32).unwrap();
                let y = g.rope(x, c, sn, style, layout, rot).unwrap();
                g.set_outputs(&[y]).unwrap();
                let angles = data(s * rot / 2, 81, -3.0, 3.0);
                let cos = Tensor::from_f32([s, rot / 2], angles.iter().map(|a| a.cos()).collect()).unwrap();
                let sin = Tensor::from_f32([s, rot / 2], angles.iter().map(|a| a.sin()).collect()).unwrap();
                let inputs = [("x", rand(&xd, 82)), ("cos", cos), ("sin", sin)];
                check(&format!("rope {style:?} {layout:?} rot {rot}"), &g, &inputs);
            }
        }
    }
}
