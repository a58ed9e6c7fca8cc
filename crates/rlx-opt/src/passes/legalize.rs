//! Legalization: make a graph runnable on a device.
//!
//! (a) Every op the device does not list in `native_ops` is decomposed into ops it does list
//! (see `decompose.rs`); decompositions are applied recursively, so an attention that becomes a
//! softmax is decomposed further when softmax is missing too. An op with no decomposition, or a
//! dtype the device does not store, is an `Unsupported` error naming the op, the node and the
//! device.
//! (b) Without native broadcasting, every operand of a binary/compare/where (and fused
//! elementwise) whose shape differs from the output gets an explicit `Expand`.
//! (c) Every node it emits (leaves, native ops and the pieces of decompositions) must fit the
//! device's `max_tensor_bytes`, counted as `TensorType::storage_bytes`; a bigger one is
//! `TooLarge` naming the user's node. Later passes only fuse, so no bigger tensor appears after.

use super::decompose;
use super::Rewriter;
use crate::OptError;
use rlx_backend::Capabilities;
use rlx_ir::infer::{broadcast_shapes, infer};
use rlx_ir::{DType, Graph, NodeId, Op, OpKind, Shape, Tensor, TensorType};
use std::collections::HashMap;

/// Decomposes what `caps` lacks and makes broadcasts explicit where `caps` needs it. Leaves
/// (input, param, constant) are storage, not kernels, and are always legal.
pub fn legalize(g: &Graph, caps: &Capabilities) -> Result<Graph, OptError> {
    legalize_with_origin(g, caps, &|id| id)
}

/// [`legalize`], translating node ids in errors through `origin` (the pipeline maps them back to
/// the ids of the graph the user built).
pub(crate) fn legalize_with_origin(
    g: &Graph,
    caps: &Capabilities,
    origin: &dyn Fn(NodeId) -> NodeId,
) -> Result<Graph, OptError> {
    let mut rw = Rewriter::new(g, "legalize");
    let mut em = Emitter {
        graph: Graph::new(g.name()),
        caps,
        node: NodeId(0),
        stack: Vec::new(),
        shared: HashMap::new(),
    };
    for (i, node) in g.nodes().iter().enumerate() {
        let id = NodeId(i as u32);
        em.node = origin(id);
        let new = match &node.op {
            Op::Input { .. } | Op::Param { .. } | Op::State { .. } => {
                em.leaf(node.op.clone(), node.ty.clone())?
            }
            op => {
                let inputs = rw.inputs_of(node)?;
                em.emit(op.clone(), &inputs)?
            }
        };
        rw.set(id, new);
    }
    // The emitter owns the graph being built; hand it to the rewriter for the output checks.
    rw.new = em.graph;
    rw.finish().map(|(g, _)| g)
}

/// The nodes made for one (op kind, inputs) pair by [`Emitter::emit_shared`], with their ops.
type Made = Vec<(Op, NodeId)>;

/// Pushes ops into the graph being built, decomposing or expanding as the device needs.
pub(crate) struct Emitter<'c> {
    graph: Graph,
    caps: &'c Capabilities,
    /// The node being legalized (for errors).
    node: NodeId,
    /// Names of the ops being decomposed, outermost first (for errors).
    stack: Vec<&'static str>,
    /// Nodes [`Emitter::emit_shared`] made, by op kind and inputs, then by op.
    shared: HashMap<(OpKind, Vec<NodeId>), Made>,
}

