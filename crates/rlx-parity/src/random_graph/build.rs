//! Turning a [`GraphSpec`] into a graph with data (see the module doc of `random_graph`).

use super::{GraphSpec, Kind, Step};
use crate::{CaseCtx, DEFAULT_TOL};
use rlx_ir::{BinaryOp, CompareOp, DType, IrError, NodeId, ReduceOp, UnaryOp};

/// The most elements any value of a random graph holds (the input's dims are shrunk to fit,
/// and a step whose result would pass it does a cheaper thing instead).
pub const MAX_NUMEL: usize = 1 << 13;

/// Pool values are scaled back under this magnitude bound (by a power of two, exactly).
const BOUND: f32 = 4.0;

/// Sizes for new dims (matmul N, concat, gather counts, expansion).
const NEW: [usize; 8] = [1, 3, 17, 65, 2, 7, 33, 16];

/// The bound on ‖out − ref‖ / ‖ref‖ for `spec`: DESIGN.md's 1e-5 per f32 op, times the number
/// of steps. A random graph chains up to a few dozen ops, and the rounding differences of each
/// (the CPU accumulates in f64, a GPU in f32; fused and unfused forms round in other places)
/// add up along the chain to first order; the values are kept well conditioned (module doc) so
/// they do not multiply.
pub fn tolerance(spec: &GraphSpec) -> f64 {
    DEFAULT_TOL * spec.steps.len().max(1) as f64
}

#[derive(Clone, Debug)]
struct Val {
    id: NodeId,
    dims: Vec<usize>,
    /// An upper bound on |element|.
    bound: f32,
}

struct Builder<'c> {
    c: &'c mut CaseCtx,
    pool: Vec<Val>,
    leaves: usize,
    /// Integer outputs (argmax), kept apart from the float pool.
    extra: Vec<NodeId>,
}

/// Builds `spec` on `c` (inputs and params get their data there) and returns the outputs.
pub fn build(spec: &GraphSpec, c: &mut CaseCtx) -> Result<Vec<NodeId>, IrError> {
    let dims = fit(spec.dims.clone());
    let x = c.input_f32("x", &dims, -2.0, 2.0)?;
    let mut b = Builder { c, pool: vec![Val { id: x, dims, bound: 2.0 }], leaves: 0, extra: Vec::new() };
    for step in &spec.steps {
        let v = b.step(step)?;
        let v = b.tame(v)?;
        b.pool.push(v);
    }
    let n = b.pool.len();
    let mut outs = vec![b.pool[n - 1].id];
    for j in 0..usize::from(spec.outputs) {
        let id = b.pool[(j * 5 + 1) % n].id;
        if !outs.contains(&id) {
            outs.push(id);
        }
    }
    outs.extend(b.extra.iter().copied());
    Ok(outs)
}

/// Shrinks the largest dim until the element count fits [`MAX_NUMEL`]; keeps rank 1 to 4.
fn fit(mut dims: Vec<usize>) -> Vec<usize> {
    dims.truncate(4);
    if dims.is_empty() {
        dims.push(1);
    }
    for d in &mut dims {
        *d = (*d).max(1);
    }
    while numel(&dims) > MAX_NUMEL {
        if let Some(m) = dims.iter_mut().max() {
            *m = (*m).div_ceil(2);
        }
    }
    dims
}

