//! Pins [`super::flops`] to the numbers the device ranking counted before the flop rules moved
//! next to the shape rules (each written out from its formula, not from the code).

use super::{flops, infer};
use crate::{AttentionSpec, AttnLayout, DType, MaskKind, Op, QuantType, ScanOutput, TensorType, UnaryOp};

fn t(dims: &[usize]) -> TensorType {
    TensorType::new(dims.to_vec(), DType::F32)
}

/// The flops of `op` on operands of `dims` (F32 unless given as a typed operand).
fn count(op: Op, inputs: &[TensorType]) -> f64 {
    let refs: Vec<&TensorType> = inputs.iter().collect();
    let out = infer(&op, &refs).unwrap();
    flops(&op, &refs, &out)
}

#[test]
fn compute_bound_families_count_their_multiply_adds() {
    // [2, 5, 3]ᵀ · [5, 7]: out [2, 3, 7], K = 5.
    let mm = Op::MatMul { transpose_a: true, transpose_b: false };
    assert_eq!(count(mm, &[t(&[2, 5, 3]), t(&[5, 7])]), 2.0 * 42.0 * 5.0);
    let fused = Op::FusedMatMul { transpose_a: false, transpose_b: true, bias: false, activation: None };
    assert_eq!(count(fused, &[t(&[4, 6]), t(&[3, 6])]), 2.0 * 12.0 * 6.0);
    // B=2, S=8 (both), H=3, D=4: q·kᵀ and p·v are 2·B·H·S·S·D each.
    let attn = Op::Attention(AttentionSpec::new(AttnLayout::Bshd, MaskKind::None));
    let q = t(&[2, 8, 3, 4]);
    assert_eq!(count(attn, &[q.clone(), q.clone(), q]), 2.0 * 2.0 * (2 * 3 * 8 * 8 * 4) as f64);
    // x [1, 3, 8, 8], w [4, 3, 3, 3]: out [1, 4, 6, 6], each a dot of 27.
    let conv = Op::Conv2d { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1 };
    assert_eq!(count(conv, &[t(&[1, 3, 8, 8]), t(&[4, 3, 3, 3])]), 2.0 * 144.0 * 27.0);
    // 3 rows of 16 complex points: 5·16·4 per row.
    assert_eq!(count(Op::Fft { inverse: false }, &[t(&[3, 16, 2])]), 3.0 * 5.0 * 16.0 * 4.0);
    // u [2, 4, 5] with a state of 3: 8 per (b, d, t, n).
    let scan = Op::SelectiveScan { delta_softplus: false, output: ScanOutput::Y };
    let (u, bc) = (t(&[2, 4, 5]), t(&[2, 1, 3, 5]));
    assert_eq!(count(scan, &[u.clone(), u, t(&[4, 3]), bc.clone(), bc]), 8.0 * 40.0 * 3.0);
    // q [1, 5, 2, 4], v [1, 5, 2, 3]: 6 per (b, t, h, k, v).
    let delta = Op::GatedDeltaRule { scale: 0.5, output: ScanOutput::Y };
    let (qk, g) = (t(&[1, 5, 2, 4]), t(&[1, 5, 2]));
    assert_eq!(count(delta, &[qk.clone(), qk, t(&[1, 5, 2, 3]), g.clone(), g]), 6.0 * 40.0 * 3.0);
    // x [3, 1, 8], 4 experts of [5, 8], 2 picked per token: out [3, 2, 5], each a dot of 8.
    let ids = TensorType::new(vec![3, 2], DType::I32);
    assert_eq!(count(Op::GroupedMatMul, &[t(&[3, 1, 8]), t(&[4, 5, 8]), ids.clone()]), 2.0 * 30.0 * 8.0);
    // The same on 4 experts of 5 rows of one Q8_0 block: K = 32.
    let stack = TensorType::new(vec![4, 5, 34], DType::U8);
    let quant = Op::QuantGroupedMatMul { quant: QuantType::Q8_0 };
    assert_eq!(count(quant, &[t(&[3, 1, 32]), stack, ids]), 2.0 * 30.0 * 32.0);
    // x [2, 32] times 3 rows of one Q8_0 block (34 bytes): out [2, 3], each a dot of 32.
    let w = TensorType::new(vec![3, 34], DType::U8);
    assert_eq!(count(Op::QuantMatMul { quant: QuantType::Q8_0 }, &[t(&[2, 32]), w]), 2.0 * 6.0 * 32.0);
}

#[test]
fn bandwidth_bound_ops_count_nothing() {
    assert_eq!(count(Op::Unary(UnaryOp::Relu), &[t(&[4, 4])]), 0.0);
    assert_eq!(count(Op::Softmax, &[t(&[4, 4])]), 0.0);
    assert_eq!(count(Op::Reshape(crate::Shape::new(&[16])), &[t(&[4, 4])]), 0.0);
    let pool = Op::Pool2d { kind: crate::PoolKind::Max, kernel: [2, 2], stride: [2, 2], padding: [0, 0] };
    assert_eq!(count(pool, &[t(&[1, 1, 4, 4])]), 0.0);
}
