//! Data movement: reshape, permute, slice, concat, expand, gather, pad, reverse.

use crate::Case;
use rlx_ir::{DType, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    reshape_permute(out);
    slice_concat(out);
    expand_gather(out);
    pad_reverse(out);
}

fn reshape_permute(out: &mut Vec<Case>) {
    // A reshape of an input straight to an output: a view whose storage is the input's.
    out.push(Case::new("reshape_f32_input_to_output", |c| {
        let x = c.input_f32("x", &[2, 3, 4], -1.0, 1.0)?;
        Ok(vec![c.reshape(x, &[6, 4])?])
    }));
    out.push(Case::new("reshape_f32_between_ops", |c| {
        let x = c.input_f32("x", &[4, 6], -1.0, 1.0)?;
        let y = c.input_f32("y", &[12], -1.0, 1.0)?;
        let e = c.exp(x)?;
        let r = c.reshape(e, &[2, 12])?;
        Ok(vec![c.add(r, y)?])
    }));
    out.push(Case::new("reshape_f32_to_scalar", |c| {
        let x = c.input_f32("x", &[1, 1], -1.0, 1.0)?;
        let n = c.neg(x)?;
        Ok(vec![c.reshape(n, &[])?])
    }));
    out.push(Case::new("reshape_i32", |c| {
        let x = c.input_i32("x", &[3, 4], -9, 9)?;
        let a = c.abs(x)?;
        Ok(vec![c.reshape(a, &[2, 2, 3])?])
    }));
    let perms: [(&str, &[usize], &[usize]); 6] = [
        ("2d_7x13", &[7, 13], &[1, 0]),
        ("2d_65x130", &[65, 130], &[1, 0]),
        ("3d_201", &[3, 5, 7], &[2, 0, 1]),
        ("4d_0213", &[2, 3, 5, 4], &[0, 2, 1, 3]),
        ("5d", &[2, 1, 3, 2, 5], &[4, 2, 0, 3, 1]),
        ("size1_dims", &[1, 7, 1], &[2, 0, 1]),
    ];
    for (tag, dims, perm) in perms {
        out.push(Case::new(format!("permute_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.permute(x, perm)?])
        }));
    }
    for dtype in [DType::I32, DType::Bool] {
        out.push(Case::new(format!("permute_{dtype}_3d"), move |c| {
            let x = c.input_of("x", &[3, 4, 5], dtype)?;
            Ok(vec![c.permute(x, &[1, 2, 0])?])
        }));
    }
}

fn slice_concat(out: &mut Vec<Case>) {
    // (tag, dims, axis, start, end, step)
    type Slice = (&'static str, &'static [usize], isize, usize, usize, usize);
    let slices: [Slice; 6] = [
        ("axis0_2to7", &[10, 4], 0, 2, 7, 1),
        ("last_step3", &[4, 20], -1, 1, 20, 3),
        ("middle_step2", &[3, 11, 4], 1, 0, 11, 2),
        ("full_range", &[5, 3], 0, 0, 5, 1),
        ("single_element", &[6, 7], 1, 4, 5, 1),
        ("empty_result", &[5, 6], 1, 3, 3, 1),
    ];
    for (tag, dims, axis, start, end, step) in slices {
        out.push(Case::new(format!("slice_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.slice(x, axis, start, end, step)?])
        }));
    }
    out.push(Case::new("slice_i32_step2", |c| {
        let x = c.input_i32("x", &[4, 9], -50, 50)?;
        Ok(vec![c.slice(x, 1, 1, 9, 2)?])
    }));
    out.push(Case::new("slice_then_compute", |c| {
        let x = c.input_f32("x", &[6, 10], -1.0, 1.0)?;
        let a = c.narrow(x, 1, 0, 5)?;
        let b = c.narrow(x, 1, 5, 5)?;
        let s = c.sigmoid(b)?;
        Ok(vec![c.mul(a, s)?])
    }));

    let concats: [(&str, &[&[usize]], isize); 5] = [
        ("axis0", &[&[2, 5], &[3, 5]], 0),
        ("last_three", &[&[4, 2], &[4, 7], &[4, 1]], -1),
        ("middle", &[&[2, 3, 4], &[2, 5, 4]], 1),
        ("with_empty_part", &[&[3, 0], &[3, 4], &[3, 0]], 1),
        ("single", &[&[4, 5]], 0),
    ];
    for (tag, parts, axis) in concats {
        out.push(Case::new(format!("concat_f32_{tag}"), move |c| {
            let ids = parts
                .iter()
                .enumerate()
                .map(|(i, d)| c.input_f32(&format!("x{i}"), d, -1.0, 1.0))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(vec![c.concat(&ids, axis)?])
        }));
    }
    out.push(Case::new("concat_f32_same_input_twice", |c| {
        let x = c.input_f32("x", &[3, 4], -1.0, 1.0)?;
        Ok(vec![c.concat(&[x, x], 0)?])
    }));
    for dtype in [DType::I32, DType::Bool] {
        out.push(Case::new(format!("concat_{dtype}_axis1"), move |c| {
            let a = c.input_of("a", &[3, 2], dtype)?;
            let b = c.input_of("b", &[3, 5], dtype)?;
            Ok(vec![c.concat(&[a, b], 1)?])
        }));
    }
}

