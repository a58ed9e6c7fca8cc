//! Several matrix-vector products over one A in one launch (`matmul_vec_multi.wgsl`): the
//! decode step's q/k/v projections (the split form: up to three outputs, each with its own
//! bias) and an MLP's gate and up projections with the activation and product fused (the gated
//! form). The lowering decides which matmuls form a group (`lower/matmul_group.rs`).

use super::vec::{vec_cols, B_F16, B_F32, VEC_MAX_ROWS};
use super::{act_define, Epilogue};
use crate::catalog::{name, params_of, Access, Defines, Spec};
use crate::{grid, GpuError};
use std::borrow::Cow;

const MULTI_SRC: &str = kernel_src!(
    "matmul/matmul_vec_multi.wgsl",
    "include/matmul_vec_core.wgsl",
    "include/matmul_epilogue.wgsl"
);

/// Most weights one split launch reads (b0, b1, b2 in the kernel).
pub const MULTI_MAX_PARTS: usize = 3;

/// The params of `matmul_vec_multi.wgsl` (must match `VecMultiParams` there).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct VecMultiParams {
    pub m: u32,
    pub k: u32,
    pub a_stride_m: u32,
    pub a_stride_k: u32,
    pub a_offset: u32,
    /// Output columns of each part (the gated form: n0 = n1, the output's N).
    pub n: [u32; MULTI_MAX_PARTS],
    /// The RMS norm's epsilon (norm variants).
    pub eps: f32,
    pub pad: [u32; 3],
}

impl VecMultiParams {
    /// Params and workgroup counts for A [m, k] (rows `a_stride_m` apart, contiguous) times
    /// the weights [n_s, k]; `gated`: the two weights of a gated product (n = [n, n, 0]).
    pub fn new(
        m: u32,
        k: u32,
        a_stride_m: u32,
        n: [u32; MULTI_MAX_PARTS],
        gated: bool,
    ) -> Result<(Self, [u32; 3]), GpuError> {
        if m == 0 || m > VEC_MAX_ROWS || k == 0 || (gated && (n[0] != n[1] || n[2] != 0)) {
            return Err(GpuError::Lowering {
                node: "matmul_vec_multi".into(),
                reason: format!(
                    "m {m}, k {k}, n {n:?} (gated {gated}) is not a grouped matrix-vector product"
                ),
            });
        }
        let cols = vec_cols(k);
        let columns = if gated {
            u64::from(n[0]).div_ceil(cols / 2)
        } else {
            n.iter().map(|&x| u64::from(x)).sum::<u64>().div_ceil(cols)
        };
        let grid = grid::linear("matmul_vec_multi", columns, 256)?;
        Ok((VecMultiParams { m, k, a_stride_m, a_stride_k: 1, a_offset: 0, n, eps: 0.0, pad: [0; 3] }, grid))
    }
}

/// Bindings of the split form: a, b0, b1, b2, c0, c1, c2 [, bias0, bias1, bias2] [, gamma];
/// of the gated form: a, b0 (the activated weight), b1, c [, gamma]. Only c's are written.
/// The split coop launch (`matmul_coop_split.rs`) binds the same first ten.
pub(super) const ACCESS: [Access; 11] = [
    Access::Read,
    Access::Read,
    Access::Read,
    Access::Read,
    Access::ReadWrite,
    Access::ReadWrite,
    Access::ReadWrite,
    Access::Read,
    Access::Read,
    Access::Read,
    Access::Read,
];
const GATED_ACCESS: [Access; 5] = [Access::Read, Access::Read, Access::Read, Access::ReadWrite, Access::Read];

/// How many storage bindings a launch takes (for the device's per-stage limit).
pub fn multi_bindings(gated: bool, bias: bool, norm: bool) -> u32 {
    let n = match (gated, bias) {
        (true, _) => 4,
        (false, false) => 7,
        (false, true) => 10,
    };
    n + u32::from(norm)
}

fn bindings(gated: bool, bias: bool, norm: bool) -> &'static [Access] {
    let n = multi_bindings(gated, bias, norm) as usize;
    if gated {
        &GATED_ACCESS[..n]
    } else {
        &ACCESS[..n]
    }
}

