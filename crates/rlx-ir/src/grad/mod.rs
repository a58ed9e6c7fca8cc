//! Reverse-mode automatic differentiation as a graph transform.
//!
//! [`grad`](crate::grad()) (or [`Graph::backward`], in place) walks the graph from the loss
//! back to the params, inputs or states asked for, and appends, for every node on a path
//! between them, the nodes that compute its operands' gradients from its own. The backward
//! graph is made of the same forward ops as any other graph (matmuls, elementwise ops,
//! reductions, shape ops, ...), so every backend that runs the forward ops runs it, and
//! rlx-opt optimizes it like any graph. The forward values a rule needs (a matmul's operands,
//! a softmax's output, ...) are simply read by the new nodes: they stay alive until their
//! last reader.
//!
//! The rules, one per op family, are in `rules_elementwise.rs` (unary, binary, where, cast),
//! `rules_reduce.rs` (reductions, top-k values, cumsum, matmul), `rules_norm.rs` (softmax,
//! log-softmax, layer and RMS norm), `rules_shape.rs` (reshape, permute, slice, concat,
//! expand, gather, scatter-add, pad, reverse, upsample, RoPE, FFT), `rules_conv.rs` (conv2d,
//! max and average pooling) and `rules_attention.rs` (attention, recomputing the attention
//! matrix from q, k and v). Where a value feeds several consumers, its gradients are added.
//!
//! One gradient is not a composition of forward ops: that of a gather (an embedding lookup)
//! with respect to its table is a native [`Op::ScatterAdd`], which sums the rows of dy that
//! share an index in increasing position order, so the table's gradient is bit-identical run
//! to run on every backend, and costs one pass over dy (no [n, V] one-hot). Its own gradient
//! is a gather by the same ids.
//!
//! With [`BackwardOptions::recompute`] (activation checkpointing) the rules read copies of the
//! forward values, recomputed from chosen checkpoint nodes, instead of the values themselves.
//!
//! An op with no rule on the path to a param (integer ops, arg-reductions, top-k indices,
//! samplers, quantized weights, fused forms, custom ops, the scans, ...) is
//! [`IrError::NoGradient`], naming the op and the param; ops that do not depend on any param
//! need no rule.

mod rules_attention;
pub use rules_attention::attention_grad_composed;
mod rules_conv;
mod rules_elementwise;
mod rules_norm;
mod rules_reduce;
mod rules_shape;

use crate::{DType, Graph, IrError, Node, NodeId, Op, Shape, ShapeList};
use std::collections::HashMap;

/// A graph with its backward appended ([`grad`]).
#[derive(Clone, Debug)]
pub struct Gradients {
    /// The forward graph followed by the backward nodes. Its outputs are the loss, then one
    /// gradient per differentiated node, in the order given.
    pub graph: Graph,
    /// The loss node (the same id as in the forward graph).
    pub loss: NodeId,
    /// The gradient of the loss with respect to each node of `wrt`, in order: a node of the
    /// same shape and dtype.
    pub grads: Vec<NodeId>,
}

/// The gradients of `loss` with respect to each of `wrt` (params, inputs or states of float
/// dtype): a copy of `graph` with the backward nodes appended, whose outputs are the loss followed by
/// the gradients. See [`Graph::backward`] for the rules.
///
/// ```
/// use rlx_ir::{DType, Graph};
/// let mut g = Graph::new("mlp");
/// let x = g.input("x", &[4, 3], DType::F32)?;
/// let w = g.param("w", &[3, 2], DType::F32)?;
/// let y = g.matmul(x, w)?;
/// let y = g.tanh(y)?;
/// let loss = g.mean(y, &[0, 1], false)?;
/// let gr = rlx_ir::grad(&g, loss, &[w])?;
/// // Compile `gr.graph` like any graph: it outputs the loss, then d loss / d w.
/// assert_eq!(gr.graph.outputs(), &[loss, gr.grads[0]]);
/// assert_eq!(gr.graph.ty(gr.grads[0])?, g.ty(w)?);
/// # Ok::<(), rlx_ir::IrError>(())
/// ```
pub fn grad(graph: &Graph, loss: NodeId, wrt: &[NodeId]) -> Result<Gradients, IrError> {
    let mut g = graph.clone();
    let grads = g.backward(loss, wrt)?;
    let mut outputs = vec![loss];
    outputs.extend(&grads);
    g.set_outputs(&outputs)?;
    Ok(Gradients { graph: g, loss, grads })
}

