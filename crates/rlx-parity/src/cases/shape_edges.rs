//! Data-movement edges: every dtype (the 2- and 1-byte ones too) through permute (up to rank
//! 8), slice, expand (to an empty result too), reverse, pad (the pad value converted to the
//! dtype), concat (with empty parts) and gather (from an empty table, with no indices), plus a
//! chain of views feeding copies.

use super::elementwise_edges::with_specials;
use crate::Case;
use rlx_ir::{DType, Tensor};

/// Every dtype: f16, bf16 and u8 move through the casts GPUs wrap data movement in.
const DTYPES: [DType; 7] = DType::ALL;

pub(super) fn cases(out: &mut Vec<Case>) {
    for dtype in DTYPES {
        per_dtype(out, dtype);
    }
    empties(out);
    out.push(Case::new("movement_chain_of_views", |c| {
        let v = with_specials(c.uniform(120, -3.0, 3.0));
        let x = c.input_tensor("x", Tensor::from_f32([4, 6, 5], v)?)?;
        let t = c.permute(x, &[2, 0, 1])?;
        let r = c.reshape(t, &[5, 24])?;
        let s = c.slice(r, 1, 3, 24, 2)?;
        let v = c.reverse(s, &[0])?;
        let p = c.pad(v, &[(1, 1), (0, 2)], -1.0)?;
        let back = c.reshape(p, &[7 * 13])?;
        Ok(vec![back, r])
    }));
}

fn per_dtype(out: &mut Vec<Case>, dtype: DType) {
    out.push(Case::new(format!("permute_{dtype}_8d"), move |c| {
        let x = c.input_of("x", &[2, 2, 3, 2, 2, 3, 2, 2], dtype)?;
        Ok(vec![c.permute(x, &[7, 5, 3, 1, 6, 4, 2, 0])?])
    }));
    out.push(Case::new(format!("permute_{dtype}_size1_dims_4d"), move |c| {
        let x = c.input_of("x", &[1, 4, 1, 3], dtype)?;
        Ok(vec![c.permute(x, &[2, 3, 0, 1])?])
    }));
    out.push(Case::new(format!("slice_{dtype}_steps"), move |c| {
        let x = c.input_of("x", &[4, 11, 3], dtype)?;
        Ok(vec![c.slice(x, 1, 2, 11, 3)?, c.slice(x, 1, 10, 11, 4)?, c.slice(x, 0, 1, 4, 2)?])
    }));
    out.push(Case::new(format!("expand_{dtype}_two_new_dims"), move |c| {
        let x = c.input_of("x", &[2, 1, 3], dtype)?;
        Ok(vec![c.expand(x, &[5, 2, 4, 3])?])
    }));
    out.push(Case::new(format!("reverse_{dtype}_all_axes"), move |c| {
        let x = c.input_of("x", &[2, 1, 3], dtype)?;
        Ok(vec![c.reverse(x, &[0, 1, 2])?, c.reverse(x, &[-1])?])
    }));
    // The pad value as the dtype takes it: 1.5 → 1 (or true), −2.75 → −2 / 0, 1e12 saturates.
    for (tag, value) in [("frac", 1.5), ("neg_frac", -2.75), ("huge", 1e12)] {
        out.push(Case::new(format!("pad_{dtype}_value_{tag}"), move |c| {
            let x = c.input_of("x", &[2, 1, 3], dtype)?;
            Ok(vec![c.pad(x, &[(0, 0), (2, 2), (1, 0)], value)?])
        }));
    }
    out.push(Case::new(format!("concat_{dtype}_with_empty_parts"), move |c| {
        let a = c.input_of("a", &[2, 0, 3], dtype)?;
        let b = c.input_of("b", &[2, 2, 3], dtype)?;
        let e = c.input_of("e", &[2, 0, 3], dtype)?;
        let d = c.input_of("d", &[2, 1, 3], dtype)?;
        Ok(vec![c.concat(&[a, b, e, d], 1)?])
    }));
    out.push(Case::new(format!("gather_{dtype}_out_of_range_axis1"), move |c| {
        let x = c.input_of("x", &[2, 7, 3], dtype)?;
        let ids = c.input_tensor("ids", Tensor::from_i32([3], vec![6, i32::MIN, 0])?)?;
        Ok(vec![c.gather(x, ids, 1)?])
    }));
}

fn empties(out: &mut Vec<Case>) {
    out.push(Case::new("expand_f32_to_empty", |c| {
        let x = c.input_f32("x", &[1], -1.0, 1.0)?;
        Ok(vec![c.expand(x, &[0, 3])?])
    }));
    // Every index is out of range of an empty table: zeros.
    out.push(Case::new("gather_f32_from_empty_table", |c| {
        let x = c.input_f32("x", &[0, 3], -1.0, 1.0)?;
        let ids = c.input_tensor("ids", Tensor::from_i32([2], vec![0, 1])?)?;
        let g = c.gather(x, ids, 0)?;
        // Plus one so the reference is not all zeros.
        let one = c.scalar(1.0)?;
        Ok(vec![c.add(g, one)?])
    }));
    out.push(Case::new("gather_f32_no_indices_empty", |c| {
        let x = c.input_f32("x", &[2, 3], -1.0, 1.0)?;
        let ids = c.input_tensor("ids", Tensor::from_i32([0], vec![])?)?;
        Ok(vec![c.gather(x, ids, 1)?])
    }));
    out.push(Case::new("pad_f32_no_padding", |c| {
        let x = c.input_f32("x", &[5], -1.0, 1.0)?;
        Ok(vec![c.pad(x, &[(0, 0)], 0.0)?])
    }));
}
