//! Lowering: a verified, optimized graph → a [`Schedule`]. One function per op family, each in
//! its own file; this file owns the walk, the memory plan and operand resolution.
//!
//! Conventions every family follows:
//! - Device data is stored as [`crate::convert`] says: f32, i32, u32, and Bool as a u32 0/1 word,
//!   f16 and bf16 in 2 bytes, u8 in 1. Only casts and views (reshapes) take the packed ones;
//!   every other op must compute on words ([`lower_node`] refuses it otherwise).
//! - Planned values live in pool buffers ([`assign_pools`]): one live value per pool, so no
//!   step reads and writes one buffer.
//! - A step whose output is empty is skipped. An op whose output is non-empty but one of whose
//!   inputs is empty (matmul with K = 0, concat with an empty part) must still write every output
//!   element (a fill step, or skip that part).
//! - Limits are checked here or in the params constructors, so a driver never meets a binding
//!   past `max_binding_bytes` or a workgroup count past `max_workgroups`: those are errors at
//!   compile time naming the node.

mod attention;
mod attention_grad;
mod cast;
mod custom;
mod elementwise;
mod fft;
pub(crate) mod fused;
mod grouped;
mod matmul;
mod matmul_group;
mod norm;
mod quant;
mod random;
mod reduce;
mod rope;
mod shape;
mod site;
mod ssm;
mod state;

use crate::convert::device_bytes;
use crate::schedule::{
    BufferId, Dispatch, GpuLimits, Leaf, LeafKind, Operand, Schedule, ValidSchedule, BINDING_UNIT,
};
use crate::GpuError;
use rlx_backend::KernelOptions;
use rlx_ir::{Graph, Node, NodeId, Op, OpKind, TensorType};
use rlx_opt::memory::{plan, MemoryPlan};
pub use site::Site;
use std::collections::HashMap;

/// Everything a family lowering may ask about the graph.
pub struct LowerCtx<'a> {
    pub graph: &'a Graph,
    pub plan: MemoryPlan,
    pub limits: &'a GpuLimits,
    /// The precision and forced kernels the compile asked for.
    pub options: KernelOptions,
    leaf_index: HashMap<NodeId, usize>,
    /// Per memory-plan buffer: its pool (`None` for an empty value).
    pool_of: Vec<Option<usize>>,
    /// Temporary buffers requested so far (bytes).
    scratch: Vec<u64>,
    /// Casts whose readers read their input directly (`matmul::absorbed_casts`: f16 weights;
    /// `state::narrowing_writes`: f32 rows rounded by the state write): they launch nothing.
    pub absorbed: std::collections::HashSet<NodeId>,
    /// Matrix-vector matmuls that launch together ([`matmul_group`]).
    groups: matmul_group::VecGroups,
    /// Values computed straight into a state's buffer (value → state; `state::in_place_writes`).
    pub in_place: HashMap<NodeId, NodeId>,
}

