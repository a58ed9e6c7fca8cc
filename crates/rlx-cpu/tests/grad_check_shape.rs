//! Gradient checks (rlx_ir::grad) against finite differences on the CPU: the data-movement
//! ops, gather (embedding), RoPE, composites where gradients accumulate, and the errors and
//! edge cases of the transform itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod grad_common;
use grad_common::{grad_error, sum_all, Check};
use rlx_backend::Backend;
use rlx_ir::{AttnLayout, DType, Graph, IrError, NodeId, Op, RopeStyle, Tensor};

fn cpu_run(g: &Graph, params: &[(NodeId, Tensor)], inputs: &[(NodeId, Tensor)]) -> Vec<Tensor> {
    let mut exe = rlx_cpu::CpuBackend::new().compile(g, &Default::default()).unwrap();
    for (id, t) in params {
        exe.set_param(*id, t).unwrap();
    }
    let feeds: Vec<(NodeId, &Tensor)> = inputs.iter().map(|(id, t)| (*id, t)).collect();
    exe.run(&feeds).unwrap()
}

#[test]
fn reshape_permute_reverse_expand() {
    let mut c = Check::new("grad_reshape");
    let x = c.var("x", &[2, 6], -1.0, 1.0);
    let y = c.g.reshape(x, &[3, 2, 2]).unwrap();
    c.run(y);

    let mut c = Check::new("grad_permute");
    let x = c.var("x", &[2, 3, 4], -1.0, 1.0);
    let y = c.g.permute(x, &[2, 0, 1]).unwrap();
    c.run(y);

    let mut c = Check::new("grad_reverse");
    let x = c.var("x", &[3, 4], -1.0, 1.0);
    let y = c.g.reverse(x, &[0, 1]).unwrap();
    c.run(y);

    for (from, to) in [(&[3usize][..], &[2usize, 3][..]), (&[2, 1], &[2, 3]), (&[1, 3, 1], &[2, 3, 4])] {
        let mut c = Check::new(&format!("grad_expand_{from:?}_{to:?}"));
        let x = c.var("x", from, -1.0, 1.0);
        let y = c.g.expand(x, to).unwrap();
        c.run(y);
    }
}

#[test]
fn slices_with_steps() {
    // (axis, start, end, step) on x [5, 7].
    for (axis, start, end, step) in [(1, 2, 6, 1), (0, 0, 5, 2), (1, 1, 7, 3), (1, 0, 7, 3), (0, 4, 5, 1)] {
        let mut c = Check::new(&format!("grad_slice_{axis}_{start}_{end}_{step}"));
        let x = c.var("x", &[5, 7], -1.0, 1.0);
        let y = c.g.slice(x, axis, start, end, step).unwrap();
        c.run(y);
    }
}

#[test]
fn concat_pad_upsample() {
    let mut c = Check::new("grad_concat");
    let a = c.var("a", &[2, 3], -1.0, 1.0);
    let k = c.fixed("k", Tensor::from_f32([2, 1], vec![0.5, -0.5]).unwrap());
    let b = c.var("b", &[2, 2], -1.0, 1.0);
    let y = c.g.concat(&[a, k, b, a], 1).unwrap();
    c.run(y);

    let mut c = Check::new("grad_pad");
    let x = c.var("x", &[2, 3], -1.0, 1.0);
    let y = c.g.pad(x, &[(1, 0), (2, 1)], 0.5).unwrap();
    c.run(y);

    let mut c = Check::new("grad_upsample");
    let x = c.var("x", &[1, 2, 2, 3], -1.0, 1.0);
    let y = c.g.upsample_nearest2x(x).unwrap();
    c.run(y);
}

