//! Custom graphs from Python: `rlx.Graph` (a subset of rlx-ir's builder: inputs, params,
//! matmul, elementwise and activation ops, softmax, layer norm, reductions, reshape and
//! transpose: enough for an MLP or an attention block), `rlx.Node`, `rlx.Session`,
//! `rlx.Executable` and `rlx.compile`.
//!
//! Graph outputs are named (`set_outputs` takes a dict, or a list named "output_0", ...) and
//! `Executable.run` takes and returns a dict of numpy arrays: C-contiguous inputs are read in
//! place, outputs hand their Rust buffers to numpy. Compile and run release the GIL.

use crate::convert::{self, Borrowed};
use crate::embedder::lock;
use crate::errors::{self, GraphError, InvalidInput};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rlx_ir::{BinaryOp, DType, NodeId, UnaryOp};
use rlx_runtime::{CompileOptions, Device, HostData};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Distinguishes graphs, so a node of one graph is refused by another.
static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

/// A value in a graph: what `Graph` methods take and return.
#[pyclass(module = "rlx", name = "Node", frozen)]
#[derive(Clone)]
pub struct Node {
    graph: u64,
    id: NodeId,
    /// Its dims and dtype, for Python (`node.shape`, `node.dtype`).
    shape: Vec<usize>,
    dtype: DType,
}

#[pymethods]
impl Node {
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.shape.clone()
    }

    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    fn __repr__(&self) -> String {
        format!("rlx.Node({:?}, {:?}, {})", self.id, self.shape, self.dtype)
    }
}

