//! Attention over a KV cache (a device-resident state written by `write_rows`) whose valid
//! length is a run-time input (`attention_with_lengths`): every mask kind, both layouts, grouped heads,
//! lengths of 0, clamped past the capacity, negative, and a NaN tail past the length that must
//! stay unread. Each case writes this run's rows into a zeroed state, so one run compares.
//! The `_f16` cases hold the cache in f16 under f32 queries: the rows are rounded as they are
//! written (a GPU moves them as words) and attention reads the f16 cache as stored (the split,
//! row-blocked and, forced, tensor-core kernels' f16 variants, with vec4 and scalar loads).

use super::attention::{dims, padding_mask, shape, Dims};
use crate::{Case, CaseCtx};
use rlx_ir::{AttentionSpec, AttnLayout, DType, IrError, MaskKind, NodeId, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    attention(out);
}

/// q [b, sq, ·] against k/v caches of capacity `x.sk` holding `t` rows written at offset
/// `at`, with run-time lengths `lens`.
#[derive(Clone, Copy)]
struct Cached {
    layout: AttnLayout,
    mask: MaskKind,
    x: Dims,
    t: usize,
    at: i32,
    lens: &'static [i32],
    /// The cache's dtype.
    kv: DType,
}

/// The cache-attention graph of `p`; `nan_tail` puts NaN into every row from `nan_tail` on.
fn cached(c: &mut CaseCtx, p: &Cached, nan_tail: Option<usize>) -> Result<Vec<NodeId>, IrError> {
    let (x, l) = (p.x, p.layout);
    let axis = match l {
        AttnLayout::Bshd => 1,
        AttnLayout::Bhsd => 2,
    };
    let q = c.input_f32("q", &shape(l, x.b, x.sq, x.hq, x.d), -1.5, 1.5)?;
    let rows = |c: &mut CaseCtx, name: &str, d: usize| -> Result<NodeId, IrError> {
        let dims = shape(l, x.b, p.t, x.hkv, d);
        let mut v = c.uniform(dims.iter().product(), -1.0, 1.0);
        if let Some(from) = nan_tail {
            // Row r of the seq axis, whatever the layout: NaN from `from` on.
            let strides = [dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1];
            for (i, e) in v.iter_mut().enumerate() {
                if (i / strides[axis]) % dims[axis] >= from {
                    *e = f32::NAN;
                }
            }
        }
        c.input_tensor(name, Tensor::from_f32(dims, v)?)
    };
    let (k_rows, v_rows) = (rows(c, "k_rows", x.d)?, rows(c, "v_rows", x.dv)?);
    let offset = c.input_tensor("offset", Tensor::from_i32([1], vec![p.at])?)?;
    let (k_rows, v_rows) = match p.kv {
        DType::F32 => (k_rows, v_rows),
        kv => (c.cast(k_rows, kv)?, c.cast(v_rows, kv)?),
    };
    let k_state = c.state("k_cache", &shape(l, x.b, x.sk, x.hkv, x.d), p.kv)?;
    let v_state = c.state("v_cache", &shape(l, x.b, x.sk, x.hkv, x.dv), p.kv)?;
    let k = c.write_rows(k_state, k_rows, offset, axis as isize)?;
    let v = c.write_rows(v_state, v_rows, offset, axis as isize)?;
    let lens = c.input_tensor("lens", Tensor::from_i32([x.b], p.lens.to_vec())?)?;
    let mask = match p.mask {
        MaskKind::Padding => Some(c.input_tensor("mask", padding_mask(DType::Bool, x.sk, &[0, 2])?)?),
        _ => None,
    };
    Ok(vec![c.attention_with_lengths(q, k, v, mask, lens, AttentionSpec::new(l, p.mask))?])
}

