//! Matrix-vector matmuls that share A and run as one launch (`matmul_vec_multi.wgsl`):
//!
//! - the split form: two or three matmuls of one A (a decode step's q, k and v projections),
//!   each writing its own output with its own bias, launched at the first of them;
//! - the gated form: `Mul(act(A · B_0ᵀ), A · B_1ᵀ)` (an MLP's gate, up and their product)
//!   launched at the `Mul`, which it writes; the two matmuls launch nothing.
//!
//! Why here and not as an IR op: the grouping changes which launch writes what, not what is
//! computed, and it depends on which kernel each matmul takes (the matrix-vector one), which
//! only the lowering knows. The memory plan is adjusted so that this stays safe
//! ([`VecGroups::adjust`]): a split member's output is live from the group's launch, and A
//! stays live until the gated launch reads it.
//!
//! The RMS norm that makes a matrix-vector group's A (a decode step's input norms) is computed
//! by the group's launch when the group's matmuls are its only readers: the norm launches
//! nothing, and the launch reads the norm's input and γ ([`Prenorm`]).
//!
//! A member's weight and bias must be leaves (params, inputs, constants), or f16 params read
//! through an absorbed cast: they exist before any step runs, so an earlier launch may read
//! them. Forcing a matmul rung turns grouping off, as it turns off the matrix-vector kernel.

use super::LowerCtx;
use crate::catalog::matmul::{
    coop_split_bindings, matmul_launches, multi_bindings, split_count, vec_fits, Epilogue, MatmulRung,
    MULTI_MAX_PARTS,
};
use crate::schedule::GpuLimits;
use crate::MatmulParams;
use rlx_backend::KernelOptions;
use rlx_ir::{BinaryOp, DType, Graph, NodeId, Op};
use rlx_opt::memory::MemoryPlan;
use std::collections::{HashMap, HashSet};

/// One matmul that the matrix-vector kernel would run alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VecMember {
    pub id: NodeId,
    pub a: NodeId,
    /// The weight as bound: the matmul's B, or the f16 param an absorbed cast widens.
    pub b: NodeId,
    pub f16_b: bool,
    pub bias: Option<NodeId>,
    pub act: Option<Epilogue>,
    pub m: u32,
    pub k: u32,
    pub n: u32,
    pub a_stride_m: u32,
}

/// A gated product: the `Mul` it writes is lowered as one launch of its two matmuls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Gated {
    /// The matmul whose result is activated (`act`), and the other one.
    pub activated: VecMember,
    pub plain: VecMember,
}

/// An RMS norm over the last axis computed by the launch that reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Prenorm {
    pub norm: NodeId,
    pub x: NodeId,
    pub gamma: NodeId,
    pub eps: f32,
}

/// Which matmuls launch together, decided once per lowering.
#[derive(Clone, Debug, Default)]
pub(super) struct VecGroups {
    /// The first member (in node order) → every member, in node order.
    pub split: HashMap<NodeId, Vec<VecMember>>,
    /// The `Mul` node → its gated product.
    pub gated: HashMap<NodeId, Gated>,
    /// The first member → every member and the tensor-core rung of their one launch
    /// (the split-QKV epilogue of `matmul_coop_split.wgsl`).
    pub coop: HashMap<NodeId, (Vec<VecMember>, MatmulRung)>,
    /// Matrix-vector launches (by the node they sit at) that compute their A's RMS norm.
    pub prenorm: HashMap<NodeId, Prenorm>,
    /// Matmuls (and norms) lowered as part of another node's launch.
    pub silent: HashSet<NodeId>,
}

fn is_leaf(g: &Graph, id: NodeId) -> bool {
    g.node(id).is_ok_and(|n| matches!(n.op, Op::Param { .. } | Op::Input { .. } | Op::Constant(_)))
}

/// `id` as a [`VecMember`], if it takes the matrix-vector kernel with leaf operands.
fn member(g: &Graph, id: NodeId, absorbed: &HashSet<NodeId>) -> Option<VecMember> {
    member_of(g, id, absorbed, true)
}

