//! Pointwise ops: unary, binary, compare, where, and fused elementwise programs.
//!
//! Float math goes through the scalar functions [`unary_f32`] and [`binary_f32`], which compute
//! in f64 and round once to f32. For + − × ÷ that is bit-identical to f32 arithmetic; for
//! transcendentals it is the correctly rounded value (what a reference should give). Fused
//! programs call the same functions, so a fused chain matches its unfused ops bit for bit.

use crate::elem::{elems, float_tensor, floats, invalid, tensor, unsupported, with_elem, Elem};
use crate::index::{expand, par_map, par_zip, PAR_MIN};
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{BinaryOp, CompareOp, DType, EwProgram, EwStep, Tensor, TensorData, TensorType, UnaryOp};

/// Sigmoid that never overflows: exp is only taken of non-positive numbers.
fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// One unary op on one value, in f64.
pub(crate) fn unary_f64(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Gelu => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
        UnaryOp::GeluTanh => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
        }
        UnaryOp::Silu => x * sigmoid(x),
        // NaN stays NaN (a plain `max(0)` would swallow it).
        UnaryOp::Relu => {
            if x > 0.0 || x.is_nan() {
                x
            } else {
                0.0
            }
        }
        UnaryOp::Sigmoid => sigmoid(x),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Recip => 1.0 / x,
        UnaryOp::Square => x * x,
    }
}

/// One unary op on an f32, rounded once.
pub(crate) fn unary_f32(op: UnaryOp, x: f32) -> f32 {
    unary_f64(op, x as f64) as f32
}

/// One binary op on two f32 values, rounded once. Maximum/minimum propagate NaN.
pub(crate) fn binary_f32(op: BinaryOp, a: f32, b: f32) -> f32 {
    let (x, y) = (a as f64, b as f64);
    let r = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        BinaryOp::Pow => x.powf(y),
        BinaryOp::Maximum | BinaryOp::Minimum if x.is_nan() || y.is_nan() => f64::NAN,
        BinaryOp::Maximum => x.max(y),
        BinaryOp::Minimum => x.min(y),
    };
    r as f32
}

/// Integer arithmetic: wrapping on overflow, division truncating with x/0 = 0.
trait IntElem: Elem + Ord {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
}

macro_rules! impl_int {
    ($t:ty, |$b:ident, $e:ident| $pow:expr, |$x:ident| $abs:expr) => {
        impl IntElem for $t {
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
            fn pow(self, o: Self) -> Self {
                let ($b, $e) = (self, o);
                $pow
            }
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            fn abs(self) -> Self {
                let $x = self;
                $abs
            }
        }
    };
}

// A negative i32 exponent gives the truncated reciprocal: 1 for base 1, ±1 for base −1, else 0
// (and 0 for base 0, matching x/0 = 0).
impl_int!(
    i32,
    |b, e| if e >= 0 {
        b.wrapping_pow(e as u32)
    } else {
        match b {
            1 => 1,
            -1 if e % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        }
    },
    |x| x.wrapping_abs()
);
impl_int!(u32, |b, e| b.wrapping_pow(e), |x| x);

fn int_binary<T: IntElem>(op: BinaryOp, a: T, b: T) -> T {
    match op {
        BinaryOp::Add => a.add(b),
        BinaryOp::Sub => a.sub(b),
        BinaryOp::Mul => a.mul(b),
        BinaryOp::Div => a.div(b),
        BinaryOp::Pow => a.pow(b),
        BinaryOp::Maximum => a.max(b),
        BinaryOp::Minimum => a.min(b),
    }
}

/// `x` with a unary op applied elementwise.
pub fn unary(op: UnaryOp, x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let name = op.name();
    match x.data() {
        TensorData::F32(_) | TensorData::F16(_) | TensorData::BF16(_) => {
            let v = floats(x, name)?;
            float_tensor(&out.shape, out.dtype, par_map(&v, |&e| unary_f32(op, e)))
        }
        TensorData::I32(v) => int_unary(op, v, out),
        TensorData::U32(v) => int_unary(op, v, out),
        other @ (TensorData::U8(_) | TensorData::Bool(_)) => {
            Err(unsupported(name, format!("dtype {}", other.dtype())))
        }
    }
}

fn int_unary<T: IntElem>(op: UnaryOp, v: &[T], out: &TensorType) -> Result<Tensor, BackendError> {
    let r = match op {
        UnaryOp::Neg => par_map(v, |&e| e.neg()),
        UnaryOp::Abs => par_map(v, |&e| e.abs()),
        _ => return Err(unsupported(op.name(), "integer operands (only neg and abs take them)")),
    };
    tensor(&out.shape, T::wrap(r))
}