/// How [`Graph::backward_with`] builds the backward.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackwardOptions {
    /// Activation checkpointing. `None`: the backward reads the forward's values, which stay
    /// alive (and hold memory) until their last reader in the backward. `Some(keep)`: only the
    /// nodes of `keep` (the checkpoints, typically each block's input or output) and the
    /// graph's leaves are read as they are; every other forward value a gradient rule needs is
    /// recomputed from them, by copies of the forward nodes appended where the backward first
    /// needs them. The forward's intermediates then die inside the forward, and the memory
    /// planner reuses their space, for about one more forward of compute. The copies compute
    /// exactly what the originals did (every op is deterministic, random numbers included:
    /// they are counter-based), so the gradients are bit-identical to the kept ones. State
    /// writes and custom ops are never copied.
    pub recompute: Option<Vec<NodeId>>,
}

impl Graph {
    /// Appends the backward of `loss` with respect to each of `wrt` to this graph and returns
    /// the gradient nodes, in `wrt`'s order (outputs are not touched). On error nothing is
    /// appended.
    ///
    /// - `loss` is a float node. A scalar is the usual case; a loss of any other shape is
    ///   seeded with ones, so the gradients are those of the sum of its elements.
    /// - Each of `wrt` is a `Param`, an `Input` or a `State` (a weight trained on the device)
    ///   of float dtype. A node the loss does not
    ///   depend on gets a gradient of zeros.
    /// - Gradients have their node's dtype and shape; broadcast operands get the gradient summed
    ///   back to their own shape.
    pub fn backward(&mut self, loss: NodeId, wrt: &[NodeId]) -> Result<Vec<NodeId>, IrError> {
        self.backward_with(loss, wrt, &BackwardOptions::default())
    }

    /// [`Graph::backward`] with options: activation checkpointing ([`BackwardOptions`]).
    pub fn backward_with(
        &mut self,
        loss: NodeId,
        wrt: &[NodeId],
        opts: &BackwardOptions,
    ) -> Result<Vec<NodeId>, IrError> {
        self.atomically(|g| backward(g, loss, wrt, opts))
    }
}

/// Forward values recomputed for the backward (activation checkpointing): the copy of each
/// forward node made so far, built from the kept nodes.
struct Recompute {
    keep: Vec<bool>,
    copy: HashMap<NodeId, NodeId>,
}

impl Recompute {
    fn new(g: &Graph, checkpoints: &[NodeId]) -> Result<Recompute, IrError> {
        let mut keep: Vec<bool> = g
            .nodes()
            .iter()
            .map(|n| n.op.is_leaf() || matches!(n.op, Op::WriteRows { .. } | Op::Custom(_)))
            .collect();
        for &c in checkpoints {
            g.node(c)?;
            keep[c.index()] = true;
        }
        Ok(Recompute { keep, copy: HashMap::new() })
    }

    /// The value of forward node `id` for the backward: itself when kept, else its copy,
    /// made (with the copies of its own operands) on first use.
    fn value(&mut self, g: &mut Graph, id: NodeId) -> Result<NodeId, IrError> {
        // Depth-first without recursion: a chain between checkpoints may be long.
        let mut stack = vec![id];
        while let Some(&top) = stack.last() {
            if self.keep.get(top.index()).copied().unwrap_or(true) || self.copy.contains_key(&top) {
                stack.pop();
                continue;
            }
            let node = g.node(top)?.clone();
            let missing: Vec<NodeId> = node
                .inputs
                .iter()
                .copied()
                .filter(|x| !(self.keep.get(x.index()).copied().unwrap_or(true) || self.copy.contains_key(x)))
                .collect();
            if !missing.is_empty() {
                stack.extend(missing);
                continue;
            }
            let inputs: Vec<NodeId> = node.inputs.iter().map(|x| *self.copy.get(x).unwrap_or(x)).collect();
            let c = g.push(node.op.clone(), &inputs)?;
            self.copy.insert(top, c);
            stack.pop();
        }
        Ok(*self.copy.get(&id).unwrap_or(&id))
    }
}

