//! Launch-shape edges: more rows than the 65 535 workgroups Vulkan allows per grid dimension
//! (row kernels launch a workgroup per row, matmul a grid layer per batch) and more elements
//! than 65 535 workgroups of 256 threads cover, so every family's 2-D grid path runs.
//!
//! The costliest cases of the table live here: on lavapipe the 16.8 M-element ones and the
//! softmax / norm ones (a 256-thread workgroup per row) take seconds each, about 40 s together
//! on two shared cores; everything else in the table takes about 10 s.

use super::attention::{dims, qkv};
use crate::Case;
use rlx_ir::{AttentionSpec, AttnLayout, DType, MaskKind, RopeStyle};

/// Just past the per-dimension workgroup limit.
const ROWS: usize = 70_001;
/// Just past 65 535 × 256 elements.
const ELEMS: usize = 16_777_217 + 255;

pub(super) fn cases(out: &mut Vec<Case>) {
    out.push(Case::new("grid_argmax_rows", |c| {
        let x = c.input_f32("x", &[ROWS, 3], -1.0, 1.0)?;
        Ok(vec![c.argmax(x, 1, false)?])
    }));
    out.push(Case::new("grid_cumsum_rows", |c| {
        let x = c.input_f32("x", &[ROWS, 3], -1.0, 1.0)?;
        Ok(vec![c.cumsum(x, 1)?])
    }));
    out.push(Case::new("grid_topk_rows", |c| {
        let x = c.input_f32("x", &[ROWS, 4], -1.0, 1.0)?;
        let (v, i) = c.topk(x, 2, 1, true)?;
        Ok(vec![v, i])
    }));
    out.push(Case::new("grid_reduce_sum_rows", |c| {
        let x = c.input_f32("x", &[ROWS, 3], -1.0, 1.0)?;
        Ok(vec![c.sum(x, &[1], false)?])
    }));
    out.push(Case::new("grid_matmul_batches", |c| {
        let a = c.input_f32("a", &[ROWS, 1, 2], -1.0, 1.0)?;
        let b = c.input_f32("b", &[ROWS, 2, 3], -1.0, 1.0)?;
        Ok(vec![c.matmul(a, b)?])
    }));
    out.push(Case::new("grid_attention_batches", |c| {
        let [q, k, v] = qkv(c, rlx_ir::AttnLayout::Bhsd, dims(ROWS, 1, 2, 1, 1, 4), 1.0)?;
        let spec = AttentionSpec::new(AttnLayout::Bhsd, MaskKind::Causal);
        Ok(vec![c.attention(q, k, v, None, spec)?])
    }));
    out.push(Case::new("grid_rope_rows", |c| {
        let x = c.input_f32("x", &[ROWS, 1, 1, 4], -1.0, 1.0)?;
        let (cos, sin) = super::rope::rope_tables(3, 1, 4)?;
        let cos = c.input_tensor("cos", cos)?;
        let sin = c.input_tensor("sin", sin)?;
        Ok(vec![c.rope(x, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, 4)?])
    }));
    out.push(Case::new("grid_gather_rows", |c| {
        let table = c.input_f32("table", &[5, 3], -1.0, 1.0)?;
        let ids = c.input_i32("ids", &[ROWS], 0, 4)?;
        Ok(vec![c.embedding(table, ids)?])
    }));
    out.push(Case::new("grid_unary_neg_f32_16m", |c| {
        let x = c.input_f32("x", &[ELEMS], -1.0, 1.0)?;
        Ok(vec![c.neg(x)?])
    }));
    out.push(Case::new("grid_softmax_rows", |c| {
        let x = c.input_f32("x", &[ROWS, 3], -2.0, 2.0)?;
        Ok(vec![c.softmax(x, -1)?])
    }));
    out.push(Case::new("grid_rms_norm_rows", |c| {
        let x = c.input_f32("x", &[ROWS, 4], -2.0, 2.0)?;
        Ok(vec![c.rms_norm(x, None, -1, 1e-6)?])
    }));
    out.push(Case::new("grid_fused_chain_f32_16m", |c| {
        let x = c.input_f32("x", &[ELEMS], -1.0, 1.0)?;
        let b = c.input_f32("b", &[1], -1.0, 1.0)?;
        let y = c.mul(x, b)?;
        let y = c.add(y, x)?;
        Ok(vec![c.relu(y)?])
    }));
    out.push(Case::new("grid_layer_norm_rows", |c| {
        let x = c.input_f32("x", &[ROWS, 4], -2.0, 2.0)?;
        Ok(vec![c.layer_norm(x, None, None, -1, 1e-5)?])
    }));
    // Compare, neg, where and cast over more than 65 535 × 256 elements: each kernel rebuilds
    // the linear id from a 2-D grid.
    out.push(Case::new("grid_where_cast_f32_16m", |c| {
        let x = c.input_f32("x", &[ELEMS], -1000.0, 1000.0)?;
        let zero = c.scalar(0.0)?;
        let pos = c.gt(x, zero)?;
        let n = c.neg(x)?;
        let y = c.where_(pos, x, n)?;
        Ok(vec![y, c.cast(y, DType::I32)?])
    }));
    // Rows of 129 take a whole workgroup each, so 65 537 of them need a 2-D grid whose last
    // row has padding groups to skip.
    out.push(Case::new("grid_argmax_wide_rows_65537x129", |c| {
        let x = c.input_f32("x", &[65_537, 129], -1.0, 1.0)?;
        Ok(vec![c.argmax(x, 1, false)?])
    }));
}
