//! Matmul-family edges: matmuls past one tile and with batch levels that alternate, a NaN that
//! must poison exactly its row, and every fused matmul epilogue (and one with K = 0).

use crate::{Case, CaseCtx};
use rlx_ir::{IrError, NodeId, Op, Tensor, UnaryOp};
use rlx_runtime::PassOptions;

pub(super) fn cases(out: &mut Vec<Case>) {
    matmul(out);
    epilogues(out);
}

fn matmul(out: &mut Vec<Case>) {
    type Mm = (&'static str, &'static [usize], &'static [usize], bool, bool);
    let shapes: [Mm; 10] = [
        ("300x257x129", &[300, 257], &[257, 129], false, false),
        ("200x300x150", &[200, 300], &[300, 150], false, false),
        ("67x13x65_ta", &[13, 67], &[13, 65], true, false),
        ("67x13x65_tb", &[67, 13], &[65, 13], false, true),
        ("67x13x65_ta_tb", &[13, 67], &[65, 13], true, true),
        ("batched_3x33x17_3x17x65", &[3, 33, 17], &[3, 17, 65], false, false),
        ("batched_two_levels_rhs_fewer", &[2, 3, 20, 9], &[3, 9, 11], false, false),
        ("batched_lhs_shared", &[20, 9], &[4, 9, 70], false, false),
        ("batched_rank3_lhs_rank2_rhs", &[2, 3, 17, 9], &[9, 11], false, false),
        // Batch [2, 1, 3] · [1, 4, 3] alternates three times: several launches with offsets.
        ("batched_alternating_tb", &[2, 1, 3, 5, 7], &[1, 4, 3, 6, 7], false, true),
    ];
    for (tag, a, b, ta, tb) in shapes {
        out.push(Case::new(format!("matmul_f32_{tag}"), move |c| {
            let x = c.input_f32("a", a, -1.5, 1.5)?;
            let y = c.input_f32("b", b, -1.5, 1.5)?;
            Ok(vec![c.matmul_t(x, y, ta, tb)?])
        }));
    }
    // One NaN in a makes its row NaN and leaves the other rows finite.
    out.push(Case::new("matmul_f32_nan_poisons_one_row", |c| {
        let mut v = c.uniform(30, -1.0, 1.0);
        v[7] = f32::NAN;
        let x = c.input_tensor("a", Tensor::from_f32([6, 5], v)?)?;
        let y = c.input_f32("b", &[5, 4], -1.0, 1.0)?;
        Ok(vec![c.matmul(x, y)?])
    }));
}

/// A FusedMatMul node built as rlx-opt's fusion builds it: a `a_dims` [M, K] · b [n, K]ᵀ
/// (+ bias [n]).
pub(super) fn fused(
    c: &mut CaseCtx,
    a_dims: [usize; 2],
    n: usize,
    bias: bool,
    act: Option<UnaryOp>,
) -> Result<Vec<NodeId>, IrError> {
    let a = c.input_f32("a", &a_dims, -1.5, 1.5)?;
    let b = c.input_f32("b", &[n, a_dims[1]], -0.3, 0.3)?;
    let mut ins = vec![a, b];
    if bias {
        ins.push(c.input_f32("bias", &[n], -1.0, 1.0)?);
    }
    let op = Op::FusedMatMul { transpose_a: false, transpose_b: true, bias, activation: act };
    Ok(vec![c.push(op, &ins)?])
}

/// `{prefix}_{bias|no_bias}_{act}`: every fused epilogue (each activation with and without a
/// bias, and Exp, which has no epilogue variant and runs as a unary step after the matmul) on
/// [`fused`]`(a_dims, n)`, with unfused passes so the FusedMatMul node reaches the backend as built.
pub(super) fn epilogue_cases(out: &mut Vec<Case>, prefix: &'static str, a_dims: [usize; 2], n: usize) {
    let acts = [
        None,
        Some(UnaryOp::Gelu),
        Some(UnaryOp::GeluTanh),
        Some(UnaryOp::Relu),
        Some(UnaryOp::Silu),
        Some(UnaryOp::Sigmoid),
        Some(UnaryOp::Tanh),
        Some(UnaryOp::Exp),
    ];
    for act in acts {
        for bias in [false, true] {
            if act.is_none() && !bias {
                continue;
            }
            let name = act.map_or("none", |a| a.name());
            let tag = if bias { "bias" } else { "no_bias" };
            out.push(
                Case::new(format!("{prefix}_{tag}_{name}"), move |c| fused(c, a_dims, n, bias, act))
                    .with_passes(PassOptions::none()),
            );
        }
    }
}

fn epilogues(out: &mut Vec<Case>) {
    epilogue_cases(out, "fused_matmul", [37, 67], 29);
    // K = 0: the product is zeros, so the output is act(bias).
    out.push(
        Case::new("fused_matmul_k0_is_act_of_bias", |c| {
            let a = c.input_f32("a", &[2, 5, 0], -1.0, 1.0)?;
            let b = c.input_f32("b", &[0, 3], -1.0, 1.0)?;
            let bias = c.input_tensor("bias", Tensor::from_f32([3], vec![-1.0, 0.5, 2.0])?)?;
            let op = Op::FusedMatMul {
                transpose_a: false,
                transpose_b: false,
                bias: true,
                activation: Some(UnaryOp::Gelu),
            };
            Ok(vec![c.push(op, &[a, b, bias])?])
        })
        .with_passes(PassOptions::none()),
    );
}
