//! Mixture-of-experts blocks built on the grouped matmul: the router, top-k and the experts'
//! SwiGLU as primitive ops.

use crate::LayerExt;
use rlx_ir::{Graph, IrError, NodeId, Shape};

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
            let gu_shape = g.shape_of("moe_swiglu", gate_up)?;
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
            let gu = g.grouped_matmul(x3, gate_up, ids)?;
            let inter = inter2 / 2;
            let gate = g.slice(gu, -1, 0, inter, 1)?;
            let up = g.slice(gu, -1, inter, 2 * inter, 1)?;
            let gate = g.silu(gate)?;
            let act = g.mul(gate, up)?;
            let y = g.grouped_matmul(act, down, ids)?;
            let weights = g.reshape(weights, &[t, top_k, 1])?;
            let y = g.mul(y, weights)?;
            g.sum(y, &[1], false)
        })
    }
}

impl MoeExt for Graph {}
