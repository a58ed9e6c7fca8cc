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
