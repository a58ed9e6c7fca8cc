//! Every key lowering can emit is in the kernel table ([`crate::keys`]): a key missing there
//! would have no compiled module. Small graphs of every op family, several dtypes and options,
//! go through rlx-opt's pipeline (so fused epilogues, add-norms and f16 weights appear) and are
//! lowered on devices with and without cooperative matrices, with each forced matmul kernel.

use crate::catalog::shape::ShapeKernel;
use crate::{capabilities, keys, lower, GpuLimits, KernelKey};
use rlx_backend::{KernelOptions, MatmulKernel, Precision};
use rlx_ir::{
    AttentionSpec, AttnLayout, BinaryOp, CompareOp, DType, Graph, MaskKind, NodeId, QuantType, RandomDist,
    RopeStyle, ScanOutput, UnaryOp,
};
use rlx_opt::PassOptions;
use std::collections::HashSet;

/// The devices and options every graph is lowered with.
fn settings() -> Vec<(GpuLimits, KernelOptions)> {
    let mixed = KernelOptions { precision: Precision::Mixed, matmul: None };
    let mut all = vec![
        (GpuLimits::lavapipe(), KernelOptions::default()),
        (GpuLimits::hopper(), KernelOptions::default()),
        (GpuLimits::hopper(), mixed),
    ];
    for forced in MatmulKernel::ALL {
        all.push((GpuLimits::hopper(), KernelOptions { matmul: Some(forced), ..mixed }));
    }
    all
}

/// The keys of `g`'s steps under every setting that can lower it (at least one must).
fn lowered(g: &Graph, seen: &mut HashSet<KernelKey>) {
    let mut any = false;
    for (limits, options) in settings() {
        let caps = capabilities("keys test", &limits);
        let Ok(opt) = rlx_opt::optimize(g, &caps, &PassOptions::default(), None) else { continue };
        if let Ok(s) = lower(&opt, &limits, &options) {
            seen.extend(s.into_inner().steps.iter().map(|d| d.key));
            any = true;
        }
    }
    assert!(any, "graph {} lowers on no setting", g.name());
}

/// A graph of one output built by `f` from inputs it declares.
fn graph(name: &str, f: impl FnOnce(&mut Graph) -> Vec<NodeId>) -> Graph {
    let mut g = Graph::new(name);
    let outs = f(&mut g);
    g.set_outputs(&outs).unwrap();
    g
}

fn elementwise(seen: &mut HashSet<KernelKey>) {
    for t in [DType::F32, DType::I32, DType::U32] {
        lowered(
            &graph("binary", |g| {
                let a = g.input("a", &[3, 4], t).unwrap();
                let b = g.input("b", &[4], t).unwrap();
                let mut outs: Vec<NodeId> =
                    BinaryOp::ALL.iter().map(|&op| g.binary(op, a, b).unwrap()).collect();
                outs.extend(CompareOp::ALL.iter().map(|&op| g.compare(op, a, b).unwrap()));
                let c = g.lt(a, b).unwrap();
                outs.push(g.where_(c, a, b).unwrap());
                outs
            }),
            seen,
        );
    }
    lowered(
        &graph("unary", |g| {
            let x = g.input("x", &[5], DType::F32).unwrap();
            UnaryOp::ALL.iter().map(|&op| g.unary(op, x).unwrap()).collect()
        }),
        seen,
    );
    lowered(
        &graph("int_unary", |g| {
            let x = g.input("x", &[5], DType::I32).unwrap();
            vec![g.neg(x).unwrap(), g.abs(x).unwrap()]
        }),
        seen,
    );
    let all = [DType::F32, DType::I32, DType::U32, DType::Bool, DType::F16, DType::BF16, DType::U8];
    for from in all {
        lowered(
            &graph("casts", |g| {
                let x = g.input("x", &[8], from).unwrap();
                all.iter().filter(|&&to| to != from).map(|&to| g.cast(x, to).unwrap()).collect()
            }),
            seen,
        );
    }
}

