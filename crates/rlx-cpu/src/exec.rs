//! The compiled form of a graph on the CPU: the graph itself plus the parameters and states set
//! so far, in a store that the executables of one group share.

use crate::eval::compute;
use crate::ops::state::write_rows;
use rlx_backend::{BackendError, Executable};
use rlx_ir::{Graph, NodeId, Op, Tensor, TensorType};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Params and states by name: one store per compile group.
pub(crate) type Store = Arc<Mutex<HashMap<String, Tensor>>>;

/// Evaluates a graph node by node, in order, dropping each value after its last reader.
pub struct CpuExecutable {
    graph: Graph,
    store: Store,
    /// Per node: how many times it is read by nodes that lead to an output, plus once per
    /// appearance in the outputs. Zero means the node never needs to run.
    reads: Vec<usize>,
}

impl CpuExecutable {
    /// An executable over `store`, in which every state of `graph` not there yet starts as
    /// zeros. A state or param already there under the same name must have the same type.
    pub(crate) fn new(graph: Graph, store: Store) -> Result<Self, BackendError> {
        {
            let mut map = store.lock().map_err(|_| poisoned())?;
            for (name, _, ty) in graph.states().into_iter().chain(graph.params()) {
                if let Some(t) = map.get(name) {
                    if type_of(t) != *ty {
                        return Err(refused(
                            "compile_group",
                            format!("'{name}' is {ty} here but {} in another graph of the group", type_of(t)),
                        ));
                    }
                }
            }
            for (name, _, ty) in graph.states() {
                map.entry(name.to_string()).or_insert_with(|| Tensor::zeros(ty.shape.clone(), ty.dtype));
            }
        }
        let nodes = graph.nodes();
        let mut needed: Vec<bool> = nodes.iter().map(|n| n.op.writes_in_place()).collect();
        let mut reads = vec![0usize; nodes.len()];
        // A state write is kept to the end of the run, when it goes back to the store.
        for (r, n) in reads.iter_mut().zip(nodes) {
            *r += n.op.writes_in_place() as usize;
        }
        for o in graph.outputs() {
            if let Some(n) = needed.get_mut(o.index()) {
                *n = true;
            }
            if let Some(r) = reads.get_mut(o.index()) {
                *r += 1;
            }
        }
        // Nodes only read earlier nodes, so one backward sweep finds everything an output needs.
        for i in (0..nodes.len()).rev() {
            if needed[i] {
                for j in &nodes[i].inputs {
                    if let (Some(n), Some(r)) = (needed.get_mut(j.index()), reads.get_mut(j.index())) {
                        *n = true;
                        *r += 1;
                    }
                }
            }
        }
        Ok(CpuExecutable { graph, store, reads })
    }
}

fn poisoned() -> BackendError {
    refused("run", "a run of another executable of this group panicked while holding the params".into())
}

/// A request this executable cannot serve (a value it was not given, a value of the wrong
/// type). rlx-runtime checks these before calling; direct callers get an error, not a panic.
fn refused(scope: &str, reason: String) -> BackendError {
    BackendError::Driver { device: "cpu".into(), scope: scope.into(), reason }
}

fn type_of(t: &Tensor) -> TensorType {
    TensorType::new(t.shape().clone(), t.dtype())
}

impl Executable for CpuExecutable {
    fn set_param(&mut self, id: NodeId, value: &Tensor) -> Result<(), BackendError> {
        let node = self.graph.node(id)?;
        let (Op::Param { name } | Op::State { name }) = &node.op else {
            return Err(refused(
                "set_param",
                format!("node {id} is a {} node, not a param or state", node.op.name()),
            ));
        };
        if type_of(value) != node.ty {
            return Err(refused(
                "set_param",
                format!("'{name}' is {} but the value is {}", node.ty, type_of(value)),
            ));
        }
        self.store.lock().map_err(|_| poisoned())?.insert(name.clone(), value.clone());
        Ok(())
    }

    fn run(&mut self, inputs: &[(NodeId, &Tensor)]) -> Result<Vec<Tensor>, BackendError> {
        let feed: HashMap<NodeId, &Tensor> = inputs.iter().copied().collect();
        let store = Arc::clone(&self.store);
        let mut store = store.lock().map_err(|_| poisoned())?;
        let (outs, written) = self.evaluate(&feed, &store)?;
        for (name, t) in written {
            store.insert(name, t);
        }
        Ok(outs)
    }
}

