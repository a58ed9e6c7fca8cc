//! Pointwise ops: unary, binary, compare, where, cast, and chains that rlx-opt fuses.

use super::with_nans;
use crate::{Case, CaseCtx};
use rlx_ir::{BinaryOp, CompareOp, DType, IrError, NodeId, Tensor, UnaryOp};
use rlx_runtime::PassOptions;

pub(super) fn cases(out: &mut Vec<Case>) {
    unary(out);
    binary(out);
    int_binary(out);
    compare(out);
    select_and_cast(out);
    fused(out);
}

/// Inputs in the op's domain: positive for log/sqrt/rsqrt, away from zero for recip, wide enough
/// to reach the saturated tails elsewhere.
fn unary_domain(op: UnaryOp) -> (f32, f32) {
    match op {
        UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt => (0.01, 10.0),
        UnaryOp::Exp => (-8.0, 8.0),
        UnaryOp::Sin | UnaryOp::Cos => (-6.5, 6.5),
        _ => (-4.0, 4.0),
    }
}

/// Values with |v| in [lo, hi] and a random sign.
fn away_from_zero(c: &mut CaseCtx, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mags = c.uniform(n, lo, hi);
    let signs = c.bools(n);
    mags.into_iter().zip(signs).map(|(m, s)| if s { m } else { -m }).collect()
}

fn unary_input(c: &mut CaseCtx, op: UnaryOp, dims: &[usize]) -> Result<NodeId, IrError> {
    if op == UnaryOp::Recip {
        let v = away_from_zero(c, dims.iter().product(), 0.1, 4.0);
        return c.input_tensor("x", Tensor::from_f32(dims, v)?);
    }
    let (lo, hi) = unary_domain(op);
    c.input_f32("x", dims, lo, hi)
}

fn unary(out: &mut Vec<Case>) {
    for op in UnaryOp::ALL {
        out.push(Case::new(format!("unary_{}_f32_3x37", op.name()), move |c| {
            let x = unary_input(c, op, &[3, 37])?;
            Ok(vec![c.unary(op, x)?])
        }));
        // NaN in → NaN out, at the same positions.
        out.push(Case::new(format!("unary_{}_f32_nan", op.name()), move |c| {
            let (lo, hi) = unary_domain(op);
            let v = with_nans(c.uniform(18, lo.max(0.1), hi), 4);
            let x = c.input_tensor("x", Tensor::from_f32([2, 9], v)?)?;
            Ok(vec![c.unary(op, x)?])
        }));
    }
    // Saturated tails: exp overflow must not turn sigmoid/tanh/silu/gelu into NaN.
    for op in [UnaryOp::Sigmoid, UnaryOp::Tanh, UnaryOp::Silu, UnaryOp::Gelu, UnaryOp::GeluTanh] {
        out.push(Case::new(format!("unary_{}_f32_wide_range", op.name()), move |c| {
            let x = c.input_f32("x", &[5, 41], -60.0, 60.0)?;
            Ok(vec![c.unary(op, x)?])
        }));
    }
    let shapes: [(&str, &[usize]); 4] = [("scalar", &[]), ("1", &[1]), ("4099", &[4099]), ("empty", &[0, 3])];
    for (tag, dims) in shapes {
        out.push(Case::new(format!("unary_exp_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -3.0, 3.0)?;
            Ok(vec![c.exp(x)?])
        }));
    }
    for op in [UnaryOp::Neg, UnaryOp::Abs] {
        out.push(Case::new(format!("unary_{}_i32", op.name()), move |c| {
            let mut v = c.ints(29, -1000, 1000);
            // Wrapping: neg and abs of i32::MIN give i32::MIN.
            v[3] = i32::MIN;
            v[7] = i32::MAX;
            let x = c.input_tensor("x", Tensor::from_i32([29], v)?)?;
            Ok(vec![c.unary(op, x)?])
        }));
    }
}

/// Operand values in the op's domain: positive bases for pow, divisors away from zero.
fn binary_inputs(
    c: &mut CaseCtx,
    op: BinaryOp,
    a: &[usize],
    b: &[usize],
) -> Result<(NodeId, NodeId), IrError> {
    match op {
        BinaryOp::Pow => Ok((c.input_f32("a", a, 0.1, 3.0)?, c.input_f32("b", b, -2.5, 2.5)?)),
        BinaryOp::Div => {
            let x = c.input_f32("a", a, -3.0, 3.0)?;
            let v = away_from_zero(c, b.iter().product(), 0.25, 3.0);
            Ok((x, c.input_tensor("b", Tensor::from_f32(b, v)?)?))
        }
        _ => Ok((c.input_f32("a", a, -3.0, 3.0)?, c.input_f32("b", b, -3.0, 3.0)?)),
    }
}