/// `v` as a Node (a copy of the handle).
fn node_of(v: &Bound<'_, PyAny>) -> PyResult<Node> {
    Ok(v.extract::<PyRef<'_, Node>>()?.clone())
}

/// A graph under construction.
#[pyclass(module = "rlx", name = "Graph")]
pub struct Graph {
    key: u64,
    g: rlx_ir::Graph,
    outputs: Vec<String>,
}

impl Graph {
    fn node(&self, id: NodeId) -> PyResult<Node> {
        let ty = self.g.ty(id).map_err(errors::from_ir)?;
        Ok(Node { graph: self.key, id, shape: ty.shape.dims().to_vec(), dtype: ty.dtype })
    }

    fn id(&self, n: &Node) -> PyResult<NodeId> {
        if n.graph != self.key {
            return Err(GraphError::new_err(format!(
                "node {:?} belongs to another rlx.Graph; build each value in the graph that uses it",
                n.id
            )));
        }
        Ok(n.id)
    }

    fn unary(&mut self, op: UnaryOp, x: &Node) -> PyResult<Node> {
        let x = self.id(x)?;
        let y = self.g.unary(op, x).map_err(errors::from_ir)?;
        self.node(y)
    }

    fn binary(&mut self, op: BinaryOp, a: &Node, b: &Node) -> PyResult<Node> {
        let (a, b) = (self.id(a)?, self.id(b)?);
        let y = self.g.binary(op, a, b).map_err(errors::from_ir)?;
        self.node(y)
    }
}

#[pymethods]
impl Graph {
    #[new]
    #[pyo3(signature = (name = "graph"))]
    fn new(name: &str) -> Self {
        Graph {
            key: NEXT_GRAPH.fetch_add(1, Ordering::Relaxed),
            g: rlx_ir::Graph::new(name),
            outputs: Vec::new(),
        }
    }

    /// An input fed to every `run`, of `shape` and `dtype` ("f32", "i32", "float32", ...).
    #[pyo3(signature = (name, shape, dtype = "f32"))]
    fn input(&mut self, name: &str, shape: Vec<usize>, dtype: &str) -> PyResult<Node> {
        let id = self.g.input(name, &shape, convert::dtype(dtype)?).map_err(errors::from_ir)?;
        self.node(id)
    }

    /// A param (a weight), set once with `Executable.set_param`.
    #[pyo3(signature = (name, shape, dtype = "f32"))]
    fn param(&mut self, name: &str, shape: Vec<usize>, dtype: &str) -> PyResult<Node> {
        let id = self.g.param(name, &shape, convert::dtype(dtype)?).map_err(errors::from_ir)?;
        self.node(id)
    }

    /// A scalar f32 constant (broadcasts in elementwise ops).
    fn scalar(&mut self, value: f32) -> PyResult<Node> {
        let id = self.g.scalar(value).map_err(errors::from_ir)?;
        self.node(id)
    }

    /// Matrix product of the last two axes (batched over the leading ones).
    fn matmul(&mut self, a: &Node, b: &Node) -> PyResult<Node> {
        let (a, b) = (self.id(a)?, self.id(b)?);
        let y = self.g.matmul(a, b).map_err(errors::from_ir)?;
        self.node(y)
    }

    fn add(&mut self, a: &Node, b: &Node) -> PyResult<Node> {
        self.binary(BinaryOp::Add, a, b)
    }

    fn sub(&mut self, a: &Node, b: &Node) -> PyResult<Node> {
        self.binary(BinaryOp::Sub, a, b)
    }

    fn mul(&mut self, a: &Node, b: &Node) -> PyResult<Node> {
        self.binary(BinaryOp::Mul, a, b)
    }

    fn div(&mut self, a: &Node, b: &Node) -> PyResult<Node> {
        self.binary(BinaryOp::Div, a, b)
    }

    fn maximum(&mut self, a: &Node, b: &Node) -> PyResult<Node> {
        self.binary(BinaryOp::Maximum, a, b)
    }

    fn relu(&mut self, x: &Node) -> PyResult<Node> {
        self.unary(UnaryOp::Relu, x)
    }

    /// GELU, the erf form unless `approximate="tanh"`.
    #[pyo3(signature = (x, approximate = "none"))]
    fn gelu(&mut self, x: &Node, approximate: &str) -> PyResult<Node> {
        match approximate {
            "none" => self.unary(UnaryOp::Gelu, x),
            "tanh" => self.unary(UnaryOp::GeluTanh, x),
            other => {
                Err(InvalidInput::new_err(format!("gelu approximate={other:?}: use \"none\" or \"tanh\"")))
            }
        }
    }

    fn silu(&mut self, x: &Node) -> PyResult<Node> {
        self.unary(UnaryOp::Silu, x)
    }

    fn sigmoid(&mut self, x: &Node) -> PyResult<Node> {
        self.unary(UnaryOp::Sigmoid, x)
    }

    fn tanh(&mut self, x: &Node) -> PyResult<Node> {
        self.unary(UnaryOp::Tanh, x)
    }

    fn exp(&mut self, x: &Node) -> PyResult<Node> {
        self.unary(UnaryOp::Exp, x)
    }

    fn sqrt(&mut self, x: &Node) -> PyResult<Node> {
        self.unary(UnaryOp::Sqrt, x)
    }

    fn neg(&mut self, x: &Node) -> PyResult<Node> {
        self.unary(UnaryOp::Neg, x)
    }

    #[pyo3(signature = (x, axis = -1))]
    fn softmax(&mut self, x: &Node, axis: isize) -> PyResult<Node> {
        let x = self.id(x)?;
        let y = self.g.softmax(x, axis).map_err(errors::from_ir)?;
        self.node(y)
    }

    /// Layer norm over `axis`; gamma / beta default to ones / zeros.
    #[pyo3(signature = (x, gamma = None, beta = None, axis = -1, eps = 1e-5))]
    fn layer_norm(
        &mut self,
        x: &Node,
        gamma: Option<&Node>,
        beta: Option<&Node>,
        axis: isize,
        eps: f32,
    ) -> PyResult<Node> {
        let x = self.id(x)?;
        let gamma = gamma.map(|n| self.id(n)).transpose()?;
        let beta = beta.map(|n| self.id(n)).transpose()?;
        let y = self.g.layer_norm(x, gamma, beta, axis, eps).map_err(errors::from_ir)?;
        self.node(y)
    }

    #[pyo3(signature = (x, axes, keepdim = false))]
    fn sum(&mut self, x: &Node, axes: Vec<isize>, keepdim: bool) -> PyResult<Node> {
        let x = self.id(x)?;
        let y = self.g.sum(x, &axes, keepdim).map_err(errors::from_ir)?;
        self.node(y)
    }

    #[pyo3(signature = (x, axes, keepdim = false))]
    fn mean(&mut self, x: &Node, axes: Vec<isize>, keepdim: bool) -> PyResult<Node> {
        let x = self.id(x)?;
        let y = self.g.mean(x, &axes, keepdim).map_err(errors::from_ir)?;
        self.node(y)
    }

    fn reshape(&mut self, x: &Node, shape: Vec<usize>) -> PyResult<Node> {
        let x = self.id(x)?;
        let y = self.g.reshape(x, &shape).map_err(errors::from_ir)?;
        self.node(y)
    }

    /// Swaps axes `a` and `b` (negative counts from the end).
    #[pyo3(signature = (x, a = -2, b = -1))]
    fn transpose(&mut self, x: &Node, a: isize, b: isize) -> PyResult<Node> {
        let x = self.id(x)?;
        let y = self.g.transpose(x, a, b).map_err(errors::from_ir)?;
        self.node(y)
    }

    fn cast(&mut self, x: &Node, dtype: &str) -> PyResult<Node> {
        let x = self.id(x)?;
        let y = self.g.cast(x, convert::dtype(dtype)?).map_err(errors::from_ir)?;
        self.node(y)
    }

    /// The graph's outputs: a dict {name: node}, a list of nodes (named "output_0", ...) or
    /// one node ("output").
    fn set_outputs(&mut self, outputs: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut named: Vec<(String, Node)> = Vec::new();
        if let Ok(d) = outputs.cast::<PyDict>() {
            for (k, v) in d.iter() {
                named.push((k.extract::<String>()?, node_of(&v)?));
            }
        } else if let Ok(n) = node_of(outputs) {
            named.push(("output".to_string(), n));
        } else if let Ok(l) = outputs.cast::<PyList>() {
            for (i, v) in l.iter().enumerate() {
                named.push((format!("output_{i}"), node_of(&v)?));
            }
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "set_outputs takes a Node, a list of Nodes or a dict {name: Node}",
            ));
        }
        let ids = named.iter().map(|(_, n)| self.id(n)).collect::<PyResult<Vec<_>>>()?;
        self.g.set_outputs(&ids).map_err(errors::from_ir)?;
        self.outputs = named.into_iter().map(|(k, _)| k).collect();
        Ok(())
    }

    #[getter]
    fn name(&self) -> String {
        self.g.name().to_string()
    }

    /// The graph as text (rlx-ir's dump).
    fn dump(&self) -> String {
        rlx_ir::dump(&self.g)
    }

    fn __repr__(&self) -> String {
        format!("rlx.Graph({:?}, {} nodes)", self.g.name(), self.g.len())
    }
}

