//! Composite builders: decomposed at build time into primitive ops (no op variant of their own).
//! Each runs atomically, so a failure leaves no partial nodes behind.

use rlx_ir::{DType, Graph, IrError, NodeId, QuantType, Shape, ShapeList, Tensor};

/// Layers built from a few primitives: `linear`, `fma`, group and batch norm, `softplus`, the nvfp4 linear.
pub trait LayerExt: AsMut<Graph> {
    /// PyTorch `Linear`: `x @ wᵀ (+ bias)` with `w` laid out `[out, in]`.
    fn linear(&mut self, x: NodeId, w: NodeId, bias: Option<NodeId>) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let y = g.matmul_t(x, w, false, true)?;
            match bias {
                Some(b) => g.add(y, b),
                None => Ok(y),
            }
        })
    }

    /// `a * b + c`.
    fn fma(&mut self, a: NodeId, b: NodeId, c: NodeId) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let p = g.mul(a, b)?;
            g.add(p, c)
        })
    }

    /// Group norm of `x` `[N, C, ...]`: normalises each of `groups` channel groups (with its
    /// spatial extent) to zero mean and unit variance (biased), then applies a per-channel
    /// affine `gamma`/`beta` (`[C]` each; omitted means identity).
    fn group_norm(
        &mut self,
        x: NodeId,
        groups: usize,
        gamma: Option<NodeId>,
        beta: Option<NodeId>,
        eps: f32,
    ) -> Result<NodeId, IrError> {
        const OP: &str = "group_norm";
        self.as_mut().atomically(|g| {
            let t = g.ty_for(OP, x)?.clone();
            let dims = t.shape.dims().to_vec();
            let (n, c) = match dims[..] {
                [n, c, ..] => (n, c),
                _ => return Err(attr(OP, "rank", &t.shape, "x must be [N, C, ...] (rank ≥ 2)")),
            };
            if groups == 0 || c % groups != 0 {
                return Err(attr(
                    OP,
                    "groups",
                    &t.shape,
                    format!("groups = {groups} must be ≥ 1 and divide C = {c}"),
                ));
            }
            float_dtype(OP, t.dtype)?;
            let rest = n.checked_mul(groups).and_then(|ng| t.numel().checked_div(ng)).unwrap_or(0);
            let xr = g.reshape(x, &[n, groups, rest])?;
            let normed = normalise_last(g, xr, t.dtype, eps)?;
            let y = g.reshape(normed, &dims)?;
            channel_affine(g, OP, y, &t.shape, gamma, beta)
        })
    }

    /// Inference batch norm of `x` `[N, C, ...]` with running `mean`/`var` (`[C]` each):
    /// `(x − mean) / sqrt(var + eps) · gamma + beta`, per channel.
    fn batch_norm(
        &mut self,
        x: NodeId,
        mean: NodeId,
        var: NodeId,
        gamma: Option<NodeId>,
        beta: Option<NodeId>,
        eps: f32,
    ) -> Result<NodeId, IrError> {
        const OP: &str = "batch_norm";
        self.as_mut().atomically(|g| {
            let t = g.ty_for(OP, x)?.clone();
            if t.shape.rank() < 2 {
                return Err(attr(OP, "rank", &t.shape, "x must be [N, C, ...] (rank ≥ 2)"));
            }
            float_dtype(OP, t.dtype)?;
            let m = per_channel(g, OP, mean, &t.shape)?;
            let v = per_channel(g, OP, var, &t.shape)?;
            let e = g.constant(Tensor::from_f64(Shape::scalar(), t.dtype, &[eps as f64])?)?;
            let ve = g.add(v, e)?;
            let inv = g.rsqrt(ve)?;
            let d = g.sub(x, m)?;
            let y = g.mul(d, inv)?;
            channel_affine(g, OP, y, &t.shape, gamma, beta)
        })
    }

    /// `global_scale · (x · dequant(w)ᵀ)` for an [`QuantType::NvFp4`] weight: the quantized
    /// matmul followed by the per-tensor scale that nvfp4 keeps outside its blocks (as
    /// [`rlx_ir::quantize_nvfp4`] returns it). Shapes as [`Graph::quant_matmul`]; a scale of
    /// exactly 1 adds no node.
    fn nvfp4_matmul(&mut self, x: NodeId, w: NodeId, global_scale: f32) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let y = g.quant_matmul(x, w, QuantType::NvFp4)?;
            if global_scale == 1.0 {
                return Ok(y);
            }
            let s = g.scalar(global_scale)?;
            g.mul(y, s)
        })
    }

    /// PyTorch's `softplus` (beta 1, threshold 20): x above 20, else log(1 + eˣ), the log1p
    /// computed stably as `log(u) · e / (u − 1)` with u = 1 + e (and e itself where u rounds to
    /// 1), so small results keep their relative precision. NaN in gives NaN out.
    fn softplus(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let e = g.exp(x)?;
            let one = g.scalar(1.0)?;
            let u = g.add(e, one)?;
            let um1 = g.sub(u, one)?;
            let ratio = g.div(e, um1)?;
            let lu = g.log(u)?;
            let log1p = g.mul(lu, ratio)?;
            let tiny = g.eq(u, one)?;
            let log1p = g.where_(tiny, e, log1p)?;
            let twenty = g.scalar(20.0)?;
            let big = g.gt(x, twenty)?;
            g.where_(big, x, log1p)
        })
    }
}

