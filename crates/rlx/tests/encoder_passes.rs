//! A BERT-style encoder layer built from the IR gives the same numbers on the CPU with the
//! optimizer's passes on and off, and the passes really do rewrite it (fusion happens).

// Test helpers unwrap: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx::prelude::*;
use rlx_backend::Backend;
use rlx_models::{encoder_layers, BertConfig};
use rlx_test_support::uniform;

const B: usize = 2;
const S: usize = 5;
const HID: usize = 12;

/// One BERT encoder layer (rlx-models' builder) with a padding mask.
fn encoder_layer() -> Result<Graph, rlx::Error> {
    let cfg = BertConfig {
        num_hidden_layers: 1,
        hidden_size: HID,
        num_attention_heads: 3,
        intermediate_size: 4 * HID,
        ..BertConfig::base()
    };
    let mut g = Graph::new("encoder_layer");
    let x = g.input("x", &[B * S, HID], DType::F32)?;
    let mask = g.input("mask", &[B, S], DType::I32)?;
    let out = encoder_layers(&mut g, &cfg, x, Some(mask), B, S)?;
    g.set_outputs(&[out])?;
    Ok(g)
}

fn run_layer(g: &Graph, opts: &CompileOptions) -> Vec<f32> {
    let session = Session::new(Device::Cpu).unwrap();
    let mut exe = session.compile_with(g, opts).unwrap();
    for (i, (name, _, ty)) in g.params().iter().enumerate() {
        let n = ty.numel();
        let vals = if name.ends_with("LayerNorm.weight") {
            uniform(n, 100 + i as u64, 0.2).iter().map(|v| 1.0 + v).collect()
        } else {
            uniform(n, 100 + i as u64, 0.3)
        };
        exe.set_param(name, &vals).unwrap();
    }
    let x = uniform(B * S * HID, 7, 1.0);
    // Second sequence has two padding positions.
    let mask: Vec<i32> = (0..B * S).map(|i| if i >= S && i % S >= S - 2 { 0 } else { 1 }).collect();
    let out = exe.run(&[("x", &x), ("mask", &mask)]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dims(), &[B * S, HID]);
    out[0].to_f32_vec()
}

fn rel_err(a: &[f32], b: &[f32]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).powi(2)).sum();
    let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (num / den).sqrt()
}

#[test]
fn encoder_layer_same_with_passes_on_and_off() {
    let g = encoder_layer().unwrap();
    let on = run_layer(&g, &CompileOptions::default());
    let off = run_layer(&g, &CompileOptions { passes: PassOptions::none(), ..Default::default() });
    assert!(on.iter().all(|v| v.is_finite()));
    let err = rel_err(&on, &off);
    assert!(err <= 1e-5, "passes on vs off differ: relative error {err:e}");
    // Layer norm output: each row has mean ~0.
    let row_mean: f32 = on[..HID].iter().sum::<f32>() / HID as f32;
    assert!(row_mean.abs() < 0.5, "row mean {row_mean}");
}

#[test]
fn encoder_layer_passes_fuse_on_cpu() {
    let g = encoder_layer().unwrap();
    let cpu = rlx_cpu::CpuBackend::new();
    let fold = |op: &Op, ins: &[&Tensor], ty: &TensorType| rlx_cpu::eval(op, ins, ty).ok();
    let opt = rlx_opt::optimize(&g, cpu.capabilities(), &PassOptions::default(), Some(&fold)).unwrap();
    let kinds: Vec<OpKind> = opt.nodes().iter().map(|n| n.op.kind()).collect();
    let count = |k: OpKind| kinds.iter().filter(|&&x| x == k).count();
    // q, k, v, o, ffn.up (with gelu) and ffn.down all become matmul + bias epilogues.
    assert_eq!(count(OpKind::FusedMatMul), 6, "{}", rlx_ir::dump(&opt));
    assert_eq!(count(OpKind::MatMul), 0, "{}", rlx_ir::dump(&opt));
    // Both residual adds fuse into their layer norms.
    assert_eq!(count(OpKind::AddNorm), 2, "{}", rlx_ir::dump(&opt));
    assert_eq!(count(OpKind::LayerNorm), 0);
    let act = opt
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::FusedMatMul { activation: Some(UnaryOp::Gelu), .. }))
        .count();
    assert_eq!(act, 1);
    // Unoptimized: the same graph keeps its plain ops.
    let plain = rlx_opt::optimize(&g, cpu.capabilities(), &PassOptions::none(), None).unwrap();
    assert!(plain.nodes().iter().all(|n| !matches!(n.op.kind(), OpKind::FusedMatMul | OpKind::AddNorm)));
}