/// Why a rule gave no gradient: a graph error while building it, or an op with no gradient.
pub(crate) enum RuleError {
    Ir(IrError),
    /// The op has no gradient rule; the reason says why and what to do.
    NoRule(String),
}

impl From<IrError> for RuleError {
    fn from(e: IrError) -> Self {
        RuleError::Ir(e)
    }
}

/// One gradient (or none) per operand of a node.
pub(crate) type Grads = Result<Vec<Option<NodeId>>, RuleError>;

/// What a rule sees: the node, its id (its forward value), and which operands need a gradient.
pub(crate) struct At<'a> {
    pub id: NodeId,
    pub node: &'a Node,
    pub need: &'a [bool],
}

impl At<'_> {
    pub fn input(&self, i: usize) -> NodeId {
        self.node.inputs[i]
    }
    pub fn dtype(&self) -> DType {
        self.node.ty.dtype
    }
}

fn backward(
    g: &mut Graph,
    loss: NodeId,
    wrt: &[NodeId],
    opts: &BackwardOptions,
) -> Result<Vec<NodeId>, IrError> {
    let lt = g.ty_for("grad", loss)?.clone();
    if !lt.dtype.is_float() {
        return Err(IrError::DType {
            op: "grad",
            operand: 0,
            got: lt.dtype,
            expected: "a float loss (f32, f16 or bf16); cast it first".into(),
        });
    }
    let n = g.len();
    // source[i]: the first of `wrt` that node i depends on.
    let mut source: Vec<Option<usize>> = vec![None; n];
    for (k, &w) in wrt.iter().enumerate() {
        let node = g.node(w)?;
        if !matches!(node.op, Op::Param { .. } | Op::Input { .. } | Op::State { .. }) {
            return Err(IrError::Attribute {
                op: "grad",
                attr: "wrt",
                shape: node.ty.shape.clone(),
                reason: format!(
                    "{w} is a {} node; grad differentiates with respect to params, inputs and \
                     states (Graph::param, Graph::input, Graph::state)",
                    node.op.name()
                ),
            });
        }
        if !node.ty.dtype.is_float() {
            return Err(IrError::DType {
                op: "grad",
                operand: k + 1,
                got: node.ty.dtype,
                expected: "f32, f16 or bf16: integer and bool values have no gradient".into(),
            });
        }
        source[w.index()].get_or_insert(k);
    }
    for i in 0..n {
        if source[i].is_none() {
            source[i] = g.nodes()[i].inputs.iter().find_map(|x| source[x.index()]);
        }
    }

    let mut recompute = match &opts.recompute {
        Some(keep) => Some(Recompute::new(g, keep)?),
        None => None,
    };
    let mut adj: Vec<Option<NodeId>> = vec![None; n];
    if source[loss.index()].is_some() {
        let one = g.full(&[], lt.dtype, 1.0)?;
        adj[loss.index()] = Some(if lt.shape.rank() == 0 { one } else { g.expand(one, lt.shape.dims())? });
    }
    for i in (0..=loss.index()).rev() {
        let (Some(dy), Some(k)) = (adj[i], source[i]) else { continue };
        // Leaves end the walk (checked before the clone: a constant may hold much data).
        if g.nodes()[i].op.is_leaf() {
            continue;
        }
        let node = g.nodes()[i].clone();
        let need: Vec<bool> = node.inputs.iter().map(|x| source[x.index()].is_some()).collect();
        // The rule reads the node's value and operands: kept, or recomputed copies, made only
        // for the values this rule reads (a matmul's or an add's reads neither its own value
        // nor, for an add, its operands).
        let (id, seen) = match recompute.as_mut() {
            None => (NodeId(i as u32), node.clone()),
            Some(r) => {
                let (reads_value, reads) = values_read(g, &node, NodeId(i as u32), &need, dy);
                let mut seen = node.clone();
                for (x, read) in seen.inputs.iter_mut().zip(reads) {
                    if read {
                        *x = r.value(g, *x)?;
                    }
                }
                let id = if reads_value { r.value(g, NodeId(i as u32))? } else { NodeId(i as u32) };
                (id, seen)
            }
        };
        let at = At { id, node: &seen, need: &need };
        let grads = rule(g, &at, dy).map_err(|e| match e {
            RuleError::Ir(e) => e,
            RuleError::NoRule(reason) => IrError::NoGradient {
                op: node.op.name(),
                node: NodeId(i as u32),
                shapes: operand_shapes(g, &node),
                wrt: leaf_name(g, wrt[k]),
                reason,
            },
        })?;
        for (j, gx) in grads.into_iter().enumerate() {
            let (Some(gx), Some(&x)) = (gx, node.inputs.get(j)) else { continue };
            if !need[j] {
                continue;
            }
            check_same_type(g, &node, x, gx)?;
            adj[x.index()] = Some(match adj[x.index()] {
                None => gx,
                Some(prev) => g.add(prev, gx)?,
            });
        }
    }
    wrt.iter()
        .map(|&w| match adj[w.index()] {
            Some(d) => Ok(d),
            None => {
                let t = g.ty(w)?.clone();
                let zero = g.full(&[], t.dtype, 0.0)?;
                if t.shape.rank() == 0 {
                    Ok(zero)
                } else {
                    g.expand(zero, t.shape.dims())
                }
            }
        })
        .collect()
}

