//! Scaled dot-product attention (layouts, every mask kind, KV cache Sk > Sq, grouped-query
//! heads, scale, soft-cap), and the shapes and inputs its other case files share.

use crate::{Case, CaseCtx};
use rlx_ir::{AttentionSpec, AttnLayout, DType, IrError, MaskKind, NodeId, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    attention(out);
    masks(out);
}

/// Sizes of one attention call: q [b, sq, hq, d], k [b, sk, hkv, d], v [b, sk, hkv, dv] (in
/// whichever layout a case uses). Shared with `attention_edges` and `attention_kv_cache`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dims {
    pub b: usize,
    pub sq: usize,
    pub sk: usize,
    pub hq: usize,
    pub hkv: usize,
    pub d: usize,
    pub dv: usize,
}

pub(super) const fn dims(b: usize, sq: usize, sk: usize, hq: usize, hkv: usize, d: usize) -> Dims {
    Dims { b, sq, sk, hq, hkv, d, dv: d }
}

/// [B, S, H, D] or [B, H, S, D].
pub(super) fn shape(layout: AttnLayout, b: usize, s: usize, h: usize, d: usize) -> Vec<usize> {
    match layout {
        AttnLayout::Bshd => vec![b, s, h, d],
        AttnLayout::Bhsd => vec![b, h, s, d],
    }
}

/// q, k, v inputs; `q_range` scales the scores (wider → peakier softmax).
pub(super) fn qkv(
    c: &mut CaseCtx,
    layout: AttnLayout,
    x: Dims,
    q_range: f32,
) -> Result<[NodeId; 3], IrError> {
    let q = c.input_f32("q", &shape(layout, x.b, x.sq, x.hq, x.d), -q_range, q_range)?;
    let k = c.input_f32("k", &shape(layout, x.b, x.sk, x.hkv, x.d), -1.0, 1.0)?;
    let v = c.input_f32("v", &shape(layout, x.b, x.sk, x.hkv, x.dv), -1.0, 1.0)?;
    Ok([q, k, v])
}

/// An attention case without a mask tensor.
fn plain(name: &str, layout: AttnLayout, mask: MaskKind, x: Dims) -> Case {
    Case::new(format!("attention_{name}"), move |c| {
        let [q, k, v] = qkv(c, layout, x, 1.5)?;
        Ok(vec![c.attention(q, k, v, None, AttentionSpec::new(layout, mask))?])
    })
}

pub(super) fn attention(out: &mut Vec<Case>) {
    use AttnLayout::{Bhsd, Bshd};
    use MaskKind::{Causal, SlidingWindow};
    let none = MaskKind::None;
    out.push(plain("none_bshd_mha", Bshd, none, dims(2, 5, 5, 2, 2, 8)));
    out.push(plain("none_bhsd_mha", Bhsd, none, dims(2, 5, 5, 2, 2, 8)));
    out.push(plain("none_bshd_sk_gt_sq", Bshd, none, dims(1, 3, 11, 3, 3, 16)));
    out.push(plain("causal_bshd", Bshd, Causal, dims(2, 6, 6, 2, 2, 8)));
    out.push(plain("causal_bhsd_kv_cache", Bhsd, Causal, dims(2, 3, 8, 2, 2, 8)));
    out.push(plain("causal_decode_sq1", Bshd, Causal, dims(2, 1, 9, 4, 4, 8)));
    out.push(plain("sliding_window3_bshd", Bshd, SlidingWindow(3), dims(1, 6, 6, 2, 2, 8)));
    out.push(plain("sliding_window2_bhsd_kv_cache", Bhsd, SlidingWindow(2), dims(2, 3, 7, 2, 2, 8)));
    out.push(plain("sliding_window1", Bshd, SlidingWindow(1), dims(1, 4, 4, 1, 1, 4)));
    out.push(plain("gqa_4q_2kv_causal_bshd", Bshd, Causal, dims(2, 5, 7, 4, 2, 8)));
    out.push(plain("gqa_4q_2kv_none_bhsd", Bhsd, none, dims(1, 4, 6, 4, 2, 8)));
    out.push(plain("mqa_8q_1kv", Bshd, none, dims(1, 3, 5, 8, 1, 4)));
    out.push(plain("d64_17x33", Bshd, Causal, dims(1, 17, 33, 2, 2, 64)));
    // Long key rows: the online softmax must carry its running max across key blocks.
    out.push(plain("long_sk300", Bhsd, none, dims(1, 4, 300, 2, 2, 16)));
    out.push(plain("single_key", Bshd, none, dims(2, 1, 1, 2, 2, 4)));
    // Few query rows take the split-key kernel: three chunks of keys, merged.
    out.push(plain("split_three_chunks_gqa", Bshd, Causal, dims(2, 2, 600, 8, 2, 64)));
    out.push(plain("split_sq4_dv_differs", Bhsd, none, Dims { dv: 80, ..dims(1, 4, 513, 2, 1, 32) }));
    out.push(plain("value_dim_differs", Bshd, Causal, Dims { dv: 12, ..dims(1, 4, 6, 2, 2, 8) }));
    out.push(Case::new("attention_explicit_scale", |c| {
        let x = dims(1, 4, 6, 2, 2, 8);
        let [q, k, v] = qkv(c, Bshd, x, 1.5)?;
        let s = AttentionSpec::new(Bshd, MaskKind::None).scale(0.3);
        Ok(vec![c.attention(q, k, v, None, s)?])
    }));
    // q in ±8 makes raw scores reach ±20, well into the cap's tanh bend.
    out.push(Case::new("attention_softcap_gqa_causal", |c| {
        let x = dims(1, 5, 7, 4, 2, 8);
        let [q, k, v] = qkv(c, Bhsd, x, 8.0)?;
        let s = AttentionSpec::new(Bhsd, Causal).softcap(5.0);
        Ok(vec![c.attention(q, k, v, None, s)?])
    }));
}

