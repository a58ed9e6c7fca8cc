//! The matmul family: `MatMul` and the fused `FusedMatMul` (bias and activation epilogue).
//! Shape rule and flop count.

use super::broadcast_shapes;
use super::{arity, dims, float, mismatch, not_in_family, same_dtype};
use crate::{IrError, Op, OpFamily, Shape, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::MatMul { transpose_a, transpose_b } => {
            arity(name, inputs, 2)?;
            matmul(name, inputs, *transpose_a, *transpose_b)
        }
        Op::FusedMatMul { transpose_a, transpose_b, bias, .. } => {
            arity(name, inputs, if *bias { 3 } else { 2 })?;
            let out = matmul(name, &inputs[..2], *transpose_a, *transpose_b)?;
            if *bias {
                let n = out.shape.last();
                if inputs[2].shape.dims() != [n] {
                    return Err(mismatch(
                        name,
                        inputs,
                        format!("bias must be 1-D [{n}] (the output's last dim)"),
                    ));
                }
                same_dtype(name, inputs, 0, 2)?;
            }
            Ok(out)
        }
        _ => Err(not_in_family(op, inputs, OpFamily::Matmul)),
    }
}

/// Two flops per multiply-add: each output element is one dot of the contraction length K.
pub(super) fn flops(op: &Op, inputs: &[&TensorType], out: &TensorType) -> f64 {
    let (Op::MatMul { transpose_a, .. } | Op::FusedMatMul { transpose_a, .. }) = op else { return 0.0 };
    // Contraction length: a is [..., M, K], or [..., K, M] when transposed.
    let a = dims(inputs, 0);
    let k = if *transpose_a { a.len().checked_sub(2) } else { a.len().checked_sub(1) };
    2.0 * out.shape.numel() as f64 * k.and_then(|i| a.get(i)).copied().unwrap_or(0) as f64
}

fn matmul(name: &'static str, inputs: &[&TensorType], ta: bool, tb: bool) -> Result<TensorType, IrError> {
    let (a, b) = (inputs[0], inputs[1]);
    float(name, 0, a.dtype)?;
    same_dtype(name, inputs, 0, 1)?;
    let (ra, rb) = (a.shape.rank(), b.shape.rank());
    if ra < 2 || rb < 2 {
        return Err(mismatch(
            name,
            inputs,
            "both operands need rank ≥ 2; reshape a 1-D vector to [1, K] (or [K, 1]) first",
        ));
    }
    let (ad, bd) = (a.shape.dims(), b.shape.dims());
    let (m, ka) = if ta { (ad[ra - 1], ad[ra - 2]) } else { (ad[ra - 2], ad[ra - 1]) };
    let (kb, n) = if tb { (bd[rb - 1], bd[rb - 2]) } else { (bd[rb - 2], bd[rb - 1]) };
    if ka != kb {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "inner dims differ: a gives K = {ka}, b gives K = {kb} (transpose_a = {ta}, \
                 transpose_b = {tb}); transpose or reshape an operand so they agree"
            ),
        ));
    }
    let batch = broadcast_shapes(name, &Shape::new(&ad[..ra - 2]), &Shape::new(&bd[..rb - 2]))
        .map_err(|_| mismatch(name, inputs, "batch dims (all but the last two) do not broadcast"))?;
    let mut out = batch.0;
    out.extend([m, n]);
    Ok(TensorType::new(out, a.dtype))
}
