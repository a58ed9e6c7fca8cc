//! Device-resident state: `write_rows` into a state (offsets inside, past the end, negative,
//! huge; word dtypes; both cache layouts' axes). Each case writes this run's rows into a zeroed
//! state, so one run compares.

use crate::Case;
use rlx_ir::{DType, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    writes(out);
}

fn writes(out: &mut Vec<Case>) {
    // (tag, state dims, rows along axis, axis, offset, dtype)
    type W = (&'static str, [usize; 3], usize, usize, i32, DType);
    let list: [W; 7] = [
        ("middle_f32", [2, 7, 3], 3, 1, 2, DType::F32),
        ("past_end_f32", [2, 7, 3], 4, 1, 5, DType::F32),
        ("negative_f32", [2, 7, 3], 3, 1, -1, DType::F32),
        ("huge_offset_i32", [2, 7, 3], 2, 1, i32::MAX, DType::I32),
        ("axis0_u32", [5, 2, 3], 2, 0, 3, DType::U32),
        ("axis2_full_f32", [2, 3, 4], 4, 2, 0, DType::F32),
        ("one_row_bool", [1, 9, 2], 1, 1, 8, DType::Bool),
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
