//! Lowering of MatMul and FusedMatMul onto a matmul rung ([`MatmulRung::choose`]: the 128×128
//! register tile for big outputs, and for single products whose split along K fills the card;
//! the 64×64 tile otherwise) and its epilogue variants. [`MatmulPlan`] holds every decision.
//!
//! - Transposes and batch broadcasts are addressing (strides, offsets): no operand is copied.
//!   A broadcast the kernel's two batch levels cannot express becomes several launches
//!   ([`matmul_launches`]).
//! - K = 0 with a non-empty output: the kernel's K loop runs zero times and it writes
//!   act(0 + bias); the empty a and b are bound to a 4-byte dummy, never read.
//! - A single matmul of at most 8 rows times a transposed B (a linear layer at decode) runs the
//!   matrix-vector kernel, unless a rung is forced.
//! - A single matmul with few output tiles and a long K (small M, or a weight gradient whose K
//!   is every token of the batch) is split along K ([`split_count`]): its equal slices run as a
//!   batch of partial products into a scratch buffer, the rest of K (on the f32 rungs, where
//!   the slices do not cover it) as one more launch after them, then `matmul_splitk.wgsl` adds
//!   every part and applies the bias and activation. A forced rung still decides the kernel of
//!   the partial products.
//! - An f16 weight widened by a cast that only matrix-vector matmuls read (a decode step's
//!   weights under `Precision::F16`) is read by them as f16 ([`absorbed_casts`]): the cast
//!   launches nothing, and the weight streams at half the bytes.
//! - An activation without an epilogue variant (rlx-opt fuses only those that have one, but the
//!   op allows any) runs as a unary step over a scratch copy of the matmul's result.

use super::{LowerCtx, Site};
use crate::catalog::matmul::{
    matmul_launches, partial_params, rest_params, split_count, split_parts, vec_fits, vec_grid, Epilogue,
    MatmulKernel, MatmulLaunch, MatmulRung, SplitKParams,
};
use crate::schedule::{Dispatch, GpuLimits, Operand};
use crate::{GpuError, KernelKey, MatmulParams, UnaryParams};
use rlx_backend::KernelOptions;
use rlx_ir::{DType, Graph, NodeId, Op, UnaryOp};
use std::collections::HashSet;

/// How one MatMul or FusedMatMul runs, decided from its operands' shapes alone: the lowering
/// and [`absorbed_casts`] (which runs before any node is lowered) both take it from
/// [`MatmulPlan::new`], so they cannot disagree.
pub(super) struct MatmulPlan {
    /// The launches of the product (several only where a batch broadcast needs them; every
    /// one has the node's M, N and K).
    pub launches: Vec<MatmulLaunch>,
    pub out_shape: Vec<usize>,
    /// The rung of the launches (Tiled64 where there are none).
    pub rung: MatmulRung,
    pub path: MatmulPath,
}

/// What runs a [`MatmulPlan`].
pub(super) enum MatmulPath {
    /// The one launch on the matrix-vector kernel.
    Vec(MatmulParams),
    /// The one launch split along K into this many equal slices ([`split_count`]).
    Split(MatmulParams, u32),
    /// Every launch on the rung.
    Rung,
}

/// Why a matmul has no plan: its shapes (a kernel error), or the forced rung (a reason).
pub(super) enum PlanError {
    Shape(GpuError),
    Rung(String),
}

impl MatmulPlan {
    /// The plan of `a` (dims `a_dims`) times `b` with these transposes on a device with
    /// `limits`, as `options` allow.
    pub fn new(
        a_dims: &[usize],
        b_dims: &[usize],
        (ta, tb): (bool, bool),
        limits: &GpuLimits,
        options: &KernelOptions,
    ) -> Result<Self, PlanError> {
        let (launches, out_shape) = matmul_launches(a_dims, b_dims, ta, tb).map_err(PlanError::Shape)?;
        let batches: u32 = launches.iter().map(|(_, g)| g[2]).fold(0, u32::saturating_add);
        let rung = match launches.first() {
            Some((p, _)) => {
                MatmulRung::choose(p.m, p.n, p.k, batches, limits, options).map_err(PlanError::Rung)?
            }
            None => MatmulRung::Tiled64,
        };
        let path = match launches.as_slice() {
            [(p, _)] if options.matmul.is_none() && vec_fits(p) => MatmulPath::Vec(*p),
            [(p, _)] => split_count(p, rung).map_or(MatmulPath::Rung, |s| MatmulPath::Split(*p, s)),
            _ => MatmulPath::Rung,
        };
        Ok(MatmulPlan { launches, out_shape, rung, path })
    }

