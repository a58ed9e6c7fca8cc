//! The gradient-check harness shared by `grad_check*.rs`: a small graph whose float leaves are
//! differentiated, run forward and backward on the CPU, every gradient compared with central
//! finite differences of the loss.
//!
//! The IR has no f64 dtype, so the checks run in f32 (the CPU rounds each op's result once,
//! computing reductions and norms in f64). The loss is `Σ out·R` with fixed random weights R,
//! so every output element matters with its own weight; its derivative is taken by the
//! fourth-order stencil (−f(x+2h) + 8f(x+h) − 8f(x−h) + f(x−2h)) / 12h, whose truncation error
//! is O(h⁴), so h can be large enough (default 2⁻⁵) that f32 rounding of the loss stays small:
//! the observed errors are 2e-6 to 1e-5.
//! The tolerance is on ‖analytic − numeric‖ / ‖numeric‖, 1e-4 by default.
#![allow(dead_code)]

use rlx_backend::{Backend, Executable};
use rlx_ir::{DType, Graph, IrError, NodeId, Tensor};
use rlx_test_support::Rng;

/// A graph under construction with the values of its leaves.
pub struct Check {
    pub g: Graph,
    /// Differentiated leaves (params) and their values.
    pub vars: Vec<(NodeId, Tensor)>,
    /// Leaves held fixed (inputs): ids, conditions, tables.
    pub fixed: Vec<(NodeId, Tensor)>,
    rng: Rng,
    pub h: f32,
    pub tol: f64,
}

impl Check {
    pub fn new(name: &str) -> Check {
        Check {
            g: Graph::new(name),
            vars: Vec::new(),
            fixed: Vec::new(),
            rng: Rng::from_name(name),
            h: 1.0 / 32.0,
            tol: 1e-4,
        }
    }

    /// A differentiated f32 param of uniform values in [lo, hi).
    pub fn var(&mut self, name: &str, dims: &[usize], lo: f32, hi: f32) -> NodeId {
        let n = dims.iter().product();
        let v = self.rng.uniform(n, lo, hi);
        self.var_with(name, dims, v)
    }

    /// A differentiated f32 param whose values are at least `gap` away from 0 (for relu, abs).
    pub fn var_off_zero(&mut self, name: &str, dims: &[usize], gap: f32, hi: f32) -> NodeId {
        let n = dims.iter().product();
        let v = (0..n)
            .map(|_| {
                let m = self.rng.range(gap, hi);
                if self.rng.bool() {
                    m
                } else {
                    -m
                }
            })
            .collect();
        self.var_with(name, dims, v)
    }

