//! Attention's gradients (rlx_ir's `Graph::backward`) beside the CPU's: flash attention's
//! backward (`AttentionGrad`) in each mask kind but the bias, whose gradient is composed, and
//! on shapes of several tiles of both GPU kernels (16 rows and 64 rows), head dims past one
//! chunk, a value head dim unlike the key's, grouped queries, more keys than queries and
//! soft-caps. At f32 a GPU decomposes `AttentionGrad` (its composed form is faster there); the
//! cases run again on its f32 kernels (`rung_simt_*`) and on its tensor-core kernels at
//! `Precision::Mixed` (`rung_coop_mixed_*`, reported unavailable on a device without
//! cooperative matrices, as the other coop cases).

use super::grad::backward;
use crate::{Case, F16_OPERANDS_TOL};
use rlx_ir::{AttentionSpec, AttnLayout, MaskKind};
use rlx_runtime::{MatmulKernel, Precision};

pub(super) fn cases(out: &mut Vec<Case>) {
    attention(out);
    attention_flash(out);
    // At f32 a GPU runs the composed gradient (`Capabilities::composed_at_f32`). At Mixed with
    // the f32 matmul rung forced, attention and its backward take their f32 kernels; with the
    // tensor-core rung forced, their tensor-core kernels: q, k, v, dy and the weights p and ds
    // are rounded to f16 for the products, which accumulate in f32 (the matmul bound).
    // rung_simt's bound: the window-3 case over 9 keys measures 1.5e-5 at Mixed with Tiled64
    // forced on lavapipe, where the same kernels at F32 (composed_at_f32 emptied) measured
    // 1.9e-7; the difference arises upstream of the backward kernels and is not yet explained.
    let rungs = [
        ("rung_simt", MatmulKernel::Tiled64, 1e-4),
        ("rung_coop_mixed", MatmulKernel::Coop, F16_OPERANDS_TOL),
    ];
    for (prefix, kernel, tol) in rungs {
        let mut set = Vec::new();
        attention(&mut set);
        attention_flash(&mut set);
        // The bias mask's gradient is composed whatever the precision: its products are the
        // matmul rungs' cases.
        set.retain(|c| !c.name.contains("bias"));
        for case in set {
            let name = format!("{prefix}_{}", case.name);
            out.push(case.with_kernels(name, Precision::Mixed, Some(kernel)).with_tol(tol));
        }
    }
}

/// Attention's backward in each mask kind: flash attention's (`AttentionGrad`) for all but the
/// bias, whose gradient recomputes the attention matrix from q, k, v.
fn attention(out: &mut Vec<Case>) {
    // (tag, layout, mask, [b, hq, hkv, sq, sk, head dim])
    let cases: [(&str, AttnLayout, MaskKind, [usize; 6]); 5] = [
        ("none_bhsd_1x2x7x16", AttnLayout::Bhsd, MaskKind::None, [1, 2, 2, 7, 7, 16]),
        ("causal_bshd_gqa_2x4x5x9", AttnLayout::Bshd, MaskKind::Causal, [2, 4, 2, 5, 9, 8]),
        ("window3_bhsd_1x2x9x9", AttnLayout::Bhsd, MaskKind::SlidingWindow(3), [1, 2, 1, 9, 9, 8]),
        ("padding_bshd_2x2x6x6", AttnLayout::Bshd, MaskKind::Padding, [2, 2, 2, 6, 6, 8]),
        ("bias_softcap_bhsd_2x2x5x6", AttnLayout::Bhsd, MaskKind::Bias, [2, 2, 2, 5, 6, 8]),
    ];
    for (tag, layout, mask, [b, hq, hkv, sq, sk, d]) in cases {
        out.push(Case::new(format!("grad_attention_f32_{tag}"), move |c| {
            let dims = |h: usize, s: usize| match layout {
                AttnLayout::Bshd => [b, s, h, d],
                AttnLayout::Bhsd => [b, h, s, d],
            };
            let q = c.param_f32("q", &dims(hq, sq), -1.0, 1.0)?;
            let k = c.param_f32("k", &dims(hkv, sk), -1.0, 1.0)?;
            let v = c.param_f32("v", &dims(hkv, sk), -1.0, 1.0)?;
            let mut spec = AttentionSpec::new(layout, mask);
            let (m, wrt) = match mask {
                MaskKind::Padding => (Some(c.input_bool("m", &[b, sk])?), vec![q, k, v]),
                MaskKind::Bias => {
                    spec = spec.softcap(2.0).scale(0.5);
                    let bias = c.param_f32("bias", &[b, 1, sq, sk], -1.0, 1.0)?;
                    (Some(bias), vec![q, k, v, bias])
                }
                _ => (None, vec![q, k, v]),
            };
            let y = c.attention(q, k, v, m, spec)?;
            backward(c, y, &wrt)
        }));
    }
}