impl<'a> LowerCtx<'a> {
    /// The node behind `id`.
    pub fn node(&self, id: NodeId) -> Result<&'a Node, GpuError> {
        self.graph.node(id).map_err(|e| GpuError::Lowering { node: id.to_string(), reason: e.to_string() })
    }

    pub fn ty(&self, id: NodeId) -> Result<&'a TensorType, GpuError> {
        Ok(&self.node(id)?.ty)
    }

    /// Where `id`'s value lives: its arena slot, its leaf buffer, or (for a reshape view) the
    /// storage of the node it shows. `None` for an empty tensor.
    pub fn operand(&self, id: NodeId) -> Result<Option<Operand>, GpuError> {
        let ty = self.ty(id)?;
        let size = device_bytes(ty);
        if size == 0 {
            return Ok(None);
        }
        if size > self.limits.max_binding_bytes {
            return Err(GpuError::TensorTooLarge {
                node: format!("{} {}", self.label(id), ty),
                bytes: size,
                limit: self.limits.max_binding_bytes,
            });
        }
        let base = self.plan.view_of.get(id.index()).copied().flatten().unwrap_or(id);
        let base = self.in_place.get(&base).copied().unwrap_or(base);
        if let Some(&leaf) = self.leaf_index.get(&base) {
            return Ok(Some(Operand { buffer: BufferId::Leaf(leaf), offset: 0, size }));
        }
        let pool =
            self.plan.slots.get(base.index()).copied().flatten().and_then(|s| self.pool_of.get(s.buffer));
        match pool.copied().flatten() {
            Some(pool) => Ok(Some(Operand { buffer: BufferId::Pool(pool), offset: 0, size })),
            None => Err(GpuError::Lowering {
                node: id.to_string(),
                reason: "the memory plan gives this value no storage".into(),
            }),
        }
    }

    /// Like [`Self::operand`] but for a value known to be non-empty.
    pub fn operand_nonempty(&self, id: NodeId) -> Result<Operand, GpuError> {
        self.operand(id)?.ok_or_else(|| GpuError::Lowering {
            node: id.to_string(),
            reason: "an empty tensor reached a kernel binding".into(),
        })
    }

    /// A temporary device buffer of `bytes` (≥ 4) for the steps of one node.
    pub fn scratch(&mut self, bytes: u64) -> Operand {
        let size = bytes.max(4);
        self.scratch.push(whole_units(size));
        Operand { buffer: BufferId::Scratch(self.scratch.len() - 1), offset: 0, size }
    }

    /// "%12 layer_norm": the label of a node's steps.
    pub fn label(&self, id: NodeId) -> String {
        match self.graph.node(id) {
            Ok(n) => format!("{id} {}", n.op.name()),
            Err(_) => id.to_string(),
        }
    }
}

/// Lowers `graph` (verified, optimized for a GPU backend's capabilities) into a schedule.
pub fn lower(graph: &Graph, limits: &GpuLimits, options: &KernelOptions) -> Result<ValidSchedule, GpuError> {
    let alignment = usize::try_from(limits.alignment()).unwrap_or(usize::MAX);
    let mut plan = plan(graph, alignment)
        .map_err(|e| GpuError::Lowering { node: "graph".into(), reason: e.to_string() })?;
    let mut leaves = Vec::new();
    let mut leaf_index = HashMap::new();
    for (i, node) in graph.nodes().iter().enumerate() {
        let kind = match &node.op {
            Op::Input { name } => LeafKind::Input(name.clone()),
            Op::Param { name } => LeafKind::Param(name.clone()),
            Op::State { name } => LeafKind::State(name.clone()),
            Op::Constant(t) => LeafKind::Constant(t.clone()),
            _ => continue,
        };
        let id = NodeId(i as u32);
        leaf_index.insert(id, leaves.len());
        leaves.push(Leaf { node: id, kind, ty: node.ty.clone(), bytes: whole_units(device_bytes(&node.ty)) });
    }
    let mut absorbed = matmul::absorbed_casts(graph, options, limits);
    absorbed.extend(state::narrowing_writes(graph));
    let groups = matmul_group::VecGroups::find(graph, options, limits, &absorbed);
    groups.adjust(&mut plan);
    let (pool_of, pools) = assign_pools(&plan);
    let mut cx = LowerCtx {
        graph,
        plan,
        limits,
        options: *options,
        leaf_index,
        pool_of,
        scratch: Vec::new(),
        absorbed,
        groups,
        in_place: state::in_place_writes(graph),
    };
    let mut steps = Vec::new();
    for (i, node) in graph.nodes().iter().enumerate() {
        let id = NodeId(i as u32);
        if node.ty.numel() == 0 || cx.absorbed.contains(&id) || cx.groups.silent.contains(&id) {
            continue;
        }
        if !matmul_group::lower(&mut cx, id, &mut steps)? {
            lower_node(&mut cx, id, node, &mut steps)?;
        }
    }
    let outputs = graph
        .outputs()
        .iter()
        .map(|&o| Ok((cx.operand(o)?, cx.ty(o)?.clone())))
        .collect::<Result<Vec<_>, GpuError>>()?;
    let name = graph.name().to_string();
    ValidSchedule::new(Schedule { name, steps, pools, leaves, scratch: cx.scratch, outputs }, limits)
}