impl CpuExecutable {
    /// One run over the values in `store`: the outputs, and the new value of every state the
    /// run wrote (which the caller puts back, once nothing borrows the store).
    #[allow(clippy::type_complexity)]
    fn evaluate(
        &self,
        feed: &HashMap<NodeId, &Tensor>,
        store: &HashMap<String, Tensor>,
    ) -> Result<(Vec<Tensor>, Vec<(String, Tensor)>), BackendError> {
        let mut remaining = self.reads.clone();
        let mut vals: Vec<Option<Cow<'_, Tensor>>> = vec![None; self.graph.len()];
        let missing = |id: NodeId| refused("run", format!("node {id} was read after it was released"));

        for (i, node) in self.graph.nodes().iter().enumerate() {
            if remaining[i] == 0 {
                continue; // no output depends on it
            }
            let id = NodeId(i as u32);
            let value = match &node.op {
                Op::Input { name } => {
                    let t = *feed
                        .get(&id)
                        .ok_or_else(|| refused("run", format!("input '{name}' ({id}) was not given")))?;
                    if type_of(t) != node.ty {
                        return Err(refused(
                            "run",
                            format!("input '{name}' is {} but the value is {}", node.ty, type_of(t)),
                        ));
                    }
                    Cow::Borrowed(t)
                }
                Op::Param { name } | Op::State { name } => Cow::Borrowed(
                    store
                        .get(name)
                        .ok_or_else(|| refused("run", format!("param '{name}' ({id}) was never set")))?,
                ),
                // The state's own value is read by this write only (the verifier makes sure).
                Op::WriteRows { axis } => {
                    let arg = |k: usize| {
                        node.inputs
                            .get(k)
                            .and_then(|j| vals.get(j.index()))
                            .and_then(|v| v.as_deref())
                            .ok_or_else(|| missing(id))
                    };
                    Cow::Owned(write_rows(*axis, arg(0)?, arg(1)?, arg(2)?)?)
                }
                Op::Constant(t) => Cow::Borrowed(t),
                // A reshape of a value nobody else reads takes that value over: no copy.
                Op::Reshape(_)
                    if node.inputs.len() == 1
                        && remaining[node.inputs[0].index()] == 1
                        && matches!(vals[node.inputs[0].index()], Some(Cow::Owned(_))) =>
                {
                    let src = vals[node.inputs[0].index()].take().ok_or_else(|| missing(node.inputs[0]))?;
                    Cow::Owned(src.into_owned().reshape(node.ty.shape.clone())?)
                }
                op => {
                    let args = node
                        .inputs
                        .iter()
                        .map(|j| vals.get(j.index()).and_then(|v| v.as_deref()).ok_or_else(|| missing(*j)))
                        .collect::<Result<Vec<&Tensor>, _>>()?;
                    Cow::Owned(compute(op, &args, &node.ty)?)
                }
            };
            for j in &node.inputs {
                let r = &mut remaining[j.index()];
                *r = r.saturating_sub(1);
                if *r == 0 {
                    vals[j.index()] = None;
                }
            }
            vals[i] = Some(value);
        }

        let mut outs = Vec::with_capacity(self.graph.outputs().len());
        for o in self.graph.outputs() {
            let k = o.index();
            remaining[k] = remaining[k].saturating_sub(1);
            let v = if remaining[k] == 0 { vals[k].take() } else { vals[k].clone() };
            outs.push(v.ok_or_else(|| missing(*o))?.into_owned());
        }
        let mut written = Vec::new();
        for (i, node) in self.graph.nodes().iter().enumerate() {
            let state = node.inputs.first().and_then(|s| self.graph.node(*s).ok());
            if let (true, Some(Op::State { name })) = (node.op.writes_in_place(), state.map(|s| &s.op)) {
                let t = vals[i].take().ok_or_else(|| missing(NodeId(i as u32)))?;
                written.push((name.clone(), t.into_owned()));
            }
        }
        Ok((outs, written))
    }
}