pub(super) fn attention(out: &mut Vec<Case>) {
    use AttnLayout::{Bhsd, Bshd};
    use MaskKind::{Causal, SlidingWindow};
    let none = MaskKind::None;
    let list: [(&str, Cached); 9] = [
        // A decode step: one query at the newest position, lengths per batch.
        (
            "decode_causal_bshd",
            Cached {
                layout: Bshd,
                mask: Causal,
                x: dims(2, 1, 9, 4, 2, 8),
                t: 6,
                at: 0,
                lens: &[6, 4],
                kv: DType::F32,
            },
        ),
        (
            "decode_none_bhsd",
            Cached {
                layout: Bhsd,
                mask: none,
                x: dims(2, 1, 9, 2, 2, 8),
                t: 5,
                at: 2,
                lens: &[7, 3],
                kv: DType::F32,
            },
        ),
        // A prefill chunk after earlier tokens: queries at positions len − sq ….
        (
            "chunk_causal_gqa_bshd",
            Cached {
                layout: Bshd,
                mask: Causal,
                x: dims(2, 3, 10, 4, 2, 8),
                t: 7,
                at: 0,
                lens: &[7, 5],
                kv: DType::F32,
            },
        ),
        (
            "chunk_window2_bhsd",
            Cached {
                layout: Bhsd,
                mask: SlidingWindow(2),
                x: dims(2, 3, 10, 2, 2, 8),
                t: 8,
                at: 1,
                lens: &[9, 4],
                kv: DType::F32,
            },
        ),
        (
            "padding_bshd",
            Cached {
                layout: Bshd,
                mask: MaskKind::Padding,
                x: dims(2, 2, 8, 2, 2, 8),
                t: 8,
                at: 0,
                lens: &[8, 6],
                kv: DType::F32,
            },
        ),
        // Length 0 sees nothing (zeros); past the capacity clamps; negative is 0.
        (
            "zero_and_clamped",
            Cached {
                layout: Bshd,
                mask: none,
                x: dims(2, 2, 6, 2, 2, 4),
                t: 6,
                at: 0,
                lens: &[0, 99],
                kv: DType::F32,
            },
        ),
        (
            "negative_length",
            Cached {
                layout: Bshd,
                mask: Causal,
                x: dims(2, 2, 6, 2, 2, 4),
                t: 6,
                at: 0,
                lens: &[-3, 6],
                kv: DType::F32,
            },
        ),
        // Fewer keys than queries: rows at negative positions give zeros.
        (
            "short_causal",
            Cached {
                layout: Bhsd,
                mask: Causal,
                x: dims(1, 4, 8, 2, 2, 8),
                t: 8,
                at: 0,
                lens: &[2],
                kv: DType::F32,
            },
        ),
        (
            "d64_long",
            Cached {
                layout: Bshd,
                mask: Causal,
                x: dims(1, 1, 300, 8, 2, 64),
                t: 300,
                at: 0,
                lens: &[257],
                kv: DType::F32,
            },
        ),
    ];
    for (tag, p) in list {
        out.push(Case::new(format!("attention_kv_lengths_{tag}"), move |c| cached(c, &p, None)));
    }
    // The cache in f16: decode steps and a short chunk (the split kernel), a long chunk (the
    // row-blocked kernel), a head dim that is not a multiple of 4 (scalar loads), a long cache.
    let mut half: Vec<(&str, Cached)> = list
        .iter()
        .filter(|(tag, _)| ["decode_causal_bshd", "chunk_window2_bhsd", "d64_long"].contains(tag))
        .map(|&(tag, p)| (tag, Cached { kv: DType::F16, ..p }))
        .collect();
    half.push((
        "chunk8_causal_bshd",
        Cached {
            layout: Bshd,
            mask: Causal,
            x: dims(2, 8, 12, 4, 2, 8),
            t: 10,
            at: 0,
            lens: &[10, 8],
            kv: DType::F16,
        },
    ));
    half.push((
        "d6_padding_bshd",
        Cached {
            layout: Bshd,
            mask: MaskKind::Padding,
            x: dims(2, 5, 8, 2, 2, 6),
            t: 8,
            at: 0,
            lens: &[8, 6],
            kv: DType::F16,
        },
    ));
    for (tag, p) in half {
        out.push(Case::new(format!("attention_kv_lengths_f16_{tag}"), move |c| cached(c, &p, None)));
    }
    // NaN keys and values past the valid length must never be read.
    let p = Cached {
        layout: Bshd,
        mask: none,
        x: dims(2, 2, 8, 2, 2, 8),
        t: 8,
        at: 0,
        lens: &[5, 5],
        kv: DType::F32,
    };
    out.push(Case::new("attention_kv_lengths_nan_tail_unread", move |c| cached(c, &p, Some(5))));
    let p = Cached { kv: DType::F16, ..p };
    out.push(Case::new("attention_kv_lengths_f16_nan_tail_unread", move |c| cached(c, &p, Some(5))));
}
