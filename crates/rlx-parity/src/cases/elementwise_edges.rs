//! Pointwise edges: every unary op on a prime length and on special values (NaN, ±inf, ±0,
//! saturating magnitudes), activation tails held per element, every binary op over prime and
//! rank-5 broadcasts with specials, integer edge values column × row, compares and where on
//! every dtype, and casts between every pair of dtypes at their rounding and saturation points.

use crate::{Case, CaseCtx};
use rlx_ir::{BinaryOp, CompareOp, DType, IrError, NodeId, Tensor, UnaryOp};

pub(super) fn cases(out: &mut Vec<Case>) {
    unary(out);
    binary(out);
    int_edges(out);
    compare(out);
    casts(out);
    prebuilt_fused(out);
}

/// A fused elementwise node in the graph as given (rlx-opt makes them; the GPUs run it in
/// a kernel generated for its program): exp(x)·y + 2 with y broadcast along rows.
fn prebuilt_fused(out: &mut Vec<Case>) {
    use rlx_ir::{BinaryOp, EwProgram, EwStep, Op, UnaryOp};
    out.push(Case::new("fused_elementwise_prebuilt_bcast", |c| {
        let x = c.input_f32("x", &[3, 5], -1.0, 1.0)?;
        let y = c.input_f32("y", &[5], -1.0, 1.0)?;
        let steps = vec![
            EwStep::Input(0),
            EwStep::Unary(UnaryOp::Exp, 0),
            EwStep::Input(1),
            EwStep::Binary(BinaryOp::Mul, 1, 2),
            EwStep::Scalar(2.0),
            EwStep::Binary(BinaryOp::Add, 3, 4),
        ];
        Ok(vec![c.push(Op::FusedElementwise(EwProgram { steps }), &[x, y])?])
    }));
}

/// NaN, ±inf, ±0, huge and tiny magnitudes, both signs: every unary op must agree on each.
const UNARY_SPECIALS: [f32; 16] = [
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    100.0,
    -100.0,
    200.0,
    -200.0,
    50.0,
    -50.0,
    1e-3,
    -1.0,
    -4.0,
    20.0,
    1e-30,
];

/// `v` with NaN, ±inf and ±0 put at every 7th element from index 3.
pub(super) fn with_specials(mut v: Vec<f32>) -> Vec<f32> {
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
    for (k, x) in v.iter_mut().enumerate().skip(3).step_by(7) {
        *x = specials[(k / 7) % specials.len()];
    }
    v
}

fn unary(out: &mut Vec<Case>) {
    for op in UnaryOp::ALL {
        // 1037 is prime: the last workgroup is partial.
        out.push(Case::new(format!("unary_{}_f32_1037", op.name()), move |c| {
            let v = match op {
                UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip => c.uniform(1037, 0.05, 20.0),
                _ => c.uniform(1037, -6.0, 6.0),
            };
            let x = c.input_tensor("x", Tensor::from_f32([1037], v)?)?;
            Ok(vec![c.unary(op, x)?])
        }));
        out.push(Case::new(format!("unary_{}_f32_specials", op.name()), move |c| {
            let x =
                c.input_tensor("x", Tensor::from_f32([UNARY_SPECIALS.len()], UNARY_SPECIALS.to_vec())?)?;
            Ok(vec![c.unary(op, x)?])
        }));
    }
    // Tails: each value must be within 1e-5 of the reference, which a norm over the row would not
    // notice. The lower ends for the GELUs are where rlx-cpu's reference (0.5·x·(1 + erf) and
    // 0.5·x·(1 + tanh) in f64) still has 1e-5 relative accuracy: below them 1 + erf(x/√2) and
    // 1 + tanh(..) fall under ~1e-11 and the f64 cancellation costs more than that (at x = −8.4
    // the CPU is off by 2×, the GPU kernels are right). −9 once rlx-cpu uses erfc-style forms.
    let tails = [
        (UnaryOp::Gelu, -650),
        (UnaryOp::GeluTanh, -550),
        (UnaryOp::Silu, -900),
        (UnaryOp::Sigmoid, -900),
        (UnaryOp::Tanh, -900),
    ];
    for (op, lowest) in tails {
        out.push(
            Case::new(format!("unary_{}_f32_tails_per_element", op.name()), move |c| {
                let v: Vec<f32> = (lowest..=900).map(|i| i as f32 / 100.0).collect();
                let x = c.input_tensor("x", Tensor::from_f32([v.len()], v)?)?;
                Ok(vec![c.unary(op, x)?])
            })
            .per_element(),
        );
    }
}

