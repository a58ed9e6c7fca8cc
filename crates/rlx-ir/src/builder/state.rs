//! Builders for device-resident state: [`Graph::state`], [`Graph::write_rows`], and attention
//! over a cache that is only partly valid ([`Graph::attention_with_lengths`]).
//!
//! A KV cache in these terms: `k_cache = g.state("k0", [B, C, H, D], F32)`, then each step
//! `k = g.write_rows(k_cache, k_new, offset, 1)` writes this step's keys at the run-time
//! `offset`, and attention reads `k` with the valid lengths as an input. Nothing about the
//! graph changes from step to step, so it is compiled once per capacity `C`.

use super::norm_axis;
use crate::{AttentionSpec, DType, Graph, IrError, NodeId, Op, TensorType};

impl Graph {
    /// Device-resident state of `dims` and `dtype`: zeros when compiled, settable with the
    /// executable's `set_state`, kept across runs, and shared by executables compiled together.
    /// Read it through the [`Graph::write_rows`] that updates it (or directly, if nothing writes
    /// it).
    pub fn state(&mut self, name: &str, dims: &[usize], dtype: DType) -> Result<NodeId, IrError> {
        self.push_leaf(Op::State { name: name.to_string() }, TensorType::new(dims, dtype))
    }

    /// Writes `rows` into `state` at offset `offset[0]` (I32 \[1\], read at run time) along
    /// `axis`, in place. With `offset` I32 \[outer\], outer the product of the state's dims
    /// before `axis`, row block `o` goes to `offset[o]` instead (a batched cache
    /// [B, C, H, D] along axis 1: one offset per sequence). Returns the updated state, which
    /// every later reader must use. `state` must be a [`Graph::state`] that nothing else reads.
    /// Rows past the state's extent (or at a negative position) are dropped.
    pub fn write_rows(
        &mut self,
        state: NodeId,
        rows: NodeId,
        offset: NodeId,
        axis: isize,
    ) -> Result<NodeId, IrError> {
        let ty = self.ty_for("write_rows", state)?.clone();
        let axis = norm_axis("write_rows", axis, &ty.shape)?;
        let target = self.node(state)?;
        let name = match &target.op {
            Op::State { name } => name.clone(),
            other => {
                return Err(IrError::Attribute {
                    op: "write_rows",
                    attr: "state",
                    shape: ty.shape,
                    reason: format!(
                        "{state} is a {} node; write_rows writes only into a state (Graph::state)",
                        other.name()
                    ),
                })
            }
        };
        if self.nodes().iter().any(|n| n.inputs.contains(&state)) {
            return Err(IrError::Attribute {
                op: "write_rows",
                attr: "state",
                shape: ty.shape,
                reason: format!(
                    "state '{name}' is already read by another node; a written state is read only \
                     through its one write_rows (use that node's result)"
                ),
            });
        }
        self.push(Op::WriteRows { axis }, &[state, rows, offset])
    }

    /// Scaled dot-product attention where only the first `lengths[b]` keys (I32 \[batch\], read
    /// at run time) of sequence `b` are valid; see [`AttentionSpec::kv_lengths`]. The keys past
    /// the length are neither read nor attended to.
    pub fn attention_with_lengths(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        mask: Option<NodeId>,
        lengths: NodeId,
        spec: AttentionSpec,
    ) -> Result<NodeId, IrError> {
        let mut ins = vec![q, k, v];
        ins.extend(mask);
        ins.push(lengths);
        self.push(Op::Attention(spec.kv_lengths(true)), &ins)
    }
}
