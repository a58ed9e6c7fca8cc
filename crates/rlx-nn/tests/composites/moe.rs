use crate::{assert_msg, f32_in, on_copy, tt};
use rlx_ir::{DType, Graph, Op};
use rlx_nn::prelude::*;

#[test]
fn moe_block_composes_router_and_experts() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[7, 6]);
    let router = g.param("router", &[5, 6], DType::F32).unwrap();
    let gate_up = g.param("gu", &[5, 8, 6], DType::F32).unwrap();
    let down = g.param("down", &[5, 6, 4], DType::F32).unwrap();
    assert_eq!(on_copy(&g, |g| g.moe_swiglu(x, router, gate_up, down, 2, true)), tt(&[7, 6], DType::F32));
    let y = g.moe_swiglu(x, router, gate_up, down, 1, false).unwrap();
    let grouped = g.nodes().iter().filter(|n| n.op == Op::GroupedMatMul).count();
    assert_eq!(grouped, 2);
    assert!(g.nodes().iter().any(|n| matches!(n.op, Op::TopK { k: 1, .. })));
    g.set_outputs(&[y]).unwrap();
    rlx_ir::verify(&g).unwrap();
    let before = g.len();
    let odd = g.param("odd", &[5, 7, 6], DType::F32).unwrap();
    let e = g.moe_swiglu(x, router, odd, down, 2, true).unwrap_err();
    assert_msg(&e, &["moe_swiglu", "odd"]);
    let e = g.moe_swiglu(x, router, gate_up, down, 6, true).unwrap_err();
    assert_msg(&e, &["topk"]);
    assert_eq!(g.len(), before + 1, "a failed block leaves no nodes");
}

#[test]
fn moe_block_on_quantized_stacks_reads_them_packed() {
    use rlx_ir::QuantType;
    let mut g = Graph::new("g");
    // H = 64 (two Q8_0 blocks a row), I = 32 (one).
    let x = f32_in(&mut g, "x", &[3, 64]);
    let router = g.param("router", &[4, 64], DType::F32).unwrap();
    let gate_up = g.param("gu", &[4, 64, 68], DType::U8).unwrap();
    let down = g.param("down", &[4, 64, 34], DType::U8).unwrap();
    let q = QuantType::Q8_0;
    let (gu, dn) = (ExpertStack::quantized(gate_up, q), ExpertStack::quantized(down, q));
    let y = g.moe_swiglu_stacks(x, router, gu, dn, 2, true).unwrap();
    assert_eq!(g.ty(y).unwrap(), &tt(&[3, 64], DType::F32));
    let quant = g.nodes().iter().filter(|n| n.op == Op::QuantGroupedMatMul { quant: q }).count();
    assert_eq!(quant, 2);
    assert!(!g.nodes().iter().any(|n| matches!(n.op, Op::GroupedMatMul | Op::QuantGather { .. })));
    g.set_outputs(&[y]).unwrap();
    rlx_ir::verify(&g).unwrap();
    // A float stack mixes with a packed one; a packed stack of the wrong width is refused whole.
    let down_f = g.param("down_f", &[4, 64, 32], DType::F32).unwrap();
    let mixed = on_copy(&g, |g| g.moe_swiglu_stacks(x, router, gu, ExpertStack::float(down_f), 2, true));
    assert_eq!(mixed, tt(&[3, 64], DType::F32));
    let before = g.len();
    let wide = ExpertStack::quantized(gate_up, q);
    let e = g.moe_swiglu_stacks(x, router, gu, wide, 2, true).unwrap_err();
    assert_msg(&e, &["quant_grouped_matmul", "K = 32"]);
    assert_eq!(g.len(), before, "a failed block leaves no nodes");
}