/// Embedding rows picked with repeats (their gradients add up), one id out of range (it
/// gathers zeros and gets nothing), ids of rank 2; and a gather along axis 1.
#[test]
fn gather_is_a_scatter_add() {
    let mut c = Check::new("grad_embedding");
    let table = c.var("table", &[5, 3], -1.0, 1.0);
    let ids = c.fixed("ids", Tensor::from_i32([2, 3], vec![1, 4, 1, 0, 7, 1]).unwrap());
    let y = c.g.embedding(table, ids).unwrap();
    c.run(y);

    let mut c = Check::new("grad_gather_axis1");
    let x = c.var("x", &[2, 4, 3], -1.0, 1.0);
    let ids = c.fixed("ids", Tensor::from_i32([5], vec![3, 0, 3, 2, 3]).unwrap());
    let y = c.g.gather(x, ids, 1).unwrap();
    c.run(y);
}

/// Scatter-add's gradient (a gather of dy by the same ids) on axis 0 and a middle axis, with
/// repeated ids and ids out of range on both sides (their source rows get zero gradients).
#[test]
fn scatter_add_gradient_is_a_gather() {
    let mut c = Check::new("grad_scatter_add_axis0");
    let src = c.var("src", &[2, 3, 4], -1.0, 1.0);
    let ids = c.fixed("ids", Tensor::from_i32([2, 3], vec![1, 4, 1, -1, 6, 1]).unwrap());
    let y = c.g.scatter_add(ids, src, 0, 5).unwrap();
    c.run(y);

    let mut c = Check::new("grad_scatter_add_axis1");
    let src = c.var("src", &[3, 5, 2], -1.0, 1.0);
    let ids = c.fixed("ids", Tensor::from_i32([5], vec![2, 0, 2, 9, 2]).unwrap());
    let y = c.g.scatter_add(ids, src, 1, 4).unwrap();
    c.run(y);
}

/// The backward of an embedding is one scatter-add of dy, not a one-hot matmul.
#[test]
fn embedding_backward_is_one_scatter_add() {
    let mut g = Graph::new("emb");
    let table = g.param("table", &[30522, 8], DType::F32).unwrap();
    let ids = g.input("ids", &[4, 16], DType::I32).unwrap();
    let e = g.embedding(table, ids).unwrap();
    let loss = sum_all(&mut g, e).unwrap();
    let gr = rlx_ir::grad(&g, loss, &[table]).unwrap();
    let ops: Vec<&Op> = gr.graph.nodes().iter().map(|n| &n.op).collect();
    assert_eq!(ops.iter().filter(|o| matches!(o, Op::ScatterAdd { axis: 0, len: 30522 })).count(), 1);
    assert!(!ops.iter().any(|o| matches!(o, Op::MatMul { .. } | Op::Compare(_))), "{ops:?}");
    assert_eq!(gr.graph.ty(gr.grads[0]).unwrap(), g.ty(table).unwrap());
}

/// The embedding gradient by hand: row v gets the sum of dy's rows whose id is v; the same
/// bits on a second run.
#[test]
fn embedding_gradient_by_hand_and_deterministic() {
    let mut g = Graph::new("emb");
    let table = g.param("table", &[3, 2], DType::F32).unwrap();
    let ids = g.input("ids", &[4], DType::I32).unwrap();
    let w = g.input("w", &[4, 2], DType::F32).unwrap();
    let e = g.embedding(table, ids).unwrap();
    let y = g.mul(e, w).unwrap();
    let loss = sum_all(&mut g, y).unwrap();
    let gr = rlx_ir::grad(&g, loss, &[table]).unwrap();
    let params = [(table, Tensor::from_f32([3, 2], vec![0.0; 6]).unwrap())];
    let inputs = [
        (ids, Tensor::from_i32([4], vec![2, 0, 2, 5]).unwrap()),
        (w, Tensor::from_f32([4, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).unwrap()),
    ];
    let first = cpu_run(&gr.graph, &params, &inputs);
    // Row 0 from id position 1; row 1 never picked; row 2 from positions 0 and 2; id 5 is out
    // of range and adds nothing.
    assert_eq!(first[1].as_f32().unwrap(), &[3.0, 4.0, 0.0, 0.0, 6.0, 8.0]);
    let second = cpu_run(&gr.graph, &params, &inputs);
    assert_eq!(first[1], second[1]);
}

#[test]
fn rope_both_styles_and_layouts() {
    for style in [RopeStyle::NeoX, RopeStyle::GptJ] {
        for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
            let mut c = Check::new(&format!("grad_rope_{style:?}_{layout:?}"));
            let x = c.var("x", &[1, 3, 2, 6], -1.0, 1.0);
            let s = if layout == AttnLayout::Bshd { 3 } else { 2 };
            let ang: Vec<f32> = (0..s * 2).map(|i| 0.3 + 0.7 * i as f32).collect();
            let cos =
                c.fixed("cos", Tensor::from_f32([s, 2], ang.iter().map(|a| a.cos()).collect()).unwrap());
            let sin =
                c.fixed("sin", Tensor::from_f32([s, 2], ang.iter().map(|a| a.sin()).collect()).unwrap());
            // rotary_dims 4 of 6: the last two dims pass through.
            let y = c.g.rope(x, cos, sin, style, layout, 4).unwrap();
            c.run(y);
        }
    }
}

