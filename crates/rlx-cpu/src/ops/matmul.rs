//! Matrix multiplication through the `gemm` crate (f32, rayon-parallel), batched with broadcast
//! batch dims; transposes are passed to gemm as strides, never copied.

use super::elementwise::{binary, unary};
use crate::elem::{float_tensor, floats, invalid};
use crate::index::broadcast_offsets;
use gemm::Parallelism;
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{BinaryOp, Tensor, TensorType, UnaryOp};

/// Batches of matrices at most this many multiply-adds run one per thread; larger ones use
/// gemm's own threading one batch at a time.
const SMALL_GEMM: usize = 96 * 96 * 96;

/// One operand's layout: its rows/cols as stored and the element strides of the logical
/// (row, col) view after the optional transpose.
struct Operand<'a> {
    data: &'a [f32],
    batch_dims: &'a [usize],
    /// Elements per stored matrix.
    size: usize,
    rs: isize,
    cs: isize,
}

fn operand<'a>(
    data: &'a [f32],
    dims: &'a [usize],
    transpose: bool,
) -> Result<(Operand<'a>, usize, usize), BackendError> {
    let [batch_dims @ .., r, c] = dims else {
        return Err(invalid("matmul", format!("operand of rank {} (needs ≥ 2)", dims.len())));
    };
    let (rows, cols, rs, cs) = if transpose { (*c, *r, 1, *c as isize) } else { (*r, *c, *c as isize, 1) };
    Ok((Operand { data, batch_dims, size: r * c, rs, cs }, rows, cols))
}

/// `a · b` on f32 data, `out_dims` = broadcast batch dims ++ [M, N].
pub(crate) fn matmul_f32(
    a: &[f32],
    a_dims: &[usize],
    b: &[f32],
    b_dims: &[usize],
    transpose_a: bool,
    transpose_b: bool,
    out_dims: &[usize],
) -> Result<Vec<f32>, BackendError> {
    let (lhs, m, k) = operand(a, a_dims, transpose_a)?;
    let (rhs, k2, n) = operand(b, b_dims, transpose_b)?;
    let [out_batch @ .., om, on] = out_dims else {
        return Err(invalid("matmul", "output of rank < 2"));
    };
    if k != k2 || m != *om || n != *on {
        return Err(invalid(
            "matmul",
            format!("operands {a_dims:?} and {b_dims:?} do not give output {out_dims:?}"),
        ));
    }
    let total: usize = out_dims.iter().product();
    let mut res = vec![0f32; total];
    if total == 0 || k == 0 {
        return Ok(res);
    }
    let a_off = broadcast_offsets(lhs.batch_dims, out_batch);
    let b_off = broadcast_offsets(rhs.batch_dims, out_batch);
    let batches = a_off.len();
    let one = |(i, dst): (usize, &mut [f32]), par: Parallelism| -> Result<(), BackendError> {
        let ao = a_off[i] * lhs.size;
        let bo = b_off[i] * rhs.size;
        let x =
            lhs.data.get(ao..ao + lhs.size).ok_or_else(|| invalid("matmul", "lhs shorter than its shape"))?;
        let y =
            rhs.data.get(bo..bo + rhs.size).ok_or_else(|| invalid("matmul", "rhs shorter than its shape"))?;
        // SAFETY: `x` holds m·k elements and every (row, col) < (m, k) maps through (rs, cs)
        // inside it (likewise `y` with k·n); `dst` is an exclusive m·n row-major chunk.
        // read_dst = false, so dst's prior contents are never read.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                false,
                x.as_ptr(),
                lhs.cs,
                lhs.rs,
                y.as_ptr(),
                rhs.cs,
                rhs.rs,
                0.0,
                1.0,
                false,
                false,
                false,
                par,
            );
        }
        Ok(())
    };
    if batches > 1 && m * n * k <= SMALL_GEMM {
        res.par_chunks_mut(m * n).enumerate().try_for_each(|c| one(c, Parallelism::None))?;
    } else {
        for c in res.chunks_mut(m * n).enumerate() {
            one(c, Parallelism::Rayon(0))?;
        }
    }
    Ok(res)
}

/// Batched matmul of float tensors (F16 is widened to f32 and the result rounded back).
pub fn matmul(
    transpose_a: bool,
    transpose_b: bool,
    a: &Tensor,
    b: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let (x, y) = (floats(a, "matmul")?, floats(b, "matmul")?);
    let r = matmul_f32(&x, a.dims(), &y, b.dims(), transpose_a, transpose_b, out.shape.dims())?;
    float_tensor(&out.shape, out.dtype, r)
}

/// Matmul, then `+ bias` (broadcast over rows), then `activation`: each step rounds to the
/// output dtype exactly as the unfused ops would.
pub fn fused_matmul(
    transpose_a: bool,
    transpose_b: bool,
    activation: Option<UnaryOp>,
    a: &Tensor,
    b: &Tensor,
    bias: Option<&Tensor>,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let mut y = matmul(transpose_a, transpose_b, a, b, out)?;
    if let Some(bias) = bias {
        y = binary(BinaryOp::Add, &y, bias, out)?;
    }
    if let Some(act) = activation {
        y = unary(act, &y, out)?;
    }
    Ok(y)
}
