//! Matrix-vector matmuls that the GPU lowering runs as one launch (`matmul_vec_multi.wgsl`):
//! sibling linears of one input (a decode step's q, k and v, with and without biases, two or
//! three of them, four split as three plus one) and the gated product `act(x·W_gᵀ) ⊙ (x·W_uᵀ)`
//! of an MLP. Weights f32 or f16 widened by a cast (read as stored), K on the 16-byte path and
//! on the element path, one and several rows. With more rows, at `Precision::Mixed` and
//! `Precision::F16`, siblings are one tensor-core launch writing each output (the split-QKV
//! epilogue, `matmul_coop_split.wgsl`) where the device has cooperative matrices (the H200);
//! elsewhere they run apart, on the same cases.

use super::F16_OPERANDS_TOL;
use crate::{Case, CaseCtx};
use rlx_ir::{DType, IrError, NodeId, Tensor, UnaryOp};
use rlx_nn::prelude::*;
use rlx_runtime::Precision;

/// A weight [n, k]: an f32 param, or an f16 param widened to f32 (as a model at
/// `Precision::F16` stores it). Values in [-0.5, 0.5).
fn weight(c: &mut CaseCtx, name: &str, n: usize, k: usize, f16: bool) -> Result<NodeId, IrError> {
    if !f16 {
        return c.param_f32(name, &[n, k], -0.5, 0.5);
    }
    let v: Vec<f64> = c.uniform(n * k, -0.5, 0.5).into_iter().map(f64::from).collect();
    let w = c.param_tensor(name, Tensor::from_f64([n, k], DType::F16, &v)?)?;
    c.cast(w, DType::F32)
}

/// x [m, k] through linears of widths `ns`, each with a bias when `bias`.
fn siblings(
    c: &mut CaseCtx,
    m: usize,
    k: usize,
    ns: &[usize],
    bias: bool,
    f16: bool,
) -> Result<Vec<NodeId>, IrError> {
    let x = c.input_f32("x", &[m, k], -1.0, 1.0)?;
    let mut out = Vec::new();
    for (i, &n) in ns.iter().enumerate() {
        let w = weight(c, &format!("w{i}"), n, k, f16)?;
        let b = if bias { Some(c.param_f32(&format!("b{i}"), &[n], -0.5, 0.5)?) } else { None };
        out.push(c.linear(x, w, b)?);
    }
    Ok(out)
}

/// RMSNorm(x)·γ (x [m, k]) read only by the linears of widths `ns` (split) or by a gated
/// product of width ns[0] (`gated`): the launch computes the norm itself.
fn normed(
    c: &mut CaseCtx,
    m: usize,
    k: usize,
    ns: &[usize],
    gated: bool,
    f16: bool,
) -> Result<Vec<NodeId>, IrError> {
    let x = c.input_f32("x", &[m, k], -2.0, 2.0)?;
    let gamma = c.param_f32("gamma", &[k], 0.5, 1.5)?;
    let n = c.rms_norm(x, Some(gamma), -1, 1e-6)?;
    if gated {
        let wg = weight(c, "gate", ns[0], k, f16)?;
        let wu = weight(c, "up", ns[0], k, f16)?;
        let g = c.linear(n, wg, None)?;
        let u = c.linear(n, wu, None)?;
        let g = c.silu(g)?;
        return Ok(vec![c.mul(g, u)?]);
    }
    let mut out = Vec::new();
    for (i, &width) in ns.iter().enumerate() {
        let w = weight(c, &format!("w{i}"), width, k, f16)?;
        let b = c.param_f32(&format!("b{i}"), &[width], -0.5, 0.5)?;
        out.push(c.linear(n, w, Some(b))?);
    }
    Ok(out)
}

/// act(x · W_gᵀ) ⊙ (x · W_uᵀ) for x [m, k], both weights [n, k].
fn gated(
    c: &mut CaseCtx,
    m: usize,
    k: usize,
    n: usize,
    act: UnaryOp,
    f16: bool,
) -> Result<Vec<NodeId>, IrError> {
    let x = c.input_f32("x", &[m, k], -1.0, 1.0)?;
    let wg = weight(c, "gate", n, k, f16)?;
    let wu = weight(c, "up", n, k, f16)?;
    let g = c.linear(x, wg, None)?;
    let u = c.linear(x, wu, None)?;
    let g = c.unary(act, g)?;
    Ok(vec![c.mul(g, u)?])
}

