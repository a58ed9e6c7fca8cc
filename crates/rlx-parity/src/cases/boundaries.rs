//! Sizes at kernel boundaries: rows just past a workgroup (255, 257, 513), matmul sizes around
//! tile edges (63, 64, 65) and long K, and ranks beyond the usual four (7 and 8 dims), which a
//! kernel's fixed-size params could cap.

use super::attention::{dims, qkv};
use crate::Case;
use rlx_ir::{DType, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    rows(out);
    tiles(out);
    ranks(out);
}

fn rows(out: &mut Vec<Case>) {
    out.push(Case::new("edge_softmax_row_257", |c| {
        let x = c.input_f32("x", &[3, 257], -3.0, 3.0)?;
        Ok(vec![c.softmax(x, -1)?])
    }));
    out.push(Case::new("edge_log_softmax_row_255", |c| {
        let x = c.input_f32("x", &[3, 255], -3.0, 3.0)?;
        Ok(vec![c.log_softmax(x, -1)?])
    }));
    out.push(Case::new("edge_layer_norm_row_255", |c| {
        let x = c.input_f32("x", &[3, 255], -1.0, 3.0)?;
        Ok(vec![c.layer_norm(x, None, None, -1, 1e-5)?])
    }));
    out.push(Case::new("edge_rms_norm_row_513", |c| {
        let x = c.input_f32("x", &[2, 513], -2.0, 2.0)?;
        Ok(vec![c.rms_norm(x, None, -1, 1e-6)?])
    }));
    out.push(Case::new("edge_sum_row_257", |c| {
        let x = c.input_f32("x", &[3, 257], -1.0, 1.0)?;
        Ok(vec![c.sum(x, &[1], false)?])
    }));
    out.push(Case::new("edge_cumsum_row_257", |c| {
        let x = c.input_f32("x", &[2, 257], -1.0, 1.0)?;
        Ok(vec![c.cumsum(x, 1)?])
    }));
    out.push(Case::new("edge_argmax_row_257", |c| {
        let x = c.input_f32("x", &[2, 257], -1.0, 1.0)?;
        Ok(vec![c.argmax(x, 1, false)?])
    }));
    out.push(Case::new("edge_topk_row_257", |c| {
        let x = c.input_f32("x", &[2, 257], -1.0, 1.0)?;
        let (v, i) = c.topk(x, 5, 1, true)?;
        Ok(vec![v, i])
    }));
    out.push(Case::new("edge_attention_sk_65_d_33", |c| {
        let [q, k, v] = qkv(c, rlx_ir::AttnLayout::Bhsd, dims(1, 5, 65, 2, 2, 33), 1.0)?;
        let spec = rlx_ir::AttentionSpec::new(rlx_ir::AttnLayout::Bhsd, rlx_ir::MaskKind::Causal);
        Ok(vec![c.attention(q, k, v, None, spec)?])
    }));
}

fn tiles(out: &mut Vec<Case>) {
    for (m, k, n) in [(65, 63, 65), (63, 65, 64), (16, 1000, 3), (33, 2, 130)] {
        out.push(Case::new(format!("edge_matmul_f32_{m}x{k}x{n}"), move |c| {
            let a = c.input_f32("a", &[m, k], -1.0, 1.0)?;
            let b = c.input_f32("b", &[k, n], -1.0, 1.0)?;
            Ok(vec![c.matmul(a, b)?])
        }));
    }
    // Many operands of one op: a kernel that binds every part at once meets binding limits.
    out.push(Case::new("edge_concat_20_parts", |c| {
        let parts = (0..20)
            .map(|i| c.input_f32(&format!("x{i}"), &[2, 1 + i % 3], -1.0, 1.0))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(vec![c.concat(&parts, 1)?])
    }));
    out.push(Case::new("edge_slice_step_past_end", |c| {
        let x = c.input_f32("x", &[3, 4], -1.0, 1.0)?;
        Ok(vec![c.slice(x, 1, 1, 4, 10)?])
    }));
    out.push(Case::new("edge_where_three_way_broadcast", |c| {
        let cond = c.input_bool("cond", &[4, 1, 1])?;
        let a = c.input_f32("a", &[1, 5, 1], -1.0, 1.0)?;
        let b = c.input_f32("b", &[1, 1, 6], -1.0, 1.0)?;
        Ok(vec![c.where_(cond, a, b)?])
    }));
    // A nonzero padding-mask value of any sign means "attend".
    out.push(Case::new("edge_attention_padding_f32_any_nonzero", |c| {
        let [q, k, v] = qkv(c, rlx_ir::AttnLayout::Bshd, dims(2, 3, 5, 2, 2, 8), 1.0)?;
        let m = Tensor::from_f32([2, 5], vec![0.5, -2.0, 0.0, 3.0, 0.0, 0.0, 1.0, -0.25, 0.0, 7.0])?;
        let m = c.input_tensor("mask", m)?;
        let spec = rlx_ir::AttentionSpec::new(rlx_ir::AttnLayout::Bshd, rlx_ir::MaskKind::Padding);
        Ok(vec![c.attention(q, k, v, Some(m), spec)?])
    }));
    out.push(Case::new("edge_attention_bias_neg_inf_entries", |c| {
        let [q, k, v] = qkv(c, rlx_ir::AttnLayout::Bhsd, dims(1, 3, 4, 2, 2, 8), 1.0)?;
        let mut b = c.uniform(12, -1.0, 1.0);
        for i in [0, 5, 6, 11] {
            b[i] = f32::NEG_INFINITY;
        }
        let m = c.input_tensor("bias", Tensor::from_f32([1, 1, 3, 4], b)?)?;
        let spec = rlx_ir::AttentionSpec::new(rlx_ir::AttnLayout::Bhsd, rlx_ir::MaskKind::Bias);
        Ok(vec![c.attention(q, k, v, Some(m), spec)?])
    }));
    out.push(Case::new("edge_attention_none_sk_lt_sq", |c| {
        let [q, k, v] = qkv(c, rlx_ir::AttnLayout::Bshd, dims(1, 6, 2, 2, 2, 8), 1.0)?;
        let spec = rlx_ir::AttentionSpec::new(rlx_ir::AttnLayout::Bshd, rlx_ir::MaskKind::None);
        Ok(vec![c.attention(q, k, v, None, spec)?])
    }));
}

