//! Attention edges: wide head dims, windows wider than any sequence, NaN-valued padding masks,
//! bias masks that broadcast, no keys at all and a NaN query.

use super::attention::{shape, Dims as Attn};
use crate::{Case, CaseCtx};
use rlx_ir::{AttentionSpec, AttnLayout, IrError, MaskKind, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    attention(out);
}

/// Builds a mask tensor (drawing from the case's data stream if it wants).
type MakeMask = fn(&mut CaseCtx) -> Result<Tensor, IrError>;

/// One attention case; `mask` (if any) builds the fourth operand.
fn attn_case(name: &str, a: Attn, spec: AttentionSpec, mask: Option<MakeMask>) -> Case {
    Case::new(format!("attention_{name}"), move |c| {
        let l = spec.layout;
        let q = c.input_f32("q", &shape(l, a.b, a.sq, a.hq, a.d), -1.5, 1.5)?;
        let k = c.input_f32("k", &shape(l, a.b, a.sk, a.hkv, a.d), -1.5, 1.5)?;
        let v = c.input_f32("v", &shape(l, a.b, a.sk, a.hkv, a.dv), -1.5, 1.5)?;
        let m = match mask {
            Some(make) => {
                let t = make(c)?;
                Some(c.input_tensor("m", t)?)
            }
            None => None,
        };
        Ok(vec![c.attention(q, k, v, m, spec)?])
    })
}

/// [3, 21]: batch 0 attends keys < 15, batch 1 none, batch 2 every other key; NaN attends
/// (nonzero) and −0.0 hides.
fn nan_padding_mask(_: &mut CaseCtx) -> Result<Tensor, IrError> {
    let v = (0..3 * 21)
        .map(|i: usize| {
            let attend = match i / 21 {
                0 => i % 21 < 15,
                1 => false,
                _ => (i % 21).is_multiple_of(2),
            };
            match (attend, i % 3) {
                (true, 0) => f32::NAN,
                (true, _) => 0.25,
                (false, 0) => -0.0,
                (false, _) => 0.0,
            }
        })
        .collect();
    Tensor::from_f32([3, 21], v)
}

/// A [Sk = 29] bias with a −∞ entry.
fn bias_sk(c: &mut CaseCtx) -> Result<Tensor, IrError> {
    let mut v = c.uniform(29, -3.0, 3.0);
    v[0] = f32::NEG_INFINITY;
    Tensor::from_f32([29], v)
}

/// A per-head [3, 1, 1] bias with a −∞ head.
fn bias_heads(c: &mut CaseCtx) -> Result<Tensor, IrError> {
    let mut v = c.uniform(3, -3.0, 3.0);
    v[1] = f32::NEG_INFINITY;
    Tensor::from_f32([3, 1, 1], v)
}

pub(super) fn attention(out: &mut Vec<Case>) {
    use AttnLayout::{Bhsd, Bshd};
    use MaskKind::{Causal, SlidingWindow};
    let wide = Attn { b: 2, sq: 37, sk: 53, hq: 4, hkv: 2, d: 40, dv: 24 };
    out.push(attn_case("gqa_d40_dv24_bshd", wide, AttentionSpec::new(Bshd, MaskKind::None), None));
    out.push(attn_case("gqa_d40_dv24_bhsd", wide, AttentionSpec::new(Bhsd, MaskKind::None), None));
    out.push(attn_case(
        "all_ones_1x1x1",
        Attn { b: 1, sq: 1, sk: 1, hq: 1, hkv: 1, d: 1, dv: 1 },
        AttentionSpec::new(Bhsd, MaskKind::None),
        None,
    ));
    // Multi-query at head dim 256: several Q·K chunks, the largest column block.
    let mq = Attn { b: 1, sq: 19, sk: 23, hq: 3, hkv: 1, d: 256, dv: 256 };
    out.push(attn_case("mqa_d256_causal", mq, AttentionSpec::new(Bshd, Causal), None));
    // A value head dim past one column block: split across workgroups.
    let split = Attn { b: 1, sq: 5, sk: 17, hq: 2, hkv: 2, d: 72, dv: 300 };
    out.push(attn_case("dv300_split", split, AttentionSpec::new(Bhsd, MaskKind::None), None));
    let capped = AttentionSpec::new(Bshd, MaskKind::None).scale(0.3).softcap(5.0);
    out.push(attn_case(
        "d128_scale_softcap",
        Attn { b: 2, sq: 16, sk: 33, hq: 2, hkv: 1, d: 128, dv: 100 },
        capped,
        None,
    ));
    let cache = Attn { b: 2, sq: 35, sk: 53, hq: 4, hkv: 2, d: 16, dv: 16 };
    for (l, lt) in [(Bshd, "bshd"), (Bhsd, "bhsd")] {
        out.push(attn_case(
            &format!("window7_kv_cache_{lt}"),
            cache,
            AttentionSpec::new(l, SlidingWindow(7)),
            None,
        ));
        // A window wider than any sequence is the causal mask (and must not wrap in u32).
        out.push(attn_case(
            &format!("window_2pow40_{lt}"),
            cache,
            AttentionSpec::new(l, SlidingWindow(1 << 40)),
            None,
        ));
    }
    out.push(attn_case(
        "decode_sq1_sk41_gqa_d64",
        Attn { b: 1, sq: 1, sk: 41, hq: 8, hkv: 2, d: 64, dv: 64 },
        AttentionSpec::new(Bshd, Causal),
        None,
    ));
    // F32 padding mask: −0.0 hides, NaN attends (nonzero), like the reference; batch 1 sees no key.
    let pad = Attn { b: 3, sq: 19, sk: 21, hq: 2, hkv: 1, d: 8, dv: 12 };
    for (l, lt) in [(Bshd, "bshd"), (Bhsd, "bhsd")] {
        let name = format!("padding_f32_nan_and_neg_zero_{lt}");
        out.push(attn_case(&name, pad, AttentionSpec::new(l, MaskKind::Padding), Some(nan_padding_mask)));
    }
    // Bias masks broadcast from [Sk] and [H, 1, 1], with a −∞ entry hiding a key.
    let biased = Attn { b: 2, sq: 17, sk: 29, hq: 3, hkv: 3, d: 20, dv: 20 };
    out.push(attn_case(
        "bias_bcast_sk_only",
        biased,
        AttentionSpec::new(Bhsd, MaskKind::Bias),
        Some(bias_sk),
    ));
    out.push(attn_case(
        "bias_bcast_heads_3x1x1",
        biased,
        AttentionSpec::new(Bhsd, MaskKind::Bias),
        Some(bias_heads),
    ));
    // No keys: zeros (named "empty" so the non-degeneracy check knows).
    out.push(attn_case(
        "empty_keys_sk0",
        Attn { b: 2, sq: 5, sk: 0, hq: 2, hkv: 2, d: 8, dv: 8 },
        AttentionSpec::new(Bshd, MaskKind::None),
        None,
    ));
    // A NaN in one query row makes exactly that output row NaN.
    out.push(Case::new("attention_nan_query_row", |c| {
        let mut q = c.uniform(96, -1.0, 1.0);
        q[(3 * 2 + 1) * 8 + 5] = f32::NAN;
        let q = c.input_tensor("q", Tensor::from_f32([1, 6, 2, 8], q)?)?;
        let k = c.input_f32("k", &[1, 9, 2, 8], -1.0, 1.0)?;
        let v = c.input_f32("v", &[1, 9, 2, 8], -1.0, 1.0)?;
        Ok(vec![c.attention(q, k, v, None, AttentionSpec::new(Bshd, MaskKind::None))?])
    }));
}
