//! Reduction edges: integer reductions over several axes, reductions long enough to take two
//! and three passes, NaN/±inf/±0 and empty axes for every op, argmax/argmin at ties and
//! specials on every dtype, wrapping integer cumsums, top-k at ties and NaN, and rows of 1 to 9
//! elements that share a workgroup.

use super::elementwise_edges::with_specials;
use crate::{Case, CaseCtx};
use rlx_ir::{DType, IrError, NodeId, ReduceOp, Tensor};

const OPS: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

pub(super) fn cases(out: &mut Vec<Case>) {
    int_axes(out);
    long(out);
    specials(out);
    arg_reduce(out);
    cumsum(out);
    topk(out);
    short_rows(out);
}

/// An input for `op`: products of f32 stay near 1 (closer for more factors), integers span
/// half their range so sums wrap.
fn reduce_input(c: &mut CaseCtx, op: ReduceOp, dtype: DType, dims: &[usize]) -> Result<NodeId, IrError> {
    let n: usize = dims.iter().product();
    let spread = if n < 1000 { 0.1 } else { 0.001 };
    match (op, dtype) {
        (ReduceOp::Prod, DType::F32) => c.input_f32("x", dims, 1.0 - spread, 1.0 + spread),
        (_, DType::F32) => c.input_f32("x", dims, -1.0, 1.0),
        (_, DType::I32) => c.input_i32("x", dims, i32::MIN / 2, i32::MAX / 2),
        _ => c.input_u32("x", dims, 0, u32::MAX),
    }
}

fn int_axes(out: &mut Vec<Case>) {
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod] {
        for dtype in [DType::I32, DType::U32] {
            out.push(Case::new(format!("reduce_{}_{dtype}_axes13_keepdim", op.name()), move |c| {
                let x = reduce_input(c, op, dtype, &[3, 4, 5, 6])?;
                Ok(vec![c.reduce(op, x, &[1, 3], true)?])
            }));
        }
    }
    for op in OPS {
        out.push(Case::new(format!("reduce_{}_f32_prime_axes12", op.name()), move |c| {
            let x = reduce_input(c, op, DType::F32, &[1, 7, 1, 13])?;
            Ok(vec![c.reduce(op, x, &[1, 2], false)?])
        }));
    }
}

fn long(out: &mut Vec<Case>) {
    for op in OPS {
        // 20011 and 60000 reduced elements: two passes; the reduced axis first: strided partials.
        let layouts: [(&str, &[usize], &[isize], bool); 3] = [
            ("2x20011", &[2, 20011], &[1], false),
            ("all_300x200", &[300, 200], &[0, 1], false),
            ("axis0_9000x3", &[9000, 3], &[0], true),
        ];
        for (tag, dims, axes, keepdim) in layouts {
            out.push(Case::new(format!("reduce_{}_f32_long_{tag}", op.name()), move |c| {
                let x = reduce_input(c, op, DType::F32, dims)?;
                Ok(vec![c.reduce(op, x, axes, keepdim)?])
            }));
        }
    }
    // 100003 factors: a compensated f32 product stays within 1e-5 where a plain one drifts.
    out.push(Case::new("reduce_prod_f32_long_100003", |c| {
        let x = reduce_input(c, ReduceOp::Prod, DType::F32, &[100_003])?;
        Ok(vec![c.prod(x, &[0], false)?])
    }));
    // 4097² elements into one sum: three passes.
    out.push(Case::new("reduce_sum_f32_three_passes_4097sq", |c| {
        let x = c.input_f32("x", &[4097, 4097], -1.0, 1.0)?;
        Ok(vec![c.sum(x, &[0, 1], false)?])
    }));
    out.push(Case::new("reduce_sum_i32_long_70000", |c| {
        let x = reduce_input(c, ReduceOp::Sum, DType::I32, &[70_000])?;
        Ok(vec![c.sum(x, &[0], false)?])
    }));
}

fn specials(out: &mut Vec<Case>) {
    for op in OPS {
        out.push(Case::new(format!("reduce_{}_f32_specials_5x14", op.name()), move |c| {
            let v = with_specials(c.uniform(70, -3.0, 3.0));
            let x = c.input_tensor("x", Tensor::from_f32([5, 14], v)?)?;
            Ok(vec![c.reduce(op, x, &[1], false)?])
        }));
        // Sum 0, prod 1, mean/max/min NaN: the values rlx-cpu defines for an empty axis.
        out.push(Case::new(format!("reduce_{}_f32_empty_axis_3x0x2", op.name()), move |c| {
            let x = c.input_tensor("x", Tensor::from_f32([3, 0, 2], vec![])?)?;
            let y = c.reduce(op, x, &[1], false)?;
            // Sum of an empty axis is all zeros: add 1 so the reference is not degenerate.
            let one = c.scalar(1.0)?;
            Ok(vec![c.add(y, one)?])
        }));
        if op != ReduceOp::Mean {
            out.push(Case::new(format!("reduce_{}_i32_empty_axis_keepdim", op.name()), move |c| {
                let x = c.input_tensor("x", Tensor::from_i32([0, 4], vec![])?)?;
                let y = c.reduce(op, x, &[0], true)?;
                let one = c.input_tensor("one", Tensor::from_i32([1], vec![1])?)?;
                Ok(vec![c.add(y, one)?])
            }));
        }
    }
}

