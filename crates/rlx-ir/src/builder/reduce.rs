//! Builders for reductions: reduce, arg-reduce, cumsum and top-k.

use super::{norm_axes, norm_axis};
use crate::{ArgReduceOp, Graph, IrError, NodeId, Op, ReduceOp, TopKOutput};

impl Graph {
    /// Reduces over `axes` (at least one; any order, negatives allowed).
    pub fn reduce(
        &mut self,
        op: ReduceOp,
        x: NodeId,
        axes: &[isize],
        keepdim: bool,
    ) -> Result<NodeId, IrError> {
        let s = self.shape_of(op.name(), x)?;
        let axes = norm_axes(op.name(), axes, &s)?;
        self.push(Op::Reduce { op, axes, keepdim }, &[x])
    }
    /// The sum over `axes` (negative count from the end); `keepdim` keeps them as size 1.
    pub fn sum(&mut self, x: NodeId, axes: &[isize], keepdim: bool) -> Result<NodeId, IrError> {
        self.reduce(ReduceOp::Sum, x, axes, keepdim)
    }
    /// The mean over `axes`, as [`Graph::sum`].
    pub fn mean(&mut self, x: NodeId, axes: &[isize], keepdim: bool) -> Result<NodeId, IrError> {
        self.reduce(ReduceOp::Mean, x, axes, keepdim)
    }
    /// The maximum over `axes`, as [`Graph::sum`].
    pub fn max(&mut self, x: NodeId, axes: &[isize], keepdim: bool) -> Result<NodeId, IrError> {
        self.reduce(ReduceOp::Max, x, axes, keepdim)
    }
    /// The minimum over `axes`, as [`Graph::sum`].
    pub fn min(&mut self, x: NodeId, axes: &[isize], keepdim: bool) -> Result<NodeId, IrError> {
        self.reduce(ReduceOp::Min, x, axes, keepdim)
    }
    /// The product over `axes`, as [`Graph::sum`].
    pub fn prod(&mut self, x: NodeId, axes: &[isize], keepdim: bool) -> Result<NodeId, IrError> {
        self.reduce(ReduceOp::Prod, x, axes, keepdim)
    }

    fn arg_reduce(
        &mut self,
        op: ArgReduceOp,
        x: NodeId,
        axis: isize,
        keepdim: bool,
    ) -> Result<NodeId, IrError> {
        let name = if op == ArgReduceOp::ArgMax { "argmax" } else { "argmin" };
        let axis = norm_axis(name, axis, &self.shape_of(name, x)?)?;
        self.push(Op::ArgReduce { op, axis, keepdim }, &[x])
    }
    /// Index (I32) of the largest element along `axis`; the first on ties or NaN.
    pub fn argmax(&mut self, x: NodeId, axis: isize, keepdim: bool) -> Result<NodeId, IrError> {
        self.arg_reduce(ArgReduceOp::ArgMax, x, axis, keepdim)
    }
    /// Index (I32) of the smallest element along `axis`; the first on ties or NaN.
    pub fn argmin(&mut self, x: NodeId, axis: isize, keepdim: bool) -> Result<NodeId, IrError> {
        self.arg_reduce(ArgReduceOp::ArgMin, x, axis, keepdim)
    }

    /// Inclusive prefix sum along `axis`.
    pub fn cumsum(&mut self, x: NodeId, axis: isize) -> Result<NodeId, IrError> {
        let axis = norm_axis("cumsum", axis, &self.shape_of("cumsum", x)?)?;
        self.push(Op::Cumsum { axis }, &[x])
    }

    /// The `k` largest (or smallest) elements along `axis`, sorted, as `(values, indices)`.
    pub fn topk(
        &mut self,
        x: NodeId,
        k: usize,
        axis: isize,
        largest: bool,
    ) -> Result<(NodeId, NodeId), IrError> {
        let axis = norm_axis("topk", axis, &self.shape_of("topk", x)?)?;
        let values = self.push(Op::TopK { k, axis, largest, output: TopKOutput::Values }, &[x])?;
        let indices = self.push(Op::TopK { k, axis, largest, output: TopKOutput::Indices }, &[x])?;
        Ok((values, indices))
    }
}
