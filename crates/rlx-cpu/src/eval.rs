//! One op on host tensors: operand checking ([`eval`]) and dispatch to the kernels.

use crate::elem::invalid;
use crate::ops::{
    attention, attention_grad, cast, conv, elementwise as ew, fft, grouped, matmul, norm, quant, random,
    reduce, rope, shape, ssm, state,
};
use crate::widen;
use rlx_backend::BackendError;
use rlx_ir::{Op, Tensor, TensorType};

/// Evaluates one op on host tensors. `out` is the node's inferred type. The oracle used by
/// parity tests and by rlx-opt's constant folding.
///
/// The operands are checked first: their types must be ones the op accepts
/// (`rlx_ir::infer::infer`) and must give exactly `out`; otherwise this returns an error
/// instead of computing. `Input` and `Param` have no value to compute and are an error;
/// `Constant` returns its tensor.
pub fn eval(op: &Op, inputs: &[&Tensor], out: &TensorType) -> Result<Tensor, BackendError> {
    if let Op::Constant(t) = op {
        let ty = TensorType::new(t.shape().clone(), t.dtype());
        if ty != *out {
            return Err(invalid("constant", format!("holds {ty} but {out} was asked for")));
        }
        return Ok(t.clone());
    }
    if let Op::Input { name } | Op::Param { name } | Op::State { name } = op {
        return Err(invalid(
            op.name(),
            format!("'{name}' is supplied at run time; eval computes only non-leaf ops"),
        ));
    }
    let tys: Vec<TensorType> = inputs.iter().map(|t| TensorType::new(t.shape().clone(), t.dtype())).collect();
    let refs: Vec<&TensorType> = tys.iter().collect();
    let inferred = rlx_ir::infer::infer(op, &refs)?;
    if inferred != *out {
        return Err(invalid(
            op.name(),
            format!("output type {out} was asked for, but the operands give {inferred}"),
        ));
    }
    compute(op, inputs, out)
}