/// Which forward values the gradient rule of `node` (at `id`) reads: its own value, and each
/// operand's. Found by a trial build of the rule on the originals, rolled back: a value is read
/// when a node the rule appends takes it as an operand or the rule returns it as a gradient
/// (reading only its type does not count). A rule that fails here fails again in the real
/// build, which reports it.
fn values_read(g: &mut Graph, node: &Node, id: NodeId, need: &[bool], dy: NodeId) -> (bool, Vec<bool>) {
    let start = g.len();
    let returned: Vec<NodeId> = match rule(g, &At { id, node, need }, dy) {
        Ok(grads) => grads.into_iter().flatten().collect(),
        Err(_) => Vec::new(),
    };
    let appended = g.nodes().get(start..).unwrap_or_default();
    let reads = |x: NodeId| returned.contains(&x) || appended.iter().any(|n| n.inputs.contains(&x));
    let found = (reads(id), node.inputs.iter().map(|&x| reads(x)).collect());
    g.truncate(start);
    found
}

/// A rule's gradient must have its operand's exact type; anything else is a bug in the rule,
/// reported instead of building a wrong graph.
fn check_same_type(g: &Graph, node: &Node, x: NodeId, gx: NodeId) -> Result<(), IrError> {
    let (xt, gt) = (g.ty(x)?, g.ty(gx)?);
    if xt == gt {
        return Ok(());
    }
    Err(IrError::ShapeMismatch {
        op: node.op.name(),
        shapes: ShapeList(vec![xt.shape.clone(), gt.shape.clone()]),
        reason: format!(
            "grad: the rule for {} gave operand {x} a gradient of type {gt:?} instead of {xt:?} \
             (a bug in rlx-ir's grad rules: please report it with this graph)",
            node.op.name()
        ),
    })
}

fn operand_shapes(g: &Graph, node: &Node) -> ShapeList {
    ShapeList(node.inputs.iter().filter_map(|&x| g.ty(x).ok().map(|t| t.shape.clone())).collect())
}

fn leaf_name(g: &Graph, w: NodeId) -> String {
    g.node(w).ok().and_then(|n| n.op.leaf_name().map(str::to_string)).unwrap_or_else(|| w.to_string())
}

