//! Matmul: 2-D and batched with broadcast batch dims, either operand transposed, and the
//! linear layer (matmul + bias + activation) that rlx-opt fuses into one op. Outputs of at
//! least 128×128 run on the register-tiled rung (`matmul_reg.wgsl`), the rest on the 64 tile;
//! [`reg_tile`] gives the big rung the same coverage as the small one.

use crate::{Case, CaseCtx};
use rlx_ir::{IrError, NodeId, Tensor, UnaryOp};
use rlx_nn::prelude::*;
use rlx_runtime::PassOptions;

pub(super) fn cases(out: &mut Vec<Case>) {
    plain(out);
    batched(out);
    linear(out);
    reg_tile(out);
    vector(out);
}

/// At most 8 rows times a transposed b (a linear layer at decode): the matrix-vector kernel,
/// on its 16-byte path (K a multiple of 4) and its element path, with and without the fused
/// epilogue, a transposed a (strided rows), and K = 0.
fn vector(out: &mut Vec<Case>) {
    let shapes: [(usize, usize, usize, bool); 7] = [
        (1, 4864, 896, false),
        (8, 1024, 130, false),
        (3, 37, 50, false),
        (1, 1, 1, false),
        (5, 2, 3, false),
        (4, 260, 17, true),
        (2, 0, 9, false),
    ];
    for (m, k, n, ta) in shapes {
        let tag = if k == 0 { "_empty_k" } else { "" };
        out.push(Case::new(format!("matmul_vec_{m}x{k}x{n}_ta{}{tag}", ta as u8), move |c| {
            let (a, b) = operands(c, &[], &[], (m, k, n), (ta, true))?;
            Ok(vec![c.matmul_t(a, b, ta, true)?])
        }));
    }
    super::matmul_edges::epilogue_cases(out, "matmul_vec_fused", [6, 200], 33);
    // f16 weights widened by a cast: the kernel reads the f16 words (both load paths, and the
    // bias + activation epilogue once fused). The CPU widens exactly, so the f32 tolerance holds.
    for (m, k, n, bias) in [(1, 4864, 130, false), (3, 37, 50, false), (2, 256, 77, true)] {
        out.push(Case::new(format!("matmul_vec_f16_weight_{m}x{k}x{n}_b{}", bias as u8), move |c| {
            let a = c.input_f32("a", &[m, k], -1.0, 1.0)?;
            let wide = f16_weight(c, "w", [n, k])?;
            let y = c.matmul_t(a, wide, false, true)?;
            if !bias {
                return Ok(vec![y]);
            }
            let b = c.param_f32("bias", &[n], -0.5, 0.5)?;
            let y = c.add(y, b)?;
            Ok(vec![c.silu(y)?])
        }));
    } // Subnormal, largest-finite, infinite and NaN f16 weights widen exactly in the kernel.
    out.push(Case::new("matmul_vec_f16_weight_special_values", |c| {
        let (m, k, n) = (2, 64, 9);
        let a = c.input_f32("a", &[m, k], -1.0, 1.0)?;
        let mut v: Vec<f64> = c.uniform(n * k, -1.0, 1.0).into_iter().map(f64::from).collect();
        for (i, x) in [3e-7, -5e-6, 6e-8, 65504.0, -65504.0].into_iter().enumerate() {
            v[i * 7] = x;
        }
        v[5 * k + 3] = f64::INFINITY;
        v[7 * k + 1] = f64::NAN;
        let w = c.param_tensor("w", rlx_ir::Tensor::from_f64([n, k], rlx_ir::DType::F16, &v)?)?;
        let wide = c.cast(w, rlx_ir::DType::F32)?;
        Ok(vec![c.matmul_t(a, wide, false, true)?])
    }));
}

/// An f16 param of `dims`, uniform in [-1, 1), widened to f32 by a cast (the form of a model's
/// f16 weights, whose cast the GPU matmul kernels absorb).
pub(super) fn f16_weight(c: &mut CaseCtx, name: &str, dims: [usize; 2]) -> Result<NodeId, IrError> {
    let v: Vec<f64> = c.uniform(dims[0] * dims[1], -1.0, 1.0).into_iter().map(f64::from).collect();
    let w = c.param_tensor(name, rlx_ir::Tensor::from_f64(dims, rlx_ir::DType::F16, &v)?)?;
    c.cast(w, rlx_ir::DType::F32)
}

