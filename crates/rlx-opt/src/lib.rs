//! rlx-opt: passes over a [`Graph`] and the memory planner.
//!
//! Contract:
//! - [`optimize`] turns a user graph into one a device can run, as its [`Capabilities`] describe:
//!   every op of the result is a leaf or listed in `native_ops`, every dtype is in `dtypes`,
//!   every op but leaves, casts and views computes in `compute_dtypes`, and
//!   without `native_broadcast` no binary/compare/where operand is implicitly broadcast. Otherwise
//!   it fails with [`OptError::Unsupported`] naming the op, the node (its id in the graph given to
//!   `optimize`) and the device. Every tensor of the result fits `max_tensor_bytes`, or it fails
//!   with [`OptError::TooLarge`] (checked in legalize, which every graph goes through).
//! - The result computes the same values: Input and Param nodes keep their names (unused ones
//!   included), outputs keep their order and types, and it passes [`rlx_ir::verify`].
//! - Every pass builds a new graph by walking the old one in order and pushing nodes through
//!   [`Graph::push`], so every rewritten node is re-checked by the IR's own inference.
//! - [`memory::plan`] assigns aligned arena offsets to the values of an (optimized) graph.
//!
//! Passes only ask `Capabilities` what a device can do, never which device it is.

mod error;
pub mod memory;
pub mod passes;

pub use error::OptError;

use rlx_backend::Capabilities;
use rlx_ir::{Graph, NodeId, Op, Tensor, TensorType};

/// Which optional passes [`optimize`] runs. Legalization always runs: it is what makes a graph
/// runnable on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassOptions {
    /// Evaluate nodes whose inputs are all constants (needs a [`FoldFn`]).
    pub fold_constants: bool,
    /// Matmul epilogue, residual-add + norm and elementwise-chain fusion.
    pub fuse: bool,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions { fold_constants: true, fuse: true }
    }
}

impl PassOptions {
    /// Only what is required: dce, legalize, verify.
    pub fn none() -> Self {
        PassOptions { fold_constants: false, fuse: false }
    }
}

/// Evaluates one op on constant inputs (`out` is the node's inferred type); `None` declines.
/// Injected by the caller (the runtime passes `rlx_cpu::eval`) so rlx-opt needs no backend.
pub type FoldFn<'a> = &'a dyn Fn(&Op, &[&Tensor], &TensorType) -> Option<Tensor>;

/// The whole pipeline, in order:
/// dce → const_fold (if enabled and `fold` given) → legalize_dtypes → legalize →
/// fuse_matmul_epilogue → fuse_add_norm → fuse_elementwise (if enabled) → dce → verify.
pub fn optimize(
    g: &Graph,
    caps: &Capabilities,
    opts: &PassOptions,
    fold: Option<FoldFn<'_>>,
) -> Result<Graph, OptError> {
    rlx_ir::verify(g)?;
    let (g, dce_map) = passes::dce_mapped(g)?;
    let g = match fold {
        Some(f) if opts.fold_constants => passes::const_fold(&g, f)?,
        _ => g,
    };
    // const_fold keeps node ids, so only dce's renumbering must be undone for error messages.
    let mut user_id: Vec<NodeId> = (0..g.len()).map(|i| NodeId(i as u32)).collect();
    for (old, new) in dce_map.iter().enumerate() {
        if let Some(slot) = new.and_then(|n| user_id.get_mut(n.index())) {
            *slot = NodeId(old as u32);
        }
    }
    let user = |id: NodeId| user_id.get(id.index()).copied().unwrap_or(id);
    let (g, dtype_origin) = passes::legalize_dtypes_with_origin(&g, caps, &user)?;
    let g = passes::legalize_with_origin(&g, caps, &|id| {
        user(dtype_origin.get(id.index()).copied().unwrap_or(id))
    })?;
    let g = if opts.fuse {
        let g = passes::fuse_matmul_epilogue(&g, caps)?;
        let g = passes::fuse_add_norm(&g, caps)?;
        passes::fuse_elementwise(&g, caps)?
    } else {
        g
    };
    let g = passes::dce(&g)?;
    rlx_ir::verify(&g)?;
    check_native(&g, caps)?;
    Ok(g)
}

/// Every node of the result must be a leaf or native, and compute in a dtype the device
/// computes (leaves, casts and views aside): legalize and legalize_dtypes guarantee it and the
/// fusions only create what the device lists; this keeps a broken pass from reaching a backend.
fn check_native(g: &Graph, caps: &Capabilities) -> Result<(), OptError> {
    for (i, n) in g.nodes().iter().enumerate() {
        let broken =
            |reason: String| OptError::Invariant { pass: "optimize", node: NodeId(i as u32), reason };
        if n.op.is_leaf() {
            continue;
        }
        let shapes =
            n.inputs.iter().map(|&i| g.ty(i).map(|t| t.shape.dims())).collect::<Result<Vec<_>, _>>()?;
        if !caps.runs(&n.op, &shapes, n.ty.shape.dims()) {
            return Err(broken(format!(
                "{} left in a graph for {}, which does not run it",
                n.op.name(),
                caps.device_name
            )));
        }
        let inputs = n.inputs.iter().map(|&i| g.ty(i)).collect::<Result<Vec<_>, _>>()?;
        if matches!(n.op, Op::Cast(_)) || n.op.is_view() || caps.is_packed_rows(&n.op, &inputs) {
            continue;
        }
        // Operands the op reads as stored (packed quantized blocks, f16 keys and values of an
        // attention) are not values it computes on.
        let operands = inputs
            .iter()
            .enumerate()
            .filter(|(j, t)| !caps.reads_as_stored(&n.op, *j, t))
            .map(|(_, t)| t.dtype)
            .collect::<Vec<_>>();
        if let Some(d) = operands.into_iter().chain([n.ty.dtype]).find(|d| !caps.compute_dtypes.contains(d)) {
            return Err(broken(format!(
                "{} on {d} left in a graph for {}, which only stores {d}",
                n.op.name(),
                caps.device_name
            )));
        }
    }
    Ok(())
}
