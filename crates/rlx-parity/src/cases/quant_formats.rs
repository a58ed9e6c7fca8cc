//! rlx's own block formats (Q4_1, Q8_ASYM, FP8_E4M3, FP8_E5M2, NVFP4), LoRA, dot_general and
//! einsum.
//!
//! - `dq_<format>_*`: per format, decode rows (M = 1 on the one-row kernel, K of a few blocks
//!   and of 4352 elements, and M = 6 over batch dims on the matrix-vector kernel), prompt rows (M = 37) on the device's tile, M = 3 forced onto the f32
//!   tile, M = 37 forced onto cooperative matrices at `Precision::Mixed` ([`F16_OPERANDS_TOL`]:
//!   the operands are rounded to f16; lavapipe reports it unavailable), a QuantGather with ids
//!   past both ends, weights made by the host quantizer (nvfp4 with its global scale), and a
//!   weight row holding NaN (its output column must be NaN). N is prime and K several blocks.
//! - `lora_*`: decode (M = 1, where the rank-r add folds into the matmul epilogue) and prompt
//!   rows, scale 1 and not, and the unfused ops.
//! - `dot_general_*` and `einsum_*`: the common layouts (one matmul each), a transposed lhs,
//!   several contracted dims, a permuted operand, an outer product, a summed-out index, an
//!   output permutation and numpy's implicit output.
//!
//! [`bench_cases`] (not in the table) holds the heavy, realistic shapes for timing.

use super::F16_OPERANDS_TOL;
// x [batch..., m, K] · dequant(w)ᵀ: the same case body as the quant_matmul cases.
use super::quant::quant_matmul as matmul;
use crate::{Case, CaseCtx};
use rlx_ir::{IrError, NodeId, QuantType, Shape, Tensor};
use rlx_nn::prelude::*;
use rlx_runtime::{MatmulKernel, PassOptions, Precision};

/// The formats of this file: rlx's own and Q4_1 (ggml's too), which rlx's quantizer writes.
const FORMATS: [QuantType; 5] =
    [QuantType::Q4_1, QuantType::Q8Asym, QuantType::Fp8E4M3, QuantType::Fp8E5M2, QuantType::NvFp4];

pub(super) fn cases(out: &mut Vec<Case>) {
    for q in FORMATS {
        format_cases(out, q);
    }
    lora_cases(out);
    dot_general_cases(out);
    einsum_cases(out);
}

fn stem(q: QuantType) -> String {
    q.name().to_lowercase()
}

/// K of `blocks` blocks of `q`.
fn k_of(q: QuantType, blocks: usize) -> usize {
    blocks * q.block_elems()
}

