//! AttentionGrad's decomposition (what a GPU runs at f32, `Capabilities::composed_at_f32`):
//! it matches the CPU's native parts in every mask kind it takes, and the four parts of one
//! attention share their recomputed scores, probabilities and dP instead of recomputing them
//! per part.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_same, caps_without, count};
use rlx_ir::{grad, AttentionSpec, AttnLayout, DType, Graph, MaskKind, OpKind};
use rlx_opt::passes::legalize;

/// The loss Σ attention(q, k, v)·r and its gradients with respect to q, k and v.
fn grad_graph(mask: MaskKind, layout: AttnLayout, [hq, hkv]: [usize; 2]) -> Graph {
    let (b, s, d) = (2, 9, 8);
    let dims = |h: usize| match layout {
        AttnLayout::Bshd => [b, s, h, d],
        AttnLayout::Bhsd => [b, h, s, d],
    };
    let mut g = Graph::new("attention_grad");
    let q = g.param("q", &dims(hq), DType::F32).unwrap();
    let k = g.param("k", &dims(hkv), DType::F32).unwrap();
    let v = g.param("v", &dims(hkv), DType::F32).unwrap();
    let m = (mask == MaskKind::Padding).then(|| g.input("m", &[b, s], DType::Bool).unwrap());
    let y = g.attention(q, k, v, m, AttentionSpec::new(layout, mask)).unwrap();
    let r = g.input("r", &dims(hq), DType::F32).unwrap();
    let y = g.mul(y, r).unwrap();
    let loss = g.sum(y, &[0, 1, 2, 3], false).unwrap();
    grad(&g, loss, &[q, k, v]).unwrap().graph
}

#[test]
fn attention_grad_decomposes_into_one_shared_recomputation() {
    let cases = [
        (MaskKind::Causal, AttnLayout::Bshd, [4, 2]),
        (MaskKind::None, AttnLayout::Bhsd, [2, 2]),
        (MaskKind::Padding, AttnLayout::Bshd, [2, 1]),
        (MaskKind::SlidingWindow(3), AttnLayout::Bhsd, [3, 3]),
    ];
    for (mask, layout, heads) in cases {
        let g = grad_graph(mask, layout, heads);
        assert_eq!(count(&g, OpKind::AttentionGrad), 4, "{mask:?}: the statistics, dq, dk, dv");
        let composed = legalize(&g, &caps_without(&[OpKind::AttentionGrad])).unwrap();
        assert_eq!(count(&composed, OpKind::AttentionGrad), 0, "{mask:?}");
        // The scores, dP, dq, dk and dv: one product each (four parts recomputing on their own
        // would make nine).
        assert_eq!(count(&composed, OpKind::MatMul), 5, "{mask:?}");
        assert_eq!(count(&composed, OpKind::Softmax), 1, "{mask:?}");
        assert_same(&g, &composed, 11, 1e-5);
    }
}