fn binary(out: &mut Vec<Case>) {
    let shapes: [(&str, &[usize], &[usize]); 4] = [
        ("same_5x13", &[5, 13], &[5, 13]),
        ("bcast_row", &[5, 13], &[13]),
        ("bcast_both", &[5, 1], &[1, 13]),
        ("scalar_rhs", &[7], &[]),
    ];
    for op in BinaryOp::ALL {
        for (tag, a, b) in shapes {
            out.push(Case::new(format!("binary_{}_f32_{tag}", op.name()), move |c| {
                let (x, y) = binary_inputs(c, op, a, b)?;
                Ok(vec![c.binary(op, x, y)?])
            }));
        }
        // NaN in either operand gives NaN (maximum/minimum too, like PyTorch).
        out.push(Case::new(format!("binary_{}_f32_nan", op.name()), move |c| {
            let a = with_nans(c.uniform(21, 0.5, 2.0), 5);
            let b = with_nans(c.uniform(21, 0.5, 2.0), 7);
            let x = c.input_tensor("a", Tensor::from_f32([3, 7], a)?)?;
            let y = c.input_tensor("b", Tensor::from_f32([3, 7], b)?)?;
            Ok(vec![c.binary(op, x, y)?])
        }));
    }
    let more: [(&str, &[usize], &[usize]); 6] = [
        ("3d_bcast", &[2, 1, 5], &[3, 1]),
        ("bcast_lhs", &[1, 13], &[5, 13]),
        ("4d_bcast", &[2, 3, 1, 4], &[1, 3, 5, 1]),
        ("1", &[1], &[1]),
        ("4099", &[4099], &[4099]),
        ("empty", &[0, 4], &[4]),
    ];
    for (tag, a, b) in more {
        out.push(Case::new(format!("binary_add_f32_{tag}"), move |c| {
            let (x, y) = binary_inputs(c, BinaryOp::Add, a, b)?;
            Ok(vec![c.add(x, y)?])
        }));
    }
    // PyTorch gives real powers of negative bases for integral exponents, NaN otherwise.
    out.push(Case::new("binary_pow_f32_negative_base", |c| {
        let a = c.input_f32("a", &[4, 6], -3.0, -0.5)?;
        let e = Tensor::from_f32([6], vec![2.0, 3.0, -1.0, 0.5, 0.0, 1.0])?;
        let b = c.input_tensor("b", e)?;
        Ok(vec![c.pow(a, b)?])
    }));
}

fn int_binary(out: &mut Vec<Case>) {
    for op in BinaryOp::ALL {
        out.push(Case::new(format!("binary_{}_i32_bcast", op.name()), move |c| {
            let (x, y) = match op {
                BinaryOp::Pow => (c.input_i32("a", &[4, 11], -3, 3)?, c.input_i32("b", &[11], -2, 6)?),
                // Divisors include 0 (x / 0 = 0) and negatives (truncation toward zero).
                BinaryOp::Div => (c.input_i32("a", &[4, 11], -100, 100)?, c.input_i32("b", &[11], -4, 4)?),
                _ => (c.input_i32("a", &[4, 11], -1000, 1000)?, c.input_i32("b", &[11], -1000, 1000)?),
            };
            Ok(vec![c.binary(op, x, y)?])
        }));
    }
    out.push(Case::new("binary_i32_wrapping", |c| {
        let a = Tensor::from_i32([4], vec![i32::MAX, i32::MIN, i32::MIN, 65536])?;
        let b = Tensor::from_i32([4], vec![1, -1, -1, 65536])?;
        let (x, y) = (c.input_tensor("a", a)?, c.input_tensor("b", b)?);
        Ok(vec![c.add(x, y)?, c.sub(x, y)?, c.mul(x, y)?, c.div(x, y)?])
    }));
    for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Div, BinaryOp::Maximum, BinaryOp::Mul] {
        out.push(Case::new(format!("binary_{}_u32_bcast", op.name()), move |c| {
            // Sub wraps below zero; div meets zero divisors; values straddle 2^31 for max.
            let x = c.input_u32("a", &[3, 10], 0, 3_000_000_000)?;
            let y = c.input_u32("b", &[10], 0, 5)?;
            Ok(vec![c.binary(op, x, y)?])
        }));
    }
}

