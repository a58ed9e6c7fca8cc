//! Gradient checks (rlx_ir::grad) against finite differences on the CPU: elementwise ops,
//! reductions, matmul, softmax and the norms. Shape ops, composites and errors are in
//! `grad_check_shape.rs`; the harness is `grad_common`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod grad_common;
use grad_common::Check;
use rlx_ir::{BinaryOp, DType, Tensor, UnaryOp};

/// Each unary op on a domain away from its kinks and singularities.
#[test]
fn unary_ops() {
    for op in UnaryOp::ALL {
        let mut c = Check::new(&format!("grad_unary_{}", op.name()));
        let x = match op {
            UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip => c.var("x", &[2, 5], 0.5, 2.0),
            UnaryOp::Relu | UnaryOp::Abs => c.var_off_zero("x", &[2, 5], 0.2, 2.0),
            UnaryOp::Exp => c.var("x", &[2, 5], -2.0, 1.5),
            _ => c.var("x", &[2, 5], -2.5, 2.5),
        };
        let y = c.g.unary(op, x).unwrap();
        c.run(y);
    }
}

/// GELU's derivative at exactly 0 (where y/x is replaced by ½) is ½.
#[test]
fn gelu_at_zero() {
    let mut c = Check::new("grad_gelu_zero");
    let x = c.var_with("x", &[3], vec![0.0, 1e-3, -0.7]);
    let y = c.g.gelu(x).unwrap();
    c.run(y);
}

fn binary_case(op: BinaryOp, a_dims: &[usize], b_dims: &[usize]) {
    let mut c = Check::new(&format!("grad_binary_{}_{a_dims:?}_{b_dims:?}", op.name()));
    let (a, b) = match op {
        BinaryOp::Div => (c.var("a", a_dims, -2.0, 2.0), c.var_off_zero("b", b_dims, 0.5, 2.0)),
        BinaryOp::Pow => (c.var("a", a_dims, 0.5, 2.0), c.var("b", b_dims, -1.5, 1.5)),
        _ => (c.var("a", a_dims, -2.0, 2.0), c.var("b", b_dims, -2.0, 2.0)),
    };
    let y = c.g.binary(op, a, b).unwrap();
    c.run(y);
}

#[test]
fn binary_ops_with_broadcasting() {
    let shapes: [(&[usize], &[usize]); 4] =
        [(&[2, 3], &[2, 3]), (&[2, 3], &[3]), (&[2, 1, 3], &[4, 1]), (&[], &[2, 2])];
    for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Pow] {
        for (a, b) in shapes {
            binary_case(op, a, b);
        }
    }
}

/// max/min with operands at least 0.15 apart (no kink within the stencil), broadcast.
#[test]
fn maximum_minimum() {
    for op in [BinaryOp::Maximum, BinaryOp::Minimum] {
        let mut c = Check::new(&format!("grad_{}", op.name()));
        let a = c.var_with("a", &[2, 3], vec![0.5, -1.0, 2.0, -0.3, 1.2, 0.0]);
        let b = c.var_with("b", &[3], vec![0.1, -0.6, 1.5]);
        let y = c.g.binary(op, a, b).unwrap();
        c.run(y);
    }
}

/// Ties split the gradient in halves (PyTorch's rule): d max(a, b)/da = ½ at a = b.
#[test]
fn maximum_tie_splits_the_gradient() {
    let mut g = rlx_ir::Graph::new("max_tie");
    let a = g.param("a", &[2], DType::F32).unwrap();
    let b = g.param("b", &[2], DType::F32).unwrap();
    let y = g.maximum(a, b).unwrap();
    let loss = grad_common::sum_all(&mut g, y).unwrap();
    let gr = rlx_ir::grad(&g, loss, &[a, b]).unwrap();
    let mut exe =
        rlx_backend::Backend::compile(&rlx_cpu::CpuBackend::new(), &gr.graph, &Default::default()).unwrap();
    exe.set_param(a, &Tensor::from_f32([2], vec![1.0, 3.0]).unwrap()).unwrap();
    exe.set_param(b, &Tensor::from_f32([2], vec![1.0, 2.0]).unwrap()).unwrap();
    let out = exe.run(&[]).unwrap();
    assert_eq!(out[1].as_f32().unwrap(), &[0.5, 1.0]);
    assert_eq!(out[2].as_f32().unwrap(), &[0.5, 0.0]);
}