/// `id` as a group member: a matmul of one launch by a weight stored [N, K], taking the
/// matrix-vector kernel (`vec`, weights and biases leaves) or a tiled one (more than
/// [`crate::catalog::matmul::VEC_MAX_ROWS`] rows; operands checked by the group).
fn member_of(g: &Graph, id: NodeId, absorbed: &HashSet<NodeId>, vec: bool) -> Option<VecMember> {
    let node = g.node(id).ok()?;
    let (ta, tb, act) = match node.op {
        Op::MatMul { transpose_a, transpose_b } => (transpose_a, transpose_b, None),
        Op::FusedMatMul { transpose_a, transpose_b, activation, .. } => {
            (transpose_a, transpose_b, activation)
        }
        _ => return None,
    };
    let act = match act {
        Some(op) => Some(Epilogue::from_unary(op)?),
        None => None,
    };
    let (&a, &b) = (node.inputs.first()?, node.inputs.get(1)?);
    let bias = node.inputs.get(2).copied();
    let (at, bt) = (g.ty(a).ok()?, g.ty(b).ok()?);
    if ta || !tb || node.ty.dtype != DType::F32 || at.dtype != DType::F32 || a == b {
        return None;
    }
    let (launches, _) = matmul_launches(at.shape.dims(), bt.shape.dims(), ta, tb).ok()?;
    let p = match launches.as_slice() {
        [(p, _)] if vec_fits(p) == vec && p.batch == 1 && p.b_stride_k == 1 => *p,
        _ => return None,
    };
    // Weights [N, K] from their binding's start; A rows contiguous.
    if p.a_stride_k != 1 || p.b_stride_n != p.k || p.a_offset != 0 || p.b_offset != 0 || p.c_offset != 0 {
        return None;
    }
    let (bound, f16_b) = match super::matmul::absorbed_source(g, absorbed, b) {
        Some(src) => (src, true),
        None => (b, false),
    };
    if !f16_b && bt.dtype != DType::F32 {
        return None;
    }
    if vec && (!is_leaf(g, bound) || !bias.is_none_or(|x| is_leaf(g, x))) {
        return None;
    }
    Some(VecMember { id, a, b: bound, f16_b, bias, act, m: p.m, k: p.k, n: p.n, a_stride_m: p.a_stride_m })
}

/// `candidates` (in node order) gathered into groups of two to [`MULTI_MAX_PARTS`]: each joins
/// the first open group whose first member `joins` it, else opens one.
fn siblings(
    candidates: impl Iterator<Item = VecMember>,
    joins: impl Fn(&VecMember, &VecMember) -> bool,
) -> Vec<Vec<VecMember>> {
    let mut open: Vec<Vec<VecMember>> = Vec::new();
    for m in candidates {
        let fits = |grp: &&mut Vec<VecMember>| {
            grp.len() < MULTI_MAX_PARTS && grp.first().is_some_and(|f| joins(f, &m))
        };
        match open.iter_mut().find(fits) {
            Some(grp) => grp.push(m),
            None => open.push(vec![m]),
        }
    }
    open.retain(|grp| grp.len() >= 2);
    open
}

/// Each part's N, 0 past the group's parts.
fn part_widths(grp: &[VecMember]) -> [u32; MULTI_MAX_PARTS] {
    let mut n = [0u32; MULTI_MAX_PARTS];
    for (slot, m) in n.iter_mut().zip(grp) {
        *slot = m.n;
    }
    n
}

/// Whether two members may share a launch (same A, shape of A and weight type).
fn compatible(x: &VecMember, y: &VecMember) -> bool {
    (x.a, x.m, x.k, x.a_stride_m, x.f16_b) == (y.a, y.m, y.k, y.a_stride_m, y.f16_b)
}

