//! Split-K for matmuls with few output tiles (small M: BERT at batch 1, short prompts, decode;
//! a training step's weight gradients, whose K is every token of the batch): the K dim is cut
//! into `splits` equal slices computed as a batch of partial products into a scratch buffer
//! (any rung, through its batch levels), plus, where the slices do not cover K, one more
//! launch for the rest ([`rest_params`]); then `matmul_splitk.wgsl` adds every part and
//! applies the bias and activation. [`split_count`] decides; [`SplitKParams`] is the second
//! step's.

use super::rung::MIN_WIDE_WORKGROUPS;
use super::{epilogue_defines, epilogue_name, Epilogue, MatmulParams, MatmulRung};
use crate::catalog::{params_of, Spec, IN2_OUT, IN_OUT};
use crate::grid::{self, fits_u32};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

const SPLITK_SRC: &str = kernel_src!("matmul/matmul_splitk.wgsl", "include/matmul_epilogue.wgsl");

/// Slices of K on the cooperative-matrix rungs never shorter than this many elements: shorter
/// ones leave too little work per workgroup to pay for the extra pass.
const MIN_SLICE: u32 = 128;
/// Slices of K on the SIMT rungs (Tiled64, Reg128) never shorter than this many elements, as
/// on the tensor-core rungs. 256 was tried first: on the H200 it halved BERT-base b1's slices
/// (K = 768: 4 → 2, 96 → 48 workgroups) and its f32 forward went 4.67 → 6.87 ms.
const SIMT_MIN_SLICE: u32 = 128;
/// Slices are whole multiples of this (the coop rung's K step, so each slice's loads stay on its
/// 16-byte path and no slice ends in a partial step).
const SLICE_UNIT: u32 = 32;
/// The most equal slices.
const MAX_SPLITS: u32 = 16;

/// Workgroups a split launch on a SIMT rung (Tiled64, Reg128) aims for, and the fewest for
/// which such a launch is not split at all: about four per SM of a 132-SM H100. Those rungs
/// hide memory latency with several resident workgroups per SM, so one wave of about 128
/// leaves them latency-bound: a MiniLM fine-tune step's weight gradients (384×384 and
/// 384×1536 outputs, K = 15 616) ran at 7.5 TFLOP/s on the 64 tile cut into 4 slices (144
/// workgroups). 4 × 132 is a first estimate, still to be measured on the GPU. The
/// cooperative-matrix rungs keep [`MIN_WIDE_WORKGROUPS`] (tuned on the H200).
pub const SIMT_SPLIT_WORKGROUPS: u64 = 512;

/// Params of `matmul_splitk.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SplitKParams {
    /// M·N: elements of one partial product and of C.
    pub mn: u32,
    pub n: u32,
    /// Partial products to add: the equal slices, and the rest's where there is one.
    pub splits: u32,
    pub c_offset: u32,
}

impl SplitKParams {
    /// Params and workgroup counts for adding `parts` partial products of the matmul `p`
    /// ([`split_parts`]).
    pub fn new(p: &MatmulParams, parts: u32) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "matmul_splitk";
        let mn = u64::from(p.m) * u64::from(p.n);
        fits_u32(K, "partial products' element count", mn * u64::from(parts))?;
        let params = SplitKParams { mn: mn as u32, n: p.n, splits: parts, c_offset: p.c_offset };
        Ok((params, grid::linear(K, mn.div_ceil(256), 256)?))
    }
}

/// How a rung splits: the workgroups it aims for, its shortest slice, and whether K may leave
/// a rest past the equal slices.
struct Policy {
    target: u64,
    min_slice: u32,
    ragged: bool,
}

impl Policy {
    /// The cooperative-matrix rungs: 128 workgroups, slices of 128 or more that cut K exactly
    /// (as tuned on the H200). The SIMT rungs: [`SIMT_SPLIT_WORKGROUPS`], slices of 128 or more,
    /// and any K (a rest of fewer than splits·32 runs as its own launch).
    fn of(rung: MatmulRung) -> Self {
        if rung.is_coop() {
            Policy { target: MIN_WIDE_WORKGROUPS, min_slice: MIN_SLICE, ragged: false }
        } else {
            Policy { target: SIMT_SPLIT_WORKGROUPS, min_slice: SIMT_MIN_SLICE, ragged: true }
        }
    }

    /// Whether K may be cut into `s` equal slices (and a rest).
    fn allows(&self, k: u32, s: u32) -> bool {
        let slice = slice_len(k, s);
        slice >= self.min_slice && (self.ragged || slice * s == k)
    }
}

/// Length of each of `splits` equal slices of `k`: the whole `SLICE_UNIT`s of k / splits.
fn slice_len(k: u32, splits: u32) -> u32 {
    k / splits.max(1) / SLICE_UNIT * SLICE_UNIT
}

/// Output tiles of an M×N matmul on `rung`.
fn output_groups(m: u32, n: u32, rung: MatmulRung) -> u64 {
    let t = u64::from(rung.tile());
    u64::from(m).div_ceil(t) * u64::from(n).div_ceil(t)
}

