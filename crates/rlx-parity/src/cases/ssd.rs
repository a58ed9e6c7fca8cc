//! Mamba-2: the SSD scan (a decomposition into matmuls, cumsum, exp and masks) with L a
//! multiple of the chunk, not one, shorter than one chunk and L = 1; one and several groups of
//! B/C; with and without D, dt bias and softplus. And whole Mamba2Mixer blocks (in_proj → causal
//! depthwise conv1d → SiLU → SSD scan → gated group RMSNorm → out_proj) built from rlx builders,
//! their params named as transformers' `Mamba2Mixer` names them so that the torch reference can
//! load them into one.

use crate::{Case, CaseCtx};
use rlx_ir::{IrError, NodeId};
use rlx_nn::prelude::*;

/// (B, L, H, P, G, N, chunk, with D/bias/softplus)
type SsdShape = (usize, usize, usize, usize, usize, usize, usize, bool);

fn ssd_graph(c: &mut CaseCtx, (b, l, h, p, g, n, chunk, full): SsdShape) -> Result<Vec<NodeId>, IrError> {
    let x = c.input_f32("x", &[b, l, h, p], -1.0, 1.0)?;
    // Raw dt before softplus (δ ≈ 0.05 … 0.7), or a step size itself.
    let (lo, hi) = if full { (-3.0, 0.0) } else { (0.01, 0.5) };
    let dt = c.input_f32("dt", &[b, l, h], lo, hi)?;
    let a = c.param_f32("A", &[h], -2.0, -0.2)?;
    let bm = c.input_f32("B", &[b, l, g, n], -1.0, 1.0)?;
    let cm = c.input_f32("C", &[b, l, g, n], -1.0, 1.0)?;
    let opts = if full {
        SsdOpts {
            d: Some(c.param_f32("D", &[h], 0.5, 1.5)?),
            dt_bias: Some(c.param_f32("dt_bias", &[h], -1.0, 0.5)?),
            dt_softplus: true,
        }
    } else {
        SsdOpts::default()
    };
    Ok(vec![c.ssd_scan(x, dt, a, bm, cm, chunk, &opts)?])
}

/// Mamba2Mixer's shape: hidden size, heads H, head dim P, groups G, state N, conv kernel K.
#[derive(Clone, Copy)]
struct Mixer {
    batch: usize,
    len: usize,
    hidden: usize,
    heads: usize,
    head_dim: usize,
    groups: usize,
    state: usize,
    kernel: usize,
    chunk: usize,
}