/// A device opened for compiling graphs.
#[pyclass(module = "rlx", name = "Session")]
pub struct Session {
    inner: Mutex<Option<Arc<rlx_runtime::Session>>>,
    device: Device,
}

impl Session {
    fn session(&self) -> PyResult<Arc<rlx_runtime::Session>> {
        lock(&self.inner).as_ref().map(Arc::clone).ok_or_else(|| errors::closed("Session"))
    }
}

#[pymethods]
impl Session {
    /// Opens `device` ("auto", "cpu", "gpu", "vulkan").
    #[new]
    #[pyo3(signature = (device = "auto"))]
    fn new(py: Python<'_>, device: &str) -> PyResult<Self> {
        let device = convert::device(device)?;
        let s = py.detach(|| rlx_runtime::Session::new(device)).map_err(errors::from_runtime)?;
        Ok(Session { device: s.device(), inner: Mutex::new(Some(Arc::new(s))) })
    }

    /// Compiles `graph` (which must have outputs) at `precision` ("f32", "mixed", "f16").
    #[pyo3(signature = (graph, precision = "f32"))]
    fn compile(&self, py: Python<'_>, graph: &Graph, precision: &str) -> PyResult<Executable> {
        let opts = CompileOptions { precision: convert::precision(precision)?, ..Default::default() };
        let session = self.session()?;
        let g = graph.g.clone();
        let exe = py.detach(move || session.compile_with(&g, &opts)).map_err(errors::from_runtime)?;
        Ok(Executable::new(exe, graph.outputs.clone()))
    }

    /// The device this session runs on.
    #[getter]
    fn device(&self) -> &'static str {
        self.device.name()
    }

    /// Closes the session; its executables keep working, new compiles raise rlx.ClosedError.
    fn close(&self) {
        lock(&self.inner).take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        format!("rlx.Session({:?})", self.device.name())
    }
}

/// A compiled graph bound to one device.
#[pyclass(module = "rlx", name = "Executable")]
pub struct Executable {
    inner: Mutex<Option<rlx_runtime::Executable>>,
    outputs: Vec<String>,
    /// Inputs and params: (name, dtype, dims).
    inputs: Vec<(String, DType, Vec<usize>)>,
    params: Vec<(String, DType, Vec<usize>)>,
}

