//! QuantGroupedMatMul (a mixture-of-experts layer's experts on a block-quantized stack) and the
//! MoE block on quantized stacks: every GGUF block format × one token with k = 2 and k = 1 (the
//! matrix-vector kernel), 7 tokens with one x row per choice, and 33 or 20 tokens (66 and 40
//! slots: the expert-major tiled kernel, N past one 64-row tile). K of 1 to 3 blocks, so rows of
//! 18, 22, 34, 54, 66, 102 and 210 bytes (not word multiples) appear; odd N; random valid blocks
//! stored as the GGUF loader stores a stack ([E · N, row_bytes], viewed as [E, N, row_bytes]).
//! Besides: ids out of range (rows of zeros) on both kernels, an f16 x, K = 0, and the whole MoE
//! block on Q8_0, Q4_K and Q6_K stacks.

use crate::{Case, CaseCtx};
use rlx_ir::{DType, IrError, NodeId, QuantType, Tensor};
use rlx_nn::prelude::*;

/// Magnitude of the random block scales (as the quant family's cases).
const SCALE: f32 = 0.02;

pub(super) fn cases(out: &mut Vec<Case>) {
    // (tag, T, E, k, S = k?, N, K in blocks of 32-element formats; one block for 256-element
    // ones unless noted by the multiplier).
    let shapes: [(&str, usize, usize, usize, bool, usize, usize); 5] = [
        ("t1_e5_k2", 1, 5, 2, false, 13, 3),
        ("t1_e3_k1", 1, 3, 1, false, 6, 1),
        ("t7_e5_k2_slots", 7, 5, 2, true, 11, 2),
        ("t33_e5_k2", 33, 5, 2, false, 37, 1),
        ("t20_e3_k2_slots_n70", 20, 3, 2, true, 70, 3),
    ];
    for q in QuantType::GGUF {
        let stem = q.name().to_lowercase();
        for (tag, t, e, k, per_slot, n, blocks) in shapes {
            // K-quants (256 elements a block): at most 2 blocks, so K is 256 or 512.
            let blocks = if q.block_elems() == 32 { blocks } else { blocks.min(2) };
            out.push(Case::new(format!("quant_grouped_matmul_{stem}_{tag}"), move |c| {
                let kk = blocks * q.block_elems();
                let s = if per_slot { k } else { 1 };
                let x = c.input_f32("x", &[t, s, kk], -1.0, 1.0)?;
                let w = stack(c, "w", q, e, n, kk)?;
                // Ids in [0, E): repeats within and across tokens.
                let ids = c.input_i32("ids", &[t, k], 0, e as i32 - 1)?;
                Ok(vec![c.quant_grouped_matmul(x, w, ids, q)?])
            }));
        }
    }
    for (q, t) in [(QuantType::Q8_0, 9), (QuantType::Q4K, 40)] {
        let name =
            format!("quant_grouped_matmul_{}_t{t}_ids_out_of_range_are_zeros", q.name().to_lowercase());
        out.push(Case::new(name, move |c| {
            let kk = q.block_elems();
            let x = c.input_f32("x", &[t, 1, kk], -1.0, 1.0)?;
            let w = stack(c, "w", q, 3, 70, kk)?;
            let ids = c.input_tensor(
                "ids",
                Tensor::from_i32([t, 2], (0..2 * t as i32).map(|i| i % 7 - 2).collect())?,
            )?;
            Ok(vec![c.quant_grouped_matmul(x, w, ids, q)?])
        }));
    }
    out.push(Case::new("quant_grouped_matmul_x_f16", |c| {
        let q = QuantType::Q6K;
        let x = c.input_f32("x", &[3, 2, 256], -1.0, 1.0)?;
        let h = c.cast(x, DType::F16)?;
        let w = stack(c, "w", q, 4, 9, 256)?;
        let ids = c.input_i32("ids", &[3, 2], 0, 3)?;
        Ok(vec![c.quant_grouped_matmul(h, w, ids, q)?])
    }));
    out.push(Case::new("quant_grouped_matmul_k0_empty_is_zeros", |c| {
        let x = c.input_f32("x", &[3, 1, 0], -1.0, 1.0)?;
        let w = c.param_tensor("w", Tensor::from_u8([4, 5, 0], vec![])?)?;
        let ids = c.input_i32("ids", &[3, 2], 0, 3)?;
        Ok(vec![c.quant_grouped_matmul(x, w, ids, QuantType::Q8_0)?])
    }));
    // The whole block on packed stacks: router softmax → top-k → renormalize → gate/up → silu ·
    // up → down → weighted sum over the choices. H and I are whole blocks of the format.
    for (tag, q, t, e, k) in [
        ("q8_0_t1_e8_k2", QuantType::Q8_0, 1, 8, 2),
        ("q8_0_t33_e8_k2", QuantType::Q8_0, 33, 8, 2),
        ("q4_k_t7_e4_k2", QuantType::Q4K, 7, 4, 2),
        ("q6_k_t1_e4_k1", QuantType::Q6K, 1, 4, 1),
    ] {
        out.push(Case::new(format!("moe_block_quant_{tag}"), move |c| {
            let (h, inter) = (2 * q.block_elems(), q.block_elems());
            let x = c.input_f32("x", &[t, h], -1.0, 1.0)?;
            let router = c.param_f32("router", &[e, h], -1.0, 1.0)?;
            let gate_up = stack(c, "gate_up", q, e, 2 * inter, h)?;
            let down = stack(c, "down", q, e, h, inter)?;
            let (gu, dn) = (ExpertStack::quantized(gate_up, q), ExpertStack::quantized(down, q));
            Ok(vec![c.moe_swiglu_stacks(x, router, gu, dn, k, true)?])
        }));
    }
}

/// A stack of `e` experts of `n` rows of `k` elements of random valid `q` blocks, stored as the
/// GGUF loader stores it (U8 [e · n, row_bytes]) and viewed as [e, n, row_bytes].
fn stack(c: &mut CaseCtx, name: &str, q: QuantType, e: usize, n: usize, k: usize) -> Result<NodeId, IrError> {
    let flat = c.param_quant(name, q, e * n, k, SCALE)?;
    let row_bytes = c.ty(flat)?.shape.dims().get(1).copied().unwrap_or(0);
    c.reshape(flat, &[e, n, row_bytes])
}
