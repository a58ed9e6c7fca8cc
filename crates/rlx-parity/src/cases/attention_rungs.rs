//! Attention on tensor cores (`attention_coop.wgsl`), forced with the coop matmul kernel at
//! `Precision::Mixed` and `Precision::F16`: every attention case of the table again, plus
//! shapes that span several query blocks and key tiles (64 rows; 64 keys at head dim 64, 32 at
//! 128) with partial last ones, at head dims 64 and 128 and below them. Cases past head dim
//! 128 check that they keep the f32 kernel. A device without cooperative matrices (lavapipe)
//! reports them unavailable, as the matmul rungs' coop cases. The multi-tile shapes also run at
//! f32, unforced.

use super::attention::{dims, padding_mask, qkv, Dims};
use crate::{Case, F16_OPERANDS_TOL};
use rlx_ir::{AttentionSpec, AttnLayout, DType, MaskKind};
use rlx_runtime::{MatmulKernel, Precision};

pub(super) fn cases(out: &mut Vec<Case>) {
    multi_tile(out);
    for precision in [Precision::Mixed, Precision::F16] {
        let mut set = Vec::new();
        multi_tile(&mut set);
        super::attention::attention(&mut set);
        super::attention::masks(&mut set);
        super::attention_edges::attention(&mut set);
        super::attention_kv_cache::attention(&mut set);
        for case in set {
            let name = format!("rung_coop_{precision}_{}", case.name);
            // Q, K, P and V are rounded to f16 (2^-11 relative each) and the products
            // accumulate in f32: the matmul bound.
            let coop = Some(MatmulKernel::Coop);
            out.push(case.with_kernels(name, precision, coop).with_tol(F16_OPERANDS_TOL));
        }
    }
}

/// Shapes past one block of the tensor-core kernel: 130 query rows (three blocks, the last of
/// two rows), 200 keys (seven tiles, the last of eight), head dims 64, 128, 80 and 24.
fn multi_tile(out: &mut Vec<Case>) {
    use AttnLayout::{Bhsd, Bshd};
    use MaskKind::{Causal, SlidingWindow};
    type Shape = (&'static str, AttnLayout, MaskKind, Dims);
    let shapes: [Shape; 7] = [
        ("none_d64", Bshd, MaskKind::None, dims(2, 130, 200, 2, 2, 64)),
        ("causal_d128_gqa", Bhsd, Causal, dims(1, 130, 200, 4, 2, 128)),
        ("causal_square_d64", Bshd, Causal, dims(1, 200, 200, 2, 1, 64)),
        ("window40_d80", Bshd, SlidingWindow(40), dims(1, 130, 200, 2, 2, 80)),
        ("none_d24_dv72", Bhsd, MaskKind::None, Dims { dv: 72, ..dims(1, 70, 97, 3, 3, 24) }),
        ("decode_sq1_d128", Bshd, Causal, dims(1, 1, 333, 8, 2, 128)),
        ("prefill_sq64_sk64_d64", Bshd, Causal, dims(3, 64, 64, 4, 4, 64)),
    ];
    for (tag, layout, mask, x) in shapes {
        out.push(Case::new(format!("attention_tiles_{tag}"), move |c| {
            let [q, k, v] = qkv(c, layout, x, 1.5)?;
            Ok(vec![c.attention(q, k, v, None, AttentionSpec::new(layout, mask))?])
        }));
    }
    let x = dims(2, 100, 150, 4, 2, 64);
    out.push(Case::new("attention_tiles_padding_d64", move |c| {
        let [q, k, v] = qkv(c, Bshd, x, 1.5)?;
        let m = c.input_tensor("mask", padding_mask(DType::Bool, x.sk, &[37, 0])?)?;
        Ok(vec![c.attention(q, k, v, Some(m), AttentionSpec::new(Bshd, MaskKind::Padding))?])
    }));
    // Scores that rise along the keys by far more than the tensor-core kernel's lazy-rescale
    // threshold per tile, so its output accumulators are rescaled on every tile.
    for (tag, mask, d) in [("none_d64", MaskKind::None, 64), ("causal_d128", Causal, 128)] {
        // Scores up to about 160: f32 rounds each to about 1e-5 absolute, which the softmax
        // carries into the weights.
        let case = Case::new(format!("attention_tiles_rising_{tag}"), move |c| rising(c, mask, d));
        out.push(case.with_tol(1e-4));
    }
    out.push(Case::new("attention_tiles_bias_softcap_d128", move |c| {
        let x = dims(1, 70, 90, 2, 2, 128);
        let [q, k, v] = qkv(c, Bhsd, x, 4.0)?;
        let m = c.input_f32("bias", &[1, 2, 70, 90], -2.0, 2.0)?;
        let s = AttentionSpec::new(Bhsd, MaskKind::Bias).softcap(8.0);
        Ok(vec![c.attention(q, k, v, Some(m), s)?])
    }));
}

/// Attention over 200 keys whose scores grow with the key index (q and k positive, k row j
/// scaled by 1 + j/8): each 32-key tile's max passes the last by about 25 in log2 units.
fn rising(c: &mut crate::CaseCtx, mask: MaskKind, d: usize) -> Result<Vec<rlx_ir::NodeId>, rlx_ir::IrError> {
    let x = dims(1, 70, 200, 2, 2, d);
    let layout = AttnLayout::Bshd;
    let q = c.input_f32("q", &super::attention::shape(layout, x.b, x.sq, x.hq, x.d), 0.5, 1.0)?;
    let k_shape = super::attention::shape(layout, x.b, x.sk, x.hkv, x.d);
    let raw = c.uniform(k_shape.iter().product(), 0.5, 1.0);
    let row = x.hkv * x.d;
    let k_vals = raw.iter().enumerate().map(|(e, u)| u * (1.0 + ((e / row) % x.sk) as f32 / 8.0)).collect();
    let k = c.input_tensor("k", rlx_ir::Tensor::from_f32(k_shape.as_slice(), k_vals)?)?;
    let v = c.input_f32("v", &super::attention::shape(layout, x.b, x.sk, x.hkv, x.dv), -1.0, 1.0)?;
    Ok(vec![c.attention(q, k, v, None, AttentionSpec::new(layout, mask))?])
}