/// One Mamba2Mixer forward (no cache) on x [batch, len, hidden], transformers' torch path.
fn mixer_graph(c: &mut CaseCtx, m: Mixer) -> Result<Vec<NodeId>, IrError> {
    let inner = m.heads * m.head_dim;
    let gn = m.groups * m.state;
    let conv_dim = inner + 2 * gn;
    let proj = inner + conv_dim + m.heads;
    let (b, l) = (m.batch, m.len);
    let x = c.input_f32("hidden_states", &[b, l, m.hidden], -1.0, 1.0)?;
    let in_w = c.param_f32("in_proj.weight", &[proj, m.hidden], -0.3, 0.3)?;
    let conv_w = c.param_f32("conv1d.weight", &[conv_dim, 1, m.kernel], -0.5, 0.5)?;
    let conv_b = c.param_f32("conv1d.bias", &[conv_dim], -0.2, 0.2)?;
    let dt_bias = c.param_f32("dt_bias", &[m.heads], -4.0, -1.0)?;
    let a_log = c.param_f32("A_log", &[m.heads], 0.0, 2.0)?;
    let d = c.param_f32("D", &[m.heads], 0.5, 1.5)?;
    let norm_w = c.param_f32("norm.weight", &[inner], 0.5, 1.5)?;
    let out_w = c.param_f32("out_proj.weight", &[m.hidden, inner], -0.3, 0.3)?;

    let zxbcdt = c.linear(x, in_w, None)?;
    let gate = c.slice(zxbcdt, -1, 0, inner, 1)?;
    let xbc = c.slice(zxbcdt, -1, inner, inner + conv_dim, 1)?;
    let dt = c.slice(zxbcdt, -1, inner + conv_dim, proj, 1)?;
    let xbc = c.transpose(xbc, 1, 2)?; // [B, conv_dim, L]
    let xbc = c.conv1d(xbc, conv_w, Some(conv_b), 1, m.kernel - 1, 1, conv_dim)?;
    let xbc = c.slice(xbc, -1, 0, l, 1)?;
    let xbc = c.silu(xbc)?;
    let xbc = c.transpose(xbc, 1, 2)?; // [B, L, conv_dim]
    let xs = c.slice(xbc, -1, 0, inner, 1)?;
    let bm = c.slice(xbc, -1, inner, inner + gn, 1)?;
    let cm = c.slice(xbc, -1, inner + gn, conv_dim, 1)?;
    let xs = c.reshape(xs, &[b, l, m.heads, m.head_dim])?;
    let bm = c.reshape(bm, &[b, l, m.groups, m.state])?;
    let cm = c.reshape(cm, &[b, l, m.groups, m.state])?;
    let a = c.exp(a_log)?;
    let a = c.neg(a)?;
    let opts = SsdOpts { d: Some(d), dt_bias: Some(dt_bias), dt_softplus: true };
    let y = c.ssd_scan(xs, dt, a, bm, cm, m.chunk, &opts)?;
    let y = c.reshape(y, &[b, l, inner])?;
    // MambaRMSNormGated: y · silu(gate), RMS-normalised per group of inner / G, times weight.
    let gate = c.silu(gate)?;
    let y = c.mul(y, gate)?;
    let y = c.reshape(y, &[b, l, m.groups, inner / m.groups])?;
    let y = c.rms_norm(y, None, -1, 1e-5)?;
    let y = c.reshape(y, &[b, l, inner])?;
    let y = c.mul(y, norm_w)?;
    Ok(vec![c.linear(y, out_w, None)?])
}

pub(super) fn cases(out: &mut Vec<Case>) {
    let shapes: [(&str, SsdShape); 6] = [
        ("b2_l37_h4_p8_g2_n16_chunk8", (2, 37, 4, 8, 2, 16, 8, true)),
        ("b1_l32_h2_p4_g1_n8_chunk8_plain", (1, 32, 2, 4, 1, 8, 8, false)),
        ("b1_l5_h3_p6_g3_n4_chunk16", (1, 5, 3, 6, 3, 4, 16, true)),
        ("b2_l1_h2_p5_g1_n6_chunk4", (2, 1, 2, 5, 1, 6, 4, true)),
        ("b1_l50_h4_p16_g1_n32_chunk16", (1, 50, 4, 16, 1, 32, 16, true)),
        ("b1_l9_h2_p3_g2_n5_chunk1", (1, 9, 2, 3, 2, 5, 1, true)),
    ];
    for (tag, s) in shapes {
        out.push(Case::new(format!("ssd_{tag}"), move |c| ssd_graph(c, s)));
    }
    let base = Mixer {
        batch: 2,
        len: 21,
        hidden: 16,
        heads: 4,
        head_dim: 8,
        groups: 2,
        state: 8,
        kernel: 4,
        chunk: 8,
    };
    for (tag, m) in [
        ("b2_l21_h4_p8_g2_n8_chunk8", base),
        ("b1_l1_h4_p8_g1_n16_chunk8", Mixer { batch: 1, len: 1, groups: 1, state: 16, ..base }),
        (
            "b1_l40_h2_p16_g1_n8_chunk16",
            Mixer { batch: 1, len: 40, heads: 2, head_dim: 16, groups: 1, chunk: 16, ..base },
        ),
    ] {
        out.push(Case::new(format!("mamba2_block_{tag}"), move |c| mixer_graph(c, m)));
    }
}
