//! `Executable`: a compiled graph plus its signature, validating everything at the boundary
//! before the backend sees it.

use crate::error::{Error, NameList, PortKind};
use crate::host::{self, HostData};
use rlx_ir::{Graph, NodeId, Tensor, TensorType};
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Names of the params set so far, shared by the executables of one compile group (a param
/// set through one is set for all).
pub(crate) type ParamsSet = Arc<Mutex<HashSet<String>>>;

/// A named input or param of a compiled graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// The input's or param's name in the graph.
    pub name: String,
    /// Its element type and shape.
    pub ty: TensorType,
}

/// A compiled graph bound to one device.
pub struct Executable {
    inner: Box<dyn rlx_backend::Executable>,
    backend: &'static str,
    graph: Graph,
    inputs: Vec<Port>,
    input_ids: Vec<NodeId>,
    params: Vec<Port>,
    param_ids: Vec<NodeId>,
    params_set: ParamsSet,
    states: Vec<Port>,
    state_ids: Vec<NodeId>,
    outputs: Vec<TensorType>,
}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable")
            .field("backend", &self.backend)
            .field("graph", &self.graph.name())
            .field("inputs", &self.inputs)
            .field("params", &self.params)
            .field("states", &self.states)
            .field("outputs", &self.outputs)
            .finish()
    }
}

impl Executable {
    /// The signature comes from the user's graph (names, types, output order); node ids from the
    /// optimized graph, which keeps every input and param by name.
    pub(crate) fn new(
        original: &Graph,
        optimized: Graph,
        inner: Box<dyn rlx_backend::Executable>,
        backend: &'static str,
        params_set: ParamsSet,
    ) -> Result<Executable, Error> {
        let (inputs, input_ids) = ports(PortKind::Input, original.inputs(), &optimized.inputs())?;
        let (params, param_ids) = ports(PortKind::Param, original.params(), &optimized.params())?;
        let (states, state_ids) = ports(PortKind::State, original.states(), &optimized.states())?;
        let outputs =
            original.outputs().iter().map(|&o| original.ty(o).cloned()).collect::<Result<Vec<_>, _>>()?;
        Ok(Executable {
            inner,
            backend,
            graph: optimized,
            inputs,
            input_ids,
            params,
            param_ids,
            params_set,
            states,
            state_ids,
            outputs,
        })
    }

    /// The graph's inputs, in creation order: pass each to every `run`.
    pub fn inputs(&self) -> &[Port] {
        &self.inputs
    }

    /// The graph's params, in creation order: set each once with `set_param`.
    pub fn params(&self) -> &[Port] {
        &self.params
    }

    /// The graph's states, in creation order: zeros after compiling, kept across runs, shared
    /// with the other executables of a compile group ([`crate::Session::compile_group`]).
    pub fn states(&self) -> &[Port] {
        &self.states
    }

    /// Types of the values `run` returns, in order.
    pub fn outputs(&self) -> &[TensorType] {
        &self.outputs
    }

    /// The optimized graph the backend compiled (for `rlx_ir::dump`).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Where the time of the last successful `run` went (upload, device compute, readback), on
    /// backends that can tell them apart (Vulkan); `None` on the CPU or before the first run.
    pub fn profile(&self) -> Option<rlx_backend::RunProfile> {
        self.inner.last_profile()
    }

    /// Every kernel launch of the last run with its GPU time, in order, where the backend times
    /// launches (Vulkan with `RLX_PROFILE=1`); empty otherwise.
    pub fn kernel_times(&self) -> Vec<(&'static str, std::time::Duration)> {
        self.inner.kernel_times()
    }

