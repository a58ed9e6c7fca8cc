//! Scatter-add (`Op::ScatterAdd`, the transpose of gather and the embedding gradient): many
//! repeated ids, ids out of range on both sides, axis 0 and a middle axis, ids of rank 0 and
//! 2, rows wider than a workgroup, one row hit across many id chunks, an id count that is
//! no multiple of the workgroup size, rows of several lane blocks, an f16 source, no ids at
//! all, and a scatter-add feeding further ops. The devices sum in the order the CPU does (increasing index, in f32), so they
//! match it up to f32 rounding at most (the default tolerance); `rlx-parity`'s
//! `scatter_add_determinism` test checks that a device gives the same bits run to run.

use crate::Case;
use rlx_ir::{DType, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    // (tag, src dims, ids dims, axis, len, id range [lo, hi]): ids outside [0, len) add nothing.
    type Scatter = (&'static str, &'static [usize], &'static [usize], isize, usize, (i32, i32));
    let shapes: [Scatter; 7] = [
        // An embedding gradient with many repeats: 4096 ids over 50 rows of 96.
        ("embedding_v50_n4096_q96", &[4096, 96], &[4096], 0, 50, (0, 49)),
        // A batch of token ids (rank 2) with a few out of range, negative and ≥ V.
        ("ids_rank2_v37_2x33_q24", &[2, 33, 24], &[2, 33], 0, 37, (-3, 40)),
        ("axis1_5x11x7_v6", &[5, 11, 7], &[11], 1, 6, (-2, 7)),
        ("axis_last_3x4x19_v9", &[3, 4, 19], &[19], -1, 9, (0, 8)),
        // Rows of 384 (BERT-base width / 2): a workgroup spans one output row.
        ("wide_rows_v100_n300_q384", &[300, 384], &[300], 0, 100, (0, 99)),
        ("single_row_v1_n64_q5", &[64, 5], &[64], 0, 1, (0, 0)),
        ("few_ids_into_big_table_v1000_n3_q8", &[3, 8], &[3], 0, 1000, (0, 999)),
    ];
    for (tag, dims, id_dims, axis, len, (lo, hi)) in shapes {
        out.push(Case::new(format!("scatter_add_f32_{tag}"), move |c| {
            let ids = c.input_i32("ids", id_dims, lo, hi)?;
            let src = c.input_f32("src", dims, -1.0, 1.0)?;
            Ok(vec![c.scatter_add(ids, src, axis, len)?])
        }));
    }
    // One row hit many times across the kernel's 256-id chunks: 1000 ids, all 3 but every
    // seventh −1, so row 3 sums 857 terms from every chunk (the last one partial) in order.
    out.push(Case::new("scatter_add_f32_one_row_hit_across_chunks_v5_n1000_q40", |c| {
        let ids: Vec<i32> = (0..1000).map(|i| if i % 7 == 0 { -1 } else { 3 }).collect();
        let ids = c.input_tensor("ids", Tensor::from_i32([1000], ids)?)?;
        let src = c.input_f32("src", &[1000, 40], -1.0, 1.0)?;
        Ok(vec![c.scatter_add(ids, src, 0, 5)?])
    }));
    // An id count that is no multiple of the workgroup size (2·256 + 77), and rows of
    // 3·700 = 2100 lanes (a middle axis), more than one workgroup's 1024.
    out.push(Case::new("scatter_add_f32_ragged_ids_and_lane_blocks_3x589x700_v13", |c| {
        let ids = c.input_i32("ids", &[589], -1, 13)?;
        let src = c.input_f32("src", &[3, 589, 700], -1.0, 1.0)?;
        Ok(vec![c.scatter_add(ids, src, 1, 13)?])
    }));
    out.push(Case::new("scatter_add_f32_rank0_id_2x3_v4", |c| {
        let id = c.input_tensor("id", Tensor::from_i32([], vec![2])?)?;
        let src = c.input_f32("src", &[2, 3], -1.0, 1.0)?;
        Ok(vec![c.scatter_add(id, src, 1, 4)?])
    }));
    // No ids (an empty source): every row is +0.0 ("empty": its reference is zeros by design).
    out.push(Case::new("scatter_add_f32_empty_ids_v5_q3", |c| {
        let ids = c.input_i32("ids", &[0], 0, 4)?;
        let src = c.input_f32("src", &[0, 3], -1.0, 1.0)?;
        Ok(vec![c.scatter_add(ids, src, 0, 5)?])
    }));
    // An f16 source: GPUs widen it to f32 around the op (the sums are f32 on every device),
    // rounding the result once, as the CPU does.
    out.push(Case::new("scatter_add_f16_v40_n200_q10", |c| {
        let ids = c.input_i32("ids", &[200], -1, 40)?;
        let src = c.input_of("src", &[200, 10], DType::F16)?;
        Ok(vec![c.scatter_add(ids, src, 0, 40)?])
    }));
    // The scatter-add feeding further ops, and the same ids used twice.
    out.push(Case::new("scatter_add_f32_then_compute_v12_n30_q16", |c| {
        let ids = c.input_i32("ids", &[30], 0, 11)?;
        let a = c.input_f32("a", &[30, 16], -1.0, 1.0)?;
        let b = c.input_f32("b", &[30, 16], -1.0, 1.0)?;
        let sa = c.scatter_add(ids, a, 0, 12)?;
        let sb = c.scatter_add(ids, b, 0, 12)?;
        let m = c.mul(sa, sb)?;
        Ok(vec![c.tanh(m)?, sa])
    }));
}
