//! Gradients of the elementwise ops: unary functions, binary ops with broadcasting (each
//! operand's gradient summed back to its shape), where, and cast.

use super::{dims, reduce_to, scalar, At, Grads, RuleError};
use crate::{BinaryOp, DType, Graph, IrError, NodeId, UnaryOp};

/// d/dx of `op` at x, times `dy`. `y` is the op's own value (the node), reused where the
/// derivative is cheapest from it (exp, tanh, sigmoid, sqrt, ...).
pub(super) fn unary(g: &mut Graph, at: &At<'_>, op: UnaryOp, dy: NodeId) -> Grads {
    let (x, y, dt) = (at.input(0), at.id, at.dtype());
    if !dt.is_float() {
        return Err(RuleError::NoRule(format!("{} on {dt} values has no gradient", op.name())));
    }
    let c = |g: &mut Graph, v: f64| scalar(g, dt, v);
    let dx = match op {
        UnaryOp::Neg => g.neg(dy)?,
        UnaryOp::Exp => g.mul(dy, y)?,
        UnaryOp::Log => g.div(dy, x)?,
        UnaryOp::Sin => {
            let d = g.cos(x)?;
            g.mul(dy, d)?
        }
        UnaryOp::Cos => {
            let s = g.sin(x)?;
            let d = g.neg(s)?;
            g.mul(dy, d)?
        }
        // 1 / (2√x) = 0.5 / y.
        UnaryOp::Sqrt => {
            let half = c(g, 0.5)?;
            let d = g.div(half, y)?;
            g.mul(dy, d)?
        }
        // −½ x^(−3/2) = −½ y³.
        UnaryOp::Rsqrt => {
            let y2 = g.square(y)?;
            let y3 = g.mul(y2, y)?;
            let k = c(g, -0.5)?;
            let d = g.mul(y3, k)?;
            g.mul(dy, d)?
        }
        // −1/x² = −y².
        UnaryOp::Recip => {
            let y2 = g.square(y)?;
            let d = g.neg(y2)?;
            g.mul(dy, d)?
        }
        UnaryOp::Square => {
            let two = c(g, 2.0)?;
            let d = g.mul(x, two)?;
            g.mul(dy, d)?
        }
        // 1 − y².
        UnaryOp::Tanh => {
            let one = c(g, 1.0)?;
            let y2 = g.square(y)?;
            let d = g.sub(one, y2)?;
            g.mul(dy, d)?
        }
        // y (1 − y).
        UnaryOp::Sigmoid => {
            let one = c(g, 1.0)?;
            let m = g.sub(one, y)?;
            let d = g.mul(y, m)?;
            g.mul(dy, d)?
        }
        // σ(x) (1 + x (1 − σ(x))).
        UnaryOp::Silu => {
            let s = g.sigmoid(x)?;
            let one = c(g, 1.0)?;
            let m = g.sub(one, s)?;
            let xm = g.mul(x, m)?;
            let p = g.add(one, xm)?;
            let d = g.mul(s, p)?;
            g.mul(dy, d)?
        }
        // 1 where x > 0, else 0 (PyTorch's choice at 0).
        UnaryOp::Relu => {
            let zero = c(g, 0.0)?;
            let pos = g.gt(x, zero)?;
            g.where_(pos, dy, zero)?
        }
        // sign(x), 0 at 0.
        UnaryOp::Abs => {
            let zero = c(g, 0.0)?;
            let pos = g.gt(x, zero)?;
            let neg = g.lt(x, zero)?;
            let ndy = g.neg(dy)?;
            let inner = g.where_(neg, ndy, zero)?;
            g.where_(pos, dy, inner)?
        }
        UnaryOp::Gelu => {
            let d = gelu_erf_derivative(g, x, y, dt)?;
            g.mul(dy, d)?
        }
        UnaryOp::GeluTanh => {
            let d = gelu_tanh_derivative(g, x, dt)?;
            g.mul(dy, d)?
        }
    };
    Ok(vec![Some(dx)])
}

