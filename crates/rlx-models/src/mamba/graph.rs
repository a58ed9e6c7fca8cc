//! [`mamba_graph`]: the full forward of a `MambaForCausalLM` over one sequence of L tokens, as
//! transformers' MambaModel computes it without a cache:
//!
//! ```text
//! x = embeddings[ids]                                             [L, H]
//! per layer:  h = RMSNorm(x)
//!             xs, z = split(in_proj(h))                           [L, I] each
//!             xs = silu(causal depthwise conv1d(xs) + bias)       [1, I, L]
//!             dt, B, C = split(x_proj(xs))                        [L, R], [L, N], [L, N]
//!             y = selective_scan(xs, dt_proj.weight · dt, −exp(A_log), B, C,
//!                                D, z, delta_bias = dt_proj.bias, softplus)
//!             x = x + out_proj(y)
//! logits = lm_head(RMSNorm_f(x))                                  [L, V]
//! ```
//!
//! Param names are the checkpoint's (`backbone.layers.{i}.mixer.in_proj.weight`, …), all f32.

use super::MambaConfig;
use rlx_ir::{DType, Graph, IrError, NodeId};
use rlx_nn::prelude::*;

/// Name of the I32 \[L\] token-id input.
pub const INPUT_IDS: &str = "input_ids";
/// The embedding table's param name (also the tied lm_head).
pub const EMBEDDINGS: &str = "backbone.embeddings.weight";
/// The untied lm_head's param name.
pub const LM_HEAD: &str = "lm_head.weight";

/// The causal forward over `len` tokens: input [`INPUT_IDS`], one output, logits [len, vocab].
pub fn mamba_graph(cfg: &MambaConfig, len: usize) -> Result<Graph, IrError> {
    let mut g = Graph::new("mamba");
    let (h, v) = (cfg.hidden_size, cfg.vocab_size);
    let ids = g.input(INPUT_IDS, &[len], DType::I32)?;
    let table = g.param(EMBEDDINGS, &[v, h], DType::F32)?;
    let mut x = g.embedding(table, ids)?;
    for i in 0..cfg.num_hidden_layers {
        x = layer(&mut g, cfg, i, x, len)?;
    }
    let norm_f = g.param("backbone.norm_f.weight", &[h], DType::F32)?;
    let x = g.rms_norm(x, Some(norm_f), -1, cfg.layer_norm_epsilon)?;
    let head = if cfg.tie_word_embeddings { table } else { g.param(LM_HEAD, &[v, h], DType::F32)? };
    let logits = g.linear(x, head, None)?;
    g.set_outputs(&[logits])?;
    Ok(g)
}

/// [rows, cols] → [1, cols, rows]: a sequence-major activation as conv/scan channels.
fn channels(g: &mut Graph, x: NodeId, rows: usize, cols: usize) -> Result<NodeId, IrError> {
    let t = g.transpose(x, 0, 1)?;
    g.reshape(t, &[1, cols, rows])
}

fn layer(g: &mut Graph, cfg: &MambaConfig, i: usize, x: NodeId, len: usize) -> Result<NodeId, IrError> {
    let (h, inner, n, r, k) =
        (cfg.hidden_size, cfg.intermediate_size, cfg.state_size, cfg.time_step_rank, cfg.conv_kernel);
    let p = format!("backbone.layers.{i}");
    let param = |g: &mut Graph, name: &str, dims: &[usize]| g.param(&format!("{p}.{name}"), dims, DType::F32);
    let norm = param(g, "norm.weight", &[h])?;
    let in_w = param(g, "mixer.in_proj.weight", &[2 * inner, h])?;
    let in_b = if cfg.use_bias { Some(param(g, "mixer.in_proj.bias", &[2 * inner])?) } else { None };
    let conv_w = param(g, "mixer.conv1d.weight", &[inner, 1, k])?;
    let conv_b = if cfg.use_conv_bias { Some(param(g, "mixer.conv1d.bias", &[inner])?) } else { None };
    let x_proj = param(g, "mixer.x_proj.weight", &[r + 2 * n, inner])?;
    let dt_w = param(g, "mixer.dt_proj.weight", &[inner, r])?;
    let dt_b = param(g, "mixer.dt_proj.bias", &[inner])?;
    let a_log = param(g, "mixer.A_log", &[inner, n])?;
    let d_skip = param(g, "mixer.D", &[inner])?;
    let out_w = param(g, "mixer.out_proj.weight", &[h, inner])?;
    let out_b = if cfg.use_bias { Some(param(g, "mixer.out_proj.bias", &[h])?) } else { None };

    let hs = g.rms_norm(x, Some(norm), -1, cfg.layer_norm_epsilon)?;
    let proj = g.linear(hs, in_w, in_b)?;
    let xs = g.slice(proj, -1, 0, inner, 1)?;
    let z = g.slice(proj, -1, inner, 2 * inner, 1)?;
    // Causal depthwise conv: pad k − 1 on both sides, keep the first L outputs.
    let xs = channels(g, xs, len, inner)?;
    let conv = g.conv1d(xs, conv_w, conv_b, 1, k - 1, 1, inner)?;
    let conv = g.slice(conv, -1, 0, len, 1)?;
    let xs = g.silu(conv)?;
    // x_proj on the sequence-major view of the conv output.
    let xs_rows = g.reshape(xs, &[inner, len])?;
    let xs_rows = g.transpose(xs_rows, 0, 1)?;
    let dbc = g.linear(xs_rows, x_proj, None)?;
    let dt = g.slice(dbc, -1, 0, r, 1)?;
    let bm = g.slice(dbc, -1, r, r + n, 1)?;
    let cm = g.slice(dbc, -1, r + n, r + 2 * n, 1)?;
    let delta = g.linear(dt, dt_w, None)?;
    let delta = channels(g, delta, len, inner)?;
    let bm = channels(g, bm, len, n)?;
    let cm = channels(g, cm, len, n)?;
    let z = channels(g, z, len, inner)?;
    let a = g.exp(a_log)?;
    let a = g.neg(a)?;
    let opts =
        SelectiveScanOpts { d: Some(d_skip), z: Some(z), delta_bias: Some(dt_b), delta_softplus: true };
    let y = g.selective_scan(xs, delta, a, bm, cm, &opts)?;
    let y = g.reshape(y, &[inner, len])?;
    let y = g.transpose(y, 0, 1)?;
    let out = g.linear(y, out_w, out_b)?;
    g.add(x, out)
}
