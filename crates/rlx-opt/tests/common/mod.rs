//! Shared test helpers: a tiny interpreter over `rlx_cpu::eval`, seeded random feeds, device
//! capabilities with ops removed, and a relative-error check.
#![allow(dead_code)]

use rlx_backend::Capabilities;
use rlx_ir::{Graph, Op, OpKind, Tensor};
use rlx_opt::passes::DECOMPOSABLE;
use std::collections::HashMap;

pub use rlx_test_support::{random_tensor, Rng};

/// One random tensor per input and param of `g`, by name.
pub fn random_feeds(g: &Graph, seed: u64) -> HashMap<String, Tensor> {
    let mut rng = Rng::new(seed);
    let mut feeds = HashMap::new();
    for (name, _, ty) in g.inputs().into_iter().chain(g.params()) {
        feeds.insert(name.to_string(), random_tensor(&mut rng, ty).unwrap());
    }
    feeds
}

/// Evaluates `g` node by node with the CPU reference and returns its outputs.
pub fn run(g: &Graph, feeds: &HashMap<String, Tensor>) -> Vec<Tensor> {
    let mut vals: Vec<Tensor> = Vec::with_capacity(g.len());
    for node in g.nodes() {
        let t = match &node.op {
            Op::Input { name } | Op::Param { name } => feeds[name].clone(),
            Op::Constant(t) => t.clone(),
            op => {
                let ins: Vec<&Tensor> = node.inputs.iter().map(|i| &vals[i.index()]).collect();
                rlx_cpu::eval(op, &ins, &node.ty).unwrap_or_else(|e| panic!("eval {}: {e}", op.name()))
            }
        };
        assert_eq!(t.dims(), node.ty.shape.dims(), "{} produced the wrong shape", node.op.name());
        vals.push(t);
    }
    g.outputs().iter().map(|o| vals[o.index()].clone()).collect()
}

/// ‖a − b‖ / ‖b‖ (0 when both are zero); NaNs must sit at the same places.
pub fn rel_err(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.dims(), b.dims());
    assert_eq!(a.dtype(), b.dtype());
    let (a, b) = (a.to_f64_vec(), b.to_f64_vec());
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.is_nan(), y.is_nan(), "NaN mismatch: {x} vs {y}");
        if x.is_nan() || (x.is_infinite() && x == y) {
            continue;
        }
        num += (x - y) * (x - y);
        den += y * y;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

/// Runs both graphs on the same random feeds and checks every output within `tol` relative.
pub fn assert_same(before: &Graph, after: &Graph, seed: u64, tol: f64) {
    let feeds = random_feeds(before, seed);
    let (a, b) = (run(after, &feeds), run(before, &feeds));
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let e = rel_err(x, y);
        assert!(e <= tol, "output {i}: relative error {e} > {tol}");
    }
}

/// The CPU reference's capabilities minus `missing`.
pub fn caps_without(missing: &[OpKind]) -> Capabilities {
    let mut caps = Capabilities::everything("test-device");
    for k in missing {
        caps.native_ops.remove(k);
    }
    caps
}

/// Capabilities with only the basic ops: no composites and no fused forms (every kind
/// decompose can rewrite but the conv family's, which other tests take away on their own).
pub fn basic_caps() -> Capabilities {
    let conv = [OpKind::Conv2d, OpKind::Pool2d, OpKind::Upsample2x];
    let kinds: Vec<OpKind> = DECOMPOSABLE.into_iter().filter(|k| !conv.contains(k)).collect();
    caps_without(&kinds)
}

pub fn kinds(g: &Graph) -> Vec<OpKind> {
    g.nodes().iter().map(|n| n.op.kind()).collect()
}

pub fn count(g: &Graph, k: OpKind) -> usize {
    g.nodes().iter().filter(|n| n.op.kind() == k).count()
}