    /// A differentiated f32 param of distinct values at least `gap` apart (for max, min).
    pub fn var_distinct(&mut self, name: &str, dims: &[usize], gap: f32) -> NodeId {
        let n: usize = dims.iter().product();
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, self.rng.below(i as u64 + 1) as usize);
        }
        let v = order.iter().map(|&k| (k as f32 - n as f32 / 2.0) * gap).collect();
        self.var_with(name, dims, v)
    }

    pub fn var_with(&mut self, name: &str, dims: &[usize], v: Vec<f32>) -> NodeId {
        let id = self.g.param(name, dims, DType::F32).unwrap();
        self.vars.push((id, Tensor::from_f32(dims, v).unwrap()));
        id
    }

    /// An input held fixed (not differentiated).
    pub fn fixed(&mut self, name: &str, t: Tensor) -> NodeId {
        let id = self.g.input(name, t.dims(), t.dtype()).unwrap();
        self.fixed.push((id, t));
        id
    }

    /// Differentiates `Σ out·R` with respect to every var and compares each gradient with
    /// finite differences; panics (fails the test) past the tolerance.
    pub fn run(self, out: NodeId) {
        let Check { mut g, vars, fixed, mut rng, h, tol } = self;
        let name = g.name().to_string();
        let od: Vec<usize> = g.ty(out).unwrap().shape.dims().to_vec();
        let od_n: usize = od.iter().product();
        let r = g.constant_f32(&od, rng.uniform(od_n, -1.0, 1.0)).unwrap();
        let o = if g.ty(out).unwrap().dtype == DType::F32 { out } else { g.cast(out, DType::F32).unwrap() };
        let weighted = g.mul(o, r).unwrap();
        let loss = if od.is_empty() {
            weighted
        } else {
            let axes: Vec<isize> = (0..od.len() as isize).collect();
            g.sum(weighted, &axes, false).unwrap()
        };
        g.set_outputs(&[loss]).unwrap();
        let wrt: Vec<NodeId> = vars.iter().map(|v| v.0).collect();
        let grads = rlx_ir::grad(&g, loss, &wrt).unwrap();
        rlx_ir::verify(&grads.graph).unwrap();

        let mut back = compile(&grads.graph, &vars);
        let analytic = run(back.as_mut(), &fixed);
        let mut fwd = compile(&g, &vars);
        for (k, (id, value)) in vars.iter().enumerate() {
            let got = analytic[k + 1].to_f64_vec();
            let base = value.as_f32().unwrap().to_vec();
            let mut numeric = vec![0.0f64; base.len()];
            for (i, num) in numeric.iter_mut().enumerate() {
                let mut at = |d: f32| {
                    let mut v = base.clone();
                    v[i] += d;
                    fwd.set_param(*id, &Tensor::from_f32(value.dims(), v).unwrap()).unwrap();
                    run(fwd.as_mut(), &fixed)[0].to_f64_vec()[0]
                };
                let (p1, m1, p2, m2) = (at(h), at(-h), at(2.0 * h), at(-2.0 * h));
                *num = (8.0 * (p1 - m1) - (p2 - m2)) / (12.0 * h as f64);
            }
            fwd.set_param(*id, value).unwrap();
            let diff: f64 = got.iter().zip(&numeric).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
            let norm: f64 = numeric.iter().map(|b| b * b).sum::<f64>().sqrt();
            let rel = diff / norm.max(1e-3);
            assert!(
                rel <= tol && got.iter().all(|x| x.is_finite()),
                "{name}: gradient of var {k} off by {rel:.3e} (tol {tol:.0e})\nanalytic {got:?}\nnumeric  {numeric:?}"
            );
            assert!(norm > 1e-3 || got.iter().all(|x| x.abs() < 1e-6), "{name}: var {k} has a zero gradient");
        }
    }
}

fn compile(g: &Graph, vars: &[(NodeId, Tensor)]) -> Box<dyn Executable> {
    let mut exe = rlx_cpu::CpuBackend::new().compile(g, &Default::default()).unwrap();
    for (id, t) in vars {
        exe.set_param(*id, t).unwrap();
    }
    exe
}

fn run(exe: &mut dyn Executable, fixed: &[(NodeId, Tensor)]) -> Vec<Tensor> {
    let feeds: Vec<(NodeId, &Tensor)> = fixed.iter().map(|(id, t)| (*id, t)).collect();
    exe.run(&feeds).unwrap()
}

/// The error of differentiating `loss` with respect to `wrt` (a test failure if it succeeds).
pub fn grad_error(g: &Graph, loss: NodeId, wrt: &[NodeId]) -> IrError {
    match rlx_ir::grad(g, loss, wrt) {
        Ok(_) => panic!("grad of {} succeeded; expected an error", g.name()),
        Err(e) => e,
    }
}

/// The loss of a graph built by a test: the sum of `out`.
pub fn sum_all(g: &mut Graph, out: NodeId) -> Result<NodeId, IrError> {
    let r = g.ty(out)?.shape.rank() as isize;
    let axes: Vec<isize> = (0..r).collect();
    if axes.is_empty() {
        Ok(out)
    } else {
        g.sum(out, &axes, false)
    }
}