/// A two-layer MLP where x feeds two consumers and w1 is used twice: gradients accumulate.
#[test]
fn mlp_with_shared_values() {
    let mut c = Check::new("grad_mlp");
    let x = c.var("x", &[3, 4], -1.0, 1.0);
    let w1 = c.var("w1", &[4, 5], -0.7, 0.7);
    let b1 = c.var("b1", &[5], -0.2, 0.2);
    let w2 = c.var("w2", &[5, 4], -0.7, 0.7);
    let h = c.g.matmul(x, w1).unwrap();
    let h = c.g.add(h, b1).unwrap();
    let h = c.g.gelu(h).unwrap();
    let o = c.g.matmul(h, w2).unwrap();
    let o = c.g.add(o, x).unwrap();
    let o = c.g.layer_norm(o, None, None, -1, 1e-5).unwrap();
    let again = c.g.matmul(o, w1).unwrap();
    let y = c.g.log_softmax(again, -1).unwrap();
    c.run(y);
}

/// A non-scalar loss is seeded with ones: the gradient of the sum of its elements.
#[test]
fn non_scalar_loss_is_seeded_with_ones() {
    let mut g = Graph::new("seed");
    let x = g.param("x", &[3], DType::F32).unwrap();
    let y = g.square(x).unwrap();
    let gr = rlx_ir::grad(&g, y, &[x]).unwrap();
    let out = cpu_run(&gr.graph, &[(x, Tensor::from_f32([3], vec![1.0, -2.0, 0.5]).unwrap())], &[]);
    assert_eq!(out[1].as_f32().unwrap(), &[2.0, -4.0, 1.0]);
}

/// A param the loss does not depend on gets zeros; an input may be differentiated too.
#[test]
fn unrelated_param_gets_zeros_and_inputs_differentiate() {
    let mut g = Graph::new("zeros");
    let x = g.input("x", &[2], DType::F32).unwrap();
    let w = g.param("w", &[2], DType::F32).unwrap();
    let unused = g.param("unused", &[2, 2], DType::F32).unwrap();
    let y = g.mul(x, w).unwrap();
    let loss = sum_all(&mut g, y).unwrap();
    let gr = rlx_ir::grad(&g, loss, &[w, unused, x]).unwrap();
    let out = cpu_run(
        &gr.graph,
        &[(w, Tensor::from_f32([2], vec![3.0, 4.0]).unwrap()), (unused, Tensor::zeros([2, 2], DType::F32))],
        &[(x, Tensor::from_f32([2], vec![1.0, 2.0]).unwrap())],
    );
    assert_eq!(out[1].as_f32().unwrap(), &[1.0, 2.0]);
    assert_eq!(out[2].dims(), &[2, 2]);
    assert_eq!(out[2].as_f32().unwrap(), &[0.0; 4]);
    assert_eq!(out[3].as_f32().unwrap(), &[3.0, 4.0]);
}

fn msg_has(e: &IrError, parts: &[&str]) {
    let m = e.to_string();
    for p in parts {
        assert!(m.contains(p), "{m:?} lacks {p:?}");
    }
}