pub(super) fn cases(out: &mut Vec<Case>) {
    // K up to 2048 runs 16 invocations a column, past it 64: both occur.
    let split: [(usize, usize, &[usize], bool); 7] = [
        (1, 3000, &[33, 9, 9], true),
        (1, 64, &[40, 8, 8], true),
        (1, 896, &[896, 128, 128], false),
        (3, 37, &[67, 5, 5], true),
        (2, 36, &[33, 17], false),
        (1, 20, &[9, 9, 9, 9], true),
        (8, 128, &[1, 130, 3], false),
    ];
    for (m, k, ns, bias) in split {
        for f16 in [false, true] {
            let widths: Vec<String> = ns.iter().map(|n| n.to_string()).collect();
            let name =
                format!("matmul_vec_split_{m}x{k}_n{}_b{}_f16w{}", widths.join("_"), bias as u8, f16 as u8);
            out.push(Case::new(name, move |c| siblings(c, m, k, ns, bias, f16)));
        }
    }
    let gates = [
        (1, 64, 77, UnaryOp::Silu),
        (2, 37, 50, UnaryOp::Silu),
        (1, 896, 4864, UnaryOp::Silu),
        (5, 48, 3, UnaryOp::Gelu),
        (1, 16, 1, UnaryOp::GeluTanh),
        (2, 2100, 40, UnaryOp::Silu),
    ];
    for (m, k, n, act) in gates {
        for f16 in [false, true] {
            let name = format!("matmul_vec_gated_{}_{m}x{k}x{n}_f16w{}", act.name(), f16 as u8);
            out.push(Case::new(name, move |c| gated(c, m, k, n, act, f16)));
        }
    }
    // Prompt-sized q/k/v: the narrow and the wide tensor-core tile, edges in M, N and K.
    let coop: [(usize, usize, &[usize], bool); 3] = [
        (200, 72, &[1500, 300, 300], true),
        (1300, 64, &[1100, 300, 300], false),
        (130, 96, &[2500, 1000], true),
    ];
    for (m, k, ns, bias) in coop {
        for precision in [Precision::Mixed, Precision::F16] {
            let widths: Vec<String> = ns.iter().map(|n| n.to_string()).collect();
            let name = format!("matmul_coop_split_{precision}_{m}x{k}_n{}_b{}", widths.join("_"), bias as u8);
            let case = Case::new(name.clone(), move |c| siblings(c, m, k, ns, bias, false));
            out.push(case.with_kernels(name, precision, None).with_tol(F16_OPERANDS_TOL));
        }
    }
    // An RMS norm read only by the group: computed by the launch (16- and 64-wide columns, the
    // 16-byte and the element path, several rows).
    let norms: [(usize, usize, &[usize]); 4] =
        [(1, 896, &[896, 128, 128]), (3, 37, &[20, 6, 6]), (1, 3000, &[40, 40]), (2, 64, &[77])];
    for (m, k, ns) in norms {
        for f16 in [false, true] {
            let widths: Vec<String> = ns.iter().map(|n| n.to_string()).collect();
            let tag = format!("{m}x{k}_n{}_f16w{}", widths.join("_"), f16 as u8);
            if ns.len() > 1 {
                out.push(Case::new(format!("matmul_vec_split_rms_norm_{tag}"), move |c| {
                    normed(c, m, k, ns, false, f16)
                }));
            }
            out.push(Case::new(format!("matmul_vec_gated_rms_norm_{tag}"), move |c| {
                normed(c, m, k, ns, true, f16)
            }));
        }
    }
    // The product's inputs also read elsewhere: no gated launch, each matmul runs alone.
    out.push(Case::new("matmul_vec_gated_inputs_also_outputs", |c| {
        let x = c.input_f32("x", &[1, 32], -1.0, 1.0)?;
        let wg = weight(c, "gate", 24, 32, false)?;
        let wu = weight(c, "up", 24, 32, false)?;
        let g = c.linear(x, wg, None)?;
        let u = c.linear(x, wu, None)?;
        let s = c.silu(g)?;
        Ok(vec![c.mul(s, u)?, u])
    }));
    // A NaN in x reaches every output of the group, and only the rows it is in.
    out.push(Case::new("matmul_vec_split_nan_row", |c| {
        let mut v = c.uniform(2 * 16, -1.0, 1.0);
        v[3] = f32::NAN;
        let x = c.input_tensor("x", Tensor::from_f32([2, 16], v)?)?;
        let mut outs = Vec::new();
        for (i, n) in [12, 4, 4].into_iter().enumerate() {
            let w = weight(c, &format!("w{i}"), n, 16, false)?;
            outs.push(c.linear(x, w, None)?);
        }
        Ok(outs)
    }));
}
