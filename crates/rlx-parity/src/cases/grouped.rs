//! GroupedMatMul (the experts of a mixture-of-experts layer) and the whole MoE block built on
//! it: tokens T = 1 (decode), 7 and 33; E = 1 and 5 experts; k = 1 and 2 choices; K and N off
//! the kernels' vec4 and 4-row blocks; x shared by a token's choices (S = 1) or one row per
//! choice (S = k); f32 weights and f16 weights (widened by a cast the GPU kernel absorbs);
//! ids with repeats, ids out of range (rows of zeros) and NaN in x.

use super::with_nans;
use crate::{Case, CaseCtx};
use half::f16;
use rlx_ir::{DType, IrError, NodeId, Tensor};
use rlx_nn::prelude::*;

pub(super) fn cases(out: &mut Vec<Case>) {
    // (tag, T, E, k, S = k?, N, K)
    // T · k ≥ 32 slots take the expert-major tiled kernel: t33 (66 slots: with E = 1 more than
    // one 64-slot tile), t200 (400 slots: more than one 256-slot scan).
    let shapes: [(&str, usize, usize, usize, bool, usize, usize); 9] = [
        ("t1_e5_k2", 1, 5, 2, false, 13, 16),
        ("t1_e1_k1_kodd", 1, 1, 1, false, 6, 9),
        ("t7_e5_k2_slots", 7, 5, 2, true, 11, 20),
        ("t7_e5_k1", 7, 5, 1, false, 4, 7),
        ("t33_e5_k2", 33, 5, 2, false, 37, 24),
        ("t33_e1_k2_slots_kodd", 33, 1, 2, true, 5, 30),
        ("t1_e5_k2_long_k", 1, 5, 2, false, 3, 1028),
        ("t200_e2_k2_slots", 200, 2, 2, true, 70, 17),
        ("t40_e5_k1_long_k", 40, 5, 1, false, 9, 300),
    ];
    for (tag, t, e, k, per_slot, n, kk) in shapes {
        for f16_w in [false, true] {
            let dt = if f16_w { "f16w" } else { "f32w" };
            out.push(Case::new(format!("grouped_matmul_{tag}_{dt}"), move |c| {
                let s = if per_slot { k } else { 1 };
                let x = c.input_f32("x", &[t, s, kk], -1.0, 1.0)?;
                let w = weight(c, "w", &[e, n, kk], f16_w)?;
                // Ids in [0, E) (input_i32's range is inclusive): repeats within and across
                // tokens.
                let ids = c.input_i32("ids", &[t, k], 0, e as i32 - 1)?;
                Ok(vec![c.grouped_matmul(x, w, ids)?])
            }));
        }
    }
    for t in [9, 40] {
        out.push(Case::new(format!("grouped_matmul_t{t}_ids_out_of_range_are_zeros"), move |c| {
            let x = c.input_f32("x", &[t, 1, 12], -1.0, 1.0)?;
            let w = c.param_f32("w", &[3, 70, 12], -1.0, 1.0)?;
            let ids = c.input_tensor(
                "ids",
                Tensor::from_i32([t, 2], (0..2 * t as i32).map(|i| i % 7 - 2).collect())?,
            )?;
            Ok(vec![c.grouped_matmul(x, w, ids)?])
        }));
    }
    out.push(Case::new("grouped_matmul_nan_in_nan_out", |c| {
        let v = with_nans(c.uniform(3 * 2 * 8, -1.0, 1.0), 5);
        let x = c.input_tensor("x", Tensor::from_f32([3, 2, 8], v)?)?;
        let w = c.param_f32("w", &[4, 5, 8], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[3, 2], 0, 3)?;
        Ok(vec![c.grouped_matmul(x, w, ids)?])
    }));
    out.push(Case::new("grouped_matmul_empty_k_is_zeros", |c| {
        let x = c.input_f32("x", &[3, 1, 0], -1.0, 1.0)?;
        let w = c.param_f32("w", &[4, 5, 0], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[3, 2], 0, 3)?;
        Ok(vec![c.grouped_matmul(x, w, ids)?])
    }));
    // The whole block: router softmax → top-k → renormalize → gate/up → silu · up → down →
    // weighted sum over the choices.
    for (tag, t, e, k, renorm, f16_w) in [
        ("t1_e8_k2", 1, 8, 2, true, false),
        ("t7_e5_k2_f16w", 7, 5, 2, true, true),
        ("t33_e8_k2", 33, 8, 2, true, false),
        ("t7_e4_k1_raw", 7, 4, 1, false, false),
    ] {
        out.push(Case::new(format!("moe_block_{tag}"), move |c| {
            let (h, inter) = (24, 10);
            let x = c.input_f32("x", &[t, h], -1.0, 1.0)?;
            let router = c.param_f32("router", &[e, h], -1.0, 1.0)?;
            let gate_up = weight(c, "gate_up", &[e, 2 * inter, h], f16_w)?;
            let down = weight(c, "down", &[e, h, inter], f16_w)?;
            Ok(vec![c.moe_swiglu(x, router, gate_up, down, k, renorm)?])
        }));
    }
}

/// A weight param in [-0.5, 0.5): f32, or stored f16 and widened to f32 where used.
fn weight(c: &mut CaseCtx, name: &str, dims: &[usize], f16_w: bool) -> Result<NodeId, IrError> {
    if !f16_w {
        return c.param_f32(name, dims, -0.5, 0.5);
    }
    let v = c.uniform(dims.iter().product(), -0.5, 0.5).into_iter().map(f16::from_f32).collect();
    let p = c.param_tensor(name, Tensor::from_f16(dims, v)?)?;
    c.cast(p, DType::F32)
}
