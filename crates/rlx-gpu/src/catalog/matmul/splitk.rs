//! Split-K for matmuls with few output tiles (small M: BERT at batch 1, short prompts, decode):
//! the K dim is cut into `splits` slices computed as a batch of partial products into a scratch
//! buffer (any rung, through its batch levels), then `matmul_splitk.wgsl` adds them and applies
//! the bias and activation. [`split_count`] decides; [`SplitKParams`] is the second step's.

use super::rung::MIN_WIDE_WORKGROUPS;
use super::{epilogue_defines, epilogue_name, Epilogue, MatmulParams, MatmulRung};
use crate::catalog::{params_of, Spec, IN2_OUT, IN_OUT};
use crate::grid::{self, fits_u32};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

const SPLITK_SRC: &str = kernel_src!("matmul/matmul_splitk.wgsl", "include/matmul_epilogue.wgsl");

/// Slices of K never shorter than this many elements: shorter ones leave too little work per
/// workgroup to pay for the extra pass.
const MIN_SLICE: u32 = 128;
/// Slices are whole multiples of this (the coop rung's K step, so each slice's loads stay on its
/// 16-byte path and no slice ends in a partial step).
const SLICE_UNIT: u32 = 32;
/// The most slices.
const MAX_SPLITS: u32 = 16;

/// Params of `matmul_splitk.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SplitKParams {
    /// M·N: elements of one partial product and of C.
    pub mn: u32,
    pub n: u32,
    pub splits: u32,
    pub c_offset: u32,
}

impl SplitKParams {
    /// Params and workgroup counts for adding `splits` partial products of the matmul `p`.
    pub fn new(p: &MatmulParams, splits: u32) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "matmul_splitk";
        let mn = u64::from(p.m) * u64::from(p.n);
        fits_u32(K, "partial products' element count", mn * u64::from(splits))?;
        let params = SplitKParams { mn: mn as u32, n: p.n, splits, c_offset: p.c_offset };
        Ok((params, grid::linear(K, mn.div_ceil(256), 256)?))
    }
}

/// How many slices of K the single (unbatched) matmul `p` on `rung` is cut into, if any: the
/// fewest (2, 4, 8 or 16) that give the launch [`MIN_WIDE_WORKGROUPS`] workgroups, each slice a
/// whole number of `SLICE_UNIT`s and at least `MIN_SLICE` long. `None` when the launch is
/// already big enough or K too short to cut.
pub fn split_count(p: &MatmulParams, rung: MatmulRung) -> Option<u32> {
    if p.batch != 1 || p.m == 0 || p.n == 0 {
        return None;
    }
    let t = u64::from(rung.tile());
    let groups = u64::from(p.m).div_ceil(t) * u64::from(p.n).div_ceil(t);
    if groups >= MIN_WIDE_WORKGROUPS {
        return None;
    }
    [2u32, 4, 8, MAX_SPLITS]
        .into_iter()
        .find(|&s| {
            let slice = p.k / s;
            p.k.is_multiple_of(s * SLICE_UNIT)
                && slice >= MIN_SLICE
                && groups * u64::from(s) >= MIN_WIDE_WORKGROUPS
        })
        .or_else(|| {
            // Not enough tiles even at the most slices: take the most that K allows.
            [MAX_SPLITS, 8, 4, 2]
                .into_iter()
                .find(|&s| p.k.is_multiple_of(s * SLICE_UNIT) && p.k / s >= MIN_SLICE)
        })
}

/// The first step's params: `p` as a batch of `splits` products, batch s reading K slice s of
/// A and B and writing partial product s (contiguous `[splits][M][N]` from offset 0).
pub fn partial_params(p: &MatmulParams, splits: u32) -> MatmulParams {
    let slice = p.k / splits;
    MatmulParams {
        k: slice,
        batch: splits,
        batch_inner: splits,
        a_batch_outer: 0,
        b_batch_outer: 0,
        a_batch_inner: slice * p.a_stride_k,
        b_batch_inner: slice * p.b_stride_k,
        c_offset: 0,
        ..*p
    }
}

/// The split-K reduction with a bias or not and activation `act` (the parts bound at 0, the
/// bias at 1).
pub(super) fn splitk_spec(bias: bool, act: Option<Epilogue>) -> Spec {
    Spec::wg256(
        (epilogue_name("matmul_splitk", bias, act), epilogue_defines(bias, act, 1)),
        "kernels/matmul/matmul_splitk.wgsl",
        SPLITK_SRC,
        if bias { IN2_OUT } else { IN_OUT },
        params_of::<SplitKParams>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(m: u32, n: u32, k: u32) -> MatmulParams {
        let (p, _, _) =
            MatmulParams::from_shapes(&[m as usize, k as usize], &[n as usize, k as usize], false, true)
                .unwrap();
        p
    }

    #[test]
    fn small_outputs_with_long_k_are_split() {
        // BERT-base at batch 1: 128 × 768 outputs are 2 × 12 tiles of 64; 8 slices of 768
        // would be shorter than 128, so 4 (96 workgroups).
        assert_eq!(split_count(&params(128, 768, 768), MatmulRung::Coop64), Some(4));
        assert_eq!(split_count(&params(128, 768, 3072), MatmulRung::Coop64), Some(8));
        // A decode step: one row, 14 tiles; 16 slices of 4864 are not whole 32s, so 8.
        assert_eq!(split_count(&params(1, 896, 4864), MatmulRung::Coop64), Some(8));
        // Enough tiles already, or K too short or not a whole number of 32s per slice.
        assert_eq!(split_count(&params(4096, 4096, 4096), MatmulRung::Coop128), None);
        assert_eq!(split_count(&params(128, 768, 200), MatmulRung::Coop64), None);
        assert_eq!(split_count(&params(128, 768, 250), MatmulRung::Coop64), None);
    }

    #[test]
    fn partial_products_walk_k_through_the_batch() {
        let p = params(128, 768, 3072);
        let q = partial_params(&p, 8);
        assert_eq!((q.k, q.batch, q.batch_inner), (384, 8, 8));
        // A [M, K]: slice s starts s·384 elements into each row; B [N, K] the same.
        assert_eq!((q.a_batch_inner, q.b_batch_inner), (384, 384));
        assert_eq!((q.a_stride_m, q.b_stride_n, q.c_offset), (3072, 3072, 0));
        let (r, grid) = SplitKParams::new(&p, 8).unwrap();
        assert_eq!((r.mn, r.n, r.splits), (128 * 768, 768, 8));
        assert_eq!(grid, [384, 1, 1]);
    }

    #[test]
    fn variants_are_named_for_their_epilogue() {
        assert_eq!(splitk_spec(true, Some(Epilogue::Gelu)).name, "matmul_splitk_bias_gelu_f32");
        assert_eq!(splitk_spec(false, None).bindings.len(), 2);
        assert_eq!(splitk_spec(true, None).bindings.len(), 3);
    }
}
