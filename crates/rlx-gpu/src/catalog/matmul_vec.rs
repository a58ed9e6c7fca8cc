//! The matrix-vector matmul (`matmul_vec.wgsl`) for small M with a transposed B (every linear
//! layer's weight): decode steps and other few-row products, which a 64×64 output tile would
//! mostly leave empty. [`vec_fits`] decides; the params are the other matmuls'.

use super::{MatmulParams, IN2_OUT, IN3_OUT};
use crate::catalog::{size_of, Spec};
use crate::grid;
use crate::GpuError;

const VEC_SRC: &str = concat!(
    include_str!("../../kernels/matmul_vec.wgsl"),
    "\n",
    include_str!("../../kernels/matmul_common.wgsl"),
    "\n",
    include_str!("../../kernels/matmul_epilogue.wgsl")
);

/// Most rows of A (MMAX in the kernel).
pub const VEC_MAX_ROWS: u32 = 8;
/// Output columns per workgroup (COLS in the kernel).
const VEC_COLS: u64 = 4;

/// Whether the single (unbatched) matmul `p` takes the matrix-vector kernel: M ≤
/// [`VEC_MAX_ROWS`] and B stored [N, K] (its K stride 1).
pub fn vec_fits(p: &MatmulParams) -> bool {
    p.batch == 1 && p.m >= 1 && p.m <= VEC_MAX_ROWS && p.n >= 1 && p.b_stride_k == 1
}

/// Workgroup counts of the matrix-vector kernel for `p`.
pub fn vec_grid(p: &MatmulParams) -> Result<[u32; 3], GpuError> {
    grid::linear("matmul_vec", u64::from(p.n).div_ceil(VEC_COLS), 256)
}

type VecDefines = [(&'static str, &'static str); 6];

const fn vec_defines(bias: bool, act: &'static str) -> VecDefines {
    let mut d = super::matmul_defines(bias, act);
    // Operands as vec4 (16-byte loads); bindings come in whole 16-byte units.
    d[5] = ("AB_ELEM", "vec4<f32>");
    d
}

/// [no bias, bias] × [no activation, then `Epilogue::index`].
static VEC_DEFINES: [[VecDefines; 7]; 2] = {
    let mut table = [[vec_defines(false, "ACT_NONE"); 7]; 2];
    let mut i = 0;
    while i < 7 {
        table[0][i] = vec_defines(false, super::ACT_NAMES[i]);
        table[1][i] = vec_defines(true, super::ACT_NAMES[i]);
        i += 1;
    }
    table
};

static VEC_NAMES: [[&str; 7]; 2] = super::epilogue_names!("matmul_vec");

/// The matrix-vector matmul with a bias or not and activation `act` (an `Epilogue::index`).
pub(super) fn vec_spec(bias: bool, act: usize) -> Spec {
    let b = usize::from(bias);
    Spec::wg256(
        (VEC_NAMES[b][act], &VEC_DEFINES[b][act]),
        "kernels/matmul_vec.wgsl",
        VEC_SRC,
        if bias { IN3_OUT } else { IN2_OUT },
        size_of::<MatmulParams>(),
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
        assert_eq!(vec_grid(&params(1, 896, 4864, true)).unwrap(), [224, 1, 1]);
        assert_eq!(vec_spec(true, 4).name, "matmul_vec_bias_silu_f32");
        assert!(vec_spec(false, 0).defines.contains(&("AB_ELEM", "vec4<f32>")));
    }
}