fn compare(out: &mut Vec<Case>) {
    for op in CompareOp::ALL {
        // Small integer values, so equal pairs occur.
        out.push(Case::new(format!("compare_{}_f32_bcast", op.name()), move |c| {
            let x = c.input_f32_ints("a", &[4, 9], -3, 3)?;
            let y = c.input_f32_ints("b", &[9], -3, 3)?;
            Ok(vec![c.compare(op, x, y)?])
        }));
        out.push(Case::new(format!("compare_{}_i32_bcast", op.name()), move |c| {
            let x = c.input_i32("a", &[3, 1, 5], -2, 2)?;
            let y = c.input_i32("b", &[4, 1], -2, 2)?;
            Ok(vec![c.compare(op, x, y)?])
        }));
    }
    out.push(Case::new("compare_u32_lt_ge", |c| {
        let x = c.input_u32("a", &[2, 8], 0, 4_000_000_000)?;
        let y = c.input_u32("b", &[2, 8], 0, 4_000_000_000)?;
        Ok(vec![c.lt(x, y)?, c.ge(x, y)?])
    }));
    out.push(Case::new("compare_bool_eq_ne", |c| {
        let x = c.input_bool("a", &[3, 7])?;
        let y = c.input_bool("b", &[7])?;
        Ok(vec![c.eq(x, y)?, c.ne(x, y)?])
    }));
    // IEEE: every comparison with NaN is false except ne.
    out.push(Case::new("compare_f32_nan_all_ops", |c| {
        let a = with_nans(c.uniform(12, -1.0, 1.0), 3);
        let x = c.input_tensor("a", Tensor::from_f32([12], a)?)?;
        let y = c.input_f32("b", &[12], -1.0, 1.0)?;
        CompareOp::ALL.iter().map(|&op| c.compare(op, x, y)).collect()
    }));
}

