//! Reductions (sum, mean, max, min, prod over any axes), argmax/argmin, cumsum and top-k.

use super::with_nans;
use crate::Case;
use rlx_ir::{ReduceOp, Tensor};

const OPS: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

pub(super) fn cases(out: &mut Vec<Case>) {
    reduce(out);
    reduce_edges(out);
    arg_reduce(out);
    cumsum(out);
    topk(out);
}

fn reduce(out: &mut Vec<Case>) {
    let layouts: [(&str, &[usize], &[isize], bool); 5] = [
        ("last_5x37", &[5, 37], &[-1], false),
        ("first_37x5", &[37, 5], &[0], false),
        ("middle_3x17x4_keepdim", &[3, 17, 4], &[1], true),
        ("axes02_2x3x5x7", &[2, 3, 5, 7], &[0, 2], false),
        ("all_6x7", &[6, 7], &[0, 1], false),
    ];
    for op in OPS {
        for (tag, dims, axes, keepdim) in layouts {
            out.push(Case::new(format!("reduce_{}_f32_{tag}", op.name()), move |c| {
                // Factors near 1 keep products of up to 42 terms far from under- and overflow.
                let (lo, hi) = if op == ReduceOp::Prod { (0.8, 1.25) } else { (-2.0, 2.0) };
                let x = c.input_f32("x", dims, lo, hi)?;
                Ok(vec![c.reduce(op, x, axes, keepdim)?])
            }));
        }
    }
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod] {
        out.push(Case::new(format!("reduce_{}_i32_4x13", op.name()), move |c| {
            let x = if op == ReduceOp::Prod {
                c.input_i32("x", &[4, 13], -2, 2)?
            } else {
                c.input_i32("x", &[4, 13], -1000, 1000)?
            };
            Ok(vec![c.reduce(op, x, &[1], false)?])
        }));
    }
    out.push(Case::new("reduce_sum_u32_axis0", |c| {
        let x = c.input_u32("x", &[9, 5], 0, 1_000_000_000)?;
        // Wraps past 2^32, as 32-bit arithmetic does.
        Ok(vec![c.sum(x, &[0], false)?])
    }));
}

fn reduce_edges(out: &mut Vec<Case>) {
    out.push(Case::new("reduce_sum_f32_long_3x4099", |c| {
        let x = c.input_f32("x", &[3, 4099], -1.0, 1.0)?;
        Ok(vec![c.sum(x, &[1], false)?])
    }));
    out.push(Case::new("reduce_max_f32_long_2x4099", |c| {
        let x = c.input_f32("x", &[2, 4099], -1.0, 1.0)?;
        Ok(vec![c.max(x, &[-1], false)?])
    }));
    out.push(Case::new("reduce_mean_f32_column_1000x3", |c| {
        let x = c.input_f32("x", &[1000, 3], -1.0, 1.0)?;
        Ok(vec![c.mean(x, &[0], true)?])
    }));
    out.push(Case::new("reduce_sum_f32_size1_axis", |c| {
        let x = c.input_f32("x", &[4, 1], -1.0, 1.0)?;
        Ok(vec![c.sum(x, &[1], false)?])
    }));
    out.push(Case::new("reduce_sum_f32_scalar_from_1", |c| {
        let x = c.input_f32("x", &[1], -1.0, 1.0)?;
        Ok(vec![c.sum(x, &[0], false)?])
    }));
    // An empty reduced axis: sum gives 0, max gives NaN (no value), per rlx-cpu.
    out.push(Case::new("reduce_sum_f32_empty_axis", |c| {
        let x = c.input_f32("x", &[3, 0], -1.0, 1.0)?;
        Ok(vec![c.sum(x, &[1], false)?])
    }));
    out.push(Case::new("reduce_max_f32_empty_axis", |c| {
        let x = c.input_f32("x", &[3, 0], -1.0, 1.0)?;
        Ok(vec![c.max(x, &[1], false)?])
    }));
    out.push(Case::new("reduce_sum_f32_empty_output", |c| {
        let x = c.input_f32("x", &[0, 4], -1.0, 1.0)?;
        Ok(vec![c.sum(x, &[1], false)?])
    }));
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
        out.push(Case::new(format!("reduce_{}_f32_nan", op.name()), move |c| {
            // Row 0 has NaNs, row 1 none (NaN must not leak into it).
            let mut v = with_nans(c.uniform(8, -1.0, 1.0), 3);
            v.extend(c.uniform(8, -1.0, 1.0));
            let x = c.input_tensor("x", Tensor::from_f32([2, 8], v)?)?;
            Ok(vec![c.reduce(op, x, &[1], false)?])
        }));
    }
}