    /// Whether its kernel can read B as the f16 it is stored in: the matrix-vector kernel, or
    /// a single launch (split or not) on a cooperative-matrix rung.
    fn reads_b_as_stored(&self) -> bool {
        match self.path {
            MatmulPath::Vec(_) => true,
            MatmulPath::Split(..) => self.rung.is_coop(),
            MatmulPath::Rung => self.launches.len() == 1 && self.rung.is_coop(),
        }
    }
}

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let (ta, tb, has_bias, act) = match node.op {
        Op::MatMul { transpose_a, transpose_b } => (transpose_a, transpose_b, false, None),
        Op::FusedMatMul { transpose_a, transpose_b, bias, activation } => {
            (transpose_a, transpose_b, bias, activation)
        }
        _ => return Err(at.bad("not a matmul")),
    };
    let (a, b, bias) = match (node.inputs.as_slice(), has_bias) {
        (&[a, b], false) => (a, b, None),
        (&[a, b, bias], true) => (a, b, Some(bias)),
        _ => return Err(at.bad("wrong operand count")),
    };
    let a_dims = cx.ty(a)?.shape.dims().to_vec();
    let b_dims = cx.ty(b)?.shape.dims().to_vec();
    let plan = MatmulPlan::new(&a_dims, &b_dims, (ta, tb), cx.limits, &cx.options).map_err(|e| match e {
        PlanError::Shape(e) => at.named(e),
        PlanError::Rung(reason) => at.bad(reason),
    })?;
    if plan.out_shape.as_slice() != at.ty().shape.dims() {
        let shape = &plan.out_shape;
        return Err(at.bad(format!("kernel output shape {shape:?} differs from the node's")));
    }

    let result = cx.operand_nonempty(id)?;
    let epilogue = act.map(|op| (op, Epilogue::from_unary(op)));
    // Where the matmul writes: the result, or a scratch buffer a separate unary step reads.
    let (target, unary_after) = match epilogue {
        Some((op, None)) => (cx.scratch(result.size), Some(op)),
        _ => (result, None),
    };
    let rung = plan.rung;
    let act = epilogue.and_then(|(_, e)| e);
    let (a_op, b_op) = (operand_or_dummy(cx, a)?, operand_or_dummy(cx, b)?);
    // The bias is [N] and N > 0 here (the output is non-empty).
    let bias_op = match bias {
        Some(bias) => Some(cx.operand_nonempty(bias)?),
        None => None,
    };
    // An absorbed cast (see absorbed_casts: only where the plan's kernel reads B as stored):
    // bind the f16 value it would have widened.
    let (b_op, f16_b) = match absorbed_source(cx.graph, &cx.absorbed, b) {
        Some(src) => (cx.operand_nonempty(src)?, true),
        None => (b_op, false),
    };
    match plan.path {
        MatmulPath::Vec(p) => {
            let grid = vec_grid(&p).map_err(|e| at.named(e))?;
            let key = KernelKey::Matmul(MatmulKernel::Vec { bias: bias_op.is_some(), act, f16_b });
            let operands = [Some(a_op), Some(b_op), bias_op, Some(target)].into_iter().flatten().collect();
            out.push(at.step(key, operands, &p, grid));
        }
        MatmulPath::Split(p, splits) => {
            let parts_count = split_parts(&p, splits);
            let (sum, sum_grid) = SplitKParams::new(&p, parts_count).map_err(|e| at.named(e))?;
            let parts = cx.scratch(4 * u64::from(p.m) * u64::from(p.n) * u64::from(parts_count));
            let key = matmul_key(rung, false, None, f16_b);
            let partial = partial_params(&p, splits);
            out.push(at.step(key, vec![a_op, b_op, parts], &partial, rung.grid(&partial, splits)));
            // The rest of K past the equal slices, as the last partial product.
            if let Some(rest) = rest_params(&p, splits).map_err(|e| at.named(e))? {
                out.push(at.step(key, vec![a_op, b_op, parts], &rest, rung.grid(&rest, 1)));
            }
            let key = KernelKey::Matmul(MatmulKernel::SplitK { bias: bias_op.is_some(), act });
            let operands = [Some(parts), bias_op, Some(target)].into_iter().flatten().collect();
            out.push(at.step(key, operands, &sum, sum_grid));
        }
        MatmulPath::Rung => {
            let key = matmul_key(rung, bias_op.is_some(), act, f16_b);
            let operands: Vec<Operand> =
                [Some(a_op), Some(b_op), bias_op, Some(target)].into_iter().flatten().collect();
            for (params, grid) in plan.launches {
                let grid = rung.grid(&params, grid[2]);
                out.push(at.step(key, operands.clone(), &params, grid));
            }
        }
    }
    if let Some(op) = unary_after {
        push_unary(at, op, target, result, out)?;
    }
    Ok(())
}