impl LayerExt for Graph {}

/// `(x − mean) · rsqrt(var + eps)` over the last axis (biased variance).
fn normalise_last(g: &mut Graph, x: NodeId, dtype: DType, eps: f32) -> Result<NodeId, IrError> {
    let mean = g.mean(x, &[-1], true)?;
    let d = g.sub(x, mean)?;
    let sq = g.square(d)?;
    let var = g.mean(sq, &[-1], true)?;
    let e = g.constant(Tensor::from_f64(Shape::scalar(), dtype, &[eps as f64])?)?;
    let ve = g.add(var, e)?;
    let inv = g.rsqrt(ve)?;
    g.mul(d, inv)
}

/// `y · gamma + beta` with `[C]` vectors broadcast over axis 1 of `x_shape`.
fn channel_affine(
    g: &mut Graph,
    op: &'static str,
    y: NodeId,
    x_shape: &Shape,
    gamma: Option<NodeId>,
    beta: Option<NodeId>,
) -> Result<NodeId, IrError> {
    let mut y = y;
    if let Some(gm) = gamma {
        let gr = per_channel(g, op, gm, x_shape)?;
        y = g.mul(y, gr)?;
    }
    if let Some(b) = beta {
        let br = per_channel(g, op, b, x_shape)?;
        y = g.add(y, br)?;
    }
    Ok(y)
}

/// A `[C]` vector reshaped to `[C, 1, …]` so it broadcasts over axis 1 of `x_shape`.
fn per_channel(g: &mut Graph, op: &'static str, v: NodeId, x_shape: &Shape) -> Result<NodeId, IrError> {
    let c = x_shape.dims()[1];
    let vs = g.shape_of(op, v)?;
    if vs.dims() != [c] {
        return Err(IrError::ShapeMismatch {
            op,
            shapes: ShapeList(vec![x_shape.clone(), vs]),
            reason: format!("per-channel parameters must be 1-D [C] = [{c}]"),
        });
    }
    let mut dims = vec![1; x_shape.rank() - 1];
    dims[0] = c;
    g.reshape(v, &dims)
}

/// An `Attribute` error of `op` (shared by the composites).
pub(crate) fn attr(op: &'static str, a: &'static str, shape: &Shape, reason: impl Into<String>) -> IrError {
    IrError::Attribute { op, attr: a, shape: shape.clone(), reason: reason.into() }
}

/// `d` must be a float dtype, or a `DType` error of `op` on operand 0.
pub(crate) fn float_dtype(op: &'static str, d: DType) -> Result<(), IrError> {
    if !d.is_float() {
        return Err(IrError::DType {
            op,
            operand: 0,
            got: d,
            expected: "f32, f16 or bf16 (cast it first)".into(),
        });
    }
    Ok(())
}
