//! Dtype legalization: make every op compute in a dtype the device computes.
//!
//! A device may store dtypes its kernels do not compute on (`Capabilities::dtypes` ⊋
//! `compute_dtypes`: GPUs store f16, bf16 and u8 at their own size but compute on 32-bit
//! words). For such a device each op that reads or writes a stored-only dtype becomes
//! `cast(inputs) → op → cast back`: operands widen to [`Capabilities::compute_dtype`] (f16 and
//! bf16 to f32, u8 to i32), the op runs there, and its result is rounded back to the dtype the
//! graph declared. Widening is exact, and narrowing rounds once, which is how the CPU computes
//! these dtypes too (floats through f32, u8 through i32 with a saturating cast back), so the
//! rewrite changes no value beyond the op's own f32 error. Inputs, params, constants and outputs
//! keep their declared dtypes and storage.
//!
//! Left as they are: leaves (storage, no kernel), casts (the device's cast kernels convert
//! between every stored dtype), views (a reshape shares its input's bytes, whatever their
//! width) and, where the device has `packed_rows`, gathers and state row writes of rows of an
//! even count of 2-byte elements (whole words move). Everything else is wrapped, data movement included: the data kernels move whole
//! 32-bit words, so a 2- or 1-byte element must be widened before they touch it. A value read
//! by several ops is widened once; a constant operand is converted here instead of by a cast
//! at run time.
//!
//! Ops that decode packed quantized blocks themselves (`QuantMatMul`, `QuantGather`:
//! [`Op::packed_operand`]) keep that U8 operand as it is, and so does an attention its f16 keys
//! and values where the device reads them as stored (`Capabilities::half_kv_attention`); their
//! other operands widen as usual.
//!
//! It runs before decomposition (see [`crate::optimize`]), so ops that a decomposition emits
//! already compute in the wide dtype.

use super::Rewriter;
use crate::OptError;
use rlx_backend::Capabilities;
use rlx_ir::{DType, Graph, NodeId, Op, Tensor};
use std::collections::HashMap;

/// Rewrites `g` so that every op computes in `caps.compute_dtypes` (see the module doc).
pub fn legalize_dtypes(g: &Graph, caps: &Capabilities) -> Result<Graph, OptError> {
    legalize_dtypes_with_origin(g, caps, &|id| id).map(|(g, _)| g)
}

/// [`legalize_dtypes`], naming nodes in errors through `origin`, and returning with the graph
/// the node of `g` each new node came from (for the errors of later passes).
pub(crate) fn legalize_dtypes_with_origin(
    g: &Graph,
    caps: &Capabilities,
    origin: &dyn Fn(NodeId) -> NodeId,
) -> Result<(Graph, Vec<NodeId>), OptError> {
    let identity = || (0..g.len()).map(|i| NodeId(i as u32)).collect();
    if g.nodes().iter().all(|n| caps.compute_dtypes.contains(&n.ty.dtype)) {
        // Every value already computes here (always so on the CPU): nothing to wrap.
        return Ok((g.clone(), identity()));
    }
    let mut rw = Rewriter::new(g, "legalize_dtypes");
    let mut from: Vec<NodeId> = Vec::with_capacity(g.len());
    // Each value is widened once, however many ops read it.
    let mut widened: HashMap<(NodeId, DType), NodeId> = HashMap::new();
    for (i, node) in g.nodes().iter().enumerate() {
        let id = NodeId(i as u32);
        let computed = |d: DType| caps.compute_dtypes.contains(&d);
        let operands = node.inputs.iter().map(|&i| g.ty(i)).collect::<Result<Vec<_>, _>>()?;
        // Rows of 2-byte elements that the device moves as stored words (gathers, state row
        // writes): no widening at all.
        let packed_rows = caps.is_packed_rows(&node.op, &operands);
        if node.op.writes_in_place() && !computed(node.ty.dtype) && !packed_rows {
            // Widening would write a copy, not the state.
            return Err(OptError::Unsupported {
                op: node.op.name().to_string(),
                node: origin(id),
                device: caps.device_name.clone(),
                reason: format!(
                    "states are written in place in a dtype the device computes ({}), or in rows \
                     of an even count of 2-byte elements moved as stored; this state is {}: \
                     declare it as one of those",
                    names(caps),
                    node.ty.dtype
                ),
            });
        }
        // Operands the op's kernel reads as stored (packed quantized blocks, f16 keys and
        // values of an attention) stay as they are.
        let as_stored = |j: usize| operands.get(j).is_some_and(|t| caps.reads_as_stored(&node.op, j, t));
        let keep = node.op.is_leaf()
            || node.op.is_view()
            || packed_rows
            || matches!(node.op, Op::Cast(_))
            || (computed(node.ty.dtype)
                && operands.iter().enumerate().all(|(j, t)| as_stored(j) || computed(t.dtype)));
        if keep {
            rw.copy(id)?;
            record(&mut from, &rw, id);
            continue;
        }
        let mut inputs = Vec::with_capacity(node.inputs.len());
        for (j, &inp) in node.inputs.iter().enumerate() {
            let new = rw.get(inp)?;
            if as_stored(j) {
                inputs.push(new);
                continue;
            }
            let dtype = rw.new.ty(new)?.dtype;
            let wide = wide_dtype(caps, dtype, node.op.name(), origin(id))?;
            inputs.push(match widened.get(&(new, wide)) {
                _ if wide == dtype => new,
                Some(&w) => w,
                None => {
                    let w = widen(&mut rw.new, new, wide)?;
                    widened.insert((new, wide), w);
                    w
                }
            });
        }
        let mut out = rw.new.push(node.op.clone(), &inputs)?;
        if rw.new.ty(out)?.dtype != node.ty.dtype {
            out = rw.new.push(Op::Cast(node.ty.dtype), &[out])?;
        }
        if rw.new.ty(out)? != &node.ty {
            return Err(OptError::Invariant {
                pass: "legalize_dtypes",
                node: id,
                reason: format!(
                    "rewritten {} gives {}, expected {}",
                    node.op.name(),
                    rw.new.ty(out)?,
                    node.ty
                ),
            });
        }
        rw.set(id, out);
        record(&mut from, &rw, id);
    }
    let (graph, _) = rw.finish()?;
    Ok((graph, from))
}

/// Notes that every node added to the new graph since the last call came from old node `id`.
fn record(from: &mut Vec<NodeId>, rw: &Rewriter<'_>, id: NodeId) {
    from.resize(rw.new.len(), id);
}

/// The dtype values of `dtype` compute in, or `Unsupported` when the device has none.
fn wide_dtype(caps: &Capabilities, dtype: DType, op: &str, node: NodeId) -> Result<DType, OptError> {
    caps.compute_dtype(dtype).ok_or_else(|| OptError::Unsupported {
        op: op.to_string(),
        node,
        device: caps.device_name.clone(),
        reason: format!(
            "the device stores {dtype} tensors but computes neither on them nor on a wider type; \
             cast them to a dtype it computes ({})",
            names(caps)
        ),
    })
}

fn names(caps: &Capabilities) -> String {
    caps.compute_dtypes.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

/// `x` as `dtype`: a constant converted now, anything else through a cast node.
fn widen(g: &mut Graph, x: NodeId, dtype: DType) -> Result<NodeId, OptError> {
    if let Op::Constant(t) = &g.node(x)?.op {
        let wide = Tensor::from_f64(t.shape().clone(), dtype, &t.to_f64_vec())?;
        return Ok(g.push(Op::Constant(wide), &[])?);
    }
    Ok(g.push(Op::Cast(dtype), &[x])?)
}

#[cfg(test)]
mod tests;