/// [`split_count`] for one M×N×K product.
fn splits_of(m: u32, n: u32, k: u32, rung: MatmulRung) -> Option<u32> {
    if m == 0 || n == 0 {
        return None;
    }
    let policy = Policy::of(rung);
    let groups = output_groups(m, n, rung);
    if groups >= policy.target {
        return None;
    }
    [2u32, 4, 8, MAX_SPLITS]
        .into_iter()
        .find(|&s| policy.allows(k, s) && groups * u64::from(s) >= policy.target)
        .or_else(|| {
            // Not enough tiles even at the most slices: take the most that K allows.
            [MAX_SPLITS, 8, 4, 2].into_iter().find(|&s| policy.allows(k, s))
        })
}

/// How many equal slices of K the single (unbatched) matmul `p` on `rung` is cut into, if any:
/// the fewest (2, 4, 8 or 16) that give the launch the rung's target of workgroups, each slice
/// a whole number of `SLICE_UNIT`s and at least the rung's shortest, or else the most that K
/// allows. `None` when the launch is already big enough or K too short to cut.
///
/// - Cooperative-matrix rungs: [`MIN_WIDE_WORKGROUPS`], slices of at least 128 that cut K
///   exactly (K a multiple of splits·32).
/// - SIMT rungs (Tiled64, Reg128): [`SIMT_SPLIT_WORKGROUPS`], slices of at least 128, any K:
///   the slices are ⌊K / splits / 32⌋·32 long and the rest of K (fewer than splits·32) is one
///   more partial product ([`rest_params`]).
pub fn split_count(p: &MatmulParams, rung: MatmulRung) -> Option<u32> {
    if p.batch != 1 {
        return None;
    }
    splits_of(p.m, p.n, p.k, rung)
}

/// Whether an M×N×K product on `rung` reaches the rung's target of workgroups by being split
/// along K (it has fewer output tiles than the target, and K is long enough to cut into
/// enough slices).
pub(super) fn split_fills(m: u32, n: u32, k: u32, rung: MatmulRung) -> bool {
    splits_of(m, n, k, rung)
        .is_some_and(|s| output_groups(m, n, rung) * u64::from(s) >= Policy::of(rung).target)
}

/// Partial products of `p` cut into `splits` equal slices: one per slice, and one more for the
/// rest of K where the slices do not cover it.
pub fn split_parts(p: &MatmulParams, splits: u32) -> u32 {
    splits + u32::from(slice_len(p.k, splits) * splits < p.k)
}