/// The gradients of one node's operands from the gradient `dy` of its value.
fn rule(g: &mut Graph, at: &At<'_>, dy: NodeId) -> Grads {
    use rules_elementwise as ew;
    match &at.node.op {
        Op::Unary(u) => ew::unary(g, at, *u, dy),
        Op::Binary(b) => ew::binary(g, at, *b, dy),
        Op::Where => ew::where_(g, at, dy),
        Op::Cast(_) => ew::cast(g, at, dy),
        Op::Reduce { op, axes, keepdim } => rules_reduce::reduce(g, at, *op, axes, *keepdim, dy),
        Op::Cumsum { axis } => rules_reduce::cumsum(g, at, *axis, dy),
        Op::TopK { k, axis, largest, output } => {
            rules_reduce::topk(g, at, (*k, *axis, *largest), *output, dy)
        }
        Op::MatMul { transpose_a, transpose_b } => {
            rules_reduce::matmul(g, at, *transpose_a, *transpose_b, dy)
        }
        Op::Attention(spec) => rules_attention::attention(g, at, spec, dy),
        Op::Conv2d { stride, padding, dilation, groups } => {
            rules_conv::conv2d(g, at, *stride, *padding, *dilation, *groups, dy)
        }
        Op::Pool2d { kind, kernel, stride, padding } => {
            rules_conv::pool2d(g, at, *kind, *kernel, *stride, *padding, dy)
        }
        Op::Softmax => rules_norm::softmax(g, at, dy),
        Op::LogSoftmax => rules_norm::log_softmax(g, at, dy),
        Op::LayerNorm { eps } => rules_norm::layer_norm(g, at, *eps, dy),
        Op::RmsNorm { eps } => rules_norm::rms_norm(g, at, *eps, dy),
        Op::Reshape(_)
        | Op::Permute(_)
        | Op::Slice { .. }
        | Op::Concat { .. }
        | Op::Expand(_)
        | Op::Gather { .. }
        | Op::Pad { .. }
        | Op::Reverse { .. }
        | Op::Upsample2x
        | Op::Rope { .. }
        | Op::Fft { .. } => rules_shape::shape(g, at, dy),
        Op::ScatterAdd { axis, .. } => rules_shape::scatter_add(g, at, *axis, dy),
        other => Err(RuleError::NoRule(no_rule_reason(other))),
    }
}

/// Why `op` has no gradient, and what to do.
fn no_rule_reason(op: &Op) -> String {
    match op {
        Op::Compare(_) | Op::ArgReduce { .. } => {
            "its result is discrete (bool or index): it has no gradient; detach it by making it \
             an input, or differentiate with respect to a param it does not depend on"
                .into()
        }
        Op::Random { .. } => "random numbers have no gradient".into(),
        Op::QuantMatMul { .. } | Op::QuantGather { .. } | Op::QuantGroupedMatMul { .. } => {
            "quantized weights are frozen: differentiate with respect to float params (an adapter \
             such as LoRA beside the quantized weight)"
                .into()
        }
        Op::FusedMatMul { .. } | Op::AddNorm { .. } | Op::FusedElementwise(_) => {
            "fused forms are made by rlx-opt: differentiate the graph you built, before it is \
             optimized"
                .into()
        }
        Op::Custom(_) => "custom ops carry no gradient rule".into(),
        Op::WriteRows { .. } => "an in-place state write has no gradient".into(),
        _ => format!(
            "{} has no gradient rule yet; rewrite it with differentiable ops or keep the params \
             it depends on out of wrt",
            op.name()
        ),
    }
}

// ---- helpers shared by the rules ----

/// A rank-0 constant of `dtype`.
pub(crate) fn scalar(g: &mut Graph, dtype: DType, v: f64) -> Result<NodeId, IrError> {
    g.full(&[], dtype, v)
}

/// The dims of `id`.
pub(crate) fn dims(g: &Graph, id: NodeId) -> Result<Vec<usize>, IrError> {
    Ok(g.ty(id)?.shape.dims().to_vec())
}

