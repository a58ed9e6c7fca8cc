//! Whole layers: a BERT-style encoder layer (padding mask, post-norm, GELU MLP) and a
//! Llama-style decoder layer (RMSNorm, RoPE NeoX, grouped-query causal attention over a KV
//! cache with Sk > Sq, SiLU-gated MLP).

use super::rope::rope_tables;
use crate::{Case, CaseCtx};
use rlx_ir::{AttentionSpec, AttnLayout, IrError, MaskKind, NodeId, RopeStyle, Tensor};
use rlx_nn::prelude::*;
use rlx_runtime::PassOptions;

pub(super) fn cases(out: &mut Vec<Case>) {
    out.push(Case::new("encoder_layer_bert", encoder_layer));
    out.push(Case::new("encoder_layer_bert_unfused", encoder_layer).with_passes(PassOptions::none()));
    let prefill = Decoder { b: 2, sq: 3, past: 5 };
    let decode = Decoder { b: 1, sq: 1, past: 7 };
    out.push(Case::new("decoder_layer_gqa_kv_cache", move |c| decoder_layer(c, prefill)));
    out.push(
        Case::new("decoder_layer_gqa_kv_cache_unfused", move |c| decoder_layer(c, prefill))
            .with_passes(PassOptions::none()),
    );
    out.push(Case::new("decoder_layer_decode_step", move |c| decoder_layer(c, decode)));
}

/// Weights of a linear layer `inp → out` in PyTorch layout, scaled like a trained layer's
/// (about 1/sqrt(inp)).
fn weight(c: &mut CaseCtx, name: &str, out: usize, inp: usize) -> Result<NodeId, IrError> {
    let r = 1.5 / (inp as f32).sqrt();
    c.param_f32(name, &[out, inp], -r, r)
}

/// BERT layer on x [B·S, H] (the benchmark's input layout), B = 2, S = 7, H = 32, 4 heads,
/// FFN 64; batch 1 has its last 3 positions padded. The layer is rlx-models' encoder builder,
/// the one `rlx bench` and the embedder run.
fn encoder_layer(c: &mut CaseCtx) -> Result<Vec<NodeId>, IrError> {
    const B: usize = 2;
    const S: usize = 7;
    const H: usize = 32;
    let cfg = rlx_models::BertConfig {
        num_hidden_layers: 1,
        hidden_size: H,
        num_attention_heads: 4,
        intermediate_size: 64,
        ..rlx_models::BertConfig::base()
    };
    let x = c.input_f32("x", &[B * S, H], -1.0, 1.0)?;
    let keep: Vec<bool> = (0..B * S).map(|i| !(i >= S && i % S >= S - 3)).collect();
    let mask = c.input_tensor("mask", Tensor::from_bool([B, S], keep)?)?;
    let out = rlx_models::encoder_layers(c, &cfg, x, Some(mask), B, S)?;
    c.fill_params(crate::trained_like)?;
    Ok(vec![out])
}

/// Batch, new tokens and cached tokens of a decoder step.
#[derive(Clone, Copy, Debug)]
struct Decoder {
    b: usize,
    sq: usize,
    past: usize,
}

/// Decoder layer, hidden 32, 4 query heads and 2 KV heads of dim 8, FFN 48. Outputs the hidden
/// state and the updated K and V caches.
fn decoder_layer(c: &mut CaseCtx, d: Decoder) -> Result<Vec<NodeId>, IrError> {
    const H: usize = 32;
    const HQ: usize = 4;
    const HKV: usize = 2;
    const D: usize = 8;
    const FFN: usize = 48;
    let Decoder { b, sq, past } = d;
    let x = c.input_f32("x", &[b, sq, H], -1.0, 1.0)?;
    let past_k = c.input_f32("past_k", &[b, past, HKV, D], -1.0, 1.0)?;
    let past_v = c.input_f32("past_v", &[b, past, HKV, D], -1.0, 1.0)?;
    // The new tokens sit at positions past .. past + sq.
    let (cos, sin) = rope_tables(past, sq, D)?;
    let cos = c.input_tensor("cos", cos)?;
    let sin = c.input_tensor("sin", sin)?;

    let g1 = c.param_f32("attn_norm.gamma", &[H], 0.8, 1.2)?;
    let h = c.rms_norm(x, Some(g1), -1, 1e-6)?;
    let wq = weight(c, "attn.q.weight", HQ * D, H)?;
    let wk = weight(c, "attn.k.weight", HKV * D, H)?;
    let wv = weight(c, "attn.v.weight", HKV * D, H)?;
    let q = c.linear(h, wq, None)?;
    let q = c.reshape(q, &[b, sq, HQ, D])?;
    let k = c.linear(h, wk, None)?;
    let k = c.reshape(k, &[b, sq, HKV, D])?;
    let v = c.linear(h, wv, None)?;
    let v = c.reshape(v, &[b, sq, HKV, D])?;
    let q = c.rope(q, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, D)?;
    let k = c.rope(k, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, D)?;
    let k_all = c.concat(&[past_k, k], 1)?;
    let v_all = c.concat(&[past_v, v], 1)?;
    let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Causal);
    let a = c.attention(q, k_all, v_all, None, spec)?;
    let a = c.reshape(a, &[b, sq, HQ * D])?;
    let wo = weight(c, "attn.out.weight", H, HQ * D)?;
    let o = c.linear(a, wo, None)?;
    let x2 = c.add(x, o)?;

    let g2 = c.param_f32("mlp_norm.gamma", &[H], 0.8, 1.2)?;
    let h2 = c.rms_norm(x2, Some(g2), -1, 1e-6)?;
    let (wg, wu) = (weight(c, "mlp.gate.weight", FFN, H)?, weight(c, "mlp.up.weight", FFN, H)?);
    let gate = c.linear(h2, wg, None)?;
    let gate = c.silu(gate)?;
    let up = c.linear(h2, wu, None)?;
    let m = c.mul(gate, up)?;
    let wd = weight(c, "mlp.down.weight", H, FFN)?;
    let down = c.linear(m, wd, None)?;
    Ok(vec![c.add(x2, down)?, k_all, v_all])
}