const SPLIT_DECL: &str = "@group(0) @binding(3) var<storage, read> b2: array<BElem>; \
     @group(0) @binding(4) var<storage, read_write> c0: array<f32>; \
     @group(0) @binding(5) var<storage, read_write> c1: array<f32>; \
     @group(0) @binding(6) var<storage, read_write> c2: array<f32>; \
     fn store(s: u32, at: u32, col: u32, v: f32) { if (s == 0u) { c0[at] = v; } \
     else if (s == 1u) { c1[at] = v; } else { c2[at] = v; } }";
const SPLIT_BIAS_DECL: &str = "@group(0) @binding(3) var<storage, read> b2: array<BElem>; \
     @group(0) @binding(4) var<storage, read_write> c0: array<f32>; \
     @group(0) @binding(5) var<storage, read_write> c1: array<f32>; \
     @group(0) @binding(6) var<storage, read_write> c2: array<f32>; \
     @group(0) @binding(7) var<storage, read> bias0: array<f32>; \
     @group(0) @binding(8) var<storage, read> bias1: array<f32>; \
     @group(0) @binding(9) var<storage, read> bias2: array<f32>; \
     fn store(s: u32, at: u32, col: u32, v: f32) { if (s == 0u) { c0[at] = v + bias0[col]; } \
     else if (s == 1u) { c1[at] = v + bias1[col]; } else { c2[at] = v + bias2[col]; } }";
const GATED_DECL: &str = "@group(0) @binding(3) var<storage, read_write> c0: array<f32>; \
     fn store(s: u32, at: u32, col: u32, v: f32) { c0[at] = v; }";
const SELECT3: &str =
    "if (part == 0u) { return b0[i]; } else if (part == 1u) { return b1[i]; } return b2[i];";
const SELECT2: &str = "if (part == 0u) { return b0[i]; } return b1[i];";
const NO_NORM: &str = "fn gamma4(q: u32) -> vec4<f32> { return vec4<f32>(1.0); } \
     fn gamma1(k: u32) -> f32 { return 1.0; }";
// γ after every other binding: 4 (gated), 7 (split) or 10 (split with biases).
const fn norm_decl(gated: bool, bias: bool) -> &'static str {
    match (gated, bias) {
        (true, _) => {
            "@group(0) @binding(4) var<storage, read> gamma: array<vec4<f32>>; \
             fn gamma4(q: u32) -> vec4<f32> { return gamma[q]; } \
             fn gamma1(k: u32) -> f32 { return gamma[k >> 2u][k & 3u]; }"
        }
        (false, false) => {
            "@group(0) @binding(7) var<storage, read> gamma: array<vec4<f32>>; \
             fn gamma4(q: u32) -> vec4<f32> { return gamma[q]; } \
             fn gamma1(k: u32) -> f32 { return gamma[k >> 2u][k & 3u]; }"
        }
        (false, true) => {
            "@group(0) @binding(10) var<storage, read> gamma: array<vec4<f32>>; \
             fn gamma4(q: u32) -> vec4<f32> { return gamma[q]; } \
             fn gamma1(k: u32) -> f32 { return gamma[k >> 2u][k & 3u]; }"
        }
    }
}

fn multi_defines(gated: bool, bias: bool, act: Option<Epilogue>, f16_b: bool, norm: bool) -> Defines {
    let pick = |yes: bool, a: &'static str, b: &'static str| Cow::Borrowed(if yes { a } else { b });
    let decl = match (gated, bias) {
        (true, _) => GATED_DECL,
        (false, false) => SPLIT_DECL,
        (false, true) => SPLIT_BIAS_DECL,
    };
    vec![
        ("GATED", pick(gated, "true", "false")),
        act_define(act),
        ("MULTI_DECL", Cow::Borrowed(decl)),
        ("B_SELECT", pick(gated, SELECT2, SELECT3)),
        ("B_ELEM", pick(f16_b, "vec4<f16>", "vec4<f32>")),
        ("B_LOAD", pick(f16_b, B_F16, B_F32)),
        ("ENABLE_F16", pick(f16_b, "enable f16;", "")),
        ("PRENORM", pick(norm, "true", "false")),
        ("NORM_DECL", if norm { Cow::Borrowed(norm_decl(gated, bias)) } else { Cow::Borrowed(NO_NORM) }),
        ("HAS_BIAS", Cow::Borrowed("false")),
    ]
}