fn numel(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// Numpy broadcast of two shapes, `None` where they do not broadcast.
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let at = |d: &[usize], i: usize| if i + d.len() >= r { d[i + d.len() - r] } else { 1 };
    (0..r)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

fn pick(set: &[usize], k: u8) -> usize {
    set[usize::from(k) % set.len()]
}

impl Builder<'_> {
    fn val(&self, i: u8) -> Val {
        self.pool[usize::from(i) % self.pool.len()].clone()
    }

    fn name(&mut self, prefix: &str) -> String {
        self.leaves += 1;
        format!("{prefix}{}", self.leaves)
    }

    fn fresh(&mut self, dims: &[usize]) -> Result<Val, IrError> {
        let name = self.name("p");
        let id = self.c.param_f32(&name, dims, -2.0, 2.0)?;
        Ok(Val { id, dims: dims.to_vec(), bound: 2.0 })
    }

    fn ty_dims(&self, id: NodeId) -> Result<Vec<usize>, IrError> {
        Ok(self.c.ty(id)?.shape.dims().to_vec())
    }

    fn out(&self, id: NodeId, bound: f32) -> Result<Val, IrError> {
        Ok(Val { id, dims: self.ty_dims(id)?, bound })
    }

    fn unary(&mut self, op: UnaryOp, v: &Val) -> Result<Val, IrError> {
        let id = self.c.unary(op, v.id)?;
        self.out(id, v.bound)
    }

    /// `|x| + 0.5`: the input of the domain-limited ops, in [0.5, bound + 0.5].
    fn positive(&mut self, v: &Val) -> Result<Val, IrError> {
        let a = self.c.abs(v.id)?;
        let h = self.c.scalar(0.5)?;
        let id = self.c.add(a, h)?;
        self.out(id, v.bound + 0.5)
    }

    /// A second operand for `a`: pool value `b` when it broadcasts with `a` within the size
    /// limit, else a fresh param of `a`'s dims with the dims `k`'s bits pick set to 1 (and the
    /// leading dim dropped when bit 7 is set): a broadcast of every pattern.
    fn partner(&mut self, a: &Val, b: u8, k: u8) -> Result<Val, IrError> {
        let b = self.val(b);
        if broadcast(&a.dims, &b.dims).is_some_and(|d| numel(&d) <= MAX_NUMEL) {
            return Ok(b);
        }
        let mut dims: Vec<usize> =
            a.dims.iter().enumerate().map(|(i, &d)| if (k >> i) & 1 == 1 { 1 } else { d }).collect();
        if k & 0x80 != 0 && !dims.is_empty() {
            dims.remove(0);
        }
        self.fresh(&dims)
    }

    fn step(&mut self, s: &Step) -> Result<Val, IrError> {
        let a = self.val(s.a);
        let rank = a.dims.len();
        let axis = |r: usize| if r == 0 { 0 } else { usize::from(s.b) % r };
        match s.kind {
            _ if rank == 0 && !matches!(s.kind, Kind::Unary | Kind::Binary | Kind::Select) => {
                self.unary(UnaryOp::Neg, &a)
            }
            Kind::Unary => {
                let op = UnaryOp::ALL[usize::from(s.k) % UnaryOp::ALL.len()];
                match op {
                    UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip => {
                        let p = self.positive(&a)?;
                        let id = self.c.unary(op, p.id)?;
                        let bound = match op {
                            UnaryOp::Log => p.bound.ln().max(0.7),
                            UnaryOp::Sqrt => p.bound.sqrt(),
                            _ => 2.0,
                        };
                        self.out(id, bound)
                    }
                    UnaryOp::Exp => {
                        let id = self.c.exp(a.id)?;
                        self.out(id, a.bound.exp())
                    }
                    UnaryOp::Square => {
                        let id = self.c.square(a.id)?;
                        self.out(id, a.bound * a.bound)
                    }
                    UnaryOp::Sigmoid | UnaryOp::Tanh | UnaryOp::Sin | UnaryOp::Cos => {
                        let id = self.c.unary(op, a.id)?;
                        self.out(id, 1.0)
                    }
                    _ => self.unary(op, &a),
                }
            }
            Kind::Binary => {
                let b = self.partner(&a, s.b, s.k)?;
                let op = BinaryOp::ALL[usize::from(s.k >> 4) % BinaryOp::ALL.len()];
                match op {
                    BinaryOp::Div => {
                        let d = self.positive(&b)?;
                        let id = self.c.div(a.id, d.id)?;
                        self.out(id, a.bound * 2.0)
                    }
                    BinaryOp::Pow => {
                        // Base in [0.5, 4.5], exponent tanh(b)·2 in [-2, 2].
                        let base = self.positive(&a)?;
                        let t = self.c.tanh(b.id)?;
                        let two = self.c.scalar(2.0)?;
                        let e = self.c.mul(t, two)?;
                        let id = self.c.pow(base.id, e)?;
                        self.out(id, base.bound.powi(2).max(4.0))
                    }
                    BinaryOp::Add | BinaryOp::Sub => {
                        let id = self.c.binary(op, a.id, b.id)?;
                        self.out(id, a.bound + b.bound)
                    }
                    BinaryOp::Mul => {
                        let id = self.c.mul(a.id, b.id)?;
                        self.out(id, a.bound * b.bound)
                    }
                    BinaryOp::Maximum | BinaryOp::Minimum => {
                        let id = self.c.binary(op, a.id, b.id)?;
                        self.out(id, a.bound.max(b.bound))
                    }
                }
            }
            Kind::Select => {
                // where(a ⋈ b, a, b) is continuous in a and b (equal where the test flips), so
                // a comparison that rounds the other way on a device changes nothing.
                let b = self.partner(&a, s.b, s.k)?;
                let op = CompareOp::ALL[usize::from(s.k >> 4) % CompareOp::ALL.len()];
                let cond = self.c.compare(op, a.id, b.id)?;
                let id = self.c.where_(cond, a.id, b.id)?;
                self.out(id, a.bound.max(b.bound))
            }
            Kind::Reduce => {
                let op = [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min][usize::from(s.k) % 4];
                let ax = axis(rank);
                let mut axes = vec![ax as isize];
                if s.k & 8 != 0 && rank >= 2 {
                    axes = vec![0, rank as isize - 1];
                }
                let keep = s.k & 4 != 0;
                let id = self.c.reduce(op, a.id, &axes, keep)?;
                let n: usize = axes.iter().map(|&x| a.dims[x as usize]).product();
                let bound = if op == ReduceOp::Sum { a.bound * n as f32 } else { a.bound };
                self.out(id, bound)
            }
            Kind::ArgMax => {
                // On fresh continuous data: no ties, the same index everywhere. The index joins
                // the outputs as I32 and the pool as f32 (an exact cast).
                let name = self.name("x");
                let fresh = self.c.input_f32(&name, &a.dims, -2.0, 2.0)?;
                let ax = axis(rank);
                let id = if s.k & 1 == 0 {
                    self.c.argmax(fresh, ax as isize, s.k & 2 != 0)?
                } else {
                    self.c.argmin(fresh, ax as isize, s.k & 2 != 0)?
                };
                self.extra.push(id);
                let f = self.c.cast(id, DType::F32)?;
                self.out(f, a.dims[ax] as f32)
            }
            Kind::MatMul => self.matmul(&a, s.k),
            Kind::BatchMatMul => {
                if rank < 2 {
                    return self.matmul(&a, s.k);
                }
                let b = self.val(s.b);
                let b = if b.dims == a.dims { b } else { self.fresh(&a.dims)? };
                let (m, kk) = (a.dims[rank - 2], a.dims[rank - 1]);
                let transpose_a = s.k & 1 == 1;
                let side = if transpose_a { kk } else { m };
                if numel(&a.dims) / (m * kk) * side * side > MAX_NUMEL {
                    return self.unary(UnaryOp::Relu, &a);
                }
                let id = self.c.matmul_t(a.id, b.id, transpose_a, !transpose_a)?;
                let inner = if transpose_a { m } else { kk };
                self.out(id, a.bound * b.bound * inner as f32)
            }
            Kind::Softmax => {
                let ax = axis(rank) as isize;
                if s.k & 1 == 0 {
                    let id = self.c.softmax(a.id, ax)?;
                    self.out(id, 1.0)
                } else {
                    let id = self.c.log_softmax(a.id, ax)?;
                    let n = a.dims[ax as usize] as f32;
                    self.out(id, 2.0 * a.bound + n.ln())
                }
            }
            Kind::Norm => {
                let ax = if s.k & 4 != 0 { axis(rank) } else { rank - 1 };
                let n = a.dims[ax];
                let with_params = s.k & 2 != 0;
                let gamma = if with_params { Some(self.fresh(&[n])?.id) } else { None };
                let scale = if with_params { 2.0 } else { 1.0 };
                let id = if s.k & 1 == 0 {
                    // Always a beta: without one the output sums to 0 along the axis, and a
                    // later sum over it is pure rounding noise that no relative bound can
                    // compare (diff --seed 1 found two such cases; diff_regressions.txt).
                    let beta = Some(self.fresh(&[n])?.id);
                    self.c.layer_norm(a.id, gamma, beta, ax as isize, 1e-5)?
                } else {
                    self.c.rms_norm(a.id, gamma, ax as isize, 1e-5)?
                };
                self.out(id, (n as f32).sqrt() * scale + scale)
            }
            Kind::Transpose => {
                if rank < 2 {
                    return self.unary(UnaryOp::Abs, &a);
                }
                let i = axis(rank);
                let mut j = usize::from(s.k) % rank;
                if j == i {
                    j = (i + 1) % rank;
                }
                let id = self.c.transpose(a.id, i as isize, j as isize)?;
                self.out(id, a.bound)
            }
            Kind::Reshape => {
                let mut dims = a.dims.clone();
                if s.k & 1 == 0 && rank >= 2 {
                    let i = usize::from(s.b) % (rank - 1);
                    let merged = dims[i] * dims[i + 1];
                    dims.splice(i..i + 2, [merged]);
                } else if rank < 4 {
                    let i = axis(rank);
                    let d = dims[i];
                    let f = (2..d).find(|&f| d.is_multiple_of(f)).unwrap_or(1);
                    dims.splice(i..=i, [f, d / f]);
                } else {
                    dims = vec![numel(&dims)];
                }
                let id = self.c.reshape(a.id, &dims)?;
                self.out(id, a.bound)
            }
            Kind::Concat => {
                let ax = axis(rank);
                let b = self.val(s.k);
                let fits = b.dims.len() == rank && (0..rank).all(|i| i == ax || b.dims[i] == a.dims[i]);
                let mut dims = a.dims.clone();
                dims[ax] = pick(&NEW, s.k);
                let other = if fits { &b.dims } else { &dims };
                if numel(&a.dims) + numel(other) > MAX_NUMEL {
                    return self.unary(UnaryOp::Relu, &a);
                }
                let b = if fits { b } else { self.fresh(&dims)? };
                let order = if s.k & 0x80 != 0 { [b.id, a.id] } else { [a.id, b.id] };
                let id = self.c.concat(&order, ax as isize)?;
                self.out(id, a.bound.max(b.bound))
            }
            Kind::Slice => {
                let ax = axis(rank);
                let d = a.dims[ax];
                let start = usize::from(s.k) % d;
                let step = 1 + usize::from(s.k >> 5) % 3;
                let end = d - usize::from((s.k >> 3) & 3).min(d - start - 1);
                let id = self.c.slice(a.id, ax as isize, start, end, step)?;
                self.out(id, a.bound)
            }
            Kind::Pad => {
                let ax = axis(rank);
                let mut pads = vec![(0, 0); rank];
                pads[ax] = (usize::from(s.k) % 3, usize::from(s.k >> 2) % 3);
                let grown = numel(&a.dims) / a.dims[ax] * (a.dims[ax] + pads[ax].0 + pads[ax].1);
                if grown > MAX_NUMEL {
                    return self.unary(UnaryOp::Neg, &a);
                }
                let value = if s.k & 16 != 0 { 1.5 } else { 0.0 };
                let id = self.c.pad(a.id, &pads, value)?;
                self.out(id, a.bound.max(1.5))
            }
            Kind::Reverse => {
                let mut axes = vec![axis(rank) as isize];
                if s.k & 1 == 1 && rank >= 2 {
                    axes.push((axes[0] + 1) % rank as isize);
                }
                let id = self.c.reverse(a.id, &axes)?;
                self.out(id, a.bound)
            }
            Kind::Expand => {
                let (mut src, mut dims) = (a.id, a.dims.clone());
                if !dims.contains(&1) {
                    if rank >= 4 {
                        return self.unary(UnaryOp::Neg, &a);
                    }
                    dims.insert(0, 1);
                    src = self.c.reshape(a.id, &dims)?;
                }
                let ones: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 1).collect();
                let i = ones[usize::from(s.b) % ones.len()];
                dims[i] = pick(&NEW, s.k).max(2);
                if numel(&dims) > MAX_NUMEL {
                    return self.unary(UnaryOp::Neg, &a);
                }
                let id = self.c.expand(src, &dims)?;
                self.out(id, a.bound)
            }
            Kind::Gather => {
                let ax = axis(rank);
                let m = pick(&NEW, s.k);
                let two_d = s.k & 0x80 != 0 && rank < 4;
                let idx_dims = if two_d { vec![2, m] } else { vec![m] };
                if numel(&a.dims) / a.dims[ax] * numel(&idx_dims) > MAX_NUMEL {
                    return self.unary(UnaryOp::Abs, &a);
                }
                let name = self.name("idx");
                let hi = a.dims[ax] as i32 - 1;
                let idx = self.c.input_i32(&name, &idx_dims, 0, hi)?;
                let id = self.c.gather(a.id, idx, ax as isize)?;
                self.out(id, a.bound)
            }
            Kind::Cumsum => {
                let ax = axis(rank);
                let id = self.c.cumsum(a.id, ax as isize)?;
                self.out(id, a.bound * a.dims[ax] as f32)
            }
            Kind::CastF16 => {
                // f32 → f16 → f32 of a fresh input: exact data, so every device must round the
                // same (round to nearest even) and the f16 → f32 widening is exact. A computed
                // value would round differently where its last f32 bit differs.
                let name = self.name("x");
                let fresh = self.c.input_f32(&name, &a.dims, -2.0, 2.0)?;
                let h = self.c.cast(fresh, DType::F16)?;
                let f = self.c.cast(h, DType::F32)?;
                let id = if s.k & 1 == 0 { self.c.add(a.id, f)? } else { f };
                self.out(id, a.bound + 2.0)
            }
        }
    }

    /// `a @ w` with a fresh weight of N columns from the awkward sizes, optionally transposed,
    /// with a bias and a GELU (the matmul-epilogue fusion's pattern).
    fn matmul(&mut self, a: &Val, k: u8) -> Result<Val, IrError> {
        let mut a = a.clone();
        if a.dims.len() == 1 {
            let d = [1, a.dims[0]];
            a = Val { id: self.c.reshape(a.id, &d)?, dims: d.to_vec(), bound: a.bound };
        }
        let kk = a.dims[a.dims.len() - 1];
        let n = pick(&NEW, k);
        if numel(&a.dims) / kk * n > MAX_NUMEL || kk * n > MAX_NUMEL {
            return self.unary(UnaryOp::Silu, &a);
        }
        let transpose_b = k & 8 != 0;
        let w = self.fresh(&if transpose_b { [n, kk] } else { [kk, n] })?;
        let mut id = self.c.matmul_t(a.id, w.id, false, transpose_b)?;
        let mut bound = a.bound * 2.0 * kk as f32;
        if k & 16 != 0 {
            let bias = self.fresh(&[n])?;
            id = self.c.add(id, bias.id)?;
            bound += 2.0;
        }
        if k & 32 != 0 {
            id = self.c.gelu(id)?;
        }
        self.out(id, bound)
    }

    /// Scales `v` by a power of two (exact) so its bound is at most [`BOUND`].
    fn tame(&mut self, v: Val) -> Result<Val, IrError> {
        if v.bound <= BOUND {
            return Ok(v);
        }
        let shift = (v.bound / BOUND).log2().ceil() as i32;
        let s = self.c.scalar(2f32.powi(-shift))?;
        let id = self.c.mul(v.id, s)?;
        Ok(Val { id, dims: v.dims, bound: v.bound * 2f32.powi(-shift) })
    }
}