/// Runs the kernel of `op`. Operands are assumed to have passed type inference (the graph was
/// verified, or [`eval`] checked them); a missing operand is still an error, not a panic.
pub(crate) fn compute(op: &Op, inputs: &[&Tensor], out: &TensorType) -> Result<Tensor, BackendError> {
    let name = op.name();
    if widen::through_i32(op, inputs, out) {
        return widen::compute_through_i32(op, inputs, out);
    }
    let arg = |i: usize| {
        inputs
            .get(i)
            .copied()
            .ok_or_else(|| invalid(name, format!("operand {i} is missing ({} given)", inputs.len())))
    };
    match op {
        Op::Input { name: n } | Op::Param { name: n } | Op::State { name: n } => {
            Err(invalid(name, format!("'{n}' has no value: it is supplied at run time")))
        }
        Op::Constant(t) => Ok(t.clone()),
        Op::Unary(u) => ew::unary(*u, arg(0)?, out),
        Op::Binary(b) => ew::binary(*b, arg(0)?, arg(1)?, out),
        Op::Compare(c) => ew::compare(*c, arg(0)?, arg(1)?, out),
        Op::Where => ew::where_(arg(0)?, arg(1)?, arg(2)?, out),
        Op::Cast(_) => cast::cast(arg(0)?, out),
        Op::FusedElementwise(p) => ew::fused(p, inputs, out),
        Op::Reduce { op: r, axes, .. } => reduce::reduce(*r, axes, arg(0)?, out),
        Op::ArgReduce { op: r, axis, .. } => reduce::arg_reduce(*r, *axis, arg(0)?, out),
        Op::Cumsum { axis } => reduce::cumsum(*axis, arg(0)?, out),
        Op::TopK { k, axis, largest, output } => reduce::topk(*k, *axis, *largest, *output, arg(0)?, out),
        Op::Reshape(_) => shape::reshape(arg(0)?, out),
        Op::Permute(perm) => shape::permute(perm, arg(0)?, out),
        Op::Slice { axis, start, step, .. } => shape::slice(*axis, *start, *step, arg(0)?, out),
        Op::Concat { axis } => shape::concat(*axis, inputs, out),
        Op::Expand(_) => shape::expand(arg(0)?, out),
        Op::Gather { axis } => shape::gather(*axis, arg(0)?, arg(1)?, out),
        Op::ScatterAdd { axis, .. } => shape::scatter_add(*axis, arg(0)?, arg(1)?, out),
        // Evaluated functionally here (a new tensor); the executable stores it back in place.
        Op::WriteRows { axis } => state::write_rows(*axis, arg(0)?, arg(1)?, arg(2)?),
        Op::Pad { pads, value } => shape::pad(pads, *value, arg(0)?, out),
        Op::Reverse { axes } => shape::reverse(axes, arg(0)?, out),
        Op::Upsample2x => conv::upsample2x(arg(0)?, out),
        Op::Random { dist, .. } => random::random(*dist, arg(0)?, out),
        Op::Custom(call) => {
            call.op().cpu(inputs, out).map_err(|e| invalid(name, format!("{}: {e}", call.op().name())))
        }
        Op::MatMul { transpose_a, transpose_b } => {
            matmul::matmul(*transpose_a, *transpose_b, arg(0)?, arg(1)?, out)
        }
        Op::FusedMatMul { transpose_a, transpose_b, bias, activation } => {
            let b = if *bias { Some(arg(2)?) } else { None };
            matmul::fused_matmul(*transpose_a, *transpose_b, *activation, arg(0)?, arg(1)?, b, out)
        }
        Op::QuantMatMul { quant: q } => quant::quant_matmul(*q, arg(0)?, arg(1)?, out),
        Op::QuantGather { quant: q } => quant::quant_gather(*q, arg(0)?, arg(1)?, out),
        Op::GroupedMatMul => grouped::grouped_matmul(arg(0)?, arg(1)?, arg(2)?, out),
        Op::QuantGroupedMatMul { quant: q } => {
            grouped::quant_grouped_matmul(*q, arg(0)?, arg(1)?, arg(2)?, out)
        }
        Op::SelectiveScan { delta_softplus, output } => {
            ssm::selective_scan(*delta_softplus, *output, [arg(0)?, arg(1)?, arg(2)?, arg(3)?, arg(4)?], out)
        }
        Op::GatedDeltaRule { scale, output } => {
            ssm::gated_delta_rule(*scale, *output, [arg(0)?, arg(1)?, arg(2)?, arg(3)?, arg(4)?], out)
        }
        Op::Fft { inverse } => fft::fft(*inverse, arg(0)?, out),
        Op::LayerNorm { eps } => norm::layer_norm(*eps, arg(0)?, arg(1)?, arg(2)?, out),
        Op::RmsNorm { eps } => norm::rms_norm(*eps, arg(0)?, arg(1)?, out),
        Op::Softmax => norm::softmax(arg(0)?, out),
        Op::LogSoftmax => norm::log_softmax(arg(0)?, out),
        Op::AddNorm { norm: kind, eps } => {
            norm::add_norm(*kind, *eps, arg(0)?, arg(1)?, arg(2)?, inputs.get(3).copied(), out)
        }
        Op::Attention(spec) => attention::attention(spec, inputs, out),
        Op::AttentionGrad { spec, part } => attention_grad::attention_grad(spec, *part, inputs, out),
        Op::Rope { style, layout, rotary_dims } => {
            rope::rope(*style, *layout, *rotary_dims, arg(0)?, arg(1)?, arg(2)?, out)
        }
        Op::Conv2d { stride, padding, dilation, groups } => {
            let geom =
                conv::ConvGeom { stride: *stride, padding: *padding, dilation: *dilation, groups: *groups };
            conv::conv2d(&geom, arg(0)?, arg(1)?, inputs.get(2).copied(), out)
        }
        Op::Pool2d { kind, kernel, stride, padding } => {
            conv::pool2d(*kind, *kernel, *stride, *padding, arg(0)?, out)
        }
    }
}
