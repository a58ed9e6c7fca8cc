//! The ops on packed quantized weights: every GGUF block format the GPU kernels decode (`formats`;
//! Q4_1 and rlx's own formats are in `quant_formats`) × the one-row path (M = 1: K of 1 to
//! 17 blocks or super-blocks, more pieces than a workgroup's invocations, batch dims), the
//! matrix-vector path (M = 5, 8, batch dims), the tiled path (M = 9, 33, 37, 70 with batch dims) and QuantGather, on random
//! valid blocks; K of 1 to 5 blocks, rows whose byte width is not a word multiple (Q8_0, Q4_0,
//! Q5_0, Q3_K, Q6_K, IQ4_NL), column counts that are not multiples of 8 or of the kernels'
//! tiles, an f16 x, K = 0, and NaN scales. Each shape runs
//! three ways: the device's own choice (matrix-vector for M ≤ 8, else its best tile), every
//! matmul forced onto the f32 tile (default tolerance), and forced onto cooperative matrices at
//! `Precision::Mixed` ([`F16_OPERANDS_TOL`]: the operands are rounded to f16; lavapipe reports
//! those cases unavailable).

use super::F16_OPERANDS_TOL;
use crate::{Case, CaseCtx};
use rlx_ir::{DType, IrError, NodeId, QuantType, Tensor};
use rlx_runtime::{MatmulKernel, Precision};

/// Magnitude of the random f16 scales: decoded weights stay within a few units (fp8 e5m2's
/// codes reach 57344, so its products in `quant_formats` reach ~1e3; f32 sums of 160 of them
/// are still exact enough).
const SCALE: f32 = 0.02;

/// The GGUF formats of this file: all but Q4_1 (in `quant_formats`).
fn formats() -> impl Iterator<Item = QuantType> {
    QuantType::GGUF.into_iter().filter(|q| *q != QuantType::Q4_1)
}

pub(super) fn cases(out: &mut Vec<Case>) {
    let mut set = Vec::new();
    for q in formats() {
        matmul_cases(&mut set, q);
    }
    let ways = [
        (None, Precision::F32, crate::DEFAULT_TOL, "auto"),
        (Some(MatmulKernel::Tiled64), Precision::F32, crate::DEFAULT_TOL, "tiled"),
        (Some(MatmulKernel::Coop), Precision::Mixed, F16_OPERANDS_TOL, "coop"),
    ];
    for (kernel, precision, tol, tag) in ways {
        for case in &set {
            let name = format!("{}_{tag}", case.0);
            let (q, batch, m, n, blocks) = case.1;
            let c = Case::new(name.clone(), move |c| quant_matmul(c, q, batch, m, n, blocks));
            out.push(c.with_kernels(name, precision, kernel).with_tol(tol));
        }
    }
    for q in formats() {
        let stem = q.name().to_lowercase();
        out.push(Case::new(format!("quant_gather_{stem}"), move |c| {
            let k = 2 * q.block_elems();
            let table = c.param_quant("table", q, 7, k, 1.0)?;
            // Ids past both ends give rows of zeros.
            let ids = c.input_i32("ids", &[2, 5], -2, 9)?;
            Ok(vec![c.quant_gather(table, ids, q)?])
        }));
    }
    out.push(Case::new("quant_matmul_x_f16", |c| {
        let q = QuantType::Q4K;
        let x = c.input_f32("x", &[3, 256], -1.0, 1.0)?;
        let h = c.cast(x, DType::F16)?;
        let w = c.param_quant("w", q, 9, 256, SCALE)?;
        Ok(vec![c.quant_matmul(h, w, q)?])
    }));
    out.push(Case::new("quant_matmul_k0_empty_is_zeros", |c| {
        let x = c.input_f32("x", &[3, 0], -1.0, 1.0)?;
        let w = c.param_tensor("w", Tensor::from_u8([5, 0], vec![])?)?;
        Ok(vec![c.quant_matmul(x, w, QuantType::Q8_0)?])
    }));
    let nan_cases = [
        (QuantType::Q8_0, 1),
        (QuantType::Q4K, 1),
        (QuantType::Q6K, 40),
        (QuantType::Q5_0, 1),
        (QuantType::Q3K, 1),
        (QuantType::IQ4XS, 40),
    ];
    for (q, m) in nan_cases {
        let name = format!("quant_matmul_nan_scale_{}_m{m}", q.name().to_lowercase());
        out.push(Case::new(name, move |c| nan_scale(c, q, m)));
    }
}