fn shape_and_reduce(seen: &mut HashSet<KernelKey>) {
    lowered(
        &graph("scatter_add", |g| {
            let ids = g.input("ids", &[5], DType::I32).unwrap();
            let src = g.input("src", &[2, 5, 4], DType::F32).unwrap();
            vec![g.scatter_add(ids, src, 1, 7).unwrap()]
        }),
        seen,
    );
    for t in [DType::F32, DType::I32, DType::U32] {
        lowered(
            &graph("shape", |g| {
                let x = g.input("x", &[2, 3, 4], t).unwrap();
                let ids = g.input("ids", &[5], DType::I32).unwrap();
                let p = g.permute(x, &[2, 0, 1]).unwrap();
                vec![
                    g.reshape(p, &[24]).unwrap(),
                    g.slice(x, 2, 1, 4, 2).unwrap(),
                    g.concat(&[x, x], 1).unwrap(),
                    g.expand(x, &[3, 2, 3, 4]).unwrap(),
                    g.gather(x, ids, 1).unwrap(),
                    g.pad(x, &[(0, 0), (1, 1), (0, 2)], 1.0).unwrap(),
                    g.reverse(x, &[1]).unwrap(),
                ]
            }),
            seen,
        );
        lowered(
            &graph("reduce", |g| {
                let x = g.input("x", &[2, 3, 4], t).unwrap();
                let (values, indices) = g.topk(x, 2, -1, true).unwrap();
                let mut outs = vec![
                    g.sum(x, &[1], false).unwrap(),
                    g.max(x, &[0, 2], true).unwrap(),
                    g.min(x, &[2], false).unwrap(),
                    g.prod(x, &[1], false).unwrap(),
                    g.argmax(x, 1, false).unwrap(),
                    g.argmin(x, 2, false).unwrap(),
                    g.cumsum(x, 2).unwrap(),
                    values,
                    indices,
                ];
                if t == DType::F32 {
                    outs.push(g.mean(x, &[1], false).unwrap());
                }
                outs
            }),
            seen,
        );
    }
}

fn matmul(seen: &mut HashSet<KernelKey>) {
    let acts = [None, Some(UnaryOp::Gelu), Some(UnaryOp::GeluTanh), Some(UnaryOp::Relu), Some(UnaryOp::Silu)];
    for (m, n, k) in [(1, 64, 64), (4, 96, 4864), (128, 768, 3072), (256, 256, 256), (2, 3, 5)] {
        for wdt in [DType::F32, DType::F16] {
            for bias in [false, true] {
                for act in acts.into_iter().chain([Some(UnaryOp::Sigmoid), Some(UnaryOp::Tanh)]) {
                    lowered(
                        &graph("linear", |g| {
                            let x = g.input("x", &[m, k], DType::F32).unwrap();
                            let w = g.param("w", &[n, k], wdt).unwrap();
                            let w = if wdt == DType::F32 { w } else { g.cast(w, DType::F32).unwrap() };
                            let mut y = g.matmul_t(x, w, false, true).unwrap();
                            if bias {
                                let b = g.param("b", &[n], DType::F32).unwrap();
                                y = g.add(y, b).unwrap();
                            }
                            vec![act.map_or(y, |op| g.unary(op, y).unwrap())]
                        }),
                        seen,
                    );
                }
            }
            // Sibling projections of one A (split q/k/v) and a gated MLP, with and without
            // biases and an RMS norm before them.
            for (bias, norm) in [(false, false), (true, false), (false, true), (true, true)] {
                lowered(
                    &graph("siblings", |g| {
                        let mut x = g.input("x", &[m, k], DType::F32).unwrap();
                        if norm {
                            let gamma = g.param("gamma", &[k], DType::F32).unwrap();
                            x = g.rms_norm(x, Some(gamma), -1, 1e-6).unwrap();
                        }
                        let mut outs = Vec::new();
                        for i in 0..3 {
                            let w = g.param(&format!("w{i}"), &[n, k], wdt).unwrap();
                            let w = if wdt == DType::F32 { w } else { g.cast(w, DType::F32).unwrap() };
                            let mut y = g.matmul_t(x, w, false, true).unwrap();
                            if bias {
                                let b = g.param(&format!("b{i}"), &[n], DType::F32).unwrap();
                                y = g.add(y, b).unwrap();
                            }
                            outs.push(y);
                        }
                        for act in acts {
                            let [gate, up] = [0, 1].map(|i| {
                                let w = g.param(&format!("g{i}{act:?}"), &[n, k], wdt).unwrap();
                                let w = if wdt == DType::F32 { w } else { g.cast(w, DType::F32).unwrap() };
                                g.matmul_t(x, w, false, true).unwrap()
                            });
                            let gate = act.map_or(gate, |op| g.unary(op, gate).unwrap());
                            outs.push(g.mul(gate, up).unwrap());
                        }
                        outs
                    }),
                    seen,
                );
            }
        }
    }
    lowered(
        &graph("batched", |g| {
            let a = g.input("a", &[3, 1, 4, 5], DType::F32).unwrap();
            let b = g.input("b", &[1, 4, 5, 6], DType::F32).unwrap();
            vec![g.matmul(a, b).unwrap()]
        }),
        seen,
    );
}