/// An integer op on the path to a param is an error naming the op and the param; the graph is
/// left as it was.
#[test]
fn no_gradient_errors_name_the_op_and_the_param() {
    let mut g = Graph::new("argmax_path");
    let w = g.param("w", &[2, 3], DType::F32).unwrap();
    let i = g.argmax(w, -1, false).unwrap();
    let f = g.cast(i, DType::F32).unwrap();
    let s = sum_all(&mut g, w).unwrap();
    let fsum = sum_all(&mut g, f).unwrap();
    let loss = g.add(s, fsum).unwrap();
    let before = g.len();
    let e = g.backward(loss, &[w]).unwrap_err();
    assert!(matches!(e, IrError::NoGradient { op: "cast", .. }), "{e}");
    msg_has(&e, &["cast", "'w'", "i32"]);
    assert_eq!(g.len(), before, "a failed backward left nodes behind");

    // Top-k indices are discrete too: a cast of them is the op named.
    let mut g = Graph::new("topk_indices_path");
    let w = g.param("w", &[4], DType::F32).unwrap();
    let (_, i) = g.topk(w, 2, 0, true).unwrap();
    let f = g.cast(i, DType::F32).unwrap();
    let loss = sum_all(&mut g, f).unwrap();
    let e = grad_error(&g, loss, &[w]);
    assert!(matches!(e, IrError::NoGradient { op: "cast", .. }), "{e}");
    msg_has(&e, &["cast", "'w'", "[2]"]);

    let mut g = Graph::new("experts_path");
    let w = g.param("w", &[3, 5, 4], DType::F32).unwrap();
    let x = g.input("x", &[2, 1, 4], DType::F32).unwrap();
    let ids = g.input("ids", &[2, 2], DType::I32).unwrap();
    let y = g.push(Op::GroupedMatMul, &[x, w, ids]).unwrap();
    let loss = sum_all(&mut g, y).unwrap();
    msg_has(&grad_error(&g, loss, &[w]), &["grouped_matmul", "'w'", "[3, 5, 4]"]);
}

#[test]
fn bad_arguments_are_errors() {
    let mut g = Graph::new("args");
    let w = g.param("w", &[2], DType::F32).unwrap();
    let ids = g.input("ids", &[2], DType::I32).unwrap();
    let y = g.square(w).unwrap();
    let loss = sum_all(&mut g, y).unwrap();
    // Not a leaf.
    let e = grad_error(&g, loss, &[y]);
    assert!(matches!(e, IrError::Attribute { op: "grad", attr: "wrt", .. }), "{e}");
    // An integer leaf.
    assert!(matches!(grad_error(&g, loss, &[ids]), IrError::DType { op: "grad", .. }));
    // An integer loss.
    let il = g.cast(loss, DType::I32).unwrap();
    assert!(matches!(grad_error(&g, il, &[w]), IrError::DType { op: "grad", .. }));
    // A node of another graph.
    let e = grad_error(&g, NodeId(999), &[w]);
    assert!(matches!(e, IrError::UnknownNode { .. }), "{e}");
}

/// A fused op (rlx-opt's, never the user's) has no gradient: differentiate before optimizing.
#[test]
fn fused_ops_are_refused() {
    let mut g = Graph::new("fused");
    let x = g.param("x", &[2, 3], DType::F32).unwrap();
    let w = g.param("w", &[3, 2], DType::F32).unwrap();
    let y = g
        .push(
            Op::FusedMatMul { transpose_a: false, transpose_b: false, bias: false, activation: None },
            &[x, w],
        )
        .unwrap();
    let loss = sum_all(&mut g, y).unwrap();
    let e = grad_error(&g, loss, &[w]);
    assert!(matches!(e, IrError::NoGradient { op: "fused_matmul", .. }), "{e}");
    msg_has(&e, &["before it is optimized"]);
}

