//! Whole graphs built with the rlx-ir builders, compiled and run by `CpuBackend`.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use rlx_backend::{Backend, Executable};
use rlx_ir::{AttentionSpec, AttnLayout, DType, Graph, MaskKind, NodeId, Op, OpKind, Tensor};
use rlx_nn::prelude::*;
use rlx_test_support::graphs::{input, one_output, param};

fn compile(g: &Graph) -> Box<dyn Executable> {
    rlx_cpu::CpuBackend::new().compile(g, &Default::default()).unwrap()
}

#[test]
fn backend_describes_itself() {
    let b = rlx_cpu::CpuBackend::new();
    assert_eq!(b.name(), "cpu");
    let caps = b.capabilities();
    assert!(
        caps.device_name.starts_with("cpu (") && caps.device_name.ends_with(" threads)"),
        "{}",
        caps.device_name
    );
    for k in [OpKind::Attention, OpKind::FusedMatMul, OpKind::Conv2d, OpKind::TopK] {
        assert!(caps.supports(k));
    }
    // The machine's memory, not "no limit".
    assert_eq!(caps.max_tensor_bytes, rlx_cpu::host_memory_bytes());
    assert!(caps.max_tensor_bytes <= rlx_ir::MAX_TENSOR_BYTES);
}

#[test]
fn mlp_matches_op_by_op_eval() {
    let mut g = Graph::new("mlp");
    let x = g.input("x", &[2, 4], DType::F32).unwrap();
    let w = g.param("w", &[4, 3], DType::F32).unwrap();
    let b = g.param("b", &[3], DType::F32).unwrap();
    let y = g.matmul(x, w).unwrap();
    let y = g.add(y, b).unwrap();
    let y = g.gelu(y).unwrap();
    let s = g.softmax(y, -1).unwrap();
    g.set_outputs(&[y, s]).unwrap();

    let xt = t32(&[2, 4], rand_vec(8, 1));
    let wt = t32(&[4, 3], rand_vec(12, 2));
    let bt = t32(&[3], rand_vec(3, 3));
    let mut exe = compile(&g);
    exe.set_param(w, &wt).unwrap();
    exe.set_param(b, &bt).unwrap();
    let out = exe.run(&[(x, &xt)]).unwrap();
    assert_eq!(out.len(), 2);

    let mm = t32(&[2, 3], evf(Op::MatMul { transpose_a: false, transpose_b: false }, &[&xt, &wt], &[2, 3]));
    let ad = t32(&[2, 3], evf(Op::Binary(rlx_ir::BinaryOp::Add), &[&mm, &bt], &[2, 3]));
    let ge = t32(&[2, 3], evf(Op::Unary(rlx_ir::UnaryOp::Gelu), &[&ad], &[2, 3]));
    let sm = evf(Op::Softmax, &[&ge], &[2, 3]);
    assert_eq!(out[0], ge);
    assert_eq!(out[1].as_f32().unwrap(), &sm[..]);
    // Running again gives the same result (params persist, values do not leak between runs).
    let again = exe.run(&[(x, &xt)]).unwrap();
    assert_eq!(again, out);
}

#[test]
fn outputs_may_be_inputs_params_constants_or_repeated() {
    let mut g = Graph::new("passthrough");
    let x = g.input("x", &[2], DType::I32).unwrap();
    let p = g.param("p", &[2], DType::I32).unwrap();
    let c = g.constant(ti32(&[1], vec![9])).unwrap();
    let s = g.add(x, p).unwrap();
    let r = g.reshape(s, &[2, 1]).unwrap();
    g.set_outputs(&[x, p, c, s, r, s]).unwrap();
    let mut exe = compile(&g);
    exe.set_param(p, &ti32(&[2], vec![10, 20])).unwrap();
    let xt = ti32(&[2], vec![1, 2]);
    let out = exe.run(&[(x, &xt)]).unwrap();
    assert_eq!(out[0], xt);
    assert_eq!(out[1].as_i32().unwrap(), &[10, 20]);
    assert_eq!(out[2].as_i32().unwrap(), &[9]);
    assert_eq!(out[3].as_i32().unwrap(), &[11, 22]);
    assert_eq!(out[4].dims(), &[2, 1]);
    assert_eq!(out[4].as_i32().unwrap(), &[11, 22]);
    assert_eq!(out[5], out[3]);
}

#[test]
fn reshape_chains_and_shared_values() {
    // r1 is read by two nodes; r2 is the only reader of its input (moved, not copied).
    let mut g = Graph::new("views");
    let x = g.input("x", &[2, 3], DType::F32).unwrap();
    let e = g.exp(x).unwrap();
    let r1 = g.reshape(e, &[3, 2]).unwrap();
    let n = g.neg(r1).unwrap();
    let r2 = g.reshape(n, &[6]).unwrap();
    let t = g.transpose(r1, 0, 1).unwrap();
    g.set_outputs(&[r2, t]).unwrap();
    let xv = rand_vec(6, 4);
    let out = compile(&g).run(&[(x, &t32(&[2, 3], xv.clone()))]).unwrap();
    let ex: Vec<f32> = xv.iter().map(|v| (*v as f64).exp() as f32).collect();
    assert_eq!(out[0].as_f32().unwrap(), &ex.iter().map(|v| -v).collect::<Vec<_>>()[..]);
    assert_eq!(out[1].dims(), &[2, 3]);
    assert_eq!(out[1].as_f32().unwrap(), &[ex[0], ex[2], ex[4], ex[1], ex[3], ex[5]]);
}