impl VecGroups {
    /// The groups of `g`; none when a rung is forced or the device binds too few buffers.
    pub fn find(g: &Graph, options: &KernelOptions, limits: &GpuLimits, absorbed: &HashSet<NodeId>) -> Self {
        let mut groups = VecGroups::default();
        if options.matmul.is_some() {
            return groups;
        }
        let uses = g.use_counts();
        let members: HashMap<NodeId, VecMember> =
            (0..g.len()).filter_map(|i| member(g, NodeId(i as u32), absorbed)).map(|m| (m.id, m)).collect();
        let sole = |id: NodeId| uses.get(id.index()) == Some(&1);
        if multi_bindings(true, false, false) <= limits.max_storage_bindings {
            for (i, node) in g.nodes().iter().enumerate() {
                let (Op::Binary(BinaryOp::Mul), &[x, y]) = (&node.op, node.inputs.as_slice()) else {
                    continue;
                };
                let (Some(mx), Some(my)) = (members.get(&x), members.get(&y)) else { continue };
                let (activated, plain) = if my.act.is_none() { (*mx, *my) } else { (*my, *mx) };
                let ok = x != y
                    && plain.act.is_none()
                    && activated.bias.is_none()
                    && plain.bias.is_none()
                    && compatible(mx, my)
                    && mx.n == my.n
                    && sole(x)
                    && sole(y)
                    && node.ty.dtype == DType::F32
                    && node.ty.shape.dims() == g.ty(x).map(|t| t.shape.dims()).unwrap_or_default();
                if ok {
                    groups.gated.insert(NodeId(i as u32), Gated { activated, plain });
                    groups.silent.extend([x, y]);
                }
            }
        }
        // Split groups from the rest.
        let rest = (0..g.len()).filter_map(|i| members.get(&NodeId(i as u32))).filter(|m| {
            m.act.is_none()
                && !groups.silent.contains(&m.id)
                && multi_bindings(false, m.bias.is_some(), false) <= limits.max_storage_bindings
        });
        for grp in siblings(rest.copied(), |f, m| compatible(f, m) && f.bias.is_some() == m.bias.is_some()) {
            groups.silent.extend(grp.iter().skip(1).map(|m| m.id));
            groups.split.insert(grp[0].id, grp);
        }
        groups.find_prenorms(g, limits, &uses);
        groups.find_coop(g, options, limits, absorbed);
        groups
    }

    /// The matrix-vector launches whose A is an RMS norm that only they read.
    fn find_prenorms(&mut self, g: &Graph, limits: &GpuLimits, uses: &[usize]) {
        let outputs: HashSet<NodeId> = g.outputs().iter().copied().collect();
        let launches = self.split.iter().map(|(at, grp)| (*at, grp.clone(), false));
        let gated = self.gated.iter().map(|(at, gt)| (*at, vec![gt.activated, gt.plain], true));
        let mut found = Vec::new();
        for (at, grp, is_gated) in launches.chain(gated).collect::<Vec<_>>() {
            let Some(first) = grp.first() else { continue };
            let Ok(node) = g.node(first.a) else { continue };
            let (Op::RmsNorm { eps }, &[x, gamma]) = (&node.op, node.inputs.as_slice()) else { continue };
            let bindings = multi_bindings(is_gated, first.bias.is_some(), true);
            let fits = uses.get(first.a.index()) == Some(&grp.len())
                && !outputs.contains(&first.a)
                && bindings <= limits.max_storage_bindings
                && g.ty(x).is_ok_and(|t| t.dtype == DType::F32 && t.shape.dims() == node.ty.shape.dims())
                && g.ty(gamma).is_ok_and(|t| t.dtype == DType::F32 && t.shape.dims() == [first.k as usize])
                && (is_leaf(g, gamma) || gamma.index() < first.a.index());
            if fits {
                found.push((at, Prenorm { norm: first.a, x, gamma, eps: *eps }));
            }
        }
        for (at, pre) in found {
            self.silent.insert(pre.norm);
            self.prenorm.insert(at, pre);
        }
    }

