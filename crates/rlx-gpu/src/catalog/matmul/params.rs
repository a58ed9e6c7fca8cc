//! Params of the tiled matmul (`matmul_tiled.wgsl`, plain and with the matmul family's fused
//! epilogues), byte-identical to the WGSL struct. Its constructors check everything the
//! kernel's u32 index arithmetic and the dispatch limits need, and return the workgroup counts.

use crate::grid::{fits_u32, numel, shapes_text, MAX_GROUPS_PER_DIM};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

/// Params of `matmul_tiled.wgsl`. See that file for the addressing.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct MatmulParams {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// Number of (M, N) output matrices: the workgroup count in z.
    pub batch: u32,
    /// Size of the inner batch level; the outer level is batch / batch_inner.
    pub batch_inner: u32,
    pub a_stride_m: u32,
    pub a_stride_k: u32,
    pub b_stride_k: u32,
    pub b_stride_n: u32,
    pub a_batch_outer: u32,
    pub a_batch_inner: u32,
    pub b_batch_outer: u32,
    pub b_batch_inner: u32,
    /// Element offsets added to every address of a, b and c (0 from [`Self::from_shapes`];
    /// see `catalog::matmul::matmul_launches`, which splits batches that need more levels).
    pub a_offset: u32,
    pub b_offset: u32,
    pub c_offset: u32,
}

/// Output tile of one matmul workgroup (must match BM and BN in the WGSL).
pub const MATMUL_TILE: u32 = 64;

impl MatmulParams {
    /// Params for contiguous row-major `a` [..., M, K] (or [..., K, M] when `transpose_a`) and
    /// `b` [..., K, N] (or [..., N, K] when `transpose_b`), batch dims broadcast numpy-style.
    /// Returns the params, the output shape [batch..., M, N] and the workgroup counts.
    ///
    /// The kernel addresses the batch with two levels, so the broadcast batch dims must form at
    /// most two runs in which each operand either has every dim or broadcasts every dim
    /// ([B, H] · [B, H], [B, H] · [1, H] and [B, H] · [B, 1] all qualify; [2, 1, 3] · [1, 4, 3]
    /// does not, and the lowering must expand an operand first).
    pub fn from_shapes(
        a: &[usize],
        b: &[usize],
        transpose_a: bool,
        transpose_b: bool,
    ) -> Result<(Self, Vec<usize>, [u32; 3]), GpuError> {
        let (p, out, grid) = Self::from_shapes_any_batch(a, b, transpose_a, transpose_b)?;
        if p.batch > MAX_GROUPS_PER_DIM {
            return Err(GpuError::TooLarge {
                kernel: "matmul_tiled",
                what: "batch count",
                value: p.batch as u64,
                limit: MAX_GROUPS_PER_DIM as u64,
            });
        }
        Ok((p, out, grid))
    }