fn norm_attention_rope(seen: &mut HashSet<KernelKey>) {
    lowered(
        &graph("norms", |g| {
            let x = g.input("x", &[3, 8], DType::F32).unwrap();
            let r = g.input("r", &[3, 8], DType::F32).unwrap();
            let gamma = g.param("gamma", &[8], DType::F32).unwrap();
            let beta = g.param("beta", &[8], DType::F32).unwrap();
            let s = g.add(x, r).unwrap();
            vec![
                g.layer_norm(x, Some(gamma), Some(beta), -1, 1e-5).unwrap(),
                g.rms_norm(x, Some(gamma), -1, 1e-5).unwrap(),
                g.layer_norm(s, Some(gamma), Some(beta), -1, 1e-5).unwrap(),
                g.rms_norm(s, Some(gamma), -1, 1e-5).unwrap(),
                g.softmax(x, -1).unwrap(),
                g.log_softmax(x, -1).unwrap(),
            ]
        }),
        seen,
    );
    for (sq, sk, d) in [(1, 300, 64), (3, 40, 32), (64, 128, 64), (70, 70, 128), (16, 16, 256)] {
        for mask in [MaskKind::None, MaskKind::Causal] {
            lowered(
                &graph("attention", |g| {
                    let q = g.input("q", &[1, 2, sq, d], DType::F32).unwrap();
                    let k = g.input("k", &[1, 2, sk, d], DType::F32).unwrap();
                    let v = g.input("v", &[1, 2, sk, d], DType::F32).unwrap();
                    let spec = AttentionSpec::new(AttnLayout::Bhsd, mask);
                    vec![g.attention(q, k, v, None, spec).unwrap()]
                }),
                seen,
            );
        }
    }
    lowered(
        &graph("rope", |g| {
            let x = g.input("x", &[1, 4, 2, 8], DType::F32).unwrap();
            let cos = g.input("cos", &[4, 4], DType::F32).unwrap();
            let sin = g.input("sin", &[4, 4], DType::F32).unwrap();
            vec![g.rope(x, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, 8).unwrap()]
        }),
        seen,
    );
}