#[test]
fn missing_values_are_errors_not_panics() {
    let (g, [x, w], _) =
        one_output("needs", [input("x", &[2], DType::F32), param("w", &[2], DType::F32)], |g, [x, w]| {
            g.mul(x, w)
        });
    let mut exe = compile(&g);
    let xt = t32(&[2], vec![1.0, 2.0]);
    let err = exe.run(&[(x, &xt)]).unwrap_err();
    assert!(err.to_string().contains("'w'"), "{err}");
    exe.set_param(w, &t32(&[2], vec![3.0, 4.0])).unwrap();
    let err = exe.run(&[]).unwrap_err();
    assert!(err.to_string().contains("'x'"), "{err}");
    // Wrong shapes, wrong dtypes and non-param ids are refused.
    assert!(exe.set_param(w, &t32(&[3], vec![0.0; 3])).is_err());
    assert!(exe.set_param(w, &ti32(&[2], vec![0; 2])).is_err());
    assert!(exe.set_param(x, &xt).is_err());
    assert!(exe.set_param(NodeId(99), &xt).is_err());
    assert!(exe.run(&[(x, &ti32(&[2], vec![1, 2]))]).is_err());
    assert_eq!(exe.run(&[(x, &xt)]).unwrap()[0].as_f32().unwrap(), &[3.0, 8.0]);
}

#[test]
fn unused_nodes_are_skipped() {
    // `dead` would need an input that is never given; it has no readers, so it never runs.
    let mut g = Graph::new("dead");
    let x = g.input("x", &[1], DType::F32).unwrap();
    let unused = g.input("unused", &[1], DType::F32).unwrap();
    let _dead = g.exp(unused).unwrap();
    let y = g.sqrt(x).unwrap();
    g.set_outputs(&[y]).unwrap();
    let out = compile(&g).run(&[(x, &t32(&[1], vec![9.0]))]).unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &[3.0]);
}

#[test]
fn attention_block_through_builders() {
    let (b, s, h, d) = (1, 3, 2, 4);
    let mut g = Graph::new("attn");
    let x = g.input("x", &[b * s, h * d], DType::F32).unwrap();
    let q = g.reshape(x, &[b, s, h, d]).unwrap();
    let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Causal);
    let a = g.attention(q, q, q, None, spec).unwrap();
    let n = g.layer_norm(a, None, None, -1, 1e-5).unwrap();
    g.set_outputs(&[a, n]).unwrap();
    let xt = t32(&[b * s, h * d], rand_vec(b * s * h * d, 5));
    let out = compile(&g).run(&[(x, &xt)]).unwrap();
    let q4 = xt.clone().reshape([b, s, h, d]).unwrap();
    let want = evf(Op::Attention(spec), &[&q4, &q4, &q4], &[b, s, h, d]);
    assert_eq!(out[0].as_f32().unwrap(), &want[..]);
    // Row 0 of a causal self-attention only sees itself: its output is v[0] = x[0].
    assert_eq!(&want[..d], &xt.as_f32().unwrap()[..d]);
    let ones = t32(&[d], vec![1.0; d]);
    let zeros = t32(&[d], vec![0.0; d]);
    let a4 = t32(&[b, s, h, d], want);
    assert_eq!(
        out[1].as_f32().unwrap(),
        &evf(Op::LayerNorm { eps: 1e-5 }, &[&a4, &ones, &zeros], &[b, s, h, d])[..]
    );
}

#[test]
fn composites_run_on_the_cpu() {
    // group_norm decomposes into reshape/reduce/elementwise ops; check against a direct loop.
    let (n, c, hw, groups) = (2, 4, 3, 2);
    let mut g = Graph::new("gn");
    let x = g.input("x", &[n, c, hw], DType::F32).unwrap();
    let y = g.group_norm(x, groups, None, None, 1e-5).unwrap();
    g.set_outputs(&[y]).unwrap();
    let xv = rand_vec(n * c * hw, 6);
    let out = compile(&g).run(&[(x, &t32(&[n, c, hw], xv.clone()))]).unwrap();
    let per = c / groups * hw;
    let mut want = Vec::new();
    for chunk in xv.chunks(per) {
        let mean = chunk.iter().map(|&v| v as f64).sum::<f64>() / per as f64;
        let var = chunk.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / per as f64;
        want.extend(chunk.iter().map(|&v| (v as f64 - mean) / (var + 1e-5).sqrt()));
    }
    close64(out[0].as_f32().unwrap(), &want, 1e-5);
}

#[test]
fn topk_pair_and_gather_in_a_graph() {
    let mut g = Graph::new("topk");
    let x = g.input("x", &[2, 4], DType::F32).unwrap();
    let (v, i) = g.topk(x, 2, -1, true).unwrap();
    let table = g.constant(Tensor::from_f32([4, 1], vec![10.0, 20.0, 30.0, 40.0]).unwrap()).unwrap();
    let e = g.embedding(table, i).unwrap();
    g.set_outputs(&[v, i, e]).unwrap();
    let xt = t32(&[2, 4], vec![0.1, 0.9, 0.5, 0.9, 3.0, 2.0, 1.0, 0.0]);
    let out = compile(&g).run(&[(x, &xt)]).unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &[0.9, 0.9, 3.0, 2.0]);
    assert_eq!(out[1].as_i32().unwrap(), &[1, 3, 0, 1]);
    assert_eq!(out[2].dims(), &[2, 2, 1]);
    assert_eq!(out[2].as_f32().unwrap(), &[20.0, 40.0, 10.0, 20.0]);
}