/// Flash attention's backward (`AttentionGrad`) on shapes of several tiles of both kernels.
fn attention_flash(out: &mut Vec<Case>) {
    // (tag, layout, mask, softcap, [b, hq, hkv, sq, sk, d, dv])
    type Shape7 = [usize; 7];
    let cases: [(&str, AttnLayout, MaskKind, Option<f32>, Shape7); 7] = [
        (
            "causal_bshd_gqa_2x8x2x37x37_d72",
            AttnLayout::Bshd,
            MaskKind::Causal,
            None,
            [2, 8, 2, 37, 37, 72, 72],
        ),
        (
            "window5_bhsd_1x3x3x40x45_d32",
            AttnLayout::Bhsd,
            MaskKind::SlidingWindow(5),
            None,
            [1, 3, 3, 40, 45, 32, 32],
        ),
        (
            "padding_bhsd_2x2x2x20x33_d16_dv40",
            AttnLayout::Bhsd,
            MaskKind::Padding,
            None,
            [2, 2, 2, 20, 33, 16, 40],
        ),
        (
            "none_softcap_bshd_1x2x1x18x50_d130",
            AttnLayout::Bshd,
            MaskKind::None,
            Some(3.0),
            [1, 2, 1, 18, 50, 130, 24],
        ),
        (
            "causal_softcap_bhsd_1x4x1x33x40_d64",
            AttnLayout::Bhsd,
            MaskKind::Causal,
            Some(5.0),
            [1, 4, 1, 33, 40, 64, 64],
        ),
        (
            "causal_bshd_gqa_1x4x2x130x130_d64",
            AttnLayout::Bshd,
            MaskKind::Causal,
            None,
            [1, 4, 2, 130, 130, 64, 64],
        ),
        (
            "window40_bhsd_1x2x1x70x97_d128_dv80",
            AttnLayout::Bhsd,
            MaskKind::SlidingWindow(40),
            None,
            [1, 2, 1, 70, 97, 128, 80],
        ),
    ];
    for (tag, layout, mask, cap, [b, hq, hkv, sq, sk, d, dv]) in cases {
        out.push(Case::new(format!("grad_attention_flash_f32_{tag}"), move |c| {
            let dims = |h: usize, s: usize, d: usize| match layout {
                AttnLayout::Bshd => [b, s, h, d],
                AttnLayout::Bhsd => [b, h, s, d],
            };
            let q = c.param_f32("q", &dims(hq, sq, d), -1.0, 1.0)?;
            let k = c.param_f32("k", &dims(hkv, sk, d), -1.0, 1.0)?;
            let v = c.param_f32("v", &dims(hkv, sk, dv), -1.0, 1.0)?;
            let mut spec = AttentionSpec::new(layout, mask);
            if let Some(cap) = cap {
                spec = spec.softcap(cap).scale(0.3);
            }
            let m = match mask {
                MaskKind::Padding => Some(c.input_bool("m", &[b, sk])?),
                _ => None,
            };
            let y = c.attention(q, k, v, m, spec)?;
            backward(c, y, &[q, k, v])
        }));
    }
}