    /// Sibling matmuls of more rows on the tensor-core rung: grouped when their inputs are
    /// ready at the first of them and the combined product takes a coop rung without a split
    /// along K.
    /// A weight widened by an absorbed cast is bound as the f16 param (a leaf, so always ready):
    /// the cast launches nothing, so its output must never be bound.
    fn find_coop(
        &mut self,
        g: &Graph,
        options: &KernelOptions,
        limits: &GpuLimits,
        absorbed: &HashSet<NodeId>,
    ) {
        let ready = |x: NodeId, first: NodeId| x.index() < first.index() || is_leaf(g, x);
        let candidates =
            (0..g.len()).filter_map(|i| member_of(g, NodeId(i as u32), absorbed, false)).filter(|m| {
                m.act.is_none() && coop_split_bindings(m.bias.is_some()) <= limits.max_storage_bindings
            });
        let joins = |f: &VecMember, m: &VecMember| {
            compatible(f, m)
                && f.bias.is_some() == m.bias.is_some()
                && ready(m.b, f.id)
                && m.bias.is_none_or(|b| ready(b, f.id))
        };
        for grp in siblings(candidates, joins) {
            let total: u32 = grp.iter().map(|m| m.n).fold(0, u32::saturating_add);
            let Some(first) = grp.first() else { continue };
            let Ok(rung) = MatmulRung::choose(first.m, total, first.k, 1, limits, options) else { continue };
            let combined = MatmulParams::from_shapes(
                &[first.m as usize, first.k as usize],
                &[total as usize, first.k as usize],
                false,
                true,
            );
            let splits = combined.map(|(p, _, _)| split_count(&p, rung));
            if !matches!(rung, MatmulRung::Coop64 | MatmulRung::Coop128) || !matches!(splits, Ok(None)) {
                continue;
            }
            self.silent.extend(grp.iter().skip(1).map(|m| m.id));
            self.coop.insert(first.id, (grp, rung));
        }
    }

    /// Makes the memory plan safe for the moved writes and reads: a split member's output
    /// lives from its group's launch on, and a gated product's A until the `Mul`.
    pub fn adjust(&self, plan: &mut MemoryPlan) {
        let buffer = |plan: &MemoryPlan, id: NodeId| {
            let base = plan.view_of.get(id.index()).copied().flatten().unwrap_or(id);
            plan.slots.get(base.index()).copied().flatten().map(|s| s.buffer)
        };
        let coop = self.coop.iter().map(|(lead, (grp, _))| (lead, grp));
        for (lead, grp) in self.split.iter().chain(coop) {
            for m in grp {
                if let Some(b) = buffer(plan, m.id) {
                    plan.buffers[b].first = plan.buffers[b].first.min(lead.index());
                }
            }
        }
        for (mul, gated) in &self.gated {
            if let Some(b) = buffer(plan, gated.activated.a) {
                plan.buffers[b].last = plan.buffers[b].last.max(mul.index());
            }
        }
        // A norm's input (and γ, when computed) is read by the launch instead of the norm.
        for (at, pre) in &self.prenorm {
            for v in [pre.x, pre.gamma] {
                if let Some(b) = buffer(plan, v) {
                    plan.buffers[b].last = plan.buffers[b].last.max(at.index());
                }
            }
        }
    }
}

/// Lowers the group whose launch sits at `id`, if any; `Ok(true)` when it did.
pub(super) fn lower(
    cx: &mut LowerCtx,
    id: NodeId,
    out: &mut Vec<crate::schedule::Dispatch>,
) -> Result<bool, crate::GpuError> {
    use crate::catalog::matmul::{MatmulKernel, VecMultiParams};
    use crate::KernelKey;
    if let Some(grp) = cx.groups.split.get(&id).cloned() {
        let Some(&first) = grp.first() else { return Ok(false) };
        let (mut params, grid) =
            VecMultiParams::new(first.m, first.k, first.a_stride_m, part_widths(&grp), false)?;
        let mut ops = split_operands(cx, id, &grp)?;
        let norm = with_prenorm(cx, id, &mut ops, &mut params)?;
        let label = group_label(id, &grp);
        let key = KernelKey::Matmul(MatmulKernel::VecSplit {
            bias: first.bias.is_some(),
            f16_b: first.f16_b,
            norm,
        });
        out.push(crate::schedule::Dispatch::new(key, label, ops, &params, grid));
        return Ok(true);
    }
    if let Some((grp, rung)) = cx.groups.coop.get(&id).cloned() {
        return lower_coop(cx, id, &grp, rung, out).map(|()| true);
    }
    if let Some(gated) = cx.groups.gated.get(&id).copied() {
        let (x, y) = (gated.activated, gated.plain);
        let (mut params, grid) = VecMultiParams::new(x.m, x.k, x.a_stride_m, [x.n, x.n, 0], true)?;
        let mut ops = vec![
            cx.operand_nonempty(x.a)?,
            cx.operand_nonempty(x.b)?,
            cx.operand_nonempty(y.b)?,
            cx.operand_nonempty(id)?,
        ];
        let norm = with_prenorm(cx, id, &mut ops, &mut params)?;
        let label = format!("{id} gated matmul ({}, {})", x.id, y.id);
        let key = KernelKey::Matmul(MatmulKernel::VecGated { act: x.act, f16_b: x.f16_b, norm });
        out.push(crate::schedule::Dispatch::new(key, label, ops, &params, grid));
        return Ok(true);
    }
    Ok(false)
}

