//! nn-family edges: matmuls past one tile and with batch levels that alternate, a NaN that must
//! poison exactly its row, every fused matmul epilogue (and one with K = 0), norms on offset
//! rows, row ops on NaN and −∞ rows, AddNorm with broadcast operands, attention at wide head
//! dims, windows wider than any sequence, NaN-valued padding masks, bias masks that broadcast,
//! no keys at all and a NaN query, and RoPE over every rotary width of a head.

use crate::{Case, CaseCtx};
use rlx_ir::{
    AttentionSpec, AttnLayout, IrError, MaskKind, NodeId, NormKind, Op, RopeStyle, Tensor, UnaryOp,
};
use rlx_runtime::PassOptions;

pub(super) fn cases(out: &mut Vec<Case>) {
    matmul(out);
    epilogues(out);
    norms(out);
    attention(out);
    rope(out);
}

fn matmul(out: &mut Vec<Case>) {
    type Mm = (&'static str, &'static [usize], &'static [usize], bool, bool);
    let shapes: [Mm; 10] = [
        ("300x257x129", &[300, 257], &[257, 129], false, false),
        ("200x300x150", &[200, 300], &[300, 150], false, false),
        ("67x13x65_ta", &[13, 67], &[13, 65], true, false),
        ("67x13x65_tb", &[67, 13], &[65, 13], false, true),
        ("67x13x65_ta_tb", &[13, 67], &[65, 13], true, true),
        ("batched_3x33x17_3x17x65", &[3, 33, 17], &[3, 17, 65], false, false),
        ("batched_two_levels_rhs_fewer", &[2, 3, 20, 9], &[3, 9, 11], false, false),
        ("batched_lhs_shared", &[20, 9], &[4, 9, 70], false, false),
        ("batched_rank3_lhs_rank2_rhs", &[2, 3, 17, 9], &[9, 11], false, false),
        // Batch [2, 1, 3] · [1, 4, 3] alternates three times: several launches with offsets.
        ("batched_alternating_tb", &[2, 1, 3, 5, 7], &[1, 4, 3, 6, 7], false, true),
    ];
    for (tag, a, b, ta, tb) in shapes {
        out.push(Case::new(format!("matmul_f32_{tag}"), move |c| {
            let x = c.input_f32("a", a, -1.5, 1.5)?;
            let y = c.input_f32("b", b, -1.5, 1.5)?;
            Ok(vec![c.matmul_t(x, y, ta, tb)?])
        }));
    }
    // One NaN in a makes its row NaN and leaves the other rows finite.
    out.push(Case::new("matmul_f32_nan_poisons_one_row", |c| {
        let mut v = c.uniform(30, -1.0, 1.0);
        v[7] = f32::NAN;
        let x = c.input_tensor("a", Tensor::from_f32([6, 5], v)?)?;
        let y = c.input_f32("b", &[5, 4], -1.0, 1.0)?;
        Ok(vec![c.matmul(x, y)?])
    }));
}

/// A FusedMatMul node built as rlx-opt's fusion builds it: a `a_dims` [M, K] · b [n, K]ᵀ
/// (+ bias [n]).
pub(super) fn fused(
    c: &mut CaseCtx,
    a_dims: [usize; 2],
    n: usize,
    bias: bool,
    act: Option<UnaryOp>,
) -> Result<Vec<NodeId>, IrError> {
    let a = c.input_f32("a", &a_dims, -1.5, 1.5)?;
    let b = c.input_f32("b", &[n, a_dims[1]], -0.3, 0.3)?;
    let mut ins = vec![a, b];
    if bias {
        ins.push(c.input_f32("bias", &[n], -1.0, 1.0)?);
    }
    let op = Op::FusedMatMul { transpose_a: false, transpose_b: true, bias, activation: act };
    Ok(vec![c.push(op, &ins)?])
}

/// `{prefix}_{bias|no_bias}_{act}`: every fused epilogue (each activation with and without a
/// bias, and Exp, which has no epilogue variant and runs as a unary step after the matmul) on
/// [`fused`]`(a_dims, n)`, with unfused passes so the FusedMatMul node reaches the backend as built.
pub(super) fn epilogue_cases(out: &mut Vec<Case>, prefix: &'static str, a_dims: [usize; 2], n: usize) {
    let acts = [
        None,
        Some(UnaryOp::Gelu),
        Some(UnaryOp::GeluTanh),
        Some(UnaryOp::Relu),
        Some(UnaryOp::Silu),
        Some(UnaryOp::Sigmoid),
        Some(UnaryOp::Tanh),
        Some(UnaryOp::Exp),
    ];
    for act in acts {
        for bias in [false, true] {
            if act.is_none() && !bias {
                continue;
            }
            let name = act.map_or("none", |a| a.name());
            let tag = if bias { "bias" } else { "no_bias" };
            out.push(
                Case::new(format!("{prefix}_{tag}_{name}"), move |c| fused(c, a_dims, n, bias, act))
                    .with_passes(PassOptions::none()),
            );
        }
    }
}

fn epilogues(out: &mut Vec<Case>) {
    epilogue_cases(out, "fused_matmul", [37, 67], 29);
    // K = 0: the product is zeros, so the output is act(bias).
    out.push(
        Case::new("fused_matmul_k0_is_act_of_bias", |c| {
            let a = c.input_f32("a", &[2, 5, 0], -1.0, 1.0)?;
            let b = c.input_f32("b", &[0, 3], -1.0, 1.0)?;
            let bias = c.input_tensor("bias", Tensor::from_f32([3], vec![-1.0, 0.5, 2.0])?)?;
            let op = Op::FusedMatMul {
                transpose_a: false,
                transpose_b: false,
                bias: true,
                activation: Some(UnaryOp::Gelu),
            };
            Ok(vec![c.push(op, &[a, b, bias])?])
        })
        .with_passes(PassOptions::none()),
    );
}

fn norms(out: &mut Vec<Case>) {
    for (rows, cols) in [(1, 1), (5, 7), (3, 300), (2, 1031)] {
        // Rows offset by 100: the variance must be taken about the mean.
        out.push(Case::new(format!("norms_f32_{rows}x{cols}_offset_100"), move |c| {
            let v = c.uniform(rows * cols, 99.0, 101.0);
            let x = c.input_tensor("x", Tensor::from_f32([rows, cols], v)?)?;
            let g = c.param_f32("gamma", &[cols], -1.5, 1.5)?;
            let b = c.param_f32("beta", &[cols], -1.5, 1.5)?;
            let ln = c.layer_norm(x, Some(g), Some(b), -1, 1e-5)?;
            let rms = c.rms_norm(x, Some(g), -1, 1e-6)?;
            Ok(vec![ln, rms])
        }));
    }
    out.push(Case::new("softmax_f32_300x33_many_rows", |c| {
        let x = c.input_f32("x", &[300, 33], -8.0, 8.0)?;
        Ok(vec![c.softmax(x, -1)?, c.log_softmax(x, -1)?])
    }));
    out.push(Case::new("softmax_f32_1x1", |c| {
        let x = c.input_f32("x", &[1, 1], -8.0, 8.0)?;
        Ok(vec![c.softmax(x, -1)?])
    }));
    // Rows: one −inf entry; a NaN; all −inf (NaN out); huge logits 1000, 1001, 999.
    out.push(Case::new("softmax_f32_special_rows", |c| {
        let inf = f32::INFINITY;
        let v = vec![-inf, 0.0, 1.0, f32::NAN, 1.0, 2.0, -inf, -inf, -inf, 1000.0, 1001.0, 999.0];
        let x = c.input_tensor("x", Tensor::from_f32([4, 3], v)?)?;
        Ok(vec![c.softmax(x, -1)?, c.log_softmax(x, -1)?])
    }));
    // Every row op on a NaN row, a row with one −∞, an all −∞ row and a finite row.
    out.push(Case::new("row_ops_f32_nan_and_neg_inf_rows", |c| {
        let cols = 9;
        let mut v = c.uniform(4 * cols, -2.0, 2.0);
        v[3] = f32::NAN;
        v[cols + 2] = f32::NEG_INFINITY;
        for x in &mut v[2 * cols..3 * cols] {
            *x = f32::NEG_INFINITY;
        }
        let x = c.input_tensor("x", Tensor::from_f32([4, cols], v)?)?;
        Ok(vec![
            c.softmax(x, -1)?,
            c.log_softmax(x, -1)?,
            c.layer_norm(x, None, None, -1, 1e-5)?,
            c.rms_norm(x, None, -1, 1e-5)?,
        ])
    }));
    // AddNorm nodes as built by fusion, residual or x broadcast.
    let shapes: [(&str, &[usize], &[usize]); 3] = [
        ("same", &[3, 5, 37], &[3, 5, 37]),
        ("bcast_residual", &[3, 5, 37], &[5, 37]),
        ("bcast_x", &[3, 1, 37], &[5, 37]),
    ];
    for (tag, xs, rs) in shapes {
        for norm in [NormKind::LayerNorm, NormKind::RmsNorm] {
            let kind = if norm == NormKind::LayerNorm { "layer" } else { "rms" };
            out.push(
                Case::new(format!("add_norm_{kind}_{tag}"), move |c| {
                    let x = c.input_f32("x", xs, -1.5, 1.5)?;
                    let r = c.input_f32("r", rs, -1.5, 1.5)?;
                    let g = c.input_f32("gamma", &[37], -1.5, 1.5)?;
                    let mut ins = vec![x, r, g];
                    if norm == NormKind::LayerNorm {
                        ins.push(c.input_f32("beta", &[37], -1.5, 1.5)?);
                    }
                    Ok(vec![c.push(Op::AddNorm { norm, eps: 1e-5 }, &ins)?])
                })
                .with_passes(PassOptions::none()),
            );
        }
    }
}

use super::attention::Dims as Attn;

fn dims4(layout: AttnLayout, b: usize, s: usize, h: usize, d: usize) -> Vec<usize> {
    match layout {
        AttnLayout::Bshd => vec![b, s, h, d],
        AttnLayout::Bhsd => vec![b, h, s, d],
    }
}

/// Builds a mask tensor (drawing from the case's data stream if it wants).
type MakeMask = fn(&mut CaseCtx) -> Result<Tensor, IrError>;

/// One attention case; `mask` (if any) builds the fourth operand.
fn attn_case(name: &str, a: Attn, spec: AttentionSpec, mask: Option<MakeMask>) -> Case {
    Case::new(format!("attention_{name}"), move |c| {
        let l = spec.layout;
        let q = c.input_f32("q", &dims4(l, a.b, a.sq, a.hq, a.d), -1.5, 1.5)?;
        let k = c.input_f32("k", &dims4(l, a.b, a.sk, a.hkv, a.d), -1.5, 1.5)?;
        let v = c.input_f32("v", &dims4(l, a.b, a.sk, a.hkv, a.dv), -1.5, 1.5)?;
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

fn rope(out: &mut Vec<Case>) {
    let (b, s, h, d) = (2, 7, 3, 12);
    for style in [RopeStyle::NeoX, RopeStyle::GptJ] {
        for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
            for rot in [2, 8, 12] {
                let name = format!("rope_{style:?}_{layout:?}_d12_rot{rot}_random_angles").to_lowercase();
                out.push(Case::new(name, move |c| {
                    let v = c.uniform(b * s * h * d, -1.5, 1.5);
                    let x =
                        c.input_tensor("x", Tensor::from_f32(dims4(layout, b, s, h, d).as_slice(), v)?)?;
                    let angles = c.uniform(s * rot / 2, -3.0, 3.0);
                    let cos = Tensor::from_f32([s, rot / 2], angles.iter().map(|a| a.cos()).collect())?;
                    let sin = Tensor::from_f32([s, rot / 2], angles.iter().map(|a| a.sin()).collect())?;
                    let (cos, sin) = (c.input_tensor("cos", cos)?, c.input_tensor("sin", sin)?);
                    Ok(vec![c.rope(x, cos, sin, style, layout, rot)?])
                }));
            }
        }
    }
}
