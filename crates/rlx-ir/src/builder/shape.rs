//! Builders for data movement: reshape, permute, slice, concat, expand, gather, scatter-add,
//! pad, reverse.

use super::{norm_axes, norm_axis};
use crate::{DType, Graph, IrError, NodeId, Op, Shape, ShapeList};

impl Graph {
    /// Same elements, new shape (equal element count).
    pub fn reshape(&mut self, x: NodeId, dims: &[usize]) -> Result<NodeId, IrError> {
        self.push(Op::Reshape(Shape::new(dims)), &[x])
    }

    /// `out.dims[i] = x.dims[perm[i]]`.
    pub fn permute(&mut self, x: NodeId, perm: &[usize]) -> Result<NodeId, IrError> {
        self.push(Op::Permute(perm.to_vec()), &[x])
    }

    /// Swaps axes `a` and `b`.
    pub fn transpose(&mut self, x: NodeId, a: isize, b: isize) -> Result<NodeId, IrError> {
        let s = self.shape_of("transpose", x)?;
        let (a, b) = (norm_axis("transpose", a, &s)?, norm_axis("transpose", b, &s)?);
        let mut perm: Vec<usize> = (0..s.rank()).collect();
        perm.swap(a, b);
        self.permute(x, &perm)
    }

    /// Elements `start, start + step, …` below `end` along `axis`.
    pub fn slice(
        &mut self,
        x: NodeId,
        axis: isize,
        start: usize,
        end: usize,
        step: usize,
    ) -> Result<NodeId, IrError> {
        let axis = norm_axis("slice", axis, &self.shape_of("slice", x)?)?;
        self.push(Op::Slice { axis, start, end, step }, &[x])
    }

    /// `len` consecutive elements from `start` along `axis`.
    pub fn narrow(&mut self, x: NodeId, axis: isize, start: usize, len: usize) -> Result<NodeId, IrError> {
        let s = self.shape_of("slice", x)?;
        let end = start.checked_add(len).ok_or_else(|| IrError::Attribute {
            op: "slice",
            attr: "range",
            shape: s,
            reason: format!("start {start} + len {len} overflows; pass a smaller range"),
        })?;
        self.slice(x, axis, start, end, 1)
    }

    /// Joins tensors along `axis` (the axis is normalised against the first tensor's rank).
    pub fn concat(&mut self, xs: &[NodeId], axis: isize) -> Result<NodeId, IrError> {
        let Some(&first) = xs.first() else {
            return Err(IrError::Arity { op: "concat", expected: "at least 1".into(), got: 0 });
        };
        let axis = norm_axis("concat", axis, &self.shape_of("concat", first)?)?;
        self.push(Op::Concat { axis }, xs)
    }

    /// Numpy broadcast of `x` to `dims`.
    pub fn expand(&mut self, x: NodeId, dims: &[usize]) -> Result<NodeId, IrError> {
        self.push(Op::Expand(Shape::new(dims)), &[x])
    }

    /// Same as [`Graph::expand`].
    pub fn broadcast_to(&mut self, x: NodeId, dims: &[usize]) -> Result<NodeId, IrError> {
        self.expand(x, dims)
    }

    /// Numpy `take` along `axis` with I32 `indices` of any rank.
    pub fn gather(&mut self, data: NodeId, indices: NodeId, axis: isize) -> Result<NodeId, IrError> {
        let axis = norm_axis("gather", axis, &self.shape_of("gather", data)?)?;
        self.push(Op::Gather { axis }, &[data, indices])
    }

    /// The transpose of [`Graph::gather`]: `src`'s dims `axis..axis + ids.rank` (the ids'
    /// dims) are replaced by one of size `len`, and `out[p, v, q] = Σ_{i : ids[i] == v}
    /// src[p, i, q]`, summed in increasing i (bit-identical run to run on every backend; see
    /// [`Op::ScatterAdd`]). Ids outside [0, len) add nothing. `axis` may be negative, counted
    /// from the end of the output's rank (src's rank − ids' rank + 1).
    ///
    /// ```
    /// use rlx_ir::{DType, Graph};
    /// let mut g = Graph::new("embedding_grad");
    /// let ids = g.input("ids", &[2, 3], DType::I32)?;
    /// let dy = g.input("dy", &[2, 3, 8], DType::F32)?;
    /// let d_table = g.scatter_add(ids, dy, 0, 100)?;
    /// assert_eq!(g.ty(d_table)?.shape.dims(), &[100, 8]);
    /// # Ok::<(), rlx_ir::IrError>(())
    /// ```
    pub fn scatter_add(
        &mut self,
        ids: NodeId,
        src: NodeId,
        axis: isize,
        len: usize,
    ) -> Result<NodeId, IrError> {
        const OP: &str = "scatter_add";
        let ids_rank = self.ty_for(OP, ids)?.shape.rank();
        let src_shape = self.shape_of(OP, src)?;
        // The output's rank: src's, with the ids' dims folded into one.
        let out_rank = (src_shape.rank() + 1).saturating_sub(ids_rank).max(1);
        let a = if axis < 0 { axis.checked_add(out_rank as isize) } else { Some(axis) };
        let Some(axis) = a.and_then(|a| usize::try_from(a).ok()).filter(|&a| a < out_rank) else {
            return Err(IrError::Attribute {
                op: OP,
                attr: "axis",
                shape: src_shape,
                reason: format!(
                    "axis {axis} is out of range for an output of rank {out_rank} (src's rank minus \
                     the ids' rank, plus 1); use -{out_rank}..{out_rank}"
                ),
            });
        };
        self.push(Op::ScatterAdd { axis, len }, &[ids, src])
    }

    /// Rows of `x` along `axis` picked by 1-D I32 `indices`.
    pub fn index_select(&mut self, x: NodeId, axis: isize, indices: NodeId) -> Result<NodeId, IrError> {
        let it = self.ty_for("gather", indices)?;
        if it.shape.rank() != 1 {
            let xs = self.shape_of("gather", x)?;
            return Err(IrError::ShapeMismatch {
                op: "gather",
                shapes: ShapeList(vec![xs, it.shape.clone()]),
                reason: "index_select takes 1-D indices; reshape them or use gather".into(),
            });
        }
        if it.dtype != DType::I32 {
            return Err(IrError::DType {
                op: "gather",
                operand: 1,
                got: it.dtype,
                expected: "i32 (cast the indices first)".into(),
            });
        }
        self.gather(x, indices, axis)
    }

    /// Embedding lookup: rows of `table` ([vocab, dim]) for I32 `ids` of any rank.
    pub fn embedding(&mut self, table: NodeId, ids: NodeId) -> Result<NodeId, IrError> {
        self.gather(table, ids, 0)
    }

    /// Pads each dim with `(before, after)` elements of `value`.
    pub fn pad(&mut self, x: NodeId, pads: &[(usize, usize)], value: f64) -> Result<NodeId, IrError> {
        self.push(Op::Pad { pads: pads.to_vec(), value }, &[x])
    }

    /// Flips each listed axis.
    pub fn reverse(&mut self, x: NodeId, axes: &[isize]) -> Result<NodeId, IrError> {
        let axes = norm_axes("reverse", axes, &self.shape_of("reverse", x)?)?;
        self.push(Op::Reverse { axes }, &[x])
    }
}