fn arg_reduce(out: &mut Vec<Case>) {
    out.push(Case::new("argmax_f32_last_5x37", |c| {
        let x = c.input_f32("x", &[5, 37], -1.0, 1.0)?;
        Ok(vec![c.argmax(x, -1, false)?])
    }));
    out.push(Case::new("argmin_f32_first_37x5", |c| {
        let x = c.input_f32("x", &[37, 5], -1.0, 1.0)?;
        Ok(vec![c.argmin(x, 0, false)?])
    }));
    out.push(Case::new("argmax_f32_middle_keepdim", |c| {
        let x = c.input_f32("x", &[3, 17, 4], -1.0, 1.0)?;
        Ok(vec![c.argmax(x, 1, true)?])
    }));
    out.push(Case::new("argmax_f32_long_2x4099", |c| {
        let x = c.input_f32("x", &[2, 4099], -1.0, 1.0)?;
        Ok(vec![c.argmax(x, 1, false)?])
    }));
    // Over the size-1 axis every index is 0; over the other one it is not.
    out.push(Case::new("argmin_f32_size1_axis", |c| {
        let x = c.input_f32("x", &[4, 1], -1.0, 1.0)?;
        Ok(vec![c.argmin(x, 1, false)?, c.argmin(x, 0, true)?])
    }));
    // Ties give the first index.
    out.push(Case::new("argmax_i32_ties", |c| {
        let x = c.input_i32("x", &[6, 19], -2, 2)?;
        Ok(vec![c.argmax(x, 1, false)?])
    }));
    out.push(Case::new("argmin_i32_ties_axis0", |c| {
        let x = c.input_i32("x", &[19, 6], -2, 2)?;
        Ok(vec![c.argmin(x, 0, false)?])
    }));
    // Long lines go four loads at a time: ties across those groups, a decode step's logits
    // row, and NaNs late in a long row.
    out.push(Case::new("argmax_i32_ties_long_3x5003", |c| {
        let x = c.input_i32("x", &[3, 5003], -2, 2)?;
        Ok(vec![c.argmax(x, 1, false)?, c.argmin(x, 1, false)?])
    }));
    out.push(Case::new("argmax_f32_vocab_row_1x151936", |c| {
        let x = c.input_f32("x", &[1, 151_936], -8.0, 8.0)?;
        Ok(vec![c.argmax(x, 1, false)?])
    }));
    out.push(Case::new("argmax_f32_long_late_nans", |c| {
        let mut v = c.uniform(2 * 9000, -1.0, 1.0);
        v[8000] = f32::NAN;
        v[9000 + 8999] = f32::NAN;
        v[9000 + 7001] = f32::NAN;
        let x = c.input_tensor("x", Tensor::from_f32([2, 9000], v)?)?;
        Ok(vec![c.argmax(x, 1, false)?, c.argmin(x, 1, false)?])
    }));
    // The first NaN wins (PyTorch).
    out.push(Case::new("argmax_f32_nan", |c| {
        let mut v = with_nans(c.uniform(10, -1.0, 1.0), 4);
        v.extend(c.uniform(10, -1.0, 1.0));
        let x = c.input_tensor("x", Tensor::from_f32([2, 10], v)?)?;
        Ok(vec![c.argmax(x, 1, false)?, c.argmin(x, 1, false)?])
    }));
}

fn cumsum(out: &mut Vec<Case>) {
    let layouts: [(&str, &[usize], isize); 6] = [
        ("last_4x37", &[4, 37], -1),
        ("first_37x4", &[37, 4], 0),
        ("middle_3x17x4", &[3, 17, 4], 1),
        ("long_2x2000", &[2, 2000], 1),
        ("size1_axis", &[5, 1], 1),
        ("empty", &[0, 5], 1),
    ];
    for (tag, dims, axis) in layouts {
        out.push(Case::new(format!("cumsum_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.cumsum(x, axis)?])
        }));
    }
    out.push(Case::new("cumsum_i32_5x23", |c| {
        let x = c.input_i32("x", &[5, 23], -1000, 1000)?;
        Ok(vec![c.cumsum(x, 1)?])
    }));
    // NaN poisons the rest of its row only.
    out.push(Case::new("cumsum_f32_nan", |c| {
        let mut v = c.uniform(9, -1.0, 1.0);
        v[4] = f32::NAN;
        v.extend(c.uniform(9, -1.0, 1.0));
        let x = c.input_tensor("x", Tensor::from_f32([2, 9], v)?)?;
        Ok(vec![c.cumsum(x, 1)?])
    }));
}

fn topk(out: &mut Vec<Case>) {
    let layouts: [(&str, &[usize], usize, isize, bool); 7] = [
        ("largest_k3_5x37", &[5, 37], 3, -1, true),
        ("smallest_k4_5x37", &[5, 37], 4, -1, false),
        ("k1_6x11", &[6, 11], 1, 1, true),
        ("full_sort_4x9", &[4, 9], 9, 1, true),
        ("axis0_19x4", &[19, 4], 5, 0, true),
        ("middle_3x17x4", &[3, 17, 4], 6, 1, false),
        ("long_2x1000", &[2, 1000], 10, 1, true),
    ];
    for (tag, dims, k, axis, largest) in layouts {
        out.push(Case::new(format!("topk_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            let (v, i) = c.topk(x, k, axis, largest)?;
            Ok(vec![v, i])
        }));
    }
    // Ties keep the lower index first.
    out.push(Case::new("topk_i32_ties", |c| {
        let x = c.input_i32("x", &[4, 20], -3, 3)?;
        let (v, i) = c.topk(x, 7, 1, true)?;
        Ok(vec![v, i])
    }));
}