/// The first step's params: `p` as a batch of `splits` products, batch s reading K slice s of
/// A and B and writing partial product s (contiguous `[splits][M][N]` from offset 0).
pub fn partial_params(p: &MatmulParams, splits: u32) -> MatmulParams {
    let slice = slice_len(p.k, splits);
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

/// The rest's params, where `splits` equal slices do not cover K: one product over the K past
/// them (fewer than splits·32 elements) into partial product `splits`, after the slices'.
/// `None` when the slices cover K.
pub fn rest_params(p: &MatmulParams, splits: u32) -> Result<Option<MatmulParams>, GpuError> {
    const K: &str = "matmul_splitk";
    let done = slice_len(p.k, splits) * splits;
    if done >= p.k {
        return Ok(None);
    }
    let skip = |offset: u32, stride: u32| u64::from(offset) + u64::from(done) * u64::from(stride);
    let a_offset = fits_u32(K, "offset of the rest of K in a", skip(p.a_offset, p.a_stride_k))?;
    let b_offset = fits_u32(K, "offset of the rest of K in b", skip(p.b_offset, p.b_stride_k))?;
    let mn = u64::from(p.m) * u64::from(p.n);
    let c_offset = fits_u32(K, "offset of the rest's partial product", mn * u64::from(splits))?;
    Ok(Some(MatmulParams {
        k: p.k - done,
        batch: 1,
        batch_inner: 1,
        a_batch_outer: 0,
        a_batch_inner: 0,
        b_batch_outer: 0,
        b_batch_inner: 0,
        a_offset,
        b_offset,
        c_offset,
        ..*p
    }))
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

    /// dW = Xᵀ·dY of a MiniLM fine-tune step: X [K, M] (transposed A), dY [K, N].
    fn grad_params(m: u32, n: u32, k: u32) -> MatmulParams {
        let (p, _, _) =
            MatmulParams::from_shapes(&[k as usize, m as usize], &[k as usize, n as usize], true, false)
                .unwrap();
        p
    }

    #[test]
    fn simt_rungs_split_to_512_workgroups_with_slices_of_128() {
        use MatmulRung::{Reg128, Tiled64};
        // K = 15 616 = 128 × 122 tokens = 32 · 488: 16 slices would need 32 · 16 | K.
        let k = 15_616;
        for (m, n, rung, splits, groups) in [
            // 36 tiles of 64: 16 slices of 960 (576 workgroups) and a rest of 256.
            (384, 384, Tiled64, 16, 576),
            // 144 tiles of 64: 4 slices of 3904 (576), no rest.
            (384, 1536, Tiled64, 4, 576),
            (1536, 384, Tiled64, 4, 576),
            // 36 tiles of 128: 16 slices (576); 9 tiles: the most K allows, 16 (144).
            (384, 1536, Reg128, 16, 576),
            (384, 384, Reg128, 16, 144),
            // 144 tiles of 128: past the coop rungs' 128, short of 512: 4 slices (576).
            (1536, 1536, Reg128, 4, 576),
        ] {
            let p = grad_params(m, n, k);
            assert_eq!(split_count(&p, rung), Some(splits), "{m}x{n} {rung:?}");
            let q = partial_params(&p, splits);
            assert_eq!(u64::from(q.k) * u64::from(splits) + u64::from(p.k % (32 * splits)), 15_616);
            assert_eq!(output_groups(m, n, rung) * u64::from(splits), groups, "{m}x{n} {rung:?}");
        }
        // Enough tiles already, K too short for two slices of 128, or a batch: not split.
        assert_eq!(split_count(&grad_params(3072, 3072, k), Tiled64), None);
        assert_eq!(split_count(&grad_params(3072, 3072, k), Reg128), None);
        assert_eq!(split_count(&grad_params(1536, 3072, k), Reg128), Some(2));
        assert_eq!(split_count(&params(9, 100, 255), Tiled64), None);
        assert_eq!(split_count(&params(9, 100, 256), Tiled64), Some(2));
        let (batched, _, _) = MatmulParams::from_shapes(&[2, 9, 4096], &[2, 4096, 9], false, false).unwrap();
        assert_eq!(split_count(&batched, Tiled64), None);
        // BERT-base at batch 1: as many slices of 128 or more as K allows (4 at K = 768: 96
        // workgroups, which ran 4.67 ms for the f32 forward on the H200 where 2 ran 6.87).
        assert_eq!(split_count(&params(128, 768, 768), Tiled64), Some(4));
        assert_eq!(split_count(&params(128, 768, 3072), Tiled64), Some(16));
        assert_eq!(split_count(&params(1, 896, 4864), Reg128), Some(16));
    }

    #[test]
    fn a_ragged_k_runs_its_rest_as_one_more_partial_product() {
        // K = 4160 on 4 tiles of 64: 16 slices of 256 (4096) and a rest of 64.
        let p = params(128, 128, 4160);
        assert_eq!(split_count(&p, MatmulRung::Tiled64), Some(16));
        assert_eq!(split_parts(&p, 16), 17);
        let q = partial_params(&p, 16);
        assert_eq!((q.k, q.batch, q.a_batch_inner, q.b_batch_inner), (256, 16, 256, 256));
        let r = rest_params(&p, 16).unwrap().unwrap();
        assert_eq!((r.k, r.batch, r.batch_inner), (64, 1, 1));
        // A [M, K] and B [N, K]: the rest starts 4096 elements into every row.
        assert_eq!((r.a_offset, r.b_offset, r.c_offset), (4096, 4096, 16 * 128 * 128));
        assert_eq!((r.a_batch_inner, r.b_batch_inner, r.a_stride_m), (0, 0, 4160));
        let (sum, _) = SplitKParams::new(&p, split_parts(&p, 16)).unwrap();
        assert_eq!(sum.splits, 17);

        // A transposed-A weight gradient: X [3000, 64], dY [3000, 256]; 16 slices of 160 and a
        // rest of 440, which starts 2560 rows (of 64 and 256 elements) into X and dY.
        let p = grad_params(64, 256, 3000);
        assert_eq!(split_count(&p, MatmulRung::Tiled64), Some(16));
        assert_eq!(split_count(&p, MatmulRung::Reg128), Some(16));
        let q = partial_params(&p, 16);
        assert_eq!((q.k, q.a_batch_inner, q.b_batch_inner), (160, 160 * 64, 160 * 256));
        let r = rest_params(&p, 16).unwrap().unwrap();
        assert_eq!((r.k, r.a_offset, r.b_offset, r.c_offset), (440, 2560 * 64, 2560 * 256, 16 * 64 * 256));

        // K that the slices cover: no rest.
        let p = grad_params(384, 1536, 15_616);
        assert_eq!((split_parts(&p, 4), rest_params(&p, 4).unwrap()), (4, None));
        // The cooperative-matrix rungs never cut K raggedly (as tuned on the H200).
        assert_eq!(split_count(&params(128, 128, 4160), MatmulRung::Coop64), Some(2));
        assert_eq!(split_count(&grad_params(64, 256, 3000), MatmulRung::Coop64), None);
    }

    #[test]
    fn only_a_long_k_split_fills_the_card() {
        assert!(split_fills(384, 1536, 15_616, MatmulRung::Reg128));
        assert!(!split_fills(384, 384, 15_616, MatmulRung::Reg128));
        assert!(split_fills(384, 384, 15_616, MatmulRung::Tiled64));
        assert!(!split_fills(384, 1536, 768, MatmulRung::Reg128));
        assert!(!split_fills(4096, 4096, 4096, MatmulRung::Reg128));
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
