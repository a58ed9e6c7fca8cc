//! Every matmul rung forced in turn (`CompileOptions::matmul`), on the same shapes: edges in
//! every dim, transposes, broadcast batches, K = 1 and K = 0, a NaN row, every fused epilogue,
//! and small-M shapes that the lowering splits along K. The f32 rungs keep the default tolerance; the cooperative-matrix rung rounds its
//! operands to f16, so it runs at `Precision::Mixed` and `Precision::F16` and is held to
//! [`F16_OPERANDS_TOL`]. A device without a rung reports its cases unavailable with the reason
//! (lavapipe has no cooperative matrices; the H200 runs them through the parity binary).

use crate::{Case, CaseCtx, DEFAULT_TOL};
use rlx_ir::{IrError, NodeId, Tensor, UnaryOp};
use rlx_nn::prelude::*;
use rlx_runtime::{MatmulKernel, PassOptions, Precision};

/// Matmul with f16-rounded operands and f32 accumulation: each product carries about 2^-11
/// relative rounding, which averages to a few 1e-4 of the output's norm over K random-sign
/// terms. DESIGN.md's bound for f16 matmul.
pub const F16_OPERANDS_TOL: f64 = 2e-3;

pub(super) fn cases(out: &mut Vec<Case>) {
    let rungs = [
        (MatmulKernel::Tiled64, Precision::F32, DEFAULT_TOL),
        (MatmulKernel::Reg128, Precision::F32, DEFAULT_TOL),
        (MatmulKernel::Coop, Precision::Mixed, F16_OPERANDS_TOL),
        (MatmulKernel::Coop, Precision::F16, F16_OPERANDS_TOL),
    ];
    for (rung, precision, tol) in rungs {
        let mut set = Vec::new();
        shapes(&mut set);
        super::matmul_edges::epilogue_cases(&mut set, "fused", [37, 67], 29);
        // Few output tiles and a long K: split along K, then summed with the epilogue.
        super::matmul_edges::epilogue_cases(&mut set, "fused_splitk", [7, 512], 100);
        // The same on a ragged K (f32 rungs: 2 slices of 288 and a rest of 24; the coop rung
        // cuts only exact K, so it runs these unsplit).
        super::matmul_edges::epilogue_cases(&mut set, "matmul_splitk_ragged_fused", [7, 600], 100);
        if rung == MatmulKernel::Coop {
            // Enough 128×128 groups for the wide coop tile, with edges in M and N.
            super::matmul_edges::epilogue_cases(&mut set, "fused_wide", [1300, 67], 1536);
            f16_weights(&mut set);
        }
        for case in set {
            let name = format!("rung_{rung}_{precision}_{}", case.name);
            out.push(case.with_kernels(name, precision, Some(rung)).with_tol(tol));
        }
    }
    f16_weight_group(out);
}

/// a [.., M, K] (or [.., K, M]) times b [.., K, N] (or [.., N, K]), uniform in [-1, 1).
fn matmul(
    c: &mut CaseCtx,
    batch_a: &[usize],
    batch_b: &[usize],
    (m, k, n): (usize, usize, usize),
    (ta, tb): (bool, bool),
) -> Result<Vec<NodeId>, IrError> {
    let mut da = batch_a.to_vec();
    da.extend(if ta { [k, m] } else { [m, k] });
    let mut db = batch_b.to_vec();
    db.extend(if tb { [n, k] } else { [k, n] });
    let a = c.input_f32("a", &da, -1.0, 1.0)?;
    let b = c.input_f32("b", &db, -1.0, 1.0)?;
    Ok(vec![c.matmul_t(a, b, ta, tb)?])
}

