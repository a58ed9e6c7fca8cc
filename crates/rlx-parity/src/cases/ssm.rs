//! State-space recurrences: the selective scan (Mamba-1) with and without its options (skip D,
//! gate z, delta bias, softplus), grouped B/C, N past one register block of 16, L = 1, L not a
//! multiple of the GPU's chunk and L = 0 (last state only); the gated delta rule (GatedDeltaNet)
//! with and without q/k normalisation, V past one 32-column block, its last state; NaN in, NaN
//! out. Values are in realistic ranges: A < 0 (as −exp(A_log)), δ after softplus in ~(0.05, 1.3),
//! decays g ≤ 0, beta in (0, 1).
//!
//! `bench_cases` (not in the table) holds the heavy workloads the GPU host times against torch.

use super::with_nans;
use crate::{Case, CaseCtx};
use rlx_ir::{IrError, NodeId, Tensor};
use rlx_nn::prelude::*;

/// Which optional parts a selective-scan case uses.
#[derive(Clone, Copy)]
struct ScanCase {
    b: usize,
    d: usize,
    n: usize,
    l: usize,
    groups: usize,
    /// B and C given as 3-D [B, N, L] (one group, mamba_ssm's usual form).
    three_d: bool,
    d_skip: bool,
    z: bool,
    bias: bool,
    softplus: bool,
    state: bool,
}

const FULL: ScanCase = ScanCase {
    b: 2,
    d: 8,
    n: 4,
    l: 150,
    groups: 1,
    three_d: true,
    d_skip: true,
    z: true,
    bias: true,
    softplus: true,
    state: false,
};

/// Inputs u, delta, z [B, D, L]; params A [D, N], D, delta_bias [D]; inputs B, C; then the scan.
fn scan_graph(c: &mut CaseCtx, s: ScanCase) -> Result<Vec<NodeId>, IrError> {
    let u = c.input_f32("u", &[s.b, s.d, s.l], -1.0, 1.0)?;
    // Raw delta before softplus, or a positive step size without it.
    let (lo, hi) = if s.softplus { (-3.0, 1.0) } else { (0.01, 0.5) };
    let delta = c.input_f32("delta", &[s.b, s.d, s.l], lo, hi)?;
    let a = c.param_f32("A", &[s.d, s.n], -2.0, -0.1)?;
    let bc_dims: Vec<usize> = if s.three_d { vec![s.b, s.n, s.l] } else { vec![s.b, s.groups, s.n, s.l] };
    let bm = c.input_f32("B", &bc_dims, -1.0, 1.0)?;
    let cm = c.input_f32("C", &bc_dims, -1.0, 1.0)?;
    let opts = SelectiveScanOpts {
        d: if s.d_skip { Some(c.param_f32("D", &[s.d], -1.0, 1.0)?) } else { None },
        z: if s.z { Some(c.input_f32("z", &[s.b, s.d, s.l], -2.0, 2.0)?) } else { None },
        delta_bias: if s.bias { Some(c.param_f32("delta_bias", &[s.d], -1.0, 0.5)?) } else { None },
        delta_softplus: s.softplus,
    };
    if s.state {
        let (y, last) = c.selective_scan_with_state(u, delta, a, bm, cm, &opts)?;
        Ok(vec![y, last])
    } else {
        Ok(vec![c.selective_scan(u, delta, a, bm, cm, &opts)?])
    }
}

fn gated_graph(
    c: &mut CaseCtx,
    [b, l, h, k, v]: [usize; 5],
    l2norm: bool,
    state: bool,
) -> Result<Vec<NodeId>, IrError> {
    // Unnormalised keys stay small so that (I − β k kᵀ) keeps the state bounded.
    let span = if l2norm { 1.0 } else { 0.3 };
    let q = c.input_f32("q", &[b, l, h, k], -span, span)?;
    let kk = c.input_f32("k", &[b, l, h, k], -span, span)?;
    let vv = c.input_f32("v", &[b, l, h, v], -1.0, 1.0)?;
    let g = c.input_f32("g", &[b, l, h], -1.0, 0.0)?;
    let beta = c.input_f32("beta", &[b, l, h], 0.05, 0.95)?;
    let o = c.gated_delta_rule(q, kk, vv, g, beta, &GatedDeltaOpts { scale: None, l2norm_qk: l2norm })?;
    if !state {
        return Ok(vec![o]);
    }
    // The last state of the same recurrence (raw q and k: the state cases do not normalise).
    let scale = 1.0 / (k as f32).sqrt();
    let last = c.gated_delta_rule_op(q, kk, vv, g, beta, scale, rlx_ir::ScanOutput::LastState)?;
    Ok(vec![o, last])
}