    /// Short name of the backend that compiled this ("cpu", "vulkan").
    pub fn backend_name(&self) -> &'static str {
        self.backend
    }

    /// Names of params not yet set (through this executable or another of its group).
    pub fn unset_params(&self) -> Vec<&str> {
        let Ok(set) = self.params_set.lock() else {
            // A thread panicked while marking a param: nothing can be trusted to be set.
            return self.params.iter().map(|p| p.name.as_str()).collect();
        };
        self.params.iter().filter(|p| !set.contains(&p.name)).map(|p| p.name.as_str()).collect()
    }

    /// Stores the value of param `name`. Checks the name, the dtype, and the element count (flat
    /// data) or the exact shape (a `Tensor`).
    pub fn set_param(&mut self, name: &str, value: &dyn HostData) -> Result<(), Error> {
        let (id, t) = self.param_value(name, value)?;
        self.inner.set_param(id, &t)?;
        self.mark_set(name);
        Ok(())
    }

    /// [`Executable::set_param`] without blocking (the web, where a GPU backend waits for its
    /// device's answer on the browser's event loop).
    pub async fn set_param_async(&mut self, name: &str, value: &dyn HostData) -> Result<(), Error> {
        let (id, t) = self.param_value(name, value)?;
        self.inner.set_param_async(id, &t).await?;
        self.mark_set(name);
        Ok(())
    }

    /// The node and the checked, converted value of param `name`.
    fn param_value<'a>(
        &self,
        name: &str,
        value: &'a dyn HostData,
    ) -> Result<(NodeId, Cow<'a, Tensor>), Error> {
        let Some(i) = self.params.iter().position(|p| p.name == name) else {
            return Err(self.unknown(PortKind::Param, name));
        };
        let (port, id) = (&self.params[i], self.param_ids[i]);
        Ok((id, host::to_tensor(PortKind::Param, name, &port.ty, value)?))
    }

    fn mark_set(&self, name: &str) {
        if let Ok(mut set) = self.params_set.lock() {
            set.insert(name.to_string());
        }
    }

    /// Overwrites state `name` (for every executable of the group). Checks the name, the dtype
    /// and the element count (flat data) or the exact shape (a `Tensor`).
    pub fn set_state(&mut self, name: &str, value: &dyn HostData) -> Result<(), Error> {
        let Some(i) = self.states.iter().position(|p| p.name == name) else {
            return Err(self.unknown(PortKind::State, name));
        };
        let (port, id) = (&self.states[i], self.state_ids[i]);
        let t = host::to_tensor(PortKind::State, name, &port.ty, value)?;
        self.inner.set_param(id, &t)?;
        Ok(())
    }

    /// Sets every state back to zeros, as after compiling (a new sequence for a KV cache).
    pub fn reset_states(&mut self) -> Result<(), Error> {
        for (port, &id) in self.states.iter().zip(&self.state_ids) {
            self.inner.set_param(id, &Tensor::zeros(port.ty.shape.clone(), port.ty.dtype))?;
        }
        Ok(())
    }

    /// Runs the graph once with a value for every input; returns the outputs in order.
    pub fn run(&mut self, inputs: &[(&str, &dyn HostData)]) -> Result<Vec<Tensor>, Error> {
        let given = self.checked_inputs(inputs)?;
        let feeds: Vec<(NodeId, &Tensor)> =
            self.input_ids.iter().zip(&given).filter_map(|(&id, g)| g.as_deref().map(|t| (id, t))).collect();
        let out = self.inner.run(&feeds)?;
        self.check_outputs(&out)?;
        Ok(out)
    }

    /// [`Executable::run`] without blocking: the only way to run on a GPU on the web, where
    /// the readback completes on the browser's event loop.
    pub async fn run_async(&mut self, inputs: &[(&str, &dyn HostData)]) -> Result<Vec<Tensor>, Error> {
        let given = self.checked_inputs(inputs)?;
        let feeds: Vec<(NodeId, &Tensor)> =
            self.input_ids.iter().zip(&given).filter_map(|(&id, g)| g.as_deref().map(|t| (id, t))).collect();
        let out = self.inner.run_async(&feeds).await?;
        self.check_outputs(&out)?;
        Ok(out)
    }

    /// Each declared input's value, checked and converted, in declaration order (every one
    /// present: a missing, unknown or repeated input is an error, as are unset params).
    fn checked_inputs<'a>(
        &self,
        inputs: &[(&str, &'a dyn HostData)],
    ) -> Result<Vec<Option<Cow<'a, Tensor>>>, Error> {
        let unset = self.unset_params();
        if !unset.is_empty() {
            let unset = NameList(unset.into_iter().map(String::from).collect());
            return Err(Error::ParamsNotSet { unset });
        }
        let mut given: Vec<Option<Cow<'a, Tensor>>> = vec![None; self.inputs.len()];
        for &(name, value) in inputs {
            let Some(i) = self.inputs.iter().position(|p| p.name == name) else {
                return Err(self.unknown(PortKind::Input, name));
            };
            if given[i].is_some() {
                let count = inputs.iter().filter(|(n, _)| *n == name).count();
                return Err(Error::DuplicateInput { name: name.to_string(), count });
            }
            given[i] = Some(host::to_tensor(PortKind::Input, name, &self.inputs[i].ty, value)?);
        }
        let missing: Vec<String> = self
            .inputs
            .iter()
            .zip(&given)
            .filter(|(_, g)| g.is_none())
            .map(|(p, _)| p.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(Error::MissingInputs { missing: NameList(missing), expected: self.signature_text() });
        }
        Ok(given)
    }

    fn check_outputs(&self, out: &[Tensor]) -> Result<(), Error> {
        for (index, expected) in self.outputs.iter().enumerate() {
            let got = match out.get(index) {
                Some(t) if t.dtype() == expected.dtype && t.shape() == &expected.shape => continue,
                Some(t) => format!("{}{}", t.dtype(), t.shape()),
                None => "nothing".to_string(),
            };
            return Err(Error::OutputMismatch {
                backend: self.backend,
                index,
                expected: expected.to_string(),
                got,
            });
        }
        if out.len() > self.outputs.len() {
            let index = self.outputs.len();
            return Err(Error::OutputMismatch {
                backend: self.backend,
                index,
                expected: "no such output".to_string(),
                got: format!("{} outputs in all", out.len()),
            });
        }
        Ok(())
    }

    /// `x: f32[2, 4], mask: bool[2, 7]`, for messages.
    fn signature_text(&self) -> String {
        self.inputs.iter().map(|p| format!("{}: {}", p.name, p.ty)).collect::<Vec<_>>().join(", ")
    }

    fn unknown(&self, kind: PortKind, name: &str) -> Error {
        let (known, other, other_kind, fix) = match kind {
            PortKind::Input => (&self.inputs, &self.params, "a param", "set it with set_param"),
            PortKind::Param => (&self.params, &self.inputs, "an input", "pass it to run"),
            PortKind::State => (&self.states, &self.params, "a param", "set it with set_param"),
        };
        let hint = if other.iter().any(|p| p.name == name) {
            format!("; '{name}' is {other_kind} of this graph: {fix}")
        } else {
            String::new()
        };
        Error::UnknownName {
            kind,
            name: name.to_string(),
            known: NameList(known.iter().map(|p| p.name.clone()).collect()),
            hint,
        }
    }
}

/// Pairs each leaf of the user's graph with its node in the optimized graph, by name.
fn ports(
    kind: PortKind,
    original: Vec<(&str, NodeId, &TensorType)>,
    optimized: &[(&str, NodeId, &TensorType)],
) -> Result<(Vec<Port>, Vec<NodeId>), Error> {
    let mut out = Vec::with_capacity(original.len());
    let mut ids = Vec::with_capacity(original.len());
    for (name, _, ty) in original {
        let Some(&(_, id, _)) = optimized.iter().find(|(n, _, t)| *n == name && *t == ty) else {
            return Err(Error::LostPort { kind, name: name.to_string(), declared: ty.to_string() });
        };
        out.push(Port { name: name.to_string(), ty: ty.clone() });
        ids.push(id);
    }
    Ok((out, ids))
}