impl Emitter<'_> {
    pub(crate) fn ty(&self, id: NodeId) -> Result<&TensorType, OptError> {
        Ok(self.graph.ty(id)?)
    }

    pub(crate) fn dims(&self, id: NodeId) -> Result<Vec<usize>, OptError> {
        Ok(self.ty(id)?.shape.dims().to_vec())
    }

    /// A constant (always legal).
    pub(crate) fn constant(&mut self, t: Tensor) -> Result<NodeId, OptError> {
        self.emit(Op::Constant(t), &[])
    }

    /// A rank-0 constant of `dtype` holding `v`.
    pub(crate) fn scalar(&mut self, dtype: DType, v: f64) -> Result<NodeId, OptError> {
        self.constant(Tensor::from_f64(Shape::scalar(), dtype, &[v])?)
    }

    /// Adds an Input or Param leaf of type `ty`.
    fn leaf(&mut self, op: Op, ty: TensorType) -> Result<NodeId, OptError> {
        let id = self.graph.push_leaf(op, ty)?;
        self.check_storable(id)
    }

    /// [`Emitter::emit`], reusing the node an earlier call made for the same pure op on the same
    /// inputs. For decompositions whose nodes share work: the parts of one attention's
    /// gradient each recompute the scores and probabilities, which must be computed once.
    /// Only for ops without side effects (no state writes).
    pub(crate) fn emit_shared(&mut self, op: Op, inputs: &[NodeId]) -> Result<NodeId, OptError> {
        let key = (op.kind(), inputs.to_vec());
        if let Some(&(_, id)) = self.shared.get(&key).and_then(|made| made.iter().find(|(o, _)| *o == op)) {
            return Ok(id);
        }
        let id = self.emit(op.clone(), inputs)?;
        self.shared.entry(key).or_default().push((op, id));
        Ok(id)
    }

    /// Adds `op` to the graph in a form the device runs.
    pub(crate) fn emit(&mut self, op: Op, inputs: &[NodeId]) -> Result<NodeId, OptError> {
        if op.is_leaf() || self.native(&op, inputs)? {
            let inputs =
                if self.caps.native_broadcast { inputs.to_vec() } else { self.expand_operands(&op, inputs)? };
            let id = self.graph.push(op, &inputs)?;
            return self.check_storable(id);
        }
        let name = op.name();
        // What the op would produce; a decomposition that changes it would silently corrupt
        // every reader.
        let want = {
            let tys = inputs.iter().map(|&i| self.graph.ty(i)).collect::<Result<Vec<_>, _>>()?;
            infer(&op, &tys)?
        };
        self.stack.push(name);
        let result = decompose::decompose(self, &op, inputs);
        self.stack.pop();
        match result? {
            Some(id) => {
                let ty = self.ty(id)?;
                if ty != &want {
                    return Err(OptError::Invariant {
                        pass: "legalize",
                        node: self.node,
                        reason: format!("decomposition of {name} gave {ty}, expected {want}"),
                    });
                }
                Ok(id)
            }
            None => Err(self.unsupported(
                name,
                "the device has no native kernel for it and rlx has no decomposition of it into simpler ops; \
                 run the graph on a device that has it (the CPU runs every op)"
                    .into(),
            )),
        }
    }

    /// Whether the device runs `op` on `inputs` as it is ([`Capabilities::runs`]: a fused
    /// elementwise node must also fit the device's fusion limits, else it is decomposed).
    fn native(&self, op: &Op, inputs: &[NodeId]) -> Result<bool, OptError> {
        if !matches!(op, Op::FusedElementwise(_)) {
            return Ok(self.caps.supports(op.kind()));
        }
        let tys = inputs.iter().map(|&i| self.graph.ty(i)).collect::<Result<Vec<_>, _>>()?;
        let out = infer(op, &tys)?;
        let shapes: Vec<&[usize]> = tys.iter().map(|t| t.shape.dims()).collect();
        Ok(self.caps.runs(op, &shapes, out.shape.dims()))
    }

    /// The device must store the node's dtype and hold its size.
    fn check_storable(&self, id: NodeId) -> Result<NodeId, OptError> {
        let ty = self.ty(id)?;
        let op = self.graph.node(id)?.op.name();
        let (bytes, limit) = (ty.storage_bytes(), self.caps.max_tensor_bytes);
        if bytes > limit {
            let op = match self.stack.first() {
                None => op.to_string(),
                Some(outer) => format!("{op}, from the decomposition of {outer}"),
            };
            return Err(OptError::TooLarge {
                node: self.node,
                op,
                ty: ty.to_string(),
                bytes,
                limit,
                device: self.caps.device_name.clone(),
            });
        }
        let dtype = ty.dtype;
        if self.caps.dtypes.contains(&dtype) {
            return Ok(id);
        }
        let stored = self.caps.dtypes.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
        let why = match self.caps.missing_dtype_features.get(&dtype) {
            Some(feature) => format!("the device does not store {dtype} tensors: it lacks {feature}"),
            None => format!("the device does not store {dtype} tensors"),
        };
        Err(self.unsupported(op, format!("{why}; cast the graph's values to a dtype it has ({stored})")))
    }

    /// The error for `op`, told in terms of the user's op when it arose inside a decomposition.
    pub(crate) fn unsupported(&self, op: &'static str, reason: String) -> OptError {
        let device = self.caps.device_name.clone();
        match self.stack.first() {
            None => OptError::Unsupported { op: op.into(), node: self.node, device, reason },
            Some(outer) => {
                let mut chain = self.stack.clone();
                chain.push(op);
                OptError::Unsupported {
                    op: (*outer).into(),
                    node: self.node,
                    device,
                    reason: format!(
                        "the device has no native {outer}, and its decomposition ({}) needs {op}: {reason}",
                        chain.join(" → ")
                    ),
                }
            }
        }
    }

    /// Inserts `Expand` for every operand of a broadcasting op whose shape differs from the
    /// output shape.
    fn expand_operands(&mut self, op: &Op, inputs: &[NodeId]) -> Result<Vec<NodeId>, OptError> {
        if !matches!(op, Op::Binary(_) | Op::Compare(_) | Op::Where | Op::FusedElementwise(_)) {
            return Ok(inputs.to_vec());
        }
        let mut out = Shape::scalar();
        for &i in inputs {
            out = broadcast_shapes(op.name(), &out, &self.ty(i)?.shape)?;
        }
        let mut expanded = Vec::with_capacity(inputs.len());
        for &i in inputs {
            if self.ty(i)?.shape == out {
                expanded.push(i);
            } else {
                expanded.push(self.emit(Op::Expand(out.clone()), &[i])?);
            }
        }
        Ok(expanded)
    }
}