type Shape = (&'static str, &'static [usize], &'static [usize], (usize, usize, usize), (bool, bool));

fn shapes(out: &mut Vec<Case>) {
    let shapes: [Shape; 19] = [
        ("1x1x1", &[], &[], (1, 1, 1), (false, false)),
        ("7x13x5", &[], &[], (7, 13, 5), (false, false)),
        ("17x33x65", &[], &[], (17, 33, 65), (false, false)),
        ("64x64x64", &[], &[], (64, 64, 64), (false, false)),
        ("130x70x129", &[], &[], (130, 70, 129), (false, false)),
        ("65x1x67", &[], &[], (65, 1, 67), (false, false)),
        ("3x0x4_empty", &[], &[], (3, 0, 4), (false, false)),
        ("13x17x19_ta", &[], &[], (13, 17, 19), (true, false)),
        ("13x17x19_tb", &[], &[], (13, 17, 19), (false, true)),
        ("13x17x19_ta_tb", &[], &[], (13, 17, 19), (true, true)),
        ("70x129x66_tb", &[], &[], (70, 129, 66), (false, true)),
        ("batched_bcast_4x1_1x8", &[4, 1], &[1, 8], (33, 20, 34), (false, false)),
        ("batched_rank2_rhs_tb", &[5], &[], (40, 33, 71), (false, true)),
        ("batched_wide_32", &[32], &[], (129, 40, 257), (false, false)),
        // Split along K (few output tiles): BERT-base's projections at batch 1, a decode-step
        // row, and a K whose slices cannot be 32-multiples (not split).
        ("splitk_128x768x768_tb", &[], &[], (128, 768, 768), (false, true)),
        ("splitk_1x4864x896_tb", &[], &[], (1, 4864, 896), (false, true)),
        ("splitk_ta_9x1024x33", &[], &[], (9, 1024, 33), (true, false)),
        // A K the f32 rungs cut raggedly (equal slices of 32-multiples, and a launch for the
        // rest): 16 slices of 256 and 64; a transposed-A weight gradient, 16 of 160 and 440.
        ("splitk_ragged_128x4160x128", &[], &[], (128, 4160, 128), (false, false)),
        ("splitk_ragged_ta_64x3000x256", &[], &[], (64, 3000, 256), (true, false)),
    ];
    for (tag, ba, bb, mkn, t) in shapes {
        out.push(Case::new(format!("matmul_{tag}"), move |c| matmul(c, ba, bb, mkn, t)));
    }
    // One NaN in a makes its row (and only it) NaN.
    out.push(Case::new("matmul_nan_poisons_one_row", |c| {
        let mut v = c.uniform(70 * 9, -1.0, 1.0);
        v[40 * 9 + 4] = f32::NAN;
        let x = c.input_tensor("a", Tensor::from_f32([70, 9], v)?)?;
        let y = c.input_f32("b", &[9, 80], -1.0, 1.0)?;
        Ok(vec![c.matmul(x, y)?])
    }));
    // K = 0: no K step at all, the output is act(bias).
    out.push(
        Case::new("fused_k0_is_act_of_bias", |c| {
            super::matmul_edges::fused(c, [70, 0], 90, true, Some(UnaryOp::Gelu))
        })
        .with_passes(PassOptions::none()),
    );
    // A linear layer that rlx-opt fuses (x [2, 70, 96], PyTorch weight [150, 96]).
    out.push(Case::new("linear_bias_gelu_batched_input", |c| {
        let x = c.input_f32("x", &[2, 70, 96], -1.0, 1.0)?;
        let w = c.param_f32("w", &[150, 96], -0.3, 0.3)?;
        let b = c.param_f32("b", &[150], -0.5, 0.5)?;
        let y = c.linear(x, w, Some(b))?;
        Ok(vec![c.gelu(y)?])
    }));
}

/// f16 weights widened by a cast, which the tensor-core rung reads as stored (the cast
/// launches nothing): one launch with edges in every dim, a B stored [K, N], split along K,
/// the wide tile, and q/k/v of one A as the three-output launch. The CPU widens exactly, so
/// only the f16 rounding of A counts against the tolerance.
fn f16_weights(out: &mut Vec<Case>) {
    let shapes: [(usize, usize, usize, bool); 5] = [
        (40, 64, 96, true),
        (37, 100, 67, true),
        (33, 48, 70, false),
        (7, 512, 100, true),
        (1300, 1536, 67, true),
    ];
    for (m, k, n, tb) in shapes {
        out.push(Case::new(format!("f16_weight_{m}x{k}x{n}_tb{}", tb as u8), move |c| {
            let a = c.input_f32("a", &[m, k], -1.0, 1.0)?;
            let w = super::matmul::f16_weight(c, "w", if tb { [n, k] } else { [k, n] })?;
            Ok(vec![c.matmul_t(a, w, false, tb)?])
        }));
    }
}

/// q/k/v of one A with f16 weights at `Precision::Mixed`, the rung not forced (forcing turns
/// grouping off): on tensor cores one three-output launch that binds the three f16 weights;
/// elsewhere three f32 launches after the casts.
fn f16_weight_group(out: &mut Vec<Case>) {
    let case = Case::new("matmul_group_f16_weights_qkv_mixed", |c| {
        // A prompt's rows (enough that the group is not split along K).
        let a = c.input_f32("a", &[300, 256], -1.0, 1.0)?;
        let mut outs = Vec::new();
        for (name, n) in [("wq", 256), ("wk", 64), ("wv", 64)] {
            let w = super::matmul::f16_weight(c, name, [n, 256])?;
            outs.push(c.matmul_t(a, w, false, true)?);
        }
        Ok(outs)
    });
    let name = case.name.clone();
    out.push(case.with_kernels(name, Precision::Mixed, None).with_tol(F16_OPERANDS_TOL));
}