/// `dy` (of a broadcast result's shape) summed back to `target`, the shape of an operand that
/// was broadcast to it: the leading axes the operand lacks, and its size-1 axes that grew.
pub(crate) fn reduce_to(g: &mut Graph, dy: NodeId, target: &Shape) -> Result<NodeId, IrError> {
    let d = dims(g, dy)?;
    if d == target.dims() {
        return Ok(dy);
    }
    let lead = d.len().saturating_sub(target.rank());
    let axes: Vec<isize> = (0..d.len())
        .filter(|&i| i < lead || (target.dims()[i - lead] == 1 && d[i] != 1))
        .map(|i| i as isize)
        .collect();
    let summed = if axes.is_empty() { dy } else { g.sum(dy, &axes, true)? };
    g.reshape(summed, target.dims())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Every gradient has its node's type, the forward is kept as it was, and the outputs are
    /// the loss and the gradients.
    #[test]
    fn gradients_have_their_nodes_types_and_the_forward_is_kept() {
        let mut g = Graph::new("types");
        let x = g.input("x", &[2, 3], DType::F32).unwrap();
        let w = g.param("w", &[3, 4], DType::F32).unwrap();
        let b = g.param("b", &[4], DType::F32).unwrap();
        let y = g.matmul(x, w).unwrap();
        let y = g.add(y, b).unwrap();
        let y = g.softmax(y, -1).unwrap();
        let loss = g.sum(y, &[0, 1], false).unwrap();
        let gr = grad(&g, loss, &[w, b, x]).unwrap();
        assert_eq!(&gr.graph.nodes()[..g.len()], g.nodes());
        for (&d, &v) in gr.grads.iter().zip(&[w, b, x]) {
            assert_eq!(gr.graph.ty(d).unwrap(), g.ty(v).unwrap());
        }
        assert_eq!(gr.graph.outputs()[0], loss);
        assert_eq!(&gr.graph.outputs()[1..], &gr.grads[..]);
        crate::verify(&gr.graph).unwrap();
    }

    /// With recompute, a copy of a forward value is made only where a rule reads it: x·w → gelu
    /// → sum with no checkpoints copies the matmul (gelu's rule reads its operand) but not the
    /// sum or the gelu (their values are read by no rule), and the gradients are built as
    /// without recompute otherwise.
    #[test]
    fn recompute_copies_only_the_values_rules_read() {
        let build = |recompute: bool| {
            let mut g = Graph::new("copies");
            let x = g.input("x", &[2, 3], DType::F32).unwrap();
            let w = g.param("w", &[3, 4], DType::F32).unwrap();
            let u = g.matmul(x, w).unwrap();
            let a = g.push(Op::Unary(crate::UnaryOp::Relu), &[u]).unwrap();
            let loss = g.sum(a, &[0, 1], false).unwrap();
            let forward = g.len();
            let opts = BackwardOptions { recompute: recompute.then(Vec::new) };
            let dw = g.backward_with(loss, &[w], &opts).unwrap();
            g.set_outputs(&[loss, dw[0]]).unwrap();
            crate::verify(&g).unwrap();
            let count = |f: fn(&Op) -> bool| g.nodes()[forward..].iter().filter(|n| f(&n.op)).count();
            let mm = count(|op| matches!(op, Op::MatMul { .. }));
            let red = count(|op| matches!(op, Op::Reduce { .. }));
            let relu = count(|op| matches!(op, Op::Unary(crate::UnaryOp::Relu)));
            (mm, red, relu, g.len() - forward)
        };
        let (mm, red, relu, added) = build(false);
        let (mm_r, red_r, relu_r, added_r) = build(true);
        assert_eq!(mm_r, mm + 1, "the matmul relu's rule reads is copied");
        assert_eq!((red_r, relu_r), (red, relu), "the sum and the relu are not copied");
        assert_eq!(added_r, added + 1);
    }

    /// An op without a rule is an error that names it and the param, and leaves the graph
    /// untouched.
    #[test]
    fn no_rule_is_an_error_and_backward_is_atomic() {
        let mut g = Graph::new("experts");
        let w = g.param("w", &[3, 5, 4], DType::F32).unwrap();
        let x = g.input("x", &[2, 1, 4], DType::F32).unwrap();
        let ids = g.input("ids", &[2, 2], DType::I32).unwrap();
        let k = g.input("key", &[2], DType::U32).unwrap();
        let r =
            g.push(Op::Random { dist: crate::RandomDist::Uniform, shape: Shape::new(&[5]) }, &[k]).unwrap();
        let e = g.push(Op::GroupedMatMul, &[x, w, ids]).unwrap();
        let y = g.mul(e, r).unwrap();
        let p = g.sum(y, &[0, 1, 2], false).unwrap();
        let before = g.len();
        let err = g.backward(p, &[w]).unwrap_err();
        assert!(matches!(&err, IrError::NoGradient { op: "grouped_matmul", wrt, .. } if wrt == "w"), "{err}");
        assert_eq!(g.len(), before);
        // The random draw does not depend on x: it needs no rule.
        assert!(g.backward(p, &[x]).unwrap_err().to_string().contains("grouped_matmul"));
        let s = g.sum(r, &[0], false).unwrap();
        let xs = g.sum(x, &[0, 1, 2], false).unwrap();
        let s = g.mul(s, xs).unwrap();
        assert_eq!(g.backward(s, &[x]).unwrap().len(), 1);
    }
}