pub(super) fn cases(out: &mut Vec<Case>) {
    let scans: [(&str, ScanCase); 9] = [
        ("full_b2_d8_n4_l150", FULL),
        ("full_l1", ScanCase { l: 1, ..FULL }),
        ("full_l64", ScanCase { l: 64, b: 1, ..FULL }),
        (
            "plain_b1_d5_n3_l40",
            ScanCase {
                b: 1,
                d: 5,
                n: 3,
                l: 40,
                d_skip: false,
                z: false,
                bias: false,
                softplus: false,
                ..FULL
            },
        ),
        ("groups2_n20_l37", ScanCase { d: 6, n: 20, l: 37, groups: 2, three_d: false, ..FULL }),
        (
            "groups3_n16_l33_no_z",
            ScanCase { d: 9, n: 16, l: 33, groups: 3, three_d: false, z: false, ..FULL },
        ),
        (
            "softplus_only_l300",
            ScanCase { b: 1, d: 4, n: 16, l: 300, d_skip: false, z: false, bias: false, ..FULL },
        ),
        ("state_l70", ScanCase { l: 70, state: true, ..FULL }),
        ("state_n20_l1", ScanCase { n: 20, l: 1, groups: 2, three_d: false, d: 4, state: true, ..FULL }),
    ];
    for (tag, s) in scans {
        out.push(Case::new(format!("selective_scan_{tag}"), move |c| scan_graph(c, s)));
    }
    out.push(Case::new("selective_scan_nan_in_nan_out", |c| {
        let (b, d, n, l) = (1, 3, 4, 20);
        let u = c.uniform(b * d * l, -1.0, 1.0);
        let u = c.input_tensor("u", Tensor::from_f32([b, d, l], with_nans(u, 23))?)?;
        let delta = c.input_f32("delta", &[b, d, l], -2.0, 1.0)?;
        let a = c.param_f32("A", &[d, n], -2.0, -0.1)?;
        let bm = c.input_f32("B", &[b, n, l], -1.0, 1.0)?;
        let cm = c.input_f32("C", &[b, n, l], -1.0, 1.0)?;
        let opts = SelectiveScanOpts { delta_softplus: true, ..Default::default() };
        Ok(vec![c.selective_scan(u, delta, a, bm, cm, &opts)?])
    }));
    out.push(Case::new("selective_scan_l0_last_state_is_zeros", |c| {
        let u = c.input_f32("u", &[2, 3, 0], -1.0, 1.0)?;
        let delta = c.input_f32("delta", &[2, 3, 0], -1.0, 1.0)?;
        let a = c.param_f32("A", &[3, 5], -2.0, -0.1)?;
        let bm = c.input_f32("B", &[2, 1, 5, 0], -1.0, 1.0)?;
        let cm = c.input_f32("C", &[2, 1, 5, 0], -1.0, 1.0)?;
        Ok(vec![c.selective_scan_op(u, delta, a, bm, cm, true, rlx_ir::ScanOutput::LastState)?])
    }));
    for (tag, dims, l2norm, state) in [
        ("b2_l9_h3_k8_v12", [2, 9, 3, 8, 12], false, false),
        ("l2norm_b1_l17_h2_k16_v40", [1, 17, 2, 16, 40], true, false),
        ("l1_k5_v3", [1, 1, 2, 5, 3], true, false),
        ("state_b2_l11_h2_k32_v33", [2, 11, 2, 32, 33], false, true),
    ] {
        out.push(Case::new(format!("gated_delta_{tag}"), move |c| gated_graph(c, dims, l2norm, state)));
    }
    out.push(Case::new("gated_delta_nan_in_nan_out", |c| {
        let v = c.uniform(7 * 4, -1.0, 1.0);
        let q = c.input_f32("q", &[1, 7, 1, 4], -0.3, 0.3)?;
        let k = c.input_f32("k", &[1, 7, 1, 4], -0.3, 0.3)?;
        let vv = c.input_tensor("v", Tensor::from_f32([1, 7, 1, 4], with_nans(v, 13))?)?;
        let g = c.input_f32("g", &[1, 7, 1], -1.0, 0.0)?;
        let beta = c.input_f32("beta", &[1, 7, 1], 0.05, 0.95)?;
        Ok(vec![c.gated_delta_rule(q, k, vv, g, beta, &GatedDeltaOpts::default())?])
    }));
}

/// Heavy workloads for timing on a real GPU (not in the parity table; the CPU reference of the
/// first takes seconds): Mamba-130m-sized selective scans (B = 8, D = 1536, N = 16, L = 2048,
/// every option on, and the same at B = 1), and a Qwen3-Next-sized gated delta rule
/// (B = 1, L = 2048, H = 32, K = V = 128).
pub(super) fn bench_cases(out: &mut Vec<Case>) {
    let scan = |b| ScanCase { b, d: 1536, n: 16, l: 2048, ..FULL };
    out.push(Case::new("bench_selective_scan_b8_d1536_n16_l2048", move |c| scan_graph(c, scan(8))));
    out.push(Case::new("bench_selective_scan_b1_d1536_n16_l2048", move |c| scan_graph(c, scan(1))));
    out.push(Case::new("bench_gated_delta_b1_l2048_h32_k128_v128", |c| {
        gated_graph(c, [1, 2048, 32, 128, 128], true, false)
    }));
}
