//! A BERT-style encoder built from the IR, with deterministic random weights: the `bert`
//! workload of `rlx bench`, and usable from tests (it depends on the public API only; include it
//! with `#[path = "../src/cli/bert_graph.rs"] mod bert_graph;`).
//!
//! Each layer is post-norm BERT: self-attention (no mask, [B, S, H, D] layout), output
//! projection, residual add + LayerNorm, FFN with erf GELU, residual add + LayerNorm. Linear
//! weights are `[out, in]` as in PyTorch checkpoints. Params are named
//! `layer{i}.{q,k,v,o,ffn.up,ffn.down}.{weight,bias}` and `layer{i}.{ln1,ln2}.{gamma,beta}`.
#![allow(dead_code)]

use rlx::prelude::*;

/// Sizes of the encoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BertConfig {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub ffn: usize,
    pub batch: usize,
    pub seq: usize,
}

impl BertConfig {
    /// BERT-base: 12 layers, hidden 768, 12 heads, FFN 3072, sequence 128.
    pub fn base(batch: usize) -> Self {
        BertConfig { layers: 12, hidden: 768, heads: 12, ffn: 3072, batch, seq: 128 }
    }

    /// Rows of the input `x`: batch × seq.
    pub fn tokens(&self) -> usize {
        self.batch * self.seq
    }

    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// Multiply-add FLOPs (2 per MAC) of the matmuls and attention, the work that dominates;
    /// norms and elementwise ops are left out.
    pub fn flops(&self) -> f64 {
        let (t, h, f) = (self.tokens() as f64, self.hidden as f64, self.ffn as f64);
        let projections = 2.0 * t * h * h * 4.0;
        let ffn = 2.0 * t * h * f * 2.0;
        // q·kᵀ and p·v: batch × heads × seq × seq × head_dim each.
        let attention =
            2.0 * 2.0 * (self.batch * self.heads) as f64 * (self.seq * self.seq * self.head_dim()) as f64;
        self.layers as f64 * (projections + ffn + attention)
    }
}

/// The encoder graph: input `x` f32[batch·seq, hidden], one output of the same shape.
pub fn bert_encoder(cfg: &BertConfig) -> Result<Graph, rlx::Error> {
    let (t, h, f) = (cfg.tokens(), cfg.hidden, cfg.ffn);
    let mut g = Graph::new(format!("bert_{}l_b{}_s{}", cfg.layers, cfg.batch, cfg.seq));
    let mut x = g.input("x", &[t, h], DType::F32)?;
    for layer in 0..cfg.layers {
        let p = |part: &str| format!("layer{layer}.{part}");
        let lin =
            |g: &mut Graph, name: &str, input: NodeId, i: usize, o: usize| -> Result<NodeId, rlx::Error> {
                let w = g.param(&format!("{name}.weight"), &[o, i], DType::F32)?;
                let b = g.param(&format!("{name}.bias"), &[o], DType::F32)?;
                Ok(g.linear(input, w, Some(b))?)
            };
        let heads = [cfg.batch, cfg.seq, cfg.heads, cfg.head_dim()];
        let q = lin(&mut g, &p("q"), x, h, h)?;
        let k = lin(&mut g, &p("k"), x, h, h)?;
        let v = lin(&mut g, &p("v"), x, h, h)?;
        let (q, k, v) = (g.reshape(q, &heads)?, g.reshape(k, &heads)?, g.reshape(v, &heads)?);
        let spec =
            AttentionSpec { layout: AttnLayout::Bshd, mask: MaskKind::None, scale: None, softcap: None };
        let a = g.attention(q, k, v, None, spec)?;
        let a = g.reshape(a, &[t, h])?;
        let o = lin(&mut g, &p("o"), a, h, h)?;
        let r1 = g.add(o, x)?;
        let ln1_g = g.param(&p("ln1.gamma"), &[h], DType::F32)?;
        let ln1_b = g.param(&p("ln1.beta"), &[h], DType::F32)?;
        let x1 = g.layer_norm(r1, Some(ln1_g), Some(ln1_b), -1, 1e-12)?;
        let up = lin(&mut g, &p("ffn.up"), x1, h, f)?;
        let up = g.gelu(up)?;
        let down = lin(&mut g, &p("ffn.down"), up, f, h)?;
        let r2 = g.add(down, x1)?;
        let ln2_g = g.param(&p("ln2.gamma"), &[h], DType::F32)?;
        let ln2_b = g.param(&p("ln2.beta"), &[h], DType::F32)?;
        x = g.layer_norm(r2, Some(ln2_g), Some(ln2_b), -1, 1e-12)?;
    }
    g.set_outputs(&[x])?;
    Ok(g)
}

/// Deterministic values uniform in [-scale, scale) (a 64-bit LCG; no dependency).
pub fn uniform(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x2545_F491_4F6C_DD1D);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            (2.0 * u - 1.0) * scale
        })
        .collect()
}

/// A value for param `name` of type `ty`: LayerNorm gammas near 1, betas and biases small,
/// weights with variance 1/fan_in (so activations keep their scale through the layers).
pub fn param_value(name: &str, ty: &TensorType, seed: u64) -> Vec<f32> {
    let n = ty.numel();
    if name.ends_with(".gamma") {
        return uniform(n, seed, 0.1).into_iter().map(|v| 1.0 + v).collect();
    }
    if name.ends_with(".beta") || name.ends_with(".bias") {
        return uniform(n, seed, 0.05);
    }
    let fan_in = ty.shape.dims().last().copied().unwrap_or(1).max(1);
    uniform(n, seed, (3.0 / fan_in as f32).sqrt())
}

/// Sets every param of `exe` (compiled from `g`) with [`param_value`]; seeds follow the order
/// of `g.params()`, so every device gets the same weights.
pub fn set_params(exe: &mut Executable, g: &Graph) -> Result<(), rlx::Error> {
    for (i, (name, _, ty)) in g.params().iter().enumerate() {
        exe.set_param(name, &param_value(name, ty, 1000 + i as u64))?;
    }
    Ok(())
}
