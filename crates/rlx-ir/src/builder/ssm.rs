//! Builders of the recurrences of [`crate::ssm`]: the native `SelectiveScan` and
//! `GatedDeltaRule` ops, and the composites that add the elementwise parts around them (delta
//! bias, skip term, gate, q/k normalisation) as PyTorch's reference functions do.

use crate::{Graph, IrError, NodeId, Op, ScanOutput};

/// The optional parts of mamba_ssm's `selective_scan_fn` around the scan itself.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SelectiveScanOpts {
    /// Skip weight D [D]: adds `D[d] · u` to y.
    pub d: Option<NodeId>,
    /// Gate z [B, D, L]: y becomes `y · silu(z)` (after the skip term).
    pub z: Option<NodeId>,
    /// Bias [D] added to delta before the softplus.
    pub delta_bias: Option<NodeId>,
    /// δ = softplus(delta + bias) when true, delta + bias otherwise.
    pub delta_softplus: bool,
}

/// The options of the gated delta rule composite ([`Graph::gated_delta_rule`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GatedDeltaOpts {
    /// Multiplies q; `None` is 1/√K, as fla and transformers default it.
    pub scale: Option<f32>,
    /// L2-normalise q and k over their last axis first (`use_qk_l2norm_in_kernel`):
    /// `x · rsqrt(Σ x² + 1e-6)`, transformers' `l2norm`.
    pub l2norm_qk: bool,
}

impl Graph {
    /// The native selective scan (see [`crate::ssm`]): u, delta [B, D, L], a [D, N], b and c
    /// [B, G, N, L] (F32, G divides D) → y [B, D, L] for [`ScanOutput::Y`], or the state after
    /// the last step [B, D, N] for [`ScanOutput::LastState`]. Errors name every shape.
    #[allow(clippy::too_many_arguments)]
    pub fn selective_scan_op(
        &mut self,
        u: NodeId,
        delta: NodeId,
        a: NodeId,
        b: NodeId,
        c: NodeId,
        delta_softplus: bool,
        output: ScanOutput,
    ) -> Result<NodeId, IrError> {
        self.push(Op::SelectiveScan { delta_softplus, output }, &[u, delta, a, b, c])
    }

    /// mamba_ssm's `selective_scan_fn(u, delta, A, B, C, D, z, delta_bias, delta_softplus)`:
    /// u, delta [B, D, L], a [D, N], b and c [B, N, L] (one group) or [B, G, N, L] (G divides
    /// D; channel d reads group d / (D / G)), the options as [`SelectiveScanOpts`] says.
    /// Returns y [B, D, L]. Atomic: a failure leaves no nodes behind.
    pub fn selective_scan(
        &mut self,
        u: NodeId,
        delta: NodeId,
        a: NodeId,
        b: NodeId,
        c: NodeId,
        opts: &SelectiveScanOpts,
    ) -> Result<NodeId, IrError> {
        self.atomically(|g| Ok(g.scan_parts(u, delta, a, b, c, opts, false)?.0))
    }