/// GELU (erf form): d/dx x·Φ(x) = Φ(x) + x·φ(x), φ(x) = e^(−x²/2)/√(2π). The IR has no erf,
/// so Φ(x) is taken from the forward value: y/x, and ½ at x = 0.
fn gelu_erf_derivative(g: &mut Graph, x: NodeId, y: NodeId, dt: DType) -> Result<NodeId, IrError> {
    let zero = scalar(g, dt, 0.0)?;
    let half = scalar(g, dt, 0.5)?;
    let at_zero = g.eq(x, zero)?;
    let ratio = g.div(y, x)?;
    let cdf = g.where_(at_zero, half, ratio)?;
    let x2 = g.square(x)?;
    let k = scalar(g, dt, -0.5)?;
    let e = g.mul(x2, k)?;
    let e = g.exp(e)?;
    let norm = scalar(g, dt, 1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
    let pdf = g.mul(e, norm)?;
    let xpdf = g.mul(x, pdf)?;
    g.add(cdf, xpdf)
}

/// GELU (tanh form) y = ½x(1 + t), t = tanh(c(x + 0.044715x³)), c = √(2/π):
/// dy/dx = ½(1 + t) + ½x(1 − t²)·c(1 + 3·0.044715x²).
fn gelu_tanh_derivative(g: &mut Graph, x: NodeId, dt: DType) -> Result<NodeId, IrError> {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let a = 0.044715;
    let x2 = g.square(x)?;
    let x3 = g.mul(x2, x)?;
    let ka = scalar(g, dt, a)?;
    let ax3 = g.mul(x3, ka)?;
    let inner = g.add(x, ax3)?;
    let kc = scalar(g, dt, c)?;
    let u = g.mul(inner, kc)?;
    let t = g.tanh(u)?;
    let one = scalar(g, dt, 1.0)?;
    let half = scalar(g, dt, 0.5)?;
    let onept = g.add(one, t)?;
    let left = g.mul(onept, half)?;
    let t2 = g.square(t)?;
    let sech2 = g.sub(one, t2)?;
    let k3a = scalar(g, dt, 3.0 * a)?;
    let q = g.mul(x2, k3a)?;
    let q = g.add(one, q)?;
    let q = g.mul(q, kc)?;
    let r = g.mul(sech2, q)?;
    let r = g.mul(r, x)?;
    let r = g.mul(r, half)?;
    g.add(left, r)
}

/// a op b, broadcast: each operand's gradient at the output's shape, then summed back to the
/// operand's own shape.
pub(super) fn binary(g: &mut Graph, at: &At<'_>, op: BinaryOp, dy: NodeId) -> Grads {
    let (a, b, y, dt) = (at.input(0), at.input(1), at.id, at.dtype());
    if !dt.is_float() {
        return Err(RuleError::NoRule(format!("{} on {dt} values has no gradient", op.name())));
    }
    let (need_a, need_b) = (at.need[0], at.need[1]);
    let (da, db) = match op {
        BinaryOp::Add => (Some(dy), Some(dy)),
        BinaryOp::Sub => (Some(dy), if need_b { Some(g.neg(dy)?) } else { None }),
        BinaryOp::Mul => {
            (if need_a { Some(g.mul(dy, b)?) } else { None }, if need_b { Some(g.mul(dy, a)?) } else { None })
        }
        // d/da = 1/b, d/db = −a/b² = −y/b.
        BinaryOp::Div => {
            let da = if need_a { Some(g.div(dy, b)?) } else { None };
            let db = if need_b {
                let q = g.div(y, b)?;
                let q = g.mul(dy, q)?;
                Some(g.neg(q)?)
            } else {
                None
            };
            (da, db)
        }
        // d/da = b·a^(b−1); d/db = y·ln a, taken as 0 where a = 0 (as PyTorch does).
        BinaryOp::Pow => {
            let da = if need_a {
                let one = scalar(g, dt, 1.0)?;
                let bm1 = g.sub(b, one)?;
                let p = g.pow(a, bm1)?;
                let d = g.mul(p, b)?;
                Some(g.mul(dy, d)?)
            } else {
                None
            };
            let db = if need_b {
                let zero = scalar(g, dt, 0.0)?;
                let l = g.log(a)?;
                let d = g.mul(y, l)?;
                let is0 = g.eq(a, zero)?;
                let d = g.where_(is0, zero, d)?;
                Some(g.mul(dy, d)?)
            } else {
                None
            };
            (da, db)
        }
        // The gradient goes to the larger (smaller) operand; ties split it in halves, as
        // PyTorch's maximum/minimum do.
        BinaryOp::Maximum | BinaryOp::Minimum => {
            let wins = if op == BinaryOp::Maximum { g.gt(a, b)? } else { g.lt(a, b)? };
            let tie = g.eq(a, b)?;
            let wins = g.cast(wins, dt)?;
            let tie = g.cast(tie, dt)?;
            let half = scalar(g, dt, 0.5)?;
            let tie = g.mul(tie, half)?;
            let wa = g.add(wins, tie)?;
            let da = if need_a { Some(g.mul(dy, wa)?) } else { None };
            let db = if need_b {
                let one = scalar(g, dt, 1.0)?;
                let wb = g.sub(one, wa)?;
                Some(g.mul(dy, wb)?)
            } else {
                None
            };
            (da, db)
        }
    };
    let out = dims(g, y)?;
    let da = match da {
        Some(d) if need_a => Some(fit(g, d, a, &out)?),
        _ => None,
    };
    let db = match db {
        Some(d) if need_b => Some(fit(g, d, b, &out)?),
        _ => None,
    };
    Ok(vec![da, db])
}

/// A gradient `d` (at most the output's shape; it may itself be broadcast) brought to the shape
/// of operand `x`.
fn fit(g: &mut Graph, d: NodeId, x: NodeId, out: &[usize]) -> Result<NodeId, IrError> {
    let d = if dims(g, d)? == out { d } else { g.expand(d, out)? };
    let target = g.ty(x)?.shape.clone();
    reduce_to(g, d, &target)
}

/// where(cond, a, b): dy goes to a where cond holds and to b elsewhere; cond gets none.
pub(super) fn where_(g: &mut Graph, at: &At<'_>, dy: NodeId) -> Grads {
    let (cond, a, b, dt) = (at.input(0), at.input(1), at.input(2), at.dtype());
    if !dt.is_float() {
        return Err(RuleError::NoRule(format!("where on {dt} values has no gradient")));
    }
    let out = dims(g, at.id)?;
    let zero = scalar(g, dt, 0.0)?;
    let da = if at.need[1] {
        let d = g.where_(cond, dy, zero)?;
        Some(fit(g, d, a, &out)?)
    } else {
        None
    };
    let db = if at.need[2] {
        let d = g.where_(cond, zero, dy)?;
        Some(fit(g, d, b, &out)?)
    } else {
        None
    };
    Ok(vec![None, da, db])
}

/// A cast between float types passes the gradient back in the source type. A cast from an
/// integer or bool has no gradient (the chain to the param went through a discrete value).
pub(super) fn cast(g: &mut Graph, at: &At<'_>, dy: NodeId) -> Grads {
    let x = at.input(0);
    let from = g.ty(x)?.dtype;
    if !from.is_float() || !at.dtype().is_float() {
        return Err(RuleError::NoRule(format!(
            "a cast from {from} to {} has no gradient: the value is discrete (an integer, bool \
             or index computed from the param); differentiate through float ops only",
            at.dtype()
        )));
    }
    Ok(vec![Some(g.cast(dy, from)?)])
}