/// Convolutions with strides, padding (including more padding than the kernel reaches),
/// dilation, groups and a bias.
#[test]
fn conv2d_variants() {
    // (tag, x dims, w dims, stride, padding, dilation, groups, bias)
    type C = (&'static str, [usize; 4], [usize; 4], [usize; 2], [usize; 2], [usize; 2], usize, bool);
    let cases: [C; 4] = [
        ("plain_pad1", [1, 2, 4, 4], [3, 2, 3, 3], [1, 1], [1, 1], [1, 1], 1, true),
        ("strided_dilated_groups", [2, 4, 5, 6], [6, 2, 3, 2], [2, 1], [1, 0], [1, 2], 2, true),
        ("pointwise_overpadded", [1, 3, 3, 4], [2, 3, 1, 1], [2, 3], [1, 2], [1, 1], 1, false),
        ("depthwise_stride3", [1, 3, 7, 7], [3, 1, 2, 3], [3, 2], [2, 1], [2, 1], 3, false),
    ];
    for (tag, xd, wd, stride, padding, dilation, groups, bias) in cases {
        let mut c = Check::new(&format!("grad_conv2d_{tag}"));
        let x = c.var("x", &xd, -1.0, 1.0);
        let w = c.var("w", &wd, -1.0, 1.0);
        let b = bias.then(|| c.var("b", &[wd[0]], -1.0, 1.0));
        let y = c.g.conv2d(x, w, b, stride, padding, dilation, groups).unwrap();
        c.run(y);
    }
}

#[test]
fn pooling() {
    let mut c = Check::new("grad_max_pool");
    let x = c.var_distinct("x", &[1, 2, 5, 6], 0.15);
    let y = c.g.max_pool2d(x, [3, 3], [2, 2], [1, 1]).unwrap();
    c.run(y);

    let mut c = Check::new("grad_avg_pool");
    let x = c.var("x", &[2, 2, 5, 6], -1.0, 1.0);
    let y = c.g.avg_pool2d(x, [2, 3], [1, 2], [1, 1]).unwrap();
    c.run(y);
}

/// Max pooling over tied values gives the whole gradient to the first maximum of each window
/// in row-major order (PyTorch's choice).
#[test]
fn max_pool_ties_go_to_the_first() {
    let mut g = Graph::new("pool_tie");
    let x = g.param("x", &[1, 1, 2, 3], DType::F32).unwrap();
    let y = g.max_pool2d(x, [2, 2], [1, 1], [0, 0]).unwrap();
    let loss = sum_all(&mut g, y).unwrap();
    let gr = rlx_ir::grad(&g, loss, &[x]).unwrap();
    let out = cpu_run(&gr.graph, &[(x, Tensor::from_f32([1, 1, 2, 3], vec![1.0; 6]).unwrap())], &[]);
    // Windows at columns 0 and 1: each picks its top-left element.
    assert_eq!(out[1].as_f32().unwrap(), &[1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
}

/// Top-k values (largest and smallest, along a middle axis) and the FFT (forward and inverse).
#[test]
fn topk_values_and_fft() {
    for largest in [true, false] {
        let mut c = Check::new(&format!("grad_topk_{largest}"));
        let x = c.var_distinct("x", &[2, 6, 3], 0.15);
        let (v, _) = c.g.topk(x, 3, 1, largest).unwrap();
        c.run(v);
    }
    for inverse in [false, true] {
        let mut c = Check::new(&format!("grad_fft_{inverse}"));
        let x = c.var("x", &[2, 8, 2], -1.0, 1.0);
        let y = c.g.push(Op::Fft { inverse }, &[x]).unwrap();
        c.run(y);
    }
}

/// Prod over groups with no zero, one zero (only it gets a gradient: the product of the
/// others) and two zeros (no gradient at all).
#[test]
fn prod_with_zeros() {
    let mut c = Check::new("grad_prod");
    let x = c.var_with("x", &[3, 4], vec![0.5, -1.5, 2.0, 0.8, 1.2, 0.0, -0.7, 1.5, 0.0, 2.0, 0.0, -1.1]);
    let y = c.g.prod(x, &[1], false).unwrap();
    c.run(y);
    let mut c = Check::new("grad_prod_all_keep");
    let x = c.var("x", &[2, 3], 0.5, 1.5);
    let y = c.g.prod(x, &[0, 1], true).unwrap();
    c.run(y);
}