/// Operands for `op` of the given shapes, `a` sprinkled with specials when asked.
fn operands(
    c: &mut CaseCtx,
    op: BinaryOp,
    a: &[usize],
    b: &[usize],
    specials: bool,
) -> Result<(NodeId, NodeId), IrError> {
    let na: usize = a.iter().product();
    let nb: usize = b.iter().product();
    let mut va = match op {
        BinaryOp::Pow => c.uniform(na, 0.1, 3.0),
        _ => c.uniform(na, -3.0, 3.0),
    };
    if specials {
        va = with_specials(va);
    }
    let vb: Vec<f32> = match op {
        // Divisors away from zero, alternating signs.
        BinaryOp::Div => c
            .uniform(nb, 0.5, 3.0)
            .into_iter()
            .enumerate()
            .map(|(i, v)| if i % 2 == 0 { v } else { -v })
            .collect(),
        _ => c.uniform(nb, -2.0, 2.0),
    };
    Ok((c.input_tensor("a", Tensor::from_f32(a, va)?)?, c.input_tensor("b", Tensor::from_f32(b, vb)?)?))
}

fn binary(out: &mut Vec<Case>) {
    for op in BinaryOp::ALL {
        out.push(Case::new(format!("binary_{}_f32_prime_3d_bcast", op.name()), move |c| {
            let (x, y) = operands(c, op, &[5, 1, 7], &[3, 1], false)?;
            Ok(vec![c.binary(op, x, y)?])
        }));
        // Alternating size-1 dims over rank 5, with NaN, ±inf and ±0 in the left operand.
        out.push(Case::new(format!("binary_{}_f32_specials_rank5_bcast", op.name()), move |c| {
            let (x, y) = operands(c, op, &[2, 1, 3, 1, 5], &[1, 4, 1, 7, 1], true)?;
            Ok(vec![c.binary(op, x, y)?])
        }));
    }
    out.push(Case::new("binary_mul_f32_rank6_bcast", |c| {
        let (x, y) = operands(c, BinaryOp::Mul, &[2, 1, 3, 1, 2, 5], &[3, 4, 1, 5], false)?;
        Ok(vec![c.mul(x, y)?])
    }));
    out.push(Case::new("binary_sub_f32_scalar_lhs", |c| {
        let (x, y) = operands(c, BinaryOp::Sub, &[], &[4, 1, 6], false)?;
        Ok(vec![c.sub(x, y)?])
    }));
    out.push(Case::new("binary_add_f32_1x1", |c| {
        let (x, y) = operands(c, BinaryOp::Add, &[1, 1], &[1, 1], false)?;
        Ok(vec![c.add(x, y)?])
    }));
    // pow at its special points: signed zeros to negative powers (±inf), NaN exponents and
    // bases, a zero exponent of NaN (1), infinities, a negative base to a fractional power.
    out.push(Case::new("binary_pow_f32_special_values", |c| {
        let nan = f32::NAN;
        let a = vec![
            -2.0,
            -2.0,
            -2.0,
            0.0,
            -0.0,
            -0.0,
            0.0,
            1.0,
            nan,
            2.0,
            -8.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let b = vec![2.0, 3.0, 0.5, -1.0, -1.0, -2.0, 0.0, nan, 0.0, -2.0, 1.0 / 3.0, -1.0, 3.0];
        let x = c.input_tensor("a", Tensor::from_f32([13], a)?)?;
        let y = c.input_tensor("b", Tensor::from_f32([13], b)?)?;
        let p = c.pow(x, y)?;
        // 1 / pow tells −0 from +0 (−inf against +inf), which the comparison sees.
        let one = c.scalar(1.0)?;
        Ok(vec![p, c.div(one, p)?])
    }));
}

/// i32 and u32 values at the edges: overflow, division by zero, MIN / −1, shifts past 31.
const I32_EDGES: [i32; 10] = [i32::MIN, -7, -2, -1, 0, 1, 2, 3, 31, i32::MAX];
const U32_EDGES: [u32; 10] = [0, 1, 2, 3, 7, 31, 32, 1 << 31, u32::MAX - 1, u32::MAX];

fn int_edges(out: &mut Vec<Case>) {
    let n = I32_EDGES.len();
    for op in BinaryOp::ALL {
        // A column against a row: every pair of edge values.
        out.push(Case::new(format!("binary_{}_i32_edges", op.name()), move |c| {
            let x = c.input_tensor("a", Tensor::from_i32([n, 1], I32_EDGES.to_vec())?)?;
            let y = c.input_tensor("b", Tensor::from_i32([1, n], I32_EDGES.to_vec())?)?;
            Ok(vec![c.binary(op, x, y)?])
        }));
        out.push(Case::new(format!("binary_{}_u32_edges", op.name()), move |c| {
            let x = c.input_tensor("a", Tensor::from_u32([n, 1], U32_EDGES.to_vec())?)?;
            let y = c.input_tensor("b", Tensor::from_u32([1, n], U32_EDGES.to_vec())?)?;
            Ok(vec![c.binary(op, x, y)?])
        }));
    }
}

fn compare(out: &mut Vec<Case>) {
    for op in CompareOp::ALL {
        for dtype in [DType::U32, DType::Bool] {
            out.push(Case::new(format!("compare_{}_{dtype}_bcast", op.name()), move |c| {
                let (x, y) = if dtype == DType::U32 {
                    // Small values: equal pairs are common.
                    (c.input_u32("a", &[2, 1, 3, 1, 5], 0, 3)?, c.input_u32("b", &[1, 4, 1, 7, 1], 0, 3)?)
                } else {
                    (c.input_bool("a", &[4, 1, 6])?, c.input_bool("b", &[3, 1])?)
                };
                Ok(vec![c.compare(op, x, y)?])
            }));
        }
        // NaN, −0 = +0, infinities, column against row.
        out.push(Case::new(format!("compare_{}_f32_specials", op.name()), move |c| {
            let a = vec![f32::NAN, -0.0, 0.0, 1.5, f32::INFINITY, -2.0];
            let b = vec![0.0, -0.0, f32::NAN, 1.5, -2.0, f32::INFINITY];
            let x = c.input_tensor("a", Tensor::from_f32([6, 1], a)?)?;
            let y = c.input_tensor("b", Tensor::from_f32([1, 6], b)?)?;
            Ok(vec![c.compare(op, x, y)?])
        }));
    }
    for dtype in DType::ALL {
        // All three operands broadcast, the condition a scalar in one of them.
        out.push(Case::new(format!("where_{dtype}_three_way_bcast"), move |c| {
            let cond = c.input_bool("cond", &[2, 1, 3, 1])?;
            let a = c.input_of("a", &[1, 5, 1, 4], dtype)?;
            let b = c.input_of("b", &[2, 5, 3, 1], dtype)?;
            Ok(vec![c.where_(cond, a, b)?])
        }));
        out.push(Case::new(format!("where_{dtype}_scalar_cond"), move |c| {
            let cond = c.input_bool("cond", &[])?;
            let a = c.input_of("a", &[3, 1, 2], dtype)?;
            let b = c.input_of("b", &[7, 1], dtype)?;
            Ok(vec![c.where_(cond, a, b)?])
        }));
    }
}

/// Values every cast from `dtype` must get right: specials, rounding boundaries, saturation.
fn cast_edges(dtype: DType) -> Result<Tensor, IrError> {
    match dtype {
        DType::I32 => Tensor::from_i32(
            [12],
            vec![
                i32::MIN,
                i32::MIN + 1,
                -16_777_217,
                -16_777_216,
                -1,
                0,
                1,
                16_777_217,
                16_777_219,
                2_147_483_583,
                2_147_483_584,
                i32::MAX,
            ],
        ),
        DType::U32 => Tensor::from_u32(
            [12],
            vec![
                0,
                1,
                16_777_216,
                16_777_217,
                16_777_218,
                16_777_219,
                33_554_435,
                2_147_483_647,
                2_147_483_648,
                4_294_967_167,
                4_294_967_168,
                u32::MAX,
            ],
        ),
        DType::Bool => Tensor::from_bool([5], vec![true, false, false, true, true]),
        _ => Tensor::from_f32(
            [20],
            vec![
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                0.0,
                -0.0,
                0.7,
                -0.7,
                -1.0,
                2.5,
                -2.5,
                1e-40,
                2_147_483_520.0,
                2_147_483_648.0,
                -2_147_483_648.0,
                -3e9,
                4_294_967_040.0,
                4_294_967_296.0,
                1e20,
                16_777_217.0,
                -123_456.75,
            ],
        ),
    }
}

fn casts(out: &mut Vec<Case>) {
    let dtypes = [DType::F32, DType::I32, DType::U32, DType::Bool];
    for from in dtypes {
        for to in dtypes {
            // A cast is a rounding rule: the float results are compared like any other, and
            // the integer ones exactly.
            out.push(Case::new(format!("cast_edges_{from}_to_{to}"), move |c| {
                let x = c.input_tensor("x", cast_edges(from)?)?;
                Ok(vec![c.cast(x, to)?])
            }));
        }
    }
}
