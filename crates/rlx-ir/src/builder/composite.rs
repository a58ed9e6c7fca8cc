//! Composite builders: decomposed at build time into primitive ops (no op variant of their own).
//! Each runs atomically, so a failure leaves no partial nodes behind.

use crate::{DType, Graph, IrError, NodeId, Shape, ShapeList, Tensor};

impl Graph {
    /// PyTorch `Linear`: `x @ wᵀ (+ bias)` with `w` laid out `[out, in]`.
    pub fn linear(&mut self, x: NodeId, w: NodeId, bias: Option<NodeId>) -> Result<NodeId, IrError> {
        self.atomically(|g| {
            let y = g.matmul_t(x, w, false, true)?;
            match bias {
                Some(b) => g.add(y, b),
                None => Ok(y),
            }
        })
    }

    /// `a * b + c`.
    pub fn fma(&mut self, a: NodeId, b: NodeId, c: NodeId) -> Result<NodeId, IrError> {
        self.atomically(|g| {
            let p = g.mul(a, b)?;
            g.add(p, c)
        })
    }

    /// Group norm of `x` `[N, C, ...]`: normalises each of `groups` channel groups (with its
    /// spatial extent) to zero mean and unit variance (biased), then applies a per-channel
    /// affine `gamma`/`beta` (`[C]` each; omitted means identity).
    pub fn group_norm(
        &mut self,
        x: NodeId,
        groups: usize,
        gamma: Option<NodeId>,
        beta: Option<NodeId>,
        eps: f32,
    ) -> Result<NodeId, IrError> {
        const OP: &str = "group_norm";
        self.atomically(|g| {
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
            let normed = g.normalise_last(xr, t.dtype, eps)?;
            let y = g.reshape(normed, &dims)?;
            g.channel_affine(OP, y, &t.shape, gamma, beta)
        })
    }

    /// Inference batch norm of `x` `[N, C, ...]` with running `mean`/`var` (`[C]` each):
    /// `(x − mean) / sqrt(var + eps) · gamma + beta`, per channel.
    pub fn batch_norm(
        &mut self,
        x: NodeId,
        mean: NodeId,
        var: NodeId,
        gamma: Option<NodeId>,
        beta: Option<NodeId>,
        eps: f32,
    ) -> Result<NodeId, IrError> {
        const OP: &str = "batch_norm";
        self.atomically(|g| {
            let t = g.ty_for(OP, x)?.clone();
            if t.shape.rank() < 2 {
                return Err(attr(OP, "rank", &t.shape, "x must be [N, C, ...] (rank ≥ 2)"));
            }
            float_dtype(OP, t.dtype)?;
            let m = g.per_channel(OP, mean, &t.shape)?;
            let v = g.per_channel(OP, var, &t.shape)?;
            let e = g.constant(Tensor::from_f64(Shape::scalar(), t.dtype, &[eps as f64])?)?;
            let ve = g.add(v, e)?;
            let inv = g.rsqrt(ve)?;
            let d = g.sub(x, m)?;
            let y = g.mul(d, inv)?;
            g.channel_affine(OP, y, &t.shape, gamma, beta)
        })
    }

    /// `(x − mean) · rsqrt(var + eps)` over the last axis (biased variance).
    fn normalise_last(&mut self, x: NodeId, dtype: DType, eps: f32) -> Result<NodeId, IrError> {
        let mean = self.mean(x, &[-1], true)?;
        let d = self.sub(x, mean)?;
        let sq = self.square(d)?;
        let var = self.mean(sq, &[-1], true)?;
        let e = self.constant(Tensor::from_f64(Shape::scalar(), dtype, &[eps as f64])?)?;
        let ve = self.add(var, e)?;
        let inv = self.rsqrt(ve)?;
        self.mul(d, inv)
    }

    /// `y · gamma + beta` with `[C]` vectors broadcast over axis 1 of `x_shape`.
    fn channel_affine(
        &mut self,
        op: &'static str,
        y: NodeId,
        x_shape: &Shape,
        gamma: Option<NodeId>,
        beta: Option<NodeId>,
    ) -> Result<NodeId, IrError> {
        let mut y = y;
        if let Some(gm) = gamma {
            let gr = self.per_channel(op, gm, x_shape)?;
            y = self.mul(y, gr)?;
        }
        if let Some(b) = beta {
            let br = self.per_channel(op, b, x_shape)?;
            y = self.add(y, br)?;
        }
        Ok(y)
    }

    /// A `[C]` vector reshaped to `[C, 1, …]` so it broadcasts over axis 1 of `x_shape`.
    fn per_channel(&mut self, op: &'static str, v: NodeId, x_shape: &Shape) -> Result<NodeId, IrError> {
        let c = x_shape.dims()[1];
        let vs = self.shape_of(op, v)?;
        if vs.dims() != [c] {
            return Err(IrError::ShapeMismatch {
                op,
                shapes: ShapeList(vec![x_shape.clone(), vs]),
                reason: format!("per-channel parameters must be 1-D [C] = [{c}]"),
            });
        }
        let mut dims = vec![1; x_shape.rank() - 1];
        dims[0] = c;
        self.reshape(v, &dims)
    }
}

fn attr(op: &'static str, a: &'static str, shape: &Shape, reason: impl Into<String>) -> IrError {
    IrError::Attribute { op, attr: a, shape: shape.clone(), reason: reason.into() }
}

fn float_dtype(op: &'static str, d: DType) -> Result<(), IrError> {
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
