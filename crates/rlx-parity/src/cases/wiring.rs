//! Graph-level edges that no single op shows: outputs that are leaves, views or duplicates,
//! constants that must reach the device, unused inputs, one buffer bound twice, and long
//! chains where the memory planner reuses storage.

use crate::{Case, CaseCtx};
use rlx_ir::{DType, IrError, NodeId, Tensor};
use rlx_runtime::PassOptions;

pub(super) fn cases(out: &mut Vec<Case>) {
    leaves_as_outputs(out);
    constants(out);
    memory(out);
}

fn leaves_as_outputs(out: &mut Vec<Case>) {
    out.push(Case::new("wiring_input_is_output", |c| {
        let x = c.input_f32("x", &[3, 5], -1.0, 1.0)?;
        Ok(vec![x])
    }));
    out.push(Case::new("wiring_param_is_output", |c| {
        let w = c.param_f32("w", &[4, 2], -1.0, 1.0)?;
        let x = c.input_f32("x", &[4, 2], -1.0, 1.0)?;
        Ok(vec![c.add(x, w)?, w])
    }));
    out.push(Case::new("wiring_i32_input_is_output", |c| {
        let x = c.input_i32("x", &[6], -9, 9)?;
        let n = c.neg(x)?;
        Ok(vec![n, x])
    }));
    out.push(Case::new("wiring_same_output_twice", |c| {
        let x = c.input_f32("x", &[2, 7], -1.0, 1.0)?;
        let y = c.tanh(x)?;
        Ok(vec![y, y])
    }));
    out.push(Case::new("wiring_output_and_its_reshape", |c| {
        let x = c.input_f32("x", &[4, 6], -1.0, 1.0)?;
        let y = c.exp(x)?;
        let r = c.reshape(y, &[2, 12])?;
        Ok(vec![y, r])
    }));
    out.push(Case::new("wiring_one_buffer_bound_twice", |c| {
        let x = c.input_f32("x", &[5, 9], -1.0, 1.0)?;
        let sq = c.mul(x, x)?;
        let m = c.matmul_t(x, x, false, true)?;
        Ok(vec![sq, m])
    }));
    out.push(Case::new("wiring_unused_input", |c| {
        let x = c.input_f32("x", &[3, 4], -1.0, 1.0)?;
        let _unused = c.input_f32("unused", &[7], -1.0, 1.0)?;
        Ok(vec![c.sigmoid(x)?])
    }));
    out.push(Case::new("wiring_unused_param", |c| {
        let x = c.input_f32("x", &[3, 4], -1.0, 1.0)?;
        let _unused = c.param_f32("unused", &[2, 2], -1.0, 1.0)?;
        Ok(vec![c.relu(x)?])
    }));
}

fn constants(out: &mut Vec<Case>) {
    out.push(Case::new("wiring_constant_tensor_operand", |c| {
        let x = c.input_f32("x", &[4, 13], -1.0, 1.0)?;
        let v = c.uniform(13, -2.0, 2.0);
        let k = c.constant_f32(&[13], v)?;
        Ok(vec![c.mul(x, k)?])
    }));
    out.push(Case::new("wiring_constant_indices", |c| {
        let table = c.input_f32("table", &[6, 4], -1.0, 1.0)?;
        let ids = c.constant(Tensor::from_i32([5], vec![5, 0, 2, 2, 4])?)?;
        Ok(vec![c.embedding(table, ids)?])
    }));
    out.push(Case::new("wiring_constant_bool_mask", |c| {
        let x = c.input_f32("x", &[2, 5], -1.0, 1.0)?;
        let m = c.constant(Tensor::from_bool([5], vec![true, false, false, true, true])?)?;
        let z = c.full(&[], DType::F32, -3.0)?;
        Ok(vec![c.where_(m, x, z)?])
    }));
    // A subgraph of constants only: folded on the host, its result must reach the device.
    out.push(Case::new("wiring_folded_constant_subgraph", |c| {
        let x = c.input_f32("x", &[3, 8], -1.0, 1.0)?;
        let v = c.uniform(8, 0.5, 2.0);
        let k = c.constant_f32(&[8], v)?;
        let k = c.log(k)?;
        let k = c.exp(k)?;
        let k = c.sqrt(k)?;
        Ok(vec![c.add(x, k)?])
    }));
    out.push(Case::new("wiring_constant_is_output", |c| {
        let x = c.input_f32("x", &[2], -1.0, 1.0)?;
        let k = c.constant_f32(&[2, 2], vec![1.5, -2.0, 0.25, 4.0])?;
        Ok(vec![c.neg(x)?, k])
    }));
}

/// A ladder of ops of varying sizes whose intermediates die at different times, so the planner
/// reuses freed storage: a wrong reuse overwrites a value still to be read.
fn ladder(c: &mut CaseCtx) -> Result<Vec<NodeId>, IrError> {
    let x = c.input_f32("x", &[6, 10], -1.0, 1.0)?;
    let w = c.param_f32("w", &[10, 10], -0.4, 0.4)?;
    let one = c.scalar(1.0)?;
    let mut keep = Vec::new();
    let mut h = x;
    for i in 0..6 {
        let m = c.matmul(h, w)?;
        let t = if i % 2 == 0 { c.tanh(m)? } else { c.sin(m)? };
        let wide = c.concat(&[t, h], 1)?;
        // 1 + a sum of squares: a divisor far from zero keeps the ladder well conditioned.
        let sq = c.square(wide)?;
        let s = c.sum(sq, &[1], true)?;
        let s = c.add(s, one)?;
        let n = c.div(t, s)?;
        h = c.add(n, h)?;
        if i % 3 == 1 {
            keep.push(s);
        }
    }
    let r = c.reshape(h, &[60])?;
    let r = c.reverse(r, &[0])?;
    keep.push(r);
    Ok(keep)
}

fn memory(out: &mut Vec<Case>) {
    out.push(Case::new("wiring_memory_reuse_ladder", ladder));
    out.push(Case::new("wiring_memory_reuse_ladder_unfused", ladder).with_passes(PassOptions::none()));
    // A value read again long after many others came and went.
    out.push(Case::new("wiring_long_lived_value", |c| {
        let x = c.input_f32("x", &[8, 8], -1.0, 1.0)?;
        let early = c.exp(x)?;
        let mut h = x;
        for _ in 0..8 {
            let p = c.permute(h, &[1, 0])?;
            h = c.sin(p)?;
        }
        Ok(vec![c.add(h, early)?])
    }));
}