/// `matmul_vec_<form>[_<act>][_bias][_norm][_f16w]_f32`.
fn multi_name(form: &str, act: Option<Epilogue>, bias: bool, f16_b: bool, norm: bool) -> Cow<'static, str> {
    let on = |yes: bool, part: &'static str| if yes { part } else { "" };
    name(&[
        "matmul_vec",
        form,
        act.map_or("", Epilogue::name),
        on(bias, "bias"),
        on(norm, "norm"),
        on(f16_b, "f16w"),
        "f32",
    ])
}

/// The split form (q/k/v in one launch), with biases or not, on RMSNorm(a)·γ when `norm`.
pub(super) fn split_spec(bias: bool, f16_b: bool, norm: bool) -> Spec {
    let params = params_of::<VecMultiParams>();
    let parts = (multi_name("split", None, bias, f16_b, norm), multi_defines(false, bias, None, f16_b, norm));
    Spec::wg256(parts, "kernels/matmul/matmul_vec_multi.wgsl", MULTI_SRC, bindings(false, bias, norm), params)
}

/// The gated form: `act(a · b0ᵀ) ⊙ (a · b1ᵀ)`, on RMSNorm(a)·γ when `norm`.
pub(super) fn gated_spec(act: Option<Epilogue>, f16_b: bool, norm: bool) -> Spec {
    let params = params_of::<VecMultiParams>();
    let parts = (multi_name("gated", act, false, f16_b, norm), multi_defines(true, false, act, f16_b, norm));
    Spec::wg256(parts, "kernels/matmul/matmul_vec_multi.wgsl", MULTI_SRC, bindings(true, false, norm), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_every_column_of_every_part() {
        // K = 896: 16 columns a workgroup (8 output columns of the gated form).
        let (p, grid) = VecMultiParams::new(1, 896, 896, [896, 128, 128], false).unwrap();
        assert_eq!(grid, [72, 1, 1]);
        assert_eq!((p.m, p.k, p.n), (1, 896, [896, 128, 128]));
        let (_, grid) = VecMultiParams::new(2, 896, 896, [4864, 4864, 0], true).unwrap();
        assert_eq!(grid, [608, 1, 1]);
        // K = 4096: 4 columns a workgroup.
        let (_, grid) = VecMultiParams::new(1, 4096, 4096, [14336, 14336, 0], true).unwrap();
        assert_eq!(grid, [7168, 1, 1]);
        assert!(VecMultiParams::new(9, 896, 896, [8, 8, 0], false).is_err());
        assert!(VecMultiParams::new(1, 896, 896, [8, 4, 0], true).is_err());
        assert_eq!(std::mem::size_of::<VecMultiParams>(), 48);
    }

    #[test]
    fn variants_are_named_for_their_form() {
        assert_eq!(split_spec(true, true, false).name, "matmul_vec_split_bias_f16w_f32");
        assert_eq!(split_spec(true, false, true).name, "matmul_vec_split_bias_norm_f32");
        assert_eq!(split_spec(false, false, false).bindings.len(), 7);
        assert_eq!(split_spec(true, false, true).bindings.len(), 11);
        assert_eq!(gated_spec(Some(Epilogue::Silu), false, false).name, "matmul_vec_gated_silu_f32");
        assert_eq!(gated_spec(Some(Epilogue::Silu), true, true).name, "matmul_vec_gated_silu_norm_f16w_f32");
        assert_eq!(
            gated_spec(None, false, true).bindings,
            [Access::Read, Access::Read, Access::Read, Access::ReadWrite, Access::Read]
        );
        assert_eq!(multi_bindings(false, true, false), 10);
        assert_eq!(multi_bindings(true, false, true), 5);
    }
}