/// a [.., M, K] (or [.., K, M]) times b [.., K, N] (or [.., N, K]).
fn operands(
    c: &mut CaseCtx,
    batch_a: &[usize],
    batch_b: &[usize],
    (m, k, n): (usize, usize, usize),
    (ta, tb): (bool, bool),
) -> Result<(NodeId, NodeId), IrError> {
    let mut da = batch_a.to_vec();
    da.extend(if ta { [k, m] } else { [m, k] });
    let mut db = batch_b.to_vec();
    db.extend(if tb { [n, k] } else { [k, n] });
    Ok((c.input_f32("a", &da, -1.0, 1.0)?, c.input_f32("b", &db, -1.0, 1.0)?))
}

fn plain(out: &mut Vec<Case>) {
    let sizes: [(usize, usize, usize); 9] = [
        (1, 1, 1),
        (7, 13, 5),
        (17, 33, 65),
        (64, 64, 64),
        (1, 100, 1),
        (1, 77, 129),
        (130, 70, 129),
        (3, 0, 4),
        (0, 5, 3),
    ];
    for mkn in sizes {
        let (m, k, n) = mkn;
        // K = 0 gives zeros; M = 0 an empty result.
        let tag = if m == 0 || k == 0 { "_empty" } else { "" };
        out.push(Case::new(format!("matmul_f32_{m}x{k}x{n}{tag}"), move |c| {
            let (a, b) = operands(c, &[], &[], mkn, (false, false))?;
            Ok(vec![c.matmul(a, b)?])
        }));
    }
    for t in [(false, true), (true, false), (true, true)] {
        out.push(Case::new(format!("matmul_f32_13x17x19_ta{}_tb{}", t.0 as u8, t.1 as u8), move |c| {
            let (a, b) = operands(c, &[], &[], (13, 17, 19), t)?;
            Ok(vec![c.matmul_t(a, b, t.0, t.1)?])
        }));
    }
    out.push(Case::new("matmul_f32_70x129x66_tb", |c| {
        let (a, b) = operands(c, &[], &[], (70, 129, 66), (false, true))?;
        Ok(vec![c.matmul_t(a, b, false, true)?])
    }));
}

