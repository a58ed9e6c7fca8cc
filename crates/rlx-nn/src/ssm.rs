//! The composites around the ssm family's native ops ([`rlx_ir::ssm`]): mamba_ssm's
//! `selective_scan_fn` (delta bias, skip term, gate around `SelectiveScan`) and transformers'
//! gated delta rule (q/k normalisation around `GatedDeltaRule`), as PyTorch's reference
//! functions write them.

use rlx_ir::{Graph, IrError, NodeId, ScanOutput};

/// The optional parts of mamba_ssm's `selective_scan_fn` around the scan itself.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SelectiveScanOpts {
    /// Skip weight D \[D\]: adds `D[d] · u` to y.
    pub d: Option<NodeId>,
    /// Gate z [B, D, L]: y becomes `y · silu(z)` (after the skip term).
    pub z: Option<NodeId>,
    /// Bias \[D\] added to delta before the softplus.
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

/// mamba_ssm's selective scan and the gated delta rule with their elementwise parts around the native ops.
pub trait SsmExt: AsMut<Graph> {
    /// mamba_ssm's `selective_scan_fn(u, delta, A, B, C, D, z, delta_bias, delta_softplus)`:
    /// u, delta [B, D, L], a [D, N], b and c [B, N, L] (one group) or [B, G, N, L] (G divides
    /// D; channel d reads group d / (D / G)), the options as [`SelectiveScanOpts`] says.
    /// Returns y [B, D, L]. Atomic: a failure leaves no nodes behind.
    fn selective_scan(
        &mut self,
        u: NodeId,
        delta: NodeId,
        a: NodeId,
        b: NodeId,
        c: NodeId,
        opts: &SelectiveScanOpts,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| Ok(scan_parts(g, u, delta, a, b, c, opts, false)?.0))
    }

    /// [`Graph::selective_scan`] and the state after the last step [B, D, N] (mamba_ssm's
    /// `return_last_state=True`), as (y, last_state).
    fn selective_scan_with_state(
        &mut self,
        u: NodeId,
        delta: NodeId,
        a: NodeId,
        b: NodeId,
        c: NodeId,
        opts: &SelectiveScanOpts,
    ) -> Result<(NodeId, NodeId), IrError> {
        self.as_mut().atomically(|g| {
            let (y, state) = scan_parts(g, u, delta, a, b, c, opts, true)?;
            let state = state.ok_or_else(|| IrError::Attribute {
                op: "selective_scan",
                attr: "output",
                shape: rlx_ir::Shape::scalar(),
                reason: "the last state was not built".into(),
            })?;
            Ok((y, state))
        })
    }

    /// transformers' `torch_recurrent_gated_delta_rule(q, k, v, g, beta, use_qk_l2norm_in_kernel)`
    /// (fla's `fused_recurrent_gated_delta_rule`) from a zero state: shapes as
    /// [`Graph::gated_delta_rule_op`], options as [`GatedDeltaOpts`]. Returns o [B, L, H, V].
    fn gated_delta_rule(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        g: NodeId,
        beta: NodeId,
        opts: &GatedDeltaOpts,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|gr| {
            let head_dim = gr.shape_of("gated_delta_rule", q)?.dims().last().copied().unwrap_or(0);
            let scale = opts.scale.unwrap_or(1.0 / (head_dim.max(1) as f32).sqrt());
            let (q, k) = if opts.l2norm_qk { (l2norm_last(gr, q)?, l2norm_last(gr, k)?) } else { (q, k) };
            gr.gated_delta_rule_op(q, k, v, g, beta, scale, ScanOutput::Y)
        })
    }
}

impl SsmExt for Graph {}

#[allow(clippy::too_many_arguments)]
fn scan_parts(
    g: &mut Graph,
    u: NodeId,
    delta: NodeId,
    a: NodeId,
    b: NodeId,
    c: NodeId,
    opts: &SelectiveScanOpts,
    with_state: bool,
) -> Result<(NodeId, Option<NodeId>), IrError> {
    let b = grouped_bc(g, b)?;
    let c = grouped_bc(g, c)?;
    let mut delta = delta;
    if let Some(bias) = opts.delta_bias {
        let channels = channels_col(g, bias)?;
        delta = g.add(delta, channels)?;
    }
    let soft = opts.delta_softplus;
    let mut y = g.selective_scan_op(u, delta, a, b, c, soft, ScanOutput::Y)?;
    let state = if with_state {
        Some(g.selective_scan_op(u, delta, a, b, c, soft, ScanOutput::LastState)?)
    } else {
        None
    };
    if let Some(d) = opts.d {
        let d = channels_col(g, d)?;
        let skip = g.mul(u, d)?;
        y = g.add(y, skip)?;
    }
    if let Some(z) = opts.z {
        let gate = g.silu(z)?;
        y = g.mul(y, gate)?;
    }
    Ok((y, state))
}

/// B or C of 3-D [B, N, L] as [B, 1, N, L]; 4-D ones as they are.
fn grouped_bc(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    match *g.shape_of("selective_scan", x)?.dims() {
        [b, n, l] => g.reshape(x, &[b, 1, n, l]),
        _ => Ok(x),
    }
}

/// A per-channel vector [D] as a column [D, 1] that broadcasts over [B, D, L].
fn channels_col(g: &mut Graph, v: NodeId) -> Result<NodeId, IrError> {
    let shape = g.shape_of("selective_scan", v)?;
    match *shape.dims() {
        [d] => g.reshape(v, &[d, 1]),
        _ => Err(IrError::Attribute {
            op: "selective_scan",
            attr: "D / delta_bias",
            shape,
            reason: "the skip weight D and delta_bias must be 1-D [channels]".into(),
        }),
    }
}

/// `x · rsqrt(Σ x² + 1e-6)` over the last axis (transformers' `l2norm`).
fn l2norm_last(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let sq = g.square(x)?;
    let sum = g.sum(sq, &[-1], true)?;
    let eps = g.scalar(1e-6)?;
    let sum = g.add(sum, eps)?;
    let inv = g.rsqrt(sum)?;
    g.mul(x, inv)
}