/// Assigns every buffer of the memory plan to a pool: a pool holds values whose lifetimes do
/// not meet (lifetimes are closed intervals, so a node's output never shares a pool with one
/// of its inputs). Returns each plan buffer's pool (`None` when empty) and the pool sizes.
/// Sizes are compared as they are allocated, in whole [`BINDING_UNIT`]s (the plan counts 7
/// bytes for 7 u8; the device binds whole units).
///
/// Greedy by size: the largest values are placed first, each into the first pool whose values
/// it outlives or precedes, else into a new pool of its size, so a pool is never grown and its
/// size is that of its first value. Placing in time order instead (the first free pool,
/// grown when too small) let small long-lived values sit in large pools: on a BERT training
/// step (forward, backward, AdamW) it allocated 45 % more than this, and it kept activation
/// checkpointing from saving any memory (measured in docs/perf.md, "AdamW's factors once per
/// step, and activation checkpointing").
///
/// Why pools and not one arena: see [`crate::schedule`]. The cost is memory: a pool is as
/// large as its largest value, where the arena packed values by offset.
pub fn assign_pools(plan: &MemoryPlan) -> (Vec<Option<usize>>, Vec<u64>) {
    let mut order: Vec<usize> = (0..plan.buffers.len()).filter(|&b| plan.buffers[b].size > 0).collect();
    order.sort_by_key(|&b| (std::cmp::Reverse(whole_units(plan.buffers[b].size)), plan.buffers[b].first));
    let mut pool_of = vec![None; plan.buffers.len()];
    // Per pool: its size and its values' lifetimes, disjoint, keyed by first node.
    let mut pools: Vec<(u64, std::collections::BTreeMap<usize, usize>)> = Vec::new();
    for b in order {
        let buf = &plan.buffers[b];
        // Free for [first, last] when the lifetime starting last at or before `last` ended
        // before `first` (lifetimes in a pool are disjoint, so that one is the only candidate).
        let free = |lives: &std::collections::BTreeMap<usize, usize>| {
            lives.range(..=buf.last).next_back().is_none_or(|(_, &end)| end < buf.first)
        };
        let i = match pools.iter().position(|(_, lives)| free(lives)) {
            Some(i) => i,
            None => {
                pools.push((whole_units(buf.size), std::collections::BTreeMap::new()));
                pools.len() - 1
            }
        };
        pools[i].1.insert(buf.first, buf.last);
        pool_of[b] = Some(i);
    }
    (pool_of, pools.into_iter().map(|(size, _)| size).collect())
}

/// `bytes` rounded up to whole [`BINDING_UNIT`]s (at least one): the size of every device buffer.
fn whole_units(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(BINDING_UNIT).saturating_mul(BINDING_UNIT)
}

fn lower_node(cx: &mut LowerCtx, id: NodeId, node: &Node, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let at = Site::new(cx, id, node);
    let kind = node.op.kind();
    let packed_rows = shape::packed_rows(cx, node)?;
    if !packed_rows
        && !matches!(
            kind,
            OpKind::Input | OpKind::Param | OpKind::Constant | OpKind::State | OpKind::Cast | OpKind::Reshape
        )
    {
        // Operands a kernel reads as stored (packed quantized blocks, f16 keys and values of an
        // attention: GPUs have `half_kv_attention`, see policy.rs) are not words it computes on.
        for (j, &i) in node.inputs.iter().enumerate() {
            let ty = cx.ty(i)?;
            let stored = rlx_backend::Capabilities::read_as_stored_with(&node.op, j, ty, true);
            if crate::convert::stored_size(ty.dtype) != 4 && !stored {
                return Err(shape::packed_refused(&at.label, ty.dtype));
            }
        }
        let dtype = node.ty.dtype;
        if crate::convert::stored_size(dtype) != 4 {
            return Err(shape::packed_refused(&at.label, dtype));
        }
    }
    match kind {
        OpKind::Input | OpKind::Param | OpKind::Constant | OpKind::State => Ok(()),
        OpKind::WriteRows => state::lower(cx, &at, out),
        OpKind::Unary | OpKind::Binary | OpKind::Compare | OpKind::Where | OpKind::FusedElementwise => {
            elementwise::lower(cx, &at, out)
        }
        OpKind::Cast => cast::lower(cx, &at, out),
        OpKind::Reshape => shape::lower_reshape(cx, &at, out),
        OpKind::Permute
        | OpKind::Slice
        | OpKind::Concat
        | OpKind::Expand
        | OpKind::Gather
        | OpKind::ScatterAdd
        | OpKind::Pad
        | OpKind::Reverse => shape::lower(cx, &at, out),
        OpKind::Reduce | OpKind::ArgReduce | OpKind::Cumsum | OpKind::TopK => reduce::lower(cx, &at, out),
        OpKind::MatMul | OpKind::FusedMatMul => matmul::lower(cx, &at, out),
        OpKind::QuantMatMul | OpKind::QuantGather => quant::lower(cx, &at, out),
        OpKind::GroupedMatMul | OpKind::QuantGroupedMatMul => grouped::lower(cx, &at, out),
        OpKind::SelectiveScan | OpKind::GatedDeltaRule => ssm::lower(cx, &at, out),
        OpKind::Fft => fft::lower(cx, &at, out),
        OpKind::LayerNorm | OpKind::RmsNorm | OpKind::AddNorm | OpKind::Softmax | OpKind::LogSoftmax => {
            norm::lower(cx, &at, out)
        }
        OpKind::Attention => attention::lower(cx, &at, out),
        OpKind::AttentionGrad => attention_grad::lower(cx, &at, out),
        OpKind::Rope => rope::lower(cx, &at, out),
        OpKind::Random => random::lower(cx, &at, out),
        OpKind::Custom => custom::lower(cx, &at, out),
        // Decomposed by rlx-opt for GPU capabilities; reaching here is a pipeline bug.
        OpKind::Conv2d | OpKind::Pool2d | OpKind::Upsample2x => {
            Err(at.bad("GPU capabilities do not list this op, so rlx-opt should have decomposed it"))
        }
    }
}