/// The operands of a split launch: a, three weights, three outputs (a missing third part's
/// weight repeats the last one's and its output is a placeholder), then three biases if any.
fn split_operands(
    cx: &mut LowerCtx,
    id: NodeId,
    grp: &[VecMember],
) -> Result<Vec<crate::schedule::Operand>, crate::GpuError> {
    let missing = || crate::GpuError::Lowering { node: cx.label(id), reason: "an empty matmul group".into() };
    let (Some(&first), Some(&last)) = (grp.first(), grp.last()) else { return Err(missing()) };
    let part = |s: usize| grp.get(s).copied().unwrap_or(last);
    let mut ops = vec![cx.operand_nonempty(first.a)?];
    for s in 0..MULTI_MAX_PARTS {
        ops.push(cx.operand_nonempty(part(s).b)?);
    }
    for s in 0..MULTI_MAX_PARTS {
        ops.push(match grp.get(s) {
            Some(m) => cx.operand_nonempty(m.id)?,
            None => cx.scratch(16),
        });
    }
    if first.bias.is_some() {
        for s in 0..MULTI_MAX_PARTS {
            let b = part(s).bias.ok_or_else(|| crate::GpuError::Lowering {
                node: cx.label(id),
                reason: "a grouped matmul lost its bias".into(),
            })?;
            ops.push(cx.operand_nonempty(b)?);
        }
    }
    Ok(ops)
}

/// For a launch that computes its A's RMS norm: binds the norm's input as A and γ last, and
/// sets eps. Returns whether it did.
fn with_prenorm(
    cx: &mut LowerCtx,
    id: NodeId,
    ops: &mut Vec<crate::schedule::Operand>,
    params: &mut crate::catalog::matmul::VecMultiParams,
) -> Result<bool, crate::GpuError> {
    let Some(pre) = cx.groups.prenorm.get(&id).copied() else { return Ok(false) };
    if let Some(a) = ops.first_mut() {
        *a = cx.operand_nonempty(pre.x)?;
    }
    ops.push(cx.operand_nonempty(pre.gamma)?);
    params.eps = pre.eps;
    Ok(true)
}

/// The label of a group's launch: its nodes.
fn group_label(id: NodeId, grp: &[VecMember]) -> String {
    let names: Vec<String> = grp.iter().map(|m| m.id.to_string()).collect();
    format!("{} matmul ×{} ({})", id, grp.len(), names.join(", "))
}

fn lower_coop(
    cx: &mut LowerCtx,
    id: NodeId,
    grp: &[VecMember],
    rung: MatmulRung,
    out: &mut Vec<crate::schedule::Dispatch>,
) -> Result<(), crate::GpuError> {
    use crate::catalog::matmul::{CoopSplitParams, MatmulKernel};
    let Some(&first) = grp.first() else { return Ok(()) };
    let n = part_widths(grp);
    let (p, _, _) = MatmulParams::from_shapes(
        &[first.m as usize, first.k as usize],
        &[first.n as usize, first.k as usize],
        false,
        true,
    )?;
    let (params, grid) = CoopSplitParams::new(p, n, rung)?;
    let ops = split_operands(cx, id, grp)?;
    let key = crate::KernelKey::Matmul(MatmulKernel::CoopSplit {
        wide: rung == MatmulRung::Coop128,
        bias: first.bias.is_some(),
        f16_b: first.f16_b,
    });
    out.push(crate::schedule::Dispatch::new(key, group_label(id, grp), ops, &params, grid));
    Ok(())
}