impl Executable {
    fn new(exe: rlx_runtime::Executable, outputs: Vec<String>) -> Self {
        let ports = |ps: &[rlx_runtime::Port]| {
            ps.iter().map(|p| (p.name.clone(), p.ty.dtype, p.ty.shape.dims().to_vec())).collect::<Vec<_>>()
        };
        Executable {
            inputs: ports(exe.inputs()),
            params: ports(exe.params()),
            outputs,
            inner: Mutex::new(Some(exe)),
        }
    }
}

/// The declared port `name` among `ports`, or InvalidInput listing them.
fn port<'a>(
    ports: &'a [(String, DType, Vec<usize>)],
    kind: &str,
    name: &str,
) -> PyResult<&'a (String, DType, Vec<usize>)> {
    ports.iter().find(|p| p.0 == name).ok_or_else(|| {
        let known: Vec<&str> = ports.iter().map(|p| p.0.as_str()).collect();
        InvalidInput::new_err(format!(
            "unknown {kind} '{name}'; the graph's {kind}s are: {}",
            known.join(", ")
        ))
    })
}

#[pymethods]
impl Executable {
    /// Sets param `name` from a numpy array of its declared dtype and shape.
    fn set_param(&self, py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (n, dtype, dims) = port(&self.params, "param", name)?;
        let borrowed = Borrowed::new(value, "param", n, *dtype, dims)?;
        let flat = borrowed.flat()?;
        py.detach(|| {
            let mut guard = lock(&self.inner);
            let exe = guard.as_mut().ok_or_else(|| errors::closed("Executable"))?;
            exe.set_param(name, &flat).map_err(errors::from_runtime)
        })
    }

    /// Runs the graph on `inputs` ({name: numpy array}, one per graph input, each of its
    /// declared dtype and shape, C-contiguous) and returns {output name: numpy array}.
    fn run<'py>(&self, py: Python<'py>, inputs: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
        let mut borrowed: Vec<(String, Borrowed<'py>)> = Vec::with_capacity(inputs.len());
        for (k, v) in inputs.iter() {
            let key: String = k.extract()?;
            let (n, dtype, dims) = port(&self.inputs, "input", &key)?;
            borrowed.push((key, Borrowed::new(&v, "input", n, *dtype, dims)?));
        }
        let flats =
            borrowed.iter().map(|(k, b)| Ok((k.as_str(), b.flat()?))).collect::<PyResult<Vec<_>>>()?;
        let out = py.detach(|| {
            let named: Vec<(&str, &dyn HostData)> =
                flats.iter().map(|(k, f)| (*k, f as &dyn HostData)).collect();
            let mut guard = lock(&self.inner);
            let exe = guard.as_mut().ok_or_else(|| errors::closed("Executable"))?;
            exe.run(&named).map_err(errors::from_runtime)
        })?;
        let dict = PyDict::new(py);
        for (name, t) in self.outputs.iter().zip(out) {
            dict.set_item(name, convert::tensor_to_numpy(py, t)?)?;
        }
        Ok(dict)
    }

    /// {input name: (shape, dtype)}.
    #[getter]
    fn inputs(&self) -> Vec<(String, Vec<usize>, &'static str)> {
        self.inputs.iter().map(|(n, d, s)| (n.clone(), s.clone(), d.name())).collect()
    }

    #[getter]
    fn params(&self) -> Vec<(String, Vec<usize>, &'static str)> {
        self.params.iter().map(|(n, d, s)| (n.clone(), s.clone(), d.name())).collect()
    }

    #[getter]
    fn outputs(&self) -> Vec<String> {
        self.outputs.clone()
    }

    /// Frees the executable and its device memory; later calls raise rlx.ClosedError.
    fn close(&self, py: Python<'_>) {
        py.detach(|| lock(&self.inner).take());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }
}

/// Compiles `graph` on a new session for `device`: `rlx.Session(device).compile(graph, ...)`.
#[pyfunction]
#[pyo3(signature = (graph, device = "auto", precision = "f32"))]
fn compile(py: Python<'_>, graph: &Graph, device: &str, precision: &str) -> PyResult<Executable> {
    Session::new(py, device)?.compile(py, graph, precision)
}

/// Registers the graph classes and `compile`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Node>()?;
    m.add_class::<Graph>()?;
    m.add_class::<Session>()?;
    m.add_class::<Executable>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    Ok(())
}