fn arg_reduce(out: &mut Vec<Case>) {
    // Ties (first index wins), NaN (first NaN wins), ±0 and ±inf, along both axes.
    for axis in [0isize, 1] {
        out.push(Case::new(format!("argmax_argmin_f32_specials_axis{axis}"), move |c| {
            let v = vec![
                1.0,
                3.0,
                3.0,
                -1.0,
                f32::NAN,
                2.0,
                f32::NAN,
                -5.0,
                -0.0,
                0.0,
                0.0,
                -0.0,
                f32::NEG_INFINITY,
                f32::INFINITY,
                f32::INFINITY,
                f32::NEG_INFINITY,
            ];
            let x = c.input_tensor("x", Tensor::from_f32([4, 4], v)?)?;
            Ok(vec![c.argmax(x, axis, false)?, c.argmin(x, axis, true)?])
        }));
    }
    // f16, bf16 and u8 go through the casts GPUs wrap them in; ties and order must survive.
    for dtype in [DType::F32, DType::I32, DType::U32, DType::F16, DType::BF16, DType::U8] {
        let layouts: [(&str, &[usize], isize); 3] =
            [("middle_3x300x5", &[3, 300, 5], 1), ("last_2x3x1000", &[2, 3, 1000], -1), ("7", &[7], 0)];
        for (tag, dims, axis) in layouts {
            out.push(Case::new(format!("argmax_argmin_{dtype}_{tag}"), move |c| {
                let x = c.input_of("x", dims, dtype)?;
                Ok(vec![c.argmax(x, axis, true)?, c.argmin(x, axis, false)?])
            }));
        }
    }
}

fn cumsum(out: &mut Vec<Case>) {
    let layouts: [(&str, &[usize], isize); 4] = [
        ("blocks_3x2500", &[3, 2500], 1),
        ("axis0_1500x3", &[1500, 3], 0),
        ("4x1025", &[4, 1025], -1),
        ("1", &[1], 0),
    ];
    for (tag, dims, axis) in layouts {
        out.push(Case::new(format!("cumsum_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.cumsum(x, axis)?])
        }));
        // Values across the whole range: the running sums wrap.
        out.push(Case::new(format!("cumsum_i32_wrapping_{tag}"), move |c| {
            let x = c.input_i32("x", dims, i32::MIN, i32::MAX)?;
            Ok(vec![c.cumsum(x, axis)?])
        }));
        out.push(Case::new(format!("cumsum_u32_wrapping_{tag}"), move |c| {
            let x = c.input_u32("x", dims, 0, u32::MAX)?;
            Ok(vec![c.cumsum(x, axis)?])
        }));
    }
    // NaN and infinities propagate from where they appear.
    out.push(Case::new("cumsum_f32_specials_3x40", |c| {
        let v = with_specials(c.uniform(120, -1.0, 1.0));
        let x = c.input_tensor("x", Tensor::from_f32([3, 40], v)?)?;
        Ok(vec![c.cumsum(x, 1)?])
    }));
}

fn topk(out: &mut Vec<Case>) {
    let nan = f32::NAN;
    let specials = vec![
        1.0,
        nan,
        3.0,
        3.0,
        -0.0,
        0.0,
        f32::NEG_INFINITY,
        nan,
        2.0,
        2.0,
        2.0,
        -1.0,
        f32::INFINITY,
        5.0,
        -7.0,
        2.0,
    ];
    for largest in [true, false] {
        let dir = if largest { "largest" } else { "smallest" };
        for k in [1, 3, 8] {
            let v = specials.clone();
            out.push(Case::new(format!("topk_f32_specials_{dir}_k{k}"), move |c| {
                let x = c.input_tensor("x", Tensor::from_f32([2, 8], v.clone())?)?;
                let (v, i) = c.topk(x, k, 1, largest)?;
                Ok(vec![v, i])
            }));
        }
        for dtype in [DType::F32, DType::I32, DType::U32, DType::F16, DType::BF16, DType::U8] {
            let layouts: [(&str, &[usize], usize, isize); 3] = [
                ("axis0_full_40x2x3", &[40, 2, 3], 40, 0),
                ("1", &[1], 1, 0),
                ("middle_2x9x4", &[2, 9, 4], 4, 1),
            ];
            for (tag, dims, k, axis) in layouts {
                out.push(Case::new(format!("topk_{dtype}_{dir}_{tag}"), move |c| {
                    // Small integer ranges: many ties.
                    let x = c.input_of("x", dims, dtype)?;
                    let (v, i) = c.topk(x, k, axis, largest)?;
                    Ok(vec![i, v])
                }));
            }
        }
    }
}

fn short_rows(out: &mut Vec<Case>) {
    // Rows of 1 to 9 elements: many rows per workgroup, the last workgroup partly used.
    for len in [1usize, 2, 3, 5, 9] {
        out.push(Case::new(format!("short_rows_{len}_f32_1001_rows"), move |c| {
            let v = with_specials(c.uniform(1001 * len, -3.0, 3.0));
            let x = c.input_tensor("x", Tensor::from_f32([1001, len], v)?)?;
            let s = c.sum(x, &[1], false)?;
            let m = c.min(x, &[1], true)?;
            let a = c.argmin(x, 1, false)?;
            let cs = c.cumsum(x, 1)?;
            let (v, i) = c.topk(x, len.min(2), 1, false)?;
            Ok(vec![s, m, a, cs, v, i])
        }));
    }
}