#[test]
fn where_select() {
    let mut c = Check::new("grad_where");
    let cond =
        c.fixed("cond", Tensor::from_bool([2, 3], vec![true, false, true, false, false, true]).unwrap());
    let a = c.var("a", &[2, 3], -2.0, 2.0);
    let b = c.var("b", &[3], -2.0, 2.0);
    let y = c.g.where_(cond, a, b).unwrap();
    c.run(y);
}

/// f32 → f16 → f32: the gradient passes through both casts. The stencil sees f16 rounding of
/// the perturbed element, so the step is larger and the tolerance looser.
#[test]
fn cast_between_floats() {
    let mut c = Check::new("grad_cast");
    c.h = 0.25;
    c.tol = 1e-2;
    let x = c.var("x", &[2, 3], -2.0, 2.0);
    let h = c.g.cast(x, DType::F16).unwrap();
    let h = c.g.square(h).unwrap();
    let y = c.g.cast(h, DType::F32).unwrap();
    c.run(y);
}

#[test]
fn reductions() {
    let cases: [(&str, &[isize], bool); 4] = [
        ("last", &[-1], false),
        ("first_keep", &[0], true),
        ("outer", &[0, 2], false),
        ("all", &[0, 1, 2], false),
    ];
    for (tag, axes, keep) in cases {
        for op in
            [rlx_ir::ReduceOp::Sum, rlx_ir::ReduceOp::Mean, rlx_ir::ReduceOp::Max, rlx_ir::ReduceOp::Min]
        {
            let mut c = Check::new(&format!("grad_reduce_{}_{tag}", op.name()));
            // Distinct values 0.15 apart: the extreme of each group is unique within the stencil.
            let x = c.var_distinct("x", &[2, 3, 4], 0.15);
            let y = c.g.reduce(op, x, axes, keep).unwrap();
            c.run(y);
        }
    }
}

/// Max over a row with a tie gives each tied element half the gradient.
#[test]
fn max_tie_splits_the_gradient() {
    let mut g = rlx_ir::Graph::new("amax_tie");
    let x = g.param("x", &[3], DType::F32).unwrap();
    let y = g.max(x, &[0], false).unwrap();
    let gr = rlx_ir::grad(&g, y, &[x]).unwrap();
    let mut exe =
        rlx_backend::Backend::compile(&rlx_cpu::CpuBackend::new(), &gr.graph, &Default::default()).unwrap();
    exe.set_param(x, &Tensor::from_f32([3], vec![2.0, -1.0, 2.0]).unwrap()).unwrap();
    let out = exe.run(&[]).unwrap();
    assert_eq!(out[1].as_f32().unwrap(), &[0.5, 0.0, 0.5]);
}

#[test]
fn cumsum() {
    let mut c = Check::new("grad_cumsum");
    let x = c.var("x", &[3, 4], -1.0, 1.0);
    let y = c.g.cumsum(x, 1).unwrap();
    c.run(y);
}

#[test]
fn matmul_transposes_and_batches() {
    // (a dims, b dims, transpose_a, transpose_b)
    let cases: [(&[usize], &[usize], bool, bool); 7] = [
        (&[3, 4], &[4, 5], false, false),
        (&[4, 3], &[4, 5], true, false),
        (&[3, 4], &[5, 4], false, true),
        (&[4, 3], &[5, 4], true, true),
        (&[2, 3, 4], &[4, 2], false, false),
        (&[3, 4], &[2, 4, 2], false, false),
        (&[2, 1, 3, 4], &[3, 2, 4], false, true),
    ];
    for (ad, bd, ta, tb) in cases {
        let mut c = Check::new(&format!("grad_matmul_{ad:?}_{bd:?}_{ta}_{tb}"));
        let a = c.var("a", ad, -1.0, 1.0);
        let b = c.var("b", bd, -1.0, 1.0);
        let y = c.g.matmul_t(a, b, ta, tb).unwrap();
        c.run(y);
    }
}

#[test]
fn softmax_and_log_softmax() {
    for axis in [-1, 0] {
        let mut c = Check::new(&format!("grad_softmax_{axis}"));
        let x = c.var("x", &[3, 5], -2.0, 2.0);
        let y = c.g.softmax(x, axis).unwrap();
        c.run(y);
        let mut c = Check::new(&format!("grad_log_softmax_{axis}"));
        let x = c.var("x", &[3, 5], -2.0, 2.0);
        let y = c.g.log_softmax(x, axis).unwrap();
        c.run(y);
    }
}

