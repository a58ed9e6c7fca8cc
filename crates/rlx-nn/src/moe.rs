//! Mixture-of-experts blocks built on the grouped matmul: the router, top-k and the experts'
//! SwiGLU as primitive ops, on float expert stacks or block-quantized ones ([`ExpertStack`]).

use crate::LayerExt;
use rlx_ir::{Graph, IrError, NodeId, QuantType, Shape};

/// One stack of expert matrices, as a grouped matmul reads it: float [E, N, K]
/// ([`Graph::grouped_matmul`]) or packed U8 [E, N, row_bytes] of `quant` blocks
/// ([`Graph::quant_grouped_matmul`], which decodes only the chosen experts' rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpertStack {
    pub w: NodeId,
    /// The block format of a packed stack; `None` for a float one.
    pub quant: Option<QuantType>,
}

impl ExpertStack {
    /// A float stack [E, N, K] in x's dtype.
    pub fn float(w: NodeId) -> Self {
        ExpertStack { w, quant: None }
    }

    /// A packed stack U8 [E, N, row_bytes] of `quant` blocks.
    pub fn quantized(w: NodeId, quant: QuantType) -> Self {
        ExpertStack { w, quant: Some(quant) }
    }

    /// `out[t, j, :] = w[ids[t, j]] · x[t, j or 0, :]` in x's dtype (a packed stack's F32 result
    /// is cast to it when x is narrower).
    fn apply(self, g: &mut Graph, x: NodeId, ids: NodeId) -> Result<NodeId, IrError> {
        let Some(q) = self.quant else {
            return g.grouped_matmul(x, self.w, ids);
        };
        let y = g.quant_grouped_matmul(x, self.w, ids, q)?;
        let dtype = g.ty(x)?.dtype;
        if g.ty(y)?.dtype == dtype {
            Ok(y)
        } else {
            g.cast(y, dtype)
        }
    }
}

/// Mixture-of-experts blocks on the grouped matmul.
pub trait MoeExt: AsMut<Graph> {
    /// A mixture-of-experts SwiGLU block (Qwen3-MoE, Mixtral) on x [T, H], composed of
    /// primitive ops (atomically: a failure leaves no nodes behind):
    ///
    /// ```text
    /// p = softmax(x · routerᵀ)            router [E, H]: one score per expert
    /// (v, ids) = topk(p, k)               each token's k experts, best first
    /// v = v / Σ v   (when renormalize)    transformers' norm_topk_prob
    /// g, u = split(grouped(x, gate_up, ids))   gate_up [E, 2I, H]: gate rows, then up rows
    /// y = Σ_j v[:, j] · grouped(silu(g) · u, down, ids)[:, j]   down [E, H, I]
    /// ```
    ///
    /// The experts run as two [`Graph::grouped_matmul`]s, chosen on the device; the router's
    /// math stays in x's dtype (give f32 for f32 statistics). Returns [T, H].
    fn moe_swiglu(
        &mut self,
        x: NodeId,
        router: NodeId,
        gate_up: NodeId,
        down: NodeId,
        top_k: usize,
        renormalize: bool,
    ) -> Result<NodeId, IrError> {
        let (gate_up, down) = (ExpertStack::float(gate_up), ExpertStack::float(down));
        self.moe_swiglu_stacks(x, router, gate_up, down, top_k, renormalize)
    }

    /// [`MoeExt::moe_swiglu`] on expert stacks that may be block-quantized (a GGUF file's
    /// experts): a packed stack runs as a [`Graph::quant_grouped_matmul`], which reads only the
    /// chosen experts' blocks and never decodes the stack whole. gate_up is [E, 2I, H] (float)
    /// or U8 [E, 2I, row_bytes of H], down [E, H, I] or U8 [E, H, row_bytes of I].
    fn moe_swiglu_stacks(
        &mut self,
        x: NodeId,
        router: NodeId,
        gate_up: ExpertStack,
        down: ExpertStack,
        top_k: usize,
        renormalize: bool,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let (t, h) = match g.shape_of("moe_swiglu", x)?.dims() {
                &[t, h] => (t, h),
                d => {
                    return Err(IrError::Attribute {
                        op: "moe_swiglu",
                        attr: "x",
                        shape: Shape::new(d),
                        reason: "x must be 2-D [tokens, hidden]; reshape it".into(),
                    })
                }
            };
            let gu_shape = g.shape_of("moe_swiglu", gate_up.w)?;
            let inter2 = gu_shape.dims().get(1).copied().unwrap_or(0);
            if inter2 % 2 != 0 {
                return Err(IrError::Attribute {
                    op: "moe_swiglu",
                    attr: "gate_up",
                    shape: gu_shape,
                    reason: format!(
                        "gate_up must be [experts, 2 · intermediate, hidden] (gate rows then up rows); \
                         its {inter2} rows are odd"
                    ),
                });
            }
            let logits = g.linear(x, router, None)?;
            let probs = g.softmax(logits, -1)?;
            let (mut weights, ids) = g.topk(probs, top_k, -1, true)?;
            if renormalize {
                let total = g.sum(weights, &[-1], true)?;
                weights = g.div(weights, total)?;
            }
            let x3 = g.reshape(x, &[t, 1, h])?;
            let gu = gate_up.apply(g, x3, ids)?;
            let inter = inter2 / 2;
            let gate = g.slice(gu, -1, 0, inter, 1)?;
            let up = g.slice(gu, -1, inter, 2 * inter, 1)?;
            let gate = g.silu(gate)?;
            let act = g.mul(gate, up)?;
            let y = down.apply(g, act, ids)?;
            let weights = g.reshape(weights, &[t, top_k, 1])?;
            let y = g.mul(y, weights)?;
            g.sum(y, &[1], false)
        })
    }
}

impl MoeExt for Graph {}