fn select_and_cast(out: &mut Vec<Case>) {
    out.push(Case::new("where_f32_bcast", |c| {
        let cond = c.input_bool("cond", &[4, 1])?;
        let a = c.input_f32("a", &[4, 6], -1.0, 1.0)?;
        let b = c.input_f32("b", &[6], 5.0, 6.0)?;
        Ok(vec![c.where_(cond, a, b)?])
    }));
    out.push(Case::new("where_f32_scalar_branch", |c| {
        let cond = c.input_bool("cond", &[3, 5])?;
        let a = c.input_f32("a", &[3, 5], -1.0, 1.0)?;
        let b = c.input_f32("b", &[], 7.0, 8.0)?;
        Ok(vec![c.where_(cond, a, b)?])
    }));
    // A NaN in the branch not taken must not leak.
    out.push(Case::new("where_f32_nan_unselected", |c| {
        let cond =
            c.input_tensor("cond", Tensor::from_bool([6], vec![true, false, true, false, true, false])?)?;
        let a =
            c.input_tensor("a", Tensor::from_f32([6], vec![1.0, f32::NAN, 3.0, f32::NAN, 5.0, f32::NAN])?)?;
        let b = c.input_f32("b", &[6], -1.0, 1.0)?;
        Ok(vec![c.where_(cond, a, b)?])
    }));
    out.push(Case::new("where_i32", |c| {
        let cond = c.input_bool("cond", &[5, 7])?;
        let a = c.input_i32("a", &[5, 7], -100, 100)?;
        let b = c.input_i32("b", &[1, 7], -100, 100)?;
        Ok(vec![c.where_(cond, a, b)?])
    }));
    out.push(Case::new("where_bool", |c| {
        let cond = c.input_bool("cond", &[2, 9])?;
        let a = c.input_bool("a", &[2, 9])?;
        let b = c.input_bool("b", &[9])?;
        Ok(vec![c.where_(cond, a, b)?])
    }));
    out.push(Case::new("where_from_compare", |c| {
        let x = c.input_f32("x", &[6, 11], -1.0, 1.0)?;
        let zero = c.input_f32("zero", &[], 0.0, 0.0)?;
        let pos = c.gt(x, zero)?;
        let sq = c.square(x)?;
        Ok(vec![c.where_(pos, x, sq)?])
    }));

    type MakeTensor = fn() -> Result<Tensor, IrError>;
    let casts: [(&str, MakeTensor, DType); 11] = [
        ("f32_i32_trunc", || Tensor::from_f32([6], vec![-2.7, -0.5, 0.0, 0.9, 7.99, -100.2]), DType::I32),
        ("f32_i32_saturate", || Tensor::from_f32([5], vec![1e10, -1e10, 3e9, -2.5, 2.5]), DType::I32),
        ("f32_u32_saturate", || Tensor::from_f32([5], vec![-5.5, 0.0, 3.7, 4e9, 5e9]), DType::U32),
        ("f32_bool", || Tensor::from_f32([6], vec![0.0, -0.0, 1e-30, -2.0, 3.0, f32::NAN]), DType::Bool),
        ("i32_f32", || Tensor::from_i32([5], vec![-7, 0, 16_777_217, i32::MIN, i32::MAX]), DType::F32),
        ("i32_u32_saturate", || Tensor::from_i32([4], vec![-5, 0, 7, i32::MAX]), DType::U32),
        ("u32_i32_saturate", || Tensor::from_u32([4], vec![0, 7, 2_147_483_648, u32::MAX]), DType::I32),
        ("u32_f32", || Tensor::from_u32([3], vec![0, 123_456_789, u32::MAX]), DType::F32),
        ("i32_bool", || Tensor::from_i32([5], vec![0, 1, -1, 2, i32::MIN]), DType::Bool),
        ("bool_f32", || Tensor::from_bool([4], vec![true, false, false, true]), DType::F32),
        ("bool_i32", || Tensor::from_bool([4], vec![false, true, true, false]), DType::I32),
    ];
    for (tag, make, to) in casts {
        out.push(Case::new(format!("cast_{tag}"), move |c| {
            let x = c.input_tensor("x", make()?)?;
            Ok(vec![c.cast(x, to)?])
        }));
    }
    out.push(Case::new("cast_f32_i32_random", |c| {
        let x = c.input_f32("x", &[7, 13], -300.0, 300.0)?;
        Ok(vec![c.cast(x, DType::I32)?])
    }));
}

/// `exp(-x²)·0.5 + sin(x) / (1 + |x|)`: seven elementwise ops with two scalar constants.
fn long_chain(c: &mut CaseCtx) -> Result<Vec<NodeId>, IrError> {
    let x = c.input_f32("x", &[9, 31], -3.0, 3.0)?;
    let half = c.scalar(0.5)?;
    let one = c.scalar(1.0)?;
    let sq = c.square(x)?;
    let nsq = c.neg(sq)?;
    let e = c.exp(nsq)?;
    let l = c.mul(e, half)?;
    let s = c.sin(x)?;
    let a = c.abs(x)?;
    let d = c.add(a, one)?;
    let r = c.div(s, d)?;
    Ok(vec![c.add(l, r)?])
}

fn fused(out: &mut Vec<Case>) {
    out.push(Case::new("fused_gelu_affine_bcast", |c| {
        let x = c.input_f32("x", &[6, 13], -2.0, 2.0)?;
        let a = c.param_f32("a", &[13], 0.5, 1.5)?;
        let b = c.param_f32("b", &[13], -0.5, 0.5)?;
        let y = c.mul(x, a)?;
        let y = c.add(y, b)?;
        Ok(vec![c.gelu(y)?])
    }));
    out.push(Case::new("fused_silu_gate", |c| {
        let x = c.input_f32("x", &[5, 17], -3.0, 3.0)?;
        let y = c.input_f32("y", &[5, 17], -3.0, 3.0)?;
        let s = c.silu(x)?;
        Ok(vec![c.mul(s, y)?])
    }));
    out.push(Case::new("fused_long_chain", long_chain));
    out.push(Case::new("fused_long_chain_unfused", long_chain).with_passes(PassOptions::none()));
    // An intermediate that is also an output must be stored, not only kept in a register.
    out.push(Case::new("fused_chain_two_outputs", |c| {
        let x = c.input_f32("x", &[4, 10], -2.0, 2.0)?;
        let t = c.tanh(x)?;
        let s = c.sigmoid(t)?;
        let m = c.mul(s, x)?;
        Ok(vec![t, m])
    }));
}