/// A [B, Sk] padding mask of `dtype` with the last `padded[b]` keys of batch `b` masked out.
pub(super) fn padding_mask(dtype: DType, sk: usize, padded: &[usize]) -> Result<Tensor, IrError> {
    let keep: Vec<bool> = padded.iter().flat_map(|&p| (0..sk).map(move |j| j + p < sk)).collect();
    let b = padded.len();
    match dtype {
        DType::I32 => Tensor::from_i32([b, sk], keep.iter().map(|&k| k as i32).collect()),
        DType::F32 => Tensor::from_f32([b, sk], keep.iter().map(|&k| if k { 1.0 } else { 0.0 }).collect()),
        _ => Tensor::from_bool([b, sk], keep),
    }
}

pub(super) fn masks(out: &mut Vec<Case>) {
    use AttnLayout::{Bhsd, Bshd};
    // (tag, layout, mask dtype, dims, padded keys per batch)
    type Pad = (&'static str, AttnLayout, DType, Dims, &'static [usize]);
    let pads: [Pad; 5] = [
        ("bool_bshd", Bshd, DType::Bool, dims(2, 7, 7, 2, 2, 8), &[0, 3]),
        ("i32_bhsd", Bhsd, DType::I32, dims(2, 5, 7, 2, 2, 8), &[2, 0]),
        ("f32_bshd", Bshd, DType::F32, dims(2, 4, 6, 2, 2, 8), &[1, 4]),
        ("gqa_bhsd", Bhsd, DType::Bool, dims(2, 3, 9, 4, 2, 8), &[5, 1]),
        // Batch 1 sees no key at all: its rows are zeros.
        ("all_masked_batch", Bshd, DType::Bool, dims(2, 3, 5, 2, 2, 4), &[0, 5]),
    ];
    for (tag, layout, dtype, x, padded) in pads {
        out.push(Case::new(format!("attention_padding_{tag}"), move |c| {
            let [q, k, v] = qkv(c, layout, x, 1.5)?;
            let m = c.input_tensor("mask", padding_mask(dtype, x.sk, padded)?)?;
            Ok(vec![c.attention(q, k, v, Some(m), AttentionSpec::new(layout, MaskKind::Padding))?])
        }));
    }
    // (tag, layout, dims, bias shape as a function of the dims)
    type Bias = (&'static str, AttnLayout, Dims, fn(Dims) -> Vec<usize>);
    let biases: [Bias; 3] = [
        ("full", Bshd, dims(2, 4, 6, 2, 2, 8), |x| vec![x.b, x.hq, x.sq, x.sk]),
        ("bcast_1x1xsqxsk", Bhsd, dims(2, 4, 6, 2, 2, 8), |x| vec![1, 1, x.sq, x.sk]),
        ("bcast_bx1x1xsk_gqa", Bshd, dims(2, 3, 5, 4, 2, 8), |x| vec![x.b, 1, 1, x.sk]),
    ];
    for (tag, layout, x, bias_shape) in biases {
        out.push(Case::new(format!("attention_bias_{tag}"), move |c| {
            let [q, k, v] = qkv(c, layout, x, 1.5)?;
            let m = c.input_f32("bias", &bias_shape(x), -2.0, 2.0)?;
            Ok(vec![c.attention(q, k, v, Some(m), AttentionSpec::new(layout, MaskKind::Bias))?])
        }));
    }
}