fn expand_gather(out: &mut Vec<Case>) {
    let expands: [(&str, &[usize], &[usize]); 4] = [
        ("col", &[3, 1], &[3, 5]),
        ("1d_to_3d", &[4], &[2, 3, 4]),
        ("scalar", &[], &[4, 2]),
        ("middle", &[2, 1, 3], &[2, 4, 3]),
    ];
    for (tag, from, to) in expands {
        out.push(Case::new(format!("expand_f32_{tag}"), move |c| {
            let x = c.input_f32("x", from, -1.0, 1.0)?;
            Ok(vec![c.expand(x, to)?])
        }));
    }
    for dtype in [DType::I32, DType::Bool] {
        out.push(Case::new(format!("expand_{dtype}"), move |c| {
            let x = c.input_of("x", &[1, 5], dtype)?;
            Ok(vec![c.expand(x, &[3, 5])?])
        }));
    }

    out.push(Case::new("gather_embedding_11x6", |c| {
        let table = c.param_f32("table", &[11, 6], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[2, 5], 0, 10)?;
        Ok(vec![c.embedding(table, ids)?])
    }));
    out.push(Case::new("gather_axis1_2d_indices", |c| {
        let x = c.input_f32("x", &[4, 9, 3], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[2, 2], 0, 8)?;
        Ok(vec![c.gather(x, ids, 1)?])
    }));
    out.push(Case::new("gather_last_axis", |c| {
        let x = c.input_f32("x", &[5, 8], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[3], 0, 7)?;
        Ok(vec![c.gather(x, ids, -1)?])
    }));
    out.push(Case::new("gather_scalar_index", |c| {
        let x = c.input_f32("x", &[5, 8], -1.0, 1.0)?;
        let ids = c.input_tensor("ids", Tensor::from_i32([], vec![3])?)?;
        Ok(vec![c.gather(x, ids, 0)?])
    }));
    // Out-of-range indices (negative or ≥ the dim) give zeros, never a crash.
    out.push(Case::new("gather_out_of_range_zeros", |c| {
        let table = c.input_f32("table", &[7, 4], 1.0, 2.0)?;
        let ids = c.input_tensor("ids", Tensor::from_i32([6], vec![0, -1, 6, 7, 100, i32::MIN])?)?;
        Ok(vec![c.embedding(table, ids)?])
    }));
    out.push(Case::new("index_select_axis0", |c| {
        let x = c.input_f32("x", &[7, 5], -1.0, 1.0)?;
        let ids = c.input_tensor("ids", Tensor::from_i32([4], vec![6, 0, 0, 3])?)?;
        Ok(vec![c.index_select(x, 0, ids)?])
    }));
    for dtype in [DType::I32, DType::Bool] {
        out.push(Case::new(format!("gather_{dtype}_data"), move |c| {
            let x = c.input_of("x", &[6, 3], dtype)?;
            let ids = c.input_i32("ids", &[4], 0, 5)?;
            Ok(vec![c.gather(x, ids, 0)?])
        }));
    }
}

fn pad_reverse(out: &mut Vec<Case>) {
    out.push(Case::new("pad_f32_2d_both_sides", |c| {
        let x = c.input_f32("x", &[3, 4], -1.0, 1.0)?;
        Ok(vec![c.pad(x, &[(1, 2), (0, 3)], 0.0)?])
    }));
    out.push(Case::new("pad_f32_3d_value", |c| {
        let x = c.input_f32("x", &[2, 3, 4], -1.0, 1.0)?;
        Ok(vec![c.pad(x, &[(0, 0), (2, 1), (1, 1)], -1.5)?])
    }));
    out.push(Case::new("pad_f32_nan_value", |c| {
        let x = c.input_f32("x", &[2, 3], -1.0, 1.0)?;
        Ok(vec![c.pad(x, &[(1, 0), (0, 1)], f64::NAN)?])
    }));
    out.push(Case::new("pad_f32_empty_input", |c| {
        let x = c.input_f32("x", &[0, 3], -1.0, 1.0)?;
        Ok(vec![c.pad(x, &[(1, 1), (0, 0)], 2.5)?])
    }));
    out.push(Case::new("pad_i32_value", |c| {
        let x = c.input_i32("x", &[3, 5], -9, 9)?;
        Ok(vec![c.pad(x, &[(2, 0), (1, 1)], 7.0)?])
    }));
    let reverses: [(&str, &[usize], &[isize]); 3] =
        [("last", &[4, 9], &[-1]), ("axes01", &[3, 5, 2], &[0, 1]), ("all", &[2, 3, 4], &[0, 1, 2])];
    for (tag, dims, axes) in reverses {
        out.push(Case::new(format!("reverse_f32_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.reverse(x, axes)?])
        }));
    }
    for dtype in [DType::I32, DType::Bool] {
        out.push(Case::new(format!("reverse_{dtype}"), move |c| {
            let x = c.input_of("x", &[4, 6], dtype)?;
            Ok(vec![c.reverse(x, &[1])?])
        }));
    }
}
