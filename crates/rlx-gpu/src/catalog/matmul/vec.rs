//! The matrix-vector matmul (`matmul_vec.wgsl`) for small M with a transposed B (every linear
//! layer's weight): decode steps and other few-row products, which a 64×64 output tile would
//! mostly leave empty. [`vec_fits`] decides; the params are the other matmuls'.

use super::{epilogue_name, matmul_defines, Epilogue, MatmulParams, IN2_OUT, IN3_OUT};
use crate::catalog::{params_of, Spec};
use crate::grid;
use crate::GpuError;
use std::borrow::Cow;

const VEC_SRC: &str = kernel_src!(
    "matmul/matmul_vec.wgsl",
    "include/matmul_vec_core.wgsl",
    "include/matmul_common.wgsl",
    "include/matmul_batch.wgsl",
    "include/matmul_epilogue.wgsl"
);

/// Most rows of A (MMAX in the kernel).
pub const VEC_MAX_ROWS: u32 = 8;
/// Invocations per output column for a reduction over `k` (`col_threads` in
/// matmul_vec_core.wgsl): 16 up to K = 2048, else 64.
pub fn vec_col_threads(k: u32) -> u32 {
    if k <= 2048 {
        16
    } else {
        64
    }
}

/// Output columns per workgroup (`cols` in the kernel).
pub(super) fn vec_cols(k: u32) -> u64 {
    u64::from(256 / vec_col_threads(k))
}

/// Whether the single (unbatched) matmul `p` takes the matrix-vector kernel: M ≤
/// [`VEC_MAX_ROWS`] and B stored [N, K] (its K stride 1).
pub fn vec_fits(p: &MatmulParams) -> bool {
    p.batch == 1 && p.m >= 1 && p.m <= VEC_MAX_ROWS && p.n >= 1 && p.b_stride_k == 1
}

/// Workgroup counts of the matrix-vector kernel for `p`.
pub fn vec_grid(p: &MatmulParams) -> Result<[u32; 3], GpuError> {
    grid::linear("matmul_vec", u64::from(p.n).div_ceil(vec_cols(p.k)), 256)
}

// Defines are one line each.
// Both read B through `b_elem`, which each kernel defines over its own binding(s).
pub const B_F32: &str = "fn b4_at(i: u32) -> vec4<f32> { return b_elem(i); } \
     fn b1_at(i: u32) -> f32 { return b_elem(i >> 2u)[i & 3u]; }";
// f16 weights as vec4<f16>, widened by the hardware's conversion (exact: f16 subnormals are
// normal f32, inf and NaN stay). Why not integer bit manipulation (as the cast kernel does, to
// need no shader f16): the H200 then spent longer converting than loading, and f16 weights
// decoded slower than f32 ones (Qwen2.5-0.5B gate·up 0.46 ms against 0.35 ms a step).
pub const B_F16: &str = "fn b4_at(i: u32) -> vec4<f32> { return vec4<f32>(b_elem(i)); } \
     fn b1_at(i: u32) -> f32 { return f32(b_elem(i >> 2u)[i & 3u]); }";

/// The matrix-vector matmul with a bias or not, activation `act`, and B read as f32 or as
/// the f16 it is stored in (`f16_b`). Operands as vec4 (16-byte loads); bindings come in whole
/// 16-byte units.
pub(super) fn vec_spec(bias: bool, act: Option<Epilogue>, f16_b: bool) -> Spec {
    let b_elem = if f16_b { "vec4<f16>" } else { "vec4<f32>" };
    let mut defines = matmul_defines(bias, act, "vec4<f32>", b_elem);
    defines.push(("B_LOAD", Cow::Borrowed(if f16_b { B_F16 } else { B_F32 })));
    defines.push(("ENABLE_F16", Cow::Borrowed(if f16_b { "enable f16;" } else { "" })));
    Spec::wg256(
        (epilogue_name(if f16_b { "matmul_vec_f16w" } else { "matmul_vec" }, bias, act), defines),
        "kernels/matmul/matmul_vec.wgsl",
        VEC_SRC,
        if bias { IN3_OUT } else { IN2_OUT },
        params_of::<MatmulParams>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(m: usize, n: usize, k: usize, tb: bool) -> MatmulParams {
        let b = if tb { [n, k] } else { [k, n] };
        MatmulParams::from_shapes(&[m, k], &b, false, tb).unwrap().0
    }

    #[test]
    fn few_rows_times_a_transposed_weight_take_the_vector_kernel() {
        assert!(vec_fits(&params(1, 896, 4864, true)));
        assert!(vec_fits(&params(8, 3, 5, true)));
        assert!(!vec_fits(&params(9, 896, 4864, true)));
        assert!(!vec_fits(&params(1, 896, 4864, false)));
        // K = 4864: 4 columns of 64 invocations; K = 896: 16 columns of 16.
        assert_eq!(vec_grid(&params(1, 896, 4864, true)).unwrap(), [224, 1, 1]);
        assert_eq!(vec_grid(&params(1, 4864, 896, true)).unwrap(), [304, 1, 1]);
        assert_eq!(vec_spec(true, Some(Epilogue::Silu), false).name, "matmul_vec_bias_silu_f32");
        assert_eq!(vec_spec(false, None, true).name, "matmul_vec_f16w_f32");
        assert!(vec_spec(false, None, false).define("AB_ELEM") == Some("vec4<f32>"));
        assert!(vec_spec(false, None, true).define("B_ELEM") == Some("vec4<f16>"));
    }
}
