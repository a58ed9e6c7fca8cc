//! The small graphs that many test suites build: a few named leaves (inputs and params) and one
//! output made from them, e.g. `x → exp → out` or `x + p`.

use rlx_ir::{DType, Graph, IrError, NodeId};

/// A leaf of a test graph: an input or a param, with its name, dims and dtype.
#[derive(Clone, Copy, Debug)]
pub struct Leaf<'a> {
    param: bool,
    name: &'a str,
    dims: &'a [usize],
    dtype: DType,
}

/// An input leaf.
pub fn input<'a>(name: &'a str, dims: &'a [usize], dtype: DType) -> Leaf<'a> {
    Leaf { param: false, name, dims, dtype }
}

/// A param leaf.
pub fn param<'a>(name: &'a str, dims: &'a [usize], dtype: DType) -> Leaf<'a> {
    Leaf { param: true, name, dims, dtype }
}

/// The graph `name` with `leaves` (added in order) and the one output `build` makes from them;
/// returns the graph, the leaves' ids and the output's. A builder error is a test failure.
pub fn one_output<const N: usize>(
    name: &str,
    leaves: [Leaf<'_>; N],
    build: impl FnOnce(&mut Graph, [NodeId; N]) -> Result<NodeId, IrError>,
) -> (Graph, [NodeId; N], NodeId) {
    let mut g = Graph::new(name);
    let ids = leaves.map(|l| {
        let id = if l.param { g.param(l.name, l.dims, l.dtype) } else { g.input(l.name, l.dims, l.dtype) };
        id.unwrap_or_else(|e| panic!("{name}: leaf {}: {e}", l.name))
    });
    let out = build(&mut g, ids).unwrap_or_else(|e| panic!("{name}: {e}"));
    g.set_outputs(&[out]).unwrap_or_else(|e| panic!("{name}: {e}"));
    (g, ids, out)
}

/// `x → exp → out` on an input "x" of `dims` and `dtype`: the smallest graph with a kernel.
pub fn exp_graph(name: &str, dims: &[usize], dtype: DType) -> Graph {
    one_output(name, [input("x", dims, dtype)], |g, [x]| g.exp(x)).0
}