fn the_rest(seen: &mut HashSet<KernelKey>) {
    lowered(
        &graph("random", |g| {
            let key = g.rng_key("key").unwrap();
            RandomDist::ALL.iter().map(|&d| g.random(key, d, &[7]).unwrap()).collect()
        }),
        seen,
    );
    for q in QuantType::ALL {
        for m in [1, 64] {
            lowered(
                &graph("quant", |g| {
                    let k = 256;
                    let x = g.input("x", &[m, k], DType::F32).unwrap();
                    let bytes = k / q.block_elems() * q.block_bytes();
                    let w = g.param("w", &[32, bytes], DType::U8).unwrap();
                    let ids = g.input("ids", &[3], DType::I32).unwrap();
                    vec![g.quant_matmul(x, w, q).unwrap(), g.quant_gather(w, ids, q).unwrap()]
                }),
                seen,
            );
        }
    }
    for (t, wdt) in [(2, DType::F32), (2, DType::F16), (70, DType::F32), (70, DType::F16)] {
        lowered(
            &graph("grouped", |g| {
                let x = g.input("x", &[t, 1, 16], DType::F32).unwrap();
                let w = g.param("w", &[5, 12, 16], wdt).unwrap();
                let w = if wdt == DType::F32 { w } else { g.cast(w, DType::F32).unwrap() };
                let ids = g.input("ids", &[t, 2], DType::I32).unwrap();
                vec![g.grouped_matmul(x, w, ids).unwrap()]
            }),
            seen,
        );
    }
    for q in QuantType::ALL {
        for t in [2, 70] {
            lowered(
                &graph("grouped_quant", |g| {
                    let k = q.block_elems();
                    let x = g.input("x", &[t, 1, k], DType::F32).unwrap();
                    let w = g.param("w", &[5, 12, q.block_bytes()], DType::U8).unwrap();
                    let ids = g.input("ids", &[t, 2], DType::I32).unwrap();
                    vec![g.quant_grouped_matmul(x, w, ids, q).unwrap()]
                }),
                seen,
            );
        }
    }
    for output in [ScanOutput::Y, ScanOutput::LastState] {
        lowered(
            &graph("ssm", |g| {
                let u = g.input("u", &[2, 6, 9], DType::F32).unwrap();
                let a = g.param("A", &[6, 4], DType::F32).unwrap();
                let b = g.input("B", &[2, 3, 4, 9], DType::F32).unwrap();
                let y = g.selective_scan_op(u, u, a, b, b, true, output).unwrap();
                let q = g.input("q", &[2, 5, 3, 16], DType::F32).unwrap();
                let v = g.input("v", &[2, 5, 3, 40], DType::F32).unwrap();
                let gg = g.input("g", &[2, 5, 3], DType::F32).unwrap();
                vec![y, g.gated_delta_rule_op(q, q, v, gg, gg, 0.5, output).unwrap()]
            }),
            seen,
        );
    }
    lowered(
        &graph("fft", |g| {
            let x = g.input("x", &[3, 16, 2], DType::F32).unwrap();
            vec![g.fft(x, false).unwrap(), g.fft(x, true).unwrap()]
        }),
        seen,
    );
    lowered(
        &graph("state", |g| {
            let cache = g.state("cache", &[4, 8], DType::F32).unwrap();
            let rows = g.input("rows", &[1, 8], DType::F32).unwrap();
            let at = g.input("at", &[1], DType::I32).unwrap();
            vec![g.write_rows(cache, rows, at, 0).unwrap()]
        }),
        seen,
    );
}

#[test]
fn every_key_lowering_emits_is_in_the_table() {
    let mut seen = HashSet::new();
    elementwise(&mut seen);
    shape_and_reduce(&mut seen);
    matmul(&mut seen);
    norm_attention_rope(&mut seen);
    the_rest(&mut seen);
    let table: HashSet<KernelKey> = keys().into_iter().collect();
    let missing: Vec<_> = seen.iter().filter(|k| !table.contains(k)).collect();
    assert!(missing.is_empty(), "lowering emits keys the table lacks: {missing:?}");
    // The graphs reach every family and most of the table.
    assert!(seen.contains(&KernelKey::Shape(ShapeKernel::Gather)));
    assert!(seen.contains(&KernelKey::Shape(ShapeKernel::ScatterAdd)));
    let families: HashSet<_> = seen.iter().map(std::mem::discriminant).collect();
    assert_eq!(families.len(), 14, "{seen:?}");
    assert!(seen.len() * 10 >= table.len() * 6, "{} of {} keys reached", seen.len(), table.len());
}
