//! Builders for layer and RMS norm, softmax and log-softmax (along any axis).

use super::norm_axis;
use crate::{DType, Graph, IrError, NodeId, Op};

/// Default gammas and betas up to this many elements are inline constants. Longer ones are a
/// scalar expanded to `[dim]`: a norm over a huge (valid) axis must not allocate that axis on the
/// host while the graph is built (it aborted the process when the allocation failed). Constant
/// folding turns small expands back into constants anyway.
const INLINE_DEFAULT_ELEMS: usize = 1 << 16;

impl Graph {
    /// Layer norm over `axis`; missing gamma/beta become ones/zeros.
    pub fn layer_norm(
        &mut self,
        x: NodeId,
        gamma: Option<NodeId>,
        beta: Option<NodeId>,
        axis: isize,
        eps: f32,
    ) -> Result<NodeId, IrError> {
        self.atomically(|g| {
            let (dim, dtype) = g.norm_dim("layer_norm", x, axis)?;
            let gamma = g.or_full(gamma, dim, dtype, 1.0)?;
            let beta = g.or_full(beta, dim, dtype, 0.0)?;
            g.along_last("layer_norm", x, axis, |g, x| g.push(Op::LayerNorm { eps }, &[x, gamma, beta]))
        })
    }

    /// RMS norm over `axis`; a missing gamma becomes ones.
    pub fn rms_norm(
        &mut self,
        x: NodeId,
        gamma: Option<NodeId>,
        axis: isize,
        eps: f32,
    ) -> Result<NodeId, IrError> {
        self.atomically(|g| {
            let (dim, dtype) = g.norm_dim("rms_norm", x, axis)?;
            let gamma = g.or_full(gamma, dim, dtype, 1.0)?;
            g.along_last("rms_norm", x, axis, |g, x| g.push(Op::RmsNorm { eps }, &[x, gamma]))
        })
    }

    /// Softmax along `axis` (negative counts from the end), computed with the max subtracted.
    pub fn softmax(&mut self, x: NodeId, axis: isize) -> Result<NodeId, IrError> {
        self.atomically(|g| g.along_last("softmax", x, axis, |g, x| g.push(Op::Softmax, &[x])))
    }

    /// Log-softmax along `axis` (negative counts from the end).
    pub fn log_softmax(&mut self, x: NodeId, axis: isize) -> Result<NodeId, IrError> {
        self.atomically(|g| g.along_last("log_softmax", x, axis, |g, x| g.push(Op::LogSoftmax, &[x])))
    }

    /// Size of the normalised axis and x's dtype, refusing non-float x before any constant is
    /// made from its dtype.
    fn norm_dim(&self, op: &'static str, x: NodeId, axis: isize) -> Result<(usize, DType), IrError> {
        let t = self.ty_for(op, x)?;
        if !t.dtype.is_float() {
            return Err(IrError::DType {
                op,
                operand: 0,
                got: t.dtype,
                expected: "f32, f16 or bf16 (cast it first)".into(),
            });
        }
        let a = norm_axis(op, axis, &t.shape)?;
        Ok((t.shape.dims()[a], t.dtype))
    }

    /// `id`, or a new 1-D `[dim]` of `value`: a constant, or past [`INLINE_DEFAULT_ELEMS`] a
    /// scalar constant expanded to `[dim]`.
    fn or_full(
        &mut self,
        id: Option<NodeId>,
        dim: usize,
        dtype: DType,
        value: f64,
    ) -> Result<NodeId, IrError> {
        match id {
            Some(id) => Ok(id),
            None if dim <= INLINE_DEFAULT_ELEMS => self.full(&[dim], dtype, value),
            None => {
                let scalar = self.full(&[], dtype, value)?;
                self.expand(scalar, &[dim])
            }
        }
    }

    /// Applies a last-axis op to `axis`: permutes `axis` to the end, applies `f`, permutes back.
    pub(crate) fn along_last(
        &mut self,
        op: &'static str,
        x: NodeId,
        axis: isize,
        f: impl FnOnce(&mut Graph, NodeId) -> Result<NodeId, IrError>,
    ) -> Result<NodeId, IrError> {
        let s = self.shape_of(op, x)?;
        if s.rank() == 0 {
            return f(self, x);
        }
        let a = norm_axis(op, axis, &s)?;
        let r = s.rank();
        if a + 1 == r {
            return f(self, x);
        }
        let mut perm: Vec<usize> = (0..r).filter(|&i| i != a).collect();
        perm.push(a);
        let mut inv = vec![0; r];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i;
        }
        let xp = self.permute(x, &perm)?;
        let y = f(self, xp)?;
        self.permute(y, &inv)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Found by fuzzing (fuzz/regressions/graph_build): a layer norm without gamma over a huge
    /// (but valid) last axis allocated the default gamma on the host, and the failed allocation
    /// aborted the process. Past `INLINE_DEFAULT_ELEMS` the default is a scalar expanded.
    #[test]
    fn default_gamma_of_a_huge_axis_is_not_allocated() {
        let mut g = Graph::new("huge_norm");
        let x = g.input("x", &[2, 1 << 40], DType::F32).unwrap();
        let y = g.layer_norm(x, None, None, -1, 1e-5).unwrap();
        let z = g.rms_norm(x, None, -1, 1e-5).unwrap();
        g.set_outputs(&[y, z]).unwrap();
        crate::verify(&g).unwrap();
        for n in g.nodes() {
            if let Op::Constant(t) = &n.op {
                assert!(t.shape().numel() <= 1, "a constant of shape {:?}", t.dims());
            }
        }
        // Small axes keep their inline constants.
        let mut g = Graph::new("small_norm");
        let x = g.input("x", &[2, 8], DType::F32).unwrap();
        g.layer_norm(x, None, None, -1, 1e-5).unwrap();
        assert!(g.nodes().iter().any(|n| matches!(&n.op, Op::Constant(t) if t.shape().numel() == 8)));
    }
}