#[test]
fn layer_norm() {
    for (dims, axis) in [(&[3usize, 6][..], -1isize), (&[2, 3, 4][..], 1)] {
        let mut c = Check::new(&format!("grad_layer_norm_{dims:?}_{axis}"));
        let x = c.var("x", dims, -2.0, 2.0);
        let d = dims[(dims.len() as isize + axis) as usize % dims.len()];
        let gamma = c.var("gamma", &[d], 0.5, 1.5);
        let beta = c.var("beta", &[d], -0.5, 0.5);
        let y = c.g.layer_norm(x, Some(gamma), Some(beta), axis, 1e-5).unwrap();
        c.run(y);
    }
}

#[test]
fn rms_norm() {
    let mut c = Check::new("grad_rms_norm");
    let x = c.var("x", &[3, 6], -2.0, 2.0);
    let gamma = c.var("gamma", &[6], 0.5, 1.5);
    let y = c.g.rms_norm(x, Some(gamma), -1, 1e-6).unwrap();
    c.run(y);
}

/// Attention in every mask kind, both layouts, grouped-query heads, a soft-cap and a custom
/// scale; causal with more keys than queries (queries at an offset); a padding
/// mask with a fully padded sequence; a bias that is itself differentiated.
#[test]
fn attention_every_mask() {
    use rlx_ir::{AttentionSpec, AttnLayout, MaskKind};
    // (tag, layout, mask, [b, hq, hkv, sq, sk])
    let cases: [(&str, AttnLayout, MaskKind, [usize; 5]); 7] = [
        ("none_bhsd", AttnLayout::Bhsd, MaskKind::None, [1, 2, 2, 3, 4]),
        ("causal_bshd_gqa", AttnLayout::Bshd, MaskKind::Causal, [1, 4, 2, 3, 5]),
        ("causal_cache_offset", AttnLayout::Bhsd, MaskKind::Causal, [1, 1, 1, 2, 4]),
        ("window2_bhsd", AttnLayout::Bhsd, MaskKind::SlidingWindow(2), [1, 2, 1, 4, 4]),
        ("padding_bshd", AttnLayout::Bshd, MaskKind::Padding, [2, 2, 2, 3, 3]),
        ("bias_bhsd", AttnLayout::Bhsd, MaskKind::Bias, [2, 2, 2, 3, 4]),
        ("softcap_scale", AttnLayout::Bhsd, MaskKind::Causal, [1, 2, 2, 3, 3]),
    ];
    for (tag, layout, mask, [b, hq, hkv, sq, sk]) in cases {
        let mut c = Check::new(&format!("grad_attention_{tag}"));
        let dims = |h: usize, s: usize| match layout {
            AttnLayout::Bshd => vec![b, s, h, 4],
            AttnLayout::Bhsd => vec![b, h, s, 4],
        };
        let q = c.var("q", &dims(hq, sq), -1.0, 1.0);
        let k = c.var("k", &dims(hkv, sk), -1.0, 1.0);
        let v = c.var("v", &dims(hkv, sk), -1.0, 1.0);
        let m = match mask {
            // Sequence 1 fully padded: its rows give zeros and no gradient.
            MaskKind::Padding => {
                Some(c.fixed("m", Tensor::from_i32([b, sk], vec![1, 0, 1, 0, 0, 0]).unwrap()))
            }
            MaskKind::Bias => Some(c.var("bias", &[1, hq, sq, sk], -1.0, 1.0)),
            _ => None,
        };
        let mut spec = AttentionSpec::new(layout, mask);
        if tag == "softcap_scale" {
            spec = spec.scale(0.7).softcap(1.5);
        }
        let y = c.g.attention(q, k, v, m, spec).unwrap();
        c.run(y);
    }
}

#[test]
fn attention_with_kv_lengths_is_refused() {
    use rlx_ir::{AttentionSpec, AttnLayout, MaskKind};
    let mut g = rlx_ir::Graph::new("kv");
    let q = g.param("q", &[1, 1, 2, 4], DType::F32).unwrap();
    let k = g.param("k", &[1, 1, 3, 4], DType::F32).unwrap();
    let len = g.input("len", &[1], DType::I32).unwrap();
    let y = g
        .attention_with_lengths(q, k, k, None, len, AttentionSpec::new(AttnLayout::Bhsd, MaskKind::None))
        .unwrap();
    let loss = grad_common::sum_all(&mut g, y).unwrap();
    let e = grad_common::grad_error(&g, loss, &[q]);
    assert!(matches!(e, rlx_ir::IrError::NoGradient { op: "attention", .. }), "{e}");
    assert!(e.to_string().contains("kv_lengths"), "{e}");
}