fn batched(out: &mut Vec<Case>) {
    type Batched = (&'static str, &'static [usize], &'static [usize], (usize, usize, usize), (bool, bool));
    let shapes: [Batched; 6] = [
        ("same_batch_2x3", &[2, 3], &[2, 3], (5, 7, 4), (false, false)),
        ("bcast_batch", &[3, 1], &[1, 4], (5, 7, 6), (false, false)),
        ("rank2_lhs", &[], &[3], (5, 7, 2), (false, false)),
        ("rank2_rhs", &[2], &[], (5, 7, 3), (false, false)),
        ("bcast_batch_ta_tb", &[2, 1], &[3], (6, 9, 5), (true, true)),
        ("batch1_tb", &[1], &[4], (1, 16, 33), (false, true)),
    ];
    for (tag, ba, bb, mkn, t) in shapes {
        out.push(Case::new(format!("matmul_f32_batched_{tag}"), move |c| {
            let (a, b) = operands(c, ba, bb, mkn, t)?;
            Ok(vec![c.matmul_t(a, b, t.0, t.1)?])
        }));
    }
}

/// x [rows, 24] through a linear layer 24 → 37 (PyTorch weight layout [out, in]).
fn linear_layer(
    c: &mut CaseCtx,
    rows: usize,
    bias: bool,
    act: Option<UnaryOp>,
) -> Result<Vec<NodeId>, IrError> {
    let x = c.input_f32("x", &[rows, 24], -1.0, 1.0)?;
    let w = c.param_f32("w", &[37, 24], -0.3, 0.3)?;
    let b = if bias { Some(c.param_f32("b", &[37], -0.5, 0.5)?) } else { None };
    let y = c.linear(x, w, b)?;
    Ok(vec![match act {
        Some(op) => c.unary(op, y)?,
        None => y,
    }])
}

fn linear(out: &mut Vec<Case>) {
    out.push(Case::new("linear_bias", |c| linear_layer(c, 11, true, None)));
    out.push(Case::new("linear_no_bias", |c| linear_layer(c, 11, false, None)));
    for op in [UnaryOp::Gelu, UnaryOp::GeluTanh, UnaryOp::Relu, UnaryOp::Silu] {
        out.push(Case::new(format!("linear_bias_{}", op.name()), move |c| {
            linear_layer(c, 11, true, Some(op))
        }));
    }
    out.push(
        Case::new("linear_bias_gelu_unfused", |c| linear_layer(c, 11, true, Some(UnaryOp::Gelu)))
            .with_passes(PassOptions::none()),
    );
    out.push(Case::new("linear_bias_relu_1_row", |c| linear_layer(c, 1, true, Some(UnaryOp::Relu))));
    // Batched input [2, 5, 24]: the bias broadcasts over two leading dims.
    out.push(Case::new("linear_bias_batched_input", |c| {
        let x = c.input_f32("x", &[2, 5, 24], -1.0, 1.0)?;
        let w = c.param_f32("w", &[37, 24], -0.3, 0.3)?;
        let b = c.param_f32("b", &[37], -0.5, 0.5)?;
        let y = c.linear(x, w, Some(b))?;
        Ok(vec![c.silu(y)?])
    }));
}

/// Launches of at least 128 workgroups of 128×128 with M, N ≥ 128 (the register-tiled rung's
/// rule): edges in every dim, exact tiles, transposes, batches with broadcasts, K = 1 and
/// K = 0, a NaN row and every fused epilogue.
fn reg_tile(out: &mut Vec<Case>) {
    type Reg = (&'static str, &'static [usize], &'static [usize], (usize, usize, usize), (bool, bool));
    let shapes: [Reg; 9] = [
        ("1153x67x1665", &[], &[], (1153, 67, 1665), (false, false)),
        ("1536x64x1408", &[], &[], (1536, 64, 1408), (false, false)),
        ("1300x33x1600_ta", &[], &[], (1300, 33, 1600), (true, false)),
        ("1300x33x1600_tb", &[], &[], (1300, 33, 1600), (false, true)),
        ("1300x33x1600_ta_tb", &[], &[], (1300, 33, 1600), (true, true)),
        ("1280x1x1664", &[], &[], (1280, 1, 1664), (false, false)),
        ("batched_bcast_4x1_1x8", &[4, 1], &[1, 8], (129, 20, 130), (false, false)),
        ("batched_rank2_rhs_tb", &[32], &[], (140, 33, 1031), (false, true)),
        ("batched_rhs_shared_ta", &[], &[32], (131, 17, 256), (true, false)),
    ];
    for (tag, ba, bb, mkn, t) in shapes {
        out.push(Case::new(format!("matmul_f32_reg_{tag}"), move |c| {
            let (a, b) = operands(c, ba, bb, mkn, t)?;
            Ok(vec![c.matmul_t(a, b, t.0, t.1)?])
        }));
    }
    // One NaN in a makes its row (and only it) NaN.
    out.push(Case::new("matmul_f32_reg_nan_poisons_one_row", |c| {
        let mut v = c.uniform(1300 * 9, -1.0, 1.0);
        v[700 * 9 + 4] = f32::NAN;
        let x = c.input_tensor("a", Tensor::from_f32([1300, 9], v)?)?;
        let y = c.input_f32("b", &[9, 1600], -1.0, 1.0)?;
        Ok(vec![c.matmul(x, y)?])
    }));
    super::matmul_edges::epilogue_cases(out, "fused_matmul_reg", [1300, 67], 1536);
    // K = 0: no K step at all, the output is act(bias).
    out.push(
        Case::new("fused_matmul_reg_k0_is_act_of_bias", |c| {
            super::matmul_edges::fused(c, [1300, 0], 1536, true, Some(UnaryOp::Gelu))
        })
        .with_passes(PassOptions::none()),
    );
    // A linear layer that rlx-opt fuses (x [2, 700, 96], PyTorch weight [1536, 96]).
    out.push(Case::new("linear_reg_bias_gelu_batched_input", |c| {
        let x = c.input_f32("x", &[2, 700, 96], -1.0, 1.0)?;
        let w = c.param_f32("w", &[1536, 96], -0.3, 0.3)?;
        let b = c.param_f32("b", &[1536], -0.5, 0.5)?;
        let y = c.linear(x, w, Some(b))?;
        Ok(vec![c.gelu(y)?])
    }));
}