/// The key of the matmul of `rung` with this epilogue; `f16_b` (B bound as stored f16) only
/// the cooperative-matrix rungs take, which are the only ones `absorbed_casts` lets it reach.
pub(super) fn matmul_key(rung: MatmulRung, bias: bool, act: Option<Epilogue>, f16_b: bool) -> KernelKey {
    match (rung, bias, act) {
        (MatmulRung::Tiled64, false, None) => KernelKey::MATMUL_TILED_F32,
        (MatmulRung::Tiled64, false, Some(a)) => {
            KernelKey::Matmul(MatmulKernel::Tiled { bias: false, act: Some(a) })
        }
        (MatmulRung::Tiled64, true, a) => KernelKey::Matmul(MatmulKernel::Tiled { bias: true, act: a }),
        (MatmulRung::Reg128, bias, act) => KernelKey::Matmul(MatmulKernel::Reg { bias, act }),
        (MatmulRung::Coop64, bias, act) => {
            KernelKey::Matmul(MatmulKernel::Coop { wide: false, bias, act, f16_b })
        }
        (MatmulRung::Coop128, bias, act) => {
            KernelKey::Matmul(MatmulKernel::Coop { wide: true, bias, act, f16_b })
        }
    }
}

/// `dst = op(src)` over the node's element count.
fn push_unary(
    at: &Site,
    op: UnaryOp,
    src: Operand,
    dst: Operand,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let (params, grid) = UnaryParams::new(at.ty().numel()).map_err(|e| at.named(e))?;
    out.push(at.step(KernelKey::unary_f32(op), vec![src, dst], &params, grid));
    Ok(())
}

/// The operand of `id`, or a 4-byte scratch buffer when it is empty (a kernel that never reads
/// it still needs a valid binding).
pub(super) fn operand_or_dummy(cx: &mut LowerCtx, id: NodeId) -> Result<Operand, GpuError> {
    match cx.operand(id)? {
        Some(op) => Ok(op),
        None => Ok(cx.scratch(4)),
    }
}

/// Whether `id` is a cast f16 → f32 (a weight widened for kernels that compute in f32).
fn widens_f16(g: &Graph, id: NodeId) -> bool {
    g.node(id).is_ok_and(|n| {
        matches!(n.op, Op::Cast(DType::F32))
            && n.inputs.first().and_then(|&s| g.ty(s).ok()).is_some_and(|t| t.dtype == DType::F16)
    })
}

/// The casts f16 → f32 whose every reader reads it as a weight that its kernel can read as
/// stored: B of a single-launch matmul that takes the matrix-vector kernel (transposed,
/// unless a rung is forced) or a cooperative-matrix rung (any layout; its split-K partial
/// products too), as the matmul's [`MatmulPlan`] says, and w of a grouped matmul. Those kernels bind the f16 value
/// ([`absorbed_source`]) and the cast launches nothing: a batched decode step's f16 weights
/// (M = the streams, past the matrix-vector kernel) no longer widen every step. Its planned
/// buffer stays allocated but unwritten.
pub(super) fn absorbed_casts(g: &Graph, options: &KernelOptions, limits: &GpuLimits) -> HashSet<NodeId> {
    let uses = g.use_counts();
    let mut weight_reads = vec![0usize; g.len()];
    for node in g.nodes() {
        let (Some(&a), Some(&b)) = (node.inputs.first(), node.inputs.get(1)) else { continue };
        let reads_as_stored = match node.op {
            Op::MatMul { transpose_a, transpose_b } | Op::FusedMatMul { transpose_a, transpose_b, .. } => {
                let (Ok(at), Ok(bt)) = (g.ty(a), g.ty(b)) else { continue };
                let (ad, bd) = (at.shape.dims(), bt.shape.dims());
                MatmulPlan::new(ad, bd, (transpose_a, transpose_b), limits, options)
                    .is_ok_and(|plan| plan.reads_b_as_stored())
            }
            Op::GroupedMatMul => true,
            _ => false,
        };
        // A node reading the cast as its first operand too would see it twice; it is not counted.
        if reads_as_stored && a != b && widens_f16(g, b) {
            if let Some(c) = weight_reads.get_mut(b.index()) {
                *c += 1;
            }
        }
    }
    (0..g.len())
        .filter(|&i| weight_reads[i] > 0 && Some(&weight_reads[i]) == uses.get(i))
        .map(|i| NodeId(i as u32))
        .collect()
}

/// The f16 value an absorbed cast `w` widens, which its readers bind instead; `None` when `w`
/// is not absorbed.
pub(super) fn absorbed_source(g: &Graph, absorbed: &HashSet<NodeId>, w: NodeId) -> Option<NodeId> {
    if !absorbed.contains(&w) {
        return None;
    }
    g.node(w).ok()?.inputs.first().copied()
}