impl Schedule {
    /// Checks what drivers rely on: operand counts match the variants, operands lie inside their
    /// buffers, sizes are non-zero and within the binding limit, workgroup counts within limits,
    /// dependencies point backwards. [`lower`] calls it once; drivers trust its result.
    pub fn validate(&self, limits: &GpuLimits) -> Result<(), GpuError> {
        for (i, step) in self.steps.iter().enumerate() {
            let v = step.variant();
            let bad = |reason: String| GpuError::Lowering { node: step.label.clone(), reason };
            if step.operands.len() != v.bindings.len() {
                return Err(bad(format!(
                    "kernel {} takes {} bindings, step has {}",
                    v.name,
                    v.bindings.len(),
                    step.operands.len()
                )));
            }
            if step.params.len() != v.params_size as usize {
                return Err(bad(format!(
                    "kernel {} params are {} bytes, step has {}",
                    v.name,
                    v.params_size,
                    step.params.len()
                )));
            }
            for op in &step.operands {
                let cap = self.buffer_bytes(op.buffer).unwrap_or(0);
                if op.size == 0 || op.offset.saturating_add(op.binding_size()) > cap {
                    return Err(bad(format!(
                        "operand {op:?} (bound in whole 16-byte units) is outside its buffer of {cap} bytes"
                    )));
                }
                if op.binding_size() > limits.max_binding_bytes {
                    return Err(GpuError::TooLarge {
                        kernel: v.static_name(),
                        what: "binding bytes",
                        value: op.binding_size(),
                        limit: limits.max_binding_bytes,
                    });
                }
                if op.offset % limits.alignment() != 0 {
                    return Err(bad(format!("operand offset {} is not aligned", op.offset)));
                }
            }
            if let Some(&d) = step.waits_for.iter().find(|&&d| d >= i) {
                return Err(bad(format!("waits for step {d}, which is not an earlier step")));
            }
            for (d, (&n, &max)) in step.workgroups.iter().zip(&limits.max_workgroups).enumerate() {
                if n == 0 || n > max {
                    return Err(bad(format!("workgroup count {n} in dim {d} is outside 1..={max}")));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod attention_tests;
#[cfg(test)]
mod grouped_tests;
#[cfg(test)]
mod keys_tests;
#[cfg(test)]
mod matmul_group_tests;
#[cfg(test)]
mod matmul_tests;
#[cfg(test)]
mod norm_tests;
#[cfg(test)]
mod pools_tests;
#[cfg(test)]
mod quant_tests;
#[cfg(test)]
mod shape_tests;
#[cfg(test)]
mod ssm_tests;
#[cfg(test)]
mod test_util;
