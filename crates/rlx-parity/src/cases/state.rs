//! Device-resident state: `write_rows` into a state (offsets inside, past the end, negative,
//! huge; word dtypes, and f16/bf16 rows of an even count moved as words; both cache layouts'
//! axes). Each case writes this run's rows into a zeroed
//! state, so one run compares.

use crate::Case;
use rlx_ir::{DType, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    writes(out);
    per_block(out);
    narrowing(out);
}

/// f32 rows cast to f16 or bf16 and written into a state of that dtype (a KV cache in f16): a
/// GPU rounds them inside the write, two values a word, bit for bit as the CPU's cast (the
/// rounding, overflow, subnormal and NaN points of the cast table), one offset per block.
fn narrowing(out: &mut Vec<Case>) {
    for dtype in [DType::F16, DType::BF16] {
        out.push(
            Case::new(format!("write_rows_narrow_f32_to_{dtype}"), move |c| {
                let edges = super::cast::f32_edges();
                let w = edges.len();
                let rows: Vec<f32> = (0..2 * 2 * w).map(|i| edges[(i * 7) % w]).collect();
                let rows = c.input_tensor("rows", Tensor::from_f32([2, 2, w], rows)?)?;
                let state = c.state("s", &[2, 5, w], dtype)?;
                let offset = c.input_tensor("offset", Tensor::from_i32([2], vec![3, -1])?)?;
                let narrow = c.cast(rows, dtype)?;
                Ok(vec![c.write_rows(state, narrow, offset, 1)?])
            })
            .exact(),
        );
    }
}

fn writes(out: &mut Vec<Case>) {
    // (tag, state dims, rows along axis, axis, offset, dtype)
    type W = (&'static str, [usize; 3], usize, usize, i32, DType);
    let list: [W; 10] = [
        ("middle_f32", [2, 7, 3], 3, 1, 2, DType::F32),
        ("past_end_f32", [2, 7, 3], 4, 1, 5, DType::F32),
        ("negative_f32", [2, 7, 3], 3, 1, -1, DType::F32),
        ("huge_offset_i32", [2, 7, 3], 2, 1, i32::MAX, DType::I32),
        ("axis0_u32", [5, 2, 3], 2, 0, 3, DType::U32),
        ("axis2_full_f32", [2, 3, 4], 4, 2, 0, DType::F32),
        ("one_row_bool", [1, 9, 2], 1, 1, 8, DType::Bool),
        // Rows of an even count of halves move as words (a KV cache in f16), inside and past
        // the end; an odd count is refused on a GPU rather than written to a widened copy.
        ("middle_f16", [2, 7, 4], 3, 1, 2, DType::F16),
        ("past_end_axis0_bf16", [5, 2, 6], 2, 0, 4, DType::BF16),
        ("huge_offset_f16", [2, 7, 2], 2, 1, i32::MAX, DType::F16),
    ];
    for (tag, sd, n, axis, at, dtype) in list {
        out.push(Case::new(format!("write_rows_{tag}"), move |c| {
            let state = c.state("s", &sd, dtype)?;
            let mut rd = sd;
            rd[axis] = n;
            let rows = c.input_of("rows", &rd, dtype)?;
            let offset = c.input_tensor("offset", Tensor::from_i32([1], vec![at])?)?;
            Ok(vec![c.write_rows(state, rows, offset, axis as isize)?])
        }));
    }
}

/// One offset per outer block (a batched cache, one offset per sequence): each block's rows land
/// at its own offset, inside, negative, past the end or at the extremes of i32.
fn per_block(out: &mut Vec<Case>) {
    // (tag, state dims, rows along axis, axis, offsets, dtype)
    type W = (&'static str, &'static [usize], usize, usize, &'static [i32], DType);
    let list: [W; 4] = [
        ("per_block_f32", &[3, 7, 2], 2, 1, &[2, -1, 6], DType::F32),
        ("per_block_cache_f32", &[2, 5, 3, 2], 1, 1, &[4, 0], DType::F32),
        ("per_block_axis2_i32", &[2, 3, 5, 2], 2, 2, &[0, 1, 3, 4, i32::MAX, i32::MIN], DType::I32),
        ("per_block_prime_u32", &[5, 11, 3], 3, 1, &[0, 8, 10, -2, 5], DType::U32),
    ];
    for (tag, sd, n, axis, at, dtype) in list {
        out.push(Case::new(format!("write_rows_{tag}"), move |c| {
            let state = c.state("s", sd, dtype)?;
            let mut rd = sd.to_vec();
            rd[axis] = n;
            let rows = c.input_of("rows", &rd, dtype)?;
            let offset = c.input_tensor("offset", Tensor::from_i32([at.len()], at.to_vec())?)?;
            Ok(vec![c.write_rows(state, rows, offset, axis as isize)?])
        }));
    }
}