    /// [`Graph::selective_scan`] and the state after the last step [B, D, N] (mamba_ssm's
    /// `return_last_state=True`), as (y, last_state).
    pub fn selective_scan_with_state(
        &mut self,
        u: NodeId,
        delta: NodeId,
        a: NodeId,
        b: NodeId,
        c: NodeId,
        opts: &SelectiveScanOpts,
    ) -> Result<(NodeId, NodeId), IrError> {
        self.atomically(|g| {
            let (y, state) = g.scan_parts(u, delta, a, b, c, opts, true)?;
            let state = state.ok_or_else(|| IrError::Attribute {
                op: "selective_scan",
                attr: "output",
                shape: crate::Shape::scalar(),
                reason: "the last state was not built".into(),
            })?;
            Ok((y, state))
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn scan_parts(
        &mut self,
        u: NodeId,
        delta: NodeId,
        a: NodeId,
        b: NodeId,
        c: NodeId,
        opts: &SelectiveScanOpts,
        with_state: bool,
    ) -> Result<(NodeId, Option<NodeId>), IrError> {
        let b = self.grouped_bc(b)?;
        let c = self.grouped_bc(c)?;
        let mut delta = delta;
        if let Some(bias) = opts.delta_bias {
            let channels = self.channels_col(bias)?;
            delta = self.add(delta, channels)?;
        }
        let soft = opts.delta_softplus;
        let mut y = self.selective_scan_op(u, delta, a, b, c, soft, ScanOutput::Y)?;
        let state = if with_state {
            Some(self.selective_scan_op(u, delta, a, b, c, soft, ScanOutput::LastState)?)
        } else {
            None
        };
        if let Some(d) = opts.d {
            let d = self.channels_col(d)?;
            let skip = self.mul(u, d)?;
            y = self.add(y, skip)?;
        }
        if let Some(z) = opts.z {
            let gate = self.silu(z)?;
            y = self.mul(y, gate)?;
        }
        Ok((y, state))
    }

    /// B or C of 3-D [B, N, L] as [B, 1, N, L]; 4-D ones as they are.
    fn grouped_bc(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        match *self.shape_of("selective_scan", x)?.dims() {
            [b, n, l] => self.reshape(x, &[b, 1, n, l]),
            _ => Ok(x),
        }
    }

    /// A per-channel vector [D] as a column [D, 1] that broadcasts over [B, D, L].
    fn channels_col(&mut self, v: NodeId) -> Result<NodeId, IrError> {
        let shape = self.shape_of("selective_scan", v)?;
        match *shape.dims() {
            [d] => self.reshape(v, &[d, 1]),
            _ => Err(IrError::Attribute {
                op: "selective_scan",
                attr: "D / delta_bias",
                shape,
                reason: "the skip weight D and delta_bias must be 1-D [channels]".into(),
            }),
        }
    }

    /// The native gated delta rule (see [`crate::ssm`]): q, k [B, L, H, K], v [B, L, H, V],
    /// g (log decay) and beta [B, L, H], all F32, q multiplied by `scale` → o [B, L, H, V] for
    /// [`ScanOutput::Y`], the last state [B, H, K, V] for [`ScanOutput::LastState`].
    #[allow(clippy::too_many_arguments)]
    pub fn gated_delta_rule_op(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        g: NodeId,
        beta: NodeId,
        scale: f32,
        output: ScanOutput,
    ) -> Result<NodeId, IrError> {
        self.push(Op::GatedDeltaRule { scale, output }, &[q, k, v, g, beta])
    }

    /// transformers' `torch_recurrent_gated_delta_rule(q, k, v, g, beta, use_qk_l2norm_in_kernel)`
    /// (fla's `fused_recurrent_gated_delta_rule`) from a zero state: shapes as
    /// [`Graph::gated_delta_rule_op`], options as [`GatedDeltaOpts`]. Returns o [B, L, H, V].
    pub fn gated_delta_rule(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        g: NodeId,
        beta: NodeId,
        opts: &GatedDeltaOpts,
    ) -> Result<NodeId, IrError> {
        self.atomically(|gr| {
            let head_dim = gr.shape_of("gated_delta_rule", q)?.dims().last().copied().unwrap_or(0);
            let scale = opts.scale.unwrap_or(1.0 / (head_dim.max(1) as f32).sqrt());
            let (q, k) = if opts.l2norm_qk { (gr.l2norm_last(q)?, gr.l2norm_last(k)?) } else { (q, k) };
            gr.gated_delta_rule_op(q, k, v, g, beta, scale, ScanOutput::Y)
        })
    }

    /// `x · rsqrt(Σ x² + 1e-6)` over the last axis (transformers' `l2norm`).
    fn l2norm_last(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        let sq = self.square(x)?;
        let sum = self.sum(sq, &[-1], true)?;
        let eps = self.scalar(1e-6)?;
        let sum = self.add(sum, eps)?;
        let inv = self.rsqrt(sum)?;
        self.mul(x, inv)
    }
}