fn format_cases(out: &mut Vec<Case>, q: QuantType) {
    let s = stem(q);
    // Three blocks of 32 (two of nvfp4's 64): 96 or 128 elements, K a few tiles of 32.
    let blocks = if q.block_elems() == 64 { 2 } else { 3 };
    let shapes: [(&str, &'static [usize], usize, usize); 3] =
        [("m1", &[], 1, 67), ("batch_2x3", &[2], 3, 29), ("m37", &[], 37, 71)];
    for (tag, batch, m, n) in shapes {
        out.push(Case::new(format!("dq_{s}_{tag}"), move |c| matmul(c, q, batch, m, n, blocks)));
    }
    // The one-row kernel over K = 4352: more pieces than a workgroup has invocations.
    let long = 4352 / q.block_elems();
    out.push(Case::new(format!("dq_{s}_m1_long"), move |c| matmul(c, q, &[], 1, 5, long)));
    let name = format!("dq_{s}_m3_tiled");
    let case = Case::new(name.clone(), move |c| matmul(c, q, &[], 3, 67, blocks));
    out.push(case.with_kernels(name, Precision::F32, Some(MatmulKernel::Tiled64)));
    let name = format!("dq_{s}_m37_coop");
    let case = Case::new(name.clone(), move |c| matmul(c, q, &[], 37, 71, blocks));
    out.push(case.with_kernels(name, Precision::Mixed, Some(MatmulKernel::Coop)).with_tol(F16_OPERANDS_TOL));
    out.push(Case::new(format!("dq_{s}_gather"), move |c| {
        let table = c.param_quant("table", q, 7, k_of(q, 2), 1.0)?;
        let ids = c.input_i32("ids", &[2, 5], -2, 9)?;
        Ok(vec![c.quant_gather(table, ids, q)?])
    }));
    out.push(Case::new(format!("dq_{s}_quantized"), move |c| quantized(c, q, 4, 13, false)));
    out.push(Case::new(format!("dq_{s}_nan_row"), move |c| quantized(c, q, 2, 6, true)));
}

fn quant_err(shape: &[usize], e: rlx_ir::QuantError) -> IrError {
    IrError::Attribute { op: "quantize", attr: "values", shape: Shape::new(shape), reason: e.to_string() }
}

/// A weight [n, K] quantized on the host from uniform values in [−1, 1) whose largest
/// magnitude is exactly 1 (so nvfp4's global scale is 1 / 2688, which the torch reference
/// knows); with `nan_row`, row 3 holds a NaN and its output column must be NaN.
fn quantized(
    c: &mut CaseCtx,
    q: QuantType,
    m: usize,
    n: usize,
    nan_row: bool,
) -> Result<Vec<NodeId>, IrError> {
    let k = k_of(q, 2);
    let mut v = c.uniform(n * k, -1.0, 1.0);
    v[0] = 1.0;
    if nan_row {
        v[3 * k + 5] = f32::NAN;
    }
    let x = c.input_f32("x", &[m, k], -1.0, 1.0)?;
    let y = if q == QuantType::NvFp4 {
        let (bytes, g) = rlx_ir::quantize_nvfp4(&v).map_err(|e| quant_err(&[n, k], e))?;
        let row = bytes.len() / n;
        let w = c.param_tensor("w", Tensor::from_u8([n, row], bytes)?)?;
        c.nvfp4_matmul(x, w, g)?
    } else {
        let bytes = rlx_ir::quantize(q, &v).map_err(|e| quant_err(&[n, k], e))?;
        let row = bytes.len() / n;
        let w = c.param_tensor("w", Tensor::from_u8([n, row], bytes)?)?;
        c.quant_matmul(x, w, q)?
    };
    Ok(vec![y])
}

/// x·wᵀ + scale·(x·aᵀ)·bᵀ with x [lead..., K], w [N, K], a [r, K], b [N, r].
fn lora(
    c: &mut CaseCtx,
    lead: &[usize],
    k: usize,
    n: usize,
    r: usize,
    scale: f32,
) -> Result<Vec<NodeId>, IrError> {
    let mut dims = lead.to_vec();
    dims.push(k);
    let x = c.input_f32("x", &dims, -1.0, 1.0)?;
    let w = c.param_f32("w", &[n, k], -0.1, 0.1)?;
    let a = c.param_f32("lora_a", &[r, k], -0.1, 0.1)?;
    let b = c.param_f32("lora_b", &[n, r], -0.1, 0.1)?;
    Ok(vec![c.lora_matmul(x, w, a, b, scale)?])
}

fn lora_cases(out: &mut Vec<Case>) {
    out.push(Case::new("lora_m1", |c| lora(c, &[1], 96, 67, 4, 2.0)));
    out.push(Case::new("lora_m37", |c| lora(c, &[37], 96, 67, 8, 0.5)));
    out.push(Case::new("lora_batch_2x5_scale1", |c| lora(c, &[2, 5], 40, 31, 3, 1.0)));
    out.push(
        Case::new("lora_m1_unfused", |c| lora(c, &[1, 1], 96, 67, 4, 2.0)).with_passes(PassOptions::none()),
    );
}

/// One dot_general case: lhs and rhs dims and the four axis lists.
type Dims = (&'static [usize], &'static [usize]);
type Axes = [&'static [usize]; 4];

fn dot_general_cases(out: &mut Vec<Case>) {
    let table: [(&str, Dims, Axes); 7] = [
        ("ij_jk", (&[5, 7], &[7, 3]), [&[], &[], &[1], &[0]]),
        ("ij_kj", (&[5, 7], &[3, 7]), [&[], &[], &[1], &[1]]),
        ("ji_jk", (&[7, 5], &[7, 3]), [&[], &[], &[0], &[0]]),
        ("bij_bjk", (&[2, 5, 7], &[2, 7, 3]), [&[0], &[0], &[2], &[1]]),
        ("two_contracted", (&[3, 4, 5], &[4, 5, 6]), [&[], &[], &[1, 2], &[0, 1]]),
        ("permuted_batch", (&[4, 5, 3], &[3, 6, 4]), [&[2], &[0], &[0], &[2]]),
        ("outer", (&[5], &[3]), [&[], &[], &[], &[]]),
    ];
    for (tag, (ld, rd), [lb, rb, lc, rc]) in table {
        out.push(Case::new(format!("dot_general_{tag}"), move |c| {
            let l = c.input_f32("lhs", ld, -1.0, 1.0)?;
            let r = c.input_f32("rhs", rd, -1.0, 1.0)?;
            Ok(vec![c.dot_general(l, r, lb, rb, lc, rc)?])
        }));
    }
}

fn einsum_cases(out: &mut Vec<Case>) {
    let table: [(&str, &'static str, Dims); 6] = [
        ("bij_bjk", "bij,bjk->bik", (&[2, 5, 7], &[2, 7, 3])),
        ("attention_scores", "bhqd,bhkd->bhqk", (&[2, 3, 5, 8], &[2, 3, 7, 8])),
        ("ij_jk_to_ki", "ij,jk->ki", (&[5, 7], &[7, 3])),
        ("sum_out", "ij,jk->k", (&[5, 7], &[7, 3])),
        ("implicit", "ij,jk", (&[5, 7], &[7, 3])),
        ("batch_last", "ijb,jkb->bik", (&[4, 6, 2], &[6, 3, 2])),
    ];
    for (tag, spec, (ad, bd)) in table {
        out.push(Case::new(format!("einsum_{tag}"), move |c| {
            let a = c.input_f32("a", ad, -1.0, 1.0)?;
            let b = c.input_f32("b", bd, -1.0, 1.0)?;
            Ok(vec![c.einsum(spec, &[a, b])?])
        }));
    }
}

/// The heaviest realistic case per family, for timing on a real GPU against torch (not in the
/// parity table: each streams a 4096×4096 weight). Per format of this file and Q8_0 / Q4_0 (the
/// symmetric int8 / int4 baselines): M = 1 (decode) and M = 512 (prefill) against N = K = 4096;
/// LoRA r = 16 on a 4096² f32 layer at the same two M.
pub(super) fn bench_cases(out: &mut Vec<Case>) {
    let formats = [QuantType::Q8_0, QuantType::Q4_0].into_iter().chain(FORMATS);
    for q in formats {
        for m in [1, 512] {
            let blocks = 4096 / q.block_elems();
            out.push(Case::new(format!("bench_dq_{}_4096_m{m}", stem(q)), move |c| {
                matmul(c, q, &[], m, 4096, blocks)
            }));
        }
    }
    for m in [1, 512] {
        out.push(Case::new(format!("bench_lora_r16_4096_m{m}"), move |c| lora(c, &[m], 4096, 4096, 16, 2.0)));
    }
}