/// 7-D [2, 1, 2, 3, 1, 2, 2] and 8-D [2, 1, 2, 3, 1, 2, 2, 2].
const D7: &[usize] = &[2, 1, 2, 3, 1, 2, 2];
const D8: &[usize] = &[2, 1, 2, 3, 1, 2, 2, 2];

fn ranks(out: &mut Vec<Case>) {
    for (tag, dims) in [("7d", D7), ("8d", D8)] {
        let r = dims.len();
        out.push(Case::new(format!("edge_binary_add_{tag}_bcast"), move |c| {
            let x = c.input_f32("a", dims, -1.0, 1.0)?;
            let mut bd = vec![1; r];
            bd[0] = 2;
            bd[3] = 3;
            bd[r - 1] = 2;
            let y = c.input_f32("b", &bd, -1.0, 1.0)?;
            Ok(vec![c.add(x, y)?])
        }));
        out.push(Case::new(format!("edge_permute_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            let perm: Vec<usize> = (0..r).rev().collect();
            Ok(vec![c.permute(x, &perm)?])
        }));
        out.push(Case::new(format!("edge_reduce_sum_{tag}_axes"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.sum(x, &[1, 3, r as isize - 1], false)?])
        }));
        out.push(Case::new(format!("edge_slice_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.slice(x, 3, 1, 3, 1)?])
        }));
        out.push(Case::new(format!("edge_concat_{tag}"), move |c| {
            let a = c.input_f32("a", dims, -1.0, 1.0)?;
            let b = c.input_f32("b", dims, -1.0, 1.0)?;
            Ok(vec![c.concat(&[a, b], 2)?])
        }));
        out.push(Case::new(format!("edge_expand_{tag}"), move |c| {
            let mut from = dims.to_vec();
            from[0] = 1;
            from[3] = 1;
            let x = c.input_f32("x", &from, -1.0, 1.0)?;
            Ok(vec![c.expand(x, dims)?])
        }));
        out.push(Case::new(format!("edge_pad_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            let mut pads = vec![(0, 0); r];
            pads[1] = (1, 0);
            pads[r - 1] = (0, 2);
            Ok(vec![c.pad(x, &pads, 0.5)?])
        }));
        out.push(Case::new(format!("edge_reverse_{tag}"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.reverse(x, &[0, 3, r as isize - 1])?])
        }));
        out.push(Case::new(format!("edge_where_{tag}"), move |c| {
            let cond = c.input_bool("cond", dims)?;
            let a = c.input_f32("a", dims, -1.0, 1.0)?;
            let b = c.input_f32("b", &[2], -1.0, 1.0)?;
            Ok(vec![c.where_(cond, a, b)?])
        }));
        out.push(Case::new(format!("edge_gather_{tag}_axis3"), move |c| {
            let x = c.input_of("x", dims, DType::F32)?;
            let ids = c.input_i32("ids", &[4], 0, 2)?;
            Ok(vec![c.gather(x, ids, 3)?])
        }));
        out.push(Case::new(format!("edge_cumsum_{tag}_axis3"), move |c| {
            let x = c.input_f32("x", dims, -1.0, 1.0)?;
            Ok(vec![c.cumsum(x, 3)?])
        }));
        out.push(Case::new(format!("edge_compare_{tag}_bcast"), move |c| {
            let x = c.input_f32_ints("a", dims, -1, 1)?;
            let y = c.input_f32_ints("b", &[2, 2], -1, 1)?;
            Ok(vec![c.le(x, y)?])
        }));
    }
}