type Shape = (QuantType, &'static [usize], usize, usize, usize);

/// (name, (format, batch dims, M per batch, N, K in blocks)).
fn matmul_cases(out: &mut Vec<(String, Shape)>, q: QuantType) {
    let stem = q.name().to_lowercase();
    // Legacy formats: 3 blocks (rows of 102 / 54 bytes, not word multiples); K-quants: 1 and 2.
    let (k1, k2) = if q.block_elems() == 32 { (3, 5) } else { (1, 2) };
    // The one-row kernel (M = 1): K of 7 blocks or 3 super-blocks (not a multiple of 256 for
    // the legacy formats), and 4352 elements, more pieces than a workgroup has invocations.
    let (k_odd, k_long) = if q.block_elems() == 32 { (7, 136) } else { (3, 17) };
    let shapes: [(&str, &'static [usize], usize, usize, usize); 11] = [
        ("m1", &[], 1, 67, k2),
        ("m1_k_odd", &[], 1, 7, k_odd),
        ("m1_long", &[], 1, 5, k_long),
        ("batch_1x1", &[1], 1, 9, k1),
        ("m9_k1", &[], 9, 13, 1),
        ("m33_k3", &[], 33, 21, 3),
        ("m5", &[], 5, 33, k1),
        ("m8_n4", &[], 8, 4, k2),
        ("batch_2x3", &[2], 3, 29, k1),
        ("m37", &[], 37, 70, k2),
        ("batch_2x35", &[2], 35, 131, k1),
    ];
    for (tag, batch, m, n, blocks) in shapes {
        out.push((format!("quant_matmul_{stem}_{tag}"), (q, batch, m, n, blocks)));
    }
}

/// x [batch..., m, K] · dequant(w)ᵀ, w random valid blocks [n, K] scaled by `SCALE`.
pub(super) fn quant_matmul(
    c: &mut CaseCtx,
    q: QuantType,
    batch: &[usize],
    m: usize,
    n: usize,
    blocks: usize,
) -> Result<Vec<NodeId>, IrError> {
    let k = blocks * q.block_elems();
    let mut dims = batch.to_vec();
    dims.extend([m, k]);
    let x = c.input_f32("x", &dims, -1.0, 1.0)?;
    let w = c.param_quant("w", q, n, k, SCALE)?;
    Ok(vec![c.quant_matmul(x, w, q)?])
}

/// Weight row 3's first block gets a NaN scale: output column 3 (and only it) is NaN.
fn nan_scale(c: &mut CaseCtx, q: QuantType, m: usize) -> Result<Vec<NodeId>, IrError> {
    let (n, k) = (6, 2 * q.block_elems());
    let row = q.byte_len(k).map_err(|e| IrError::Attribute {
        op: "quant_matmul",
        attr: "k",
        shape: rlx_ir::Shape::new(&[n, k]),
        reason: e.to_string(),
    })?;
    let mut rng = rlx_test_support::Rng::from_name(c.name());
    let mut bytes = rlx_test_support::quant_blocks(&mut rng, q, n * 2, SCALE);
    let at = 3 * row + q.f16_offsets()[0];
    bytes[at..at + 2].copy_from_slice(&0x7e00u16.to_le_bytes());
    let x = c.input_f32("x", &[m, k], -1.0, 1.0)?;
    let w = c.param_tensor("w", Tensor::from_u8([n, row], bytes)?)?;
    Ok(vec![c.quant_matmul(x, w, q)?])
}