/// `a op b` with numpy broadcasting.
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let name = op.name();
    let dims = out.shape.dims();
    match (a.data(), b.data()) {
        (TensorData::I32(x), TensorData::I32(y)) => int_binary_tensor(op, x, a.dims(), y, b.dims(), out),
        (TensorData::U32(x), TensorData::U32(y)) => int_binary_tensor(op, x, a.dims(), y, b.dims(), out),
        (
            TensorData::F32(_) | TensorData::F16(_) | TensorData::BF16(_),
            TensorData::F32(_) | TensorData::F16(_) | TensorData::BF16(_),
        ) => {
            let (x, y) = (floats(a, name)?, floats(b, name)?);
            let (x, y) = (expand(&x, a.dims(), dims), expand(&y, b.dims(), dims));
            float_tensor(&out.shape, out.dtype, par_zip(&x, &y, |&p, &q| binary_f32(op, p, q)))
        }
        _ => Err(unsupported(name, format!("operand dtypes {} and {}", a.dtype(), b.dtype()))),
    }
}

fn int_binary_tensor<T: IntElem>(
    op: BinaryOp,
    x: &[T],
    x_dims: &[usize],
    y: &[T],
    y_dims: &[usize],
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let dims = out.shape.dims();
    let (x, y) = (expand(x, x_dims, dims), expand(y, y_dims, dims));
    tensor(&out.shape, T::wrap(par_zip(&x, &y, |&p, &q| int_binary(op, p, q))))
}

/// Elementwise comparison with broadcasting; Bool output. Values are compared exactly as f64
/// (every rlx dtype widens to f64 without loss), so NaN compares unequal to everything.
pub fn compare(op: CompareOp, a: &Tensor, b: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let dims = out.shape.dims();
    let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
    let (x, y) = (expand(&x, a.dims(), dims), expand(&y, b.dims(), dims));
    let r = par_zip(&x, &y, |&p, &q| match op {
        CompareOp::Eq => p == q,
        CompareOp::Ne => p != q,
        CompareOp::Lt => p < q,
        CompareOp::Le => p <= q,
        CompareOp::Gt => p > q,
        CompareOp::Ge => p >= q,
    });
    tensor(&out.shape, TensorData::Bool(r))
}

/// `cond ? a : b`, all three broadcast to the output shape.
pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let dims = out.shape.dims();
    let c = elems::<bool>(cond, "where")?;
    let c = expand(c, cond.dims(), dims);
    with_elem!(out.dtype, T => {
        let (x, y) = (elems::<T>(a, "where")?, elems::<T>(b, "where")?);
        let (x, y) = (expand(x, a.dims(), dims), expand(y, b.dims(), dims));
        let r: Vec<T> = c.iter().zip(x.iter().zip(y.iter())).map(|(&k, (&p, &q))| if k { p } else { q }).collect();
        tensor(&out.shape, T::wrap(r))
    })
}

/// A fused elementwise program over f32 inputs (and Bool where conditions, read as 1/0)
/// broadcast to the output shape.
pub fn fused(prog: &EwProgram, inputs: &[&Tensor], out: &TensorType) -> Result<Tensor, BackendError> {
    const OP: &str = "fused_elementwise";
    if out.dtype != DType::F32 {
        return Err(unsupported(OP, format!("output dtype {}", out.dtype)));
    }
    let dtypes: Vec<DType> = inputs.iter().map(|t| t.dtype()).collect();
    prog.check(&dtypes).map_err(|reason| invalid(OP, reason))?;
    let dims = out.shape.dims();
    let ins = inputs
        .iter()
        .map(|t| {
            if t.dtype() == DType::Bool {
                let ones: Vec<f32> =
                    elems::<bool>(t, OP)?.iter().map(|&b| if b { 1.0 } else { 0.0 }).collect();
                return Ok(std::borrow::Cow::Owned(expand(&ones, t.dims(), dims).into_owned()));
            }
            Ok(expand(elems::<f32>(t, OP)?, t.dims(), dims))
        })
        .collect::<Result<Vec<_>, BackendError>>()?;
    let n = out.numel();
    let mut res = vec![0f32; n];
    // Chunks reuse one register file each; registers are f32, as the unfused ops would store.
    let run_chunk = |(c, chunk): (usize, &mut [f32])| {
        let mut regs = vec![0f32; prog.steps.len()];
        for (k, slot) in chunk.iter_mut().enumerate() {
            let i = c * CHUNK + k;
            for (s, step) in prog.steps.iter().enumerate() {
                regs[s] = match *step {
                    EwStep::Input(j) => ins[j][i],
                    EwStep::Scalar(v) => v,
                    EwStep::Unary(op, r) => unary_f32(op, regs[r]),
                    EwStep::Binary(op, p, q) => binary_f32(op, regs[p], regs[q]),
                    EwStep::Where(c, p, q) => {
                        if regs[c] != 0.0 {
                            regs[p]
                        } else {
                            regs[q]
                        }
                    }
                };
            }
            *slot = regs.last().copied().unwrap_or(0.0);
        }
    };
    const CHUNK: usize = 4096;
    if n >= PAR_MIN {
        res.par_chunks_mut(CHUNK).enumerate().for_each(run_chunk);
    } else {
        res.chunks_mut(CHUNK).enumerate().for_each(run_chunk);
    }
    tensor(&out.shape, TensorData::F32(res))
}