    /// [`Self::from_shapes`] without the one-launch batch limit: the grid's z may exceed
    /// [`MAX_GROUPS_PER_DIM`], and the caller splits it (`catalog::matmul::matmul_launches`).
    pub(crate) fn from_shapes_any_batch(
        a: &[usize],
        b: &[usize],
        transpose_a: bool,
        transpose_b: bool,
    ) -> Result<(Self, Vec<usize>, [u32; 3]), GpuError> {
        const K: &str = "matmul_tiled";
        let shape_err = |reason: String| GpuError::Shape { kernel: K, shapes: shapes_text(&[a, b]), reason };
        let (Some((&a1, a_rest)), Some((&b1, b_rest))) = (a.split_last(), b.split_last()) else {
            return Err(shape_err("both operands need rank 2 or more".into()));
        };
        let (Some((&a0, a_batch)), Some((&b0, b_batch))) = (a_rest.split_last(), b_rest.split_last()) else {
            return Err(shape_err("both operands need rank 2 or more".into()));
        };
        let (m, ka) = if transpose_a { (a1, a0) } else { (a0, a1) };
        let (kb, n) = if transpose_b { (b1, b0) } else { (b0, b1) };
        if ka != kb {
            return Err(shape_err(format!("inner dims differ: {ka} vs {kb}")));
        }
        let k = ka;
        for (what, v) in [("M", m), ("N", n), ("K", k)] {
            fits_u32(K, what, v as u64)?;
        }

        // Broadcast batch dims, right-aligned.
        let nb = a_batch.len().max(b_batch.len());
        let pad = |x: &[usize], d: usize| if d + x.len() >= nb { x[d + x.len() - nb] } else { 1 };
        let mut out_batch = Vec::with_capacity(nb);
        for d in 0..nb {
            let (da, db) = (pad(a_batch, d), pad(b_batch, d));
            if da != db && da != 1 && db != 1 {
                return Err(shape_err(format!("batch dim {d}: {da} vs {db} do not broadcast")));
            }
            out_batch.push(da.max(db));
        }

        // Element counts first: every product below is then bounded by one of them.
        numel(K, "operand a element count", a)?;
        numel(K, "operand b element count", b)?;
        let mut out_shape = out_batch.clone();
        out_shape.extend([m, n]);
        numel(K, "output element count", &out_shape)?;

        // Element stride of each batch dim in each operand (contiguous layout).
        let (a_mat, b_mat) = ((m as u64).saturating_mul(k as u64), (k as u64).saturating_mul(n as u64));
        let mut a_stride = vec![0u64; nb];
        let mut b_stride = vec![0u64; nb];
        let (mut sa, mut sb) = (a_mat, b_mat);
        for d in (0..nb).rev() {
            a_stride[d] = sa;
            b_stride[d] = sb;
            // Saturating: an operand with a zero dim has unbounded strides but is never read.
            sa = sa.saturating_mul(pad(a_batch, d) as u64);
            sb = sb.saturating_mul(pad(b_batch, d) as u64);
        }

        // Runs of dims (size > 1) where each operand has all or none of them.
        // Each run: (count, a stride or 0, b stride or 0, pattern).
        let mut runs: Vec<(u64, u64, u64, (bool, bool))> = Vec::new();
        for d in 0..nb {
            if out_batch[d] == 1 {
                continue;
            }
            let pattern = (pad(a_batch, d) != 1, pad(b_batch, d) != 1);
            let sa = if pattern.0 { a_stride[d] } else { 0 };
            let sb = if pattern.1 { b_stride[d] } else { 0 };
            match runs.last_mut() {
                // Merging keeps the innermost dim's stride: the run is contiguous in its operands.
                Some(run) if run.3 == pattern => {
                    *run = (run.0.saturating_mul(out_batch[d] as u64), sa, sb, pattern)
                }
                _ => runs.push((out_batch[d] as u64, sa, sb, pattern)),
            }
        }
        let ((outer, a_out, b_out), (inner, a_in, b_in)) = match runs.as_slice() {
            [] => ((1, 0, 0), (1, 0, 0)),
            [r] => ((1, 0, 0), (r.0, r.1, r.2)),
            [o, i] => ((o.0, o.1, o.2), (i.0, i.1, i.2)),
            _ => {
                return Err(shape_err(format!(
                    "batch dims {out_batch:?} alternate between broadcast and present more than twice"
                )))
            }
        };
        let batch = outer.saturating_mul(inner);
        if batch == 0 || m == 0 || n == 0 {
            // Empty output: nothing to launch. batch_inner stays 1 so the params stay well-formed.
            let p =
                MatmulParams { m: m as u32, n: n as u32, k: k as u32, batch_inner: 1, ..Zeroable::zeroed() };
            return Ok((p, out_shape, [0, 1, 1]));
        }
        let batch = fits_u32(K, "batch count", batch)?;
        let gx = (n as u64).div_ceil(MATMUL_TILE as u64);
        let gy = (m as u64).div_ceil(MATMUL_TILE as u64);
        for (what, v) in [("column tile count", gx), ("row tile count", gy)] {
            if v > MAX_GROUPS_PER_DIM as u64 {
                return Err(GpuError::TooLarge {
                    kernel: K,
                    what,
                    value: v,
                    limit: MAX_GROUPS_PER_DIM as u64,
                });
            }
        }
        // Every value below is bounded by an element count checked to fit u32 above.
        let (m32, n32, k32) = (m as u32, n as u32, k as u32);
        let p = MatmulParams {
            m: m32,
            n: n32,
            k: k32,
            batch,
            batch_inner: inner as u32,
            a_stride_m: if transpose_a { 1 } else { k32 },
            a_stride_k: if transpose_a { m32 } else { 1 },
            b_stride_k: if transpose_b { 1 } else { n32 },
            b_stride_n: if transpose_b { k32 } else { 1 },
            a_batch_outer: a_out as u32,
            a_batch_inner: a_in as u32,
            b_batch_outer: b_out as u32,
            b_batch_inner: b_in as u32,
            a_offset: 0,
            b_offset: 0,
            c_offset: 0,
        };
        Ok((p, out_shape, [gx as u32, gy as u32, batch]))
    }
}
