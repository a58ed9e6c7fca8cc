//! Params structs of the nn family, byte-identical to the WGSL structs of the same name, and
//! the matmul launch planner. Constructors check what the kernels' u32 index arithmetic and the
//! dispatch limits need and return the workgroup counts.

use super::AttnBlock;
use super::MatmulParams;
use crate::grid::{self, numel, MAX_GROUPS_PER_DIM};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_ir::{AttentionSpec, AttnLayout, DType, MaskKind, RopeStyle};

/// Threads per workgroup of the row and elementwise kernels.
const WG_1D: u32 = 256;
/// Query rows per attention workgroup (BQ in `attention.wgsl`).
const ATTN_BQ: usize = 16;
/// Most launches one matmul may split into (see [`matmul_launches`]).
const MAX_MATMUL_LAUNCHES: usize = 4096;

fn shape_err(kernel: &'static str, shapes: &[&[usize]], reason: impl Into<String>) -> GpuError {
    let shapes = shapes.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(" and ");
    GpuError::Shape { kernel, shapes, reason: reason.into() }
}

fn per_dim(kernel: &'static str, what: &'static str, n: usize) -> Result<u32, GpuError> {
    if n > MAX_GROUPS_PER_DIM as usize {
        return Err(GpuError::TooLarge { kernel, what, value: n as u64, limit: MAX_GROUPS_PER_DIM as u64 });
    }
    Ok(n as u32)
}

/// Params of `softmax_row.wgsl`: softmax over each of `rows` contiguous rows of `cols`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SoftmaxParams {
    pub rows: u32,
    pub cols: u32,
    pub _pad: [u32; 2],
}

impl SoftmaxParams {
    pub fn new(rows: usize, cols: usize) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "softmax_row";
        numel(K, "element count", &[rows, cols])?;
        let p = SoftmaxParams { rows: rows as u32, cols: cols as u32, _pad: [0; 2] };
        // One workgroup per row; the 2-D grid never launches more than rows + 65 534 groups.
        Ok((p, grid::linear(K, rows as u64, 1)?))
    }
}

/// Params of `norm_row.wgsl`: a norm over each of `rows` contiguous rows of `cols`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct NormParams {
    pub rows: u32,
    pub cols: u32,
    pub eps: f32,
    pub _pad: u32,
}

impl NormParams {
    pub fn new(rows: usize, cols: usize, eps: f32) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "norm_row";
        numel(K, "element count", &[rows, cols])?;
        let p = NormParams { rows: rows as u32, cols: cols as u32, eps, _pad: 0 };
        // One workgroup per row.
        Ok((p, grid::linear(K, rows as u64, 1)?))
    }
}

/// Params of `rope.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct RopeParams {
    pub numel: u32,
    pub d: u32,
    pub rot: u32,
    pub s: u32,
    pub h: u32,
    /// 1 for [B, H, S, D], 0 for [B, S, H, D].
    pub bhsd: u32,
    /// 1 for GPT-J, 0 for NeoX.
    pub gptj: u32,
    pub _pad: u32,
}

impl RopeParams {
    /// Params for x of shape `x` (rank 4 per `layout`) rotating its first `rotary_dims` dims.
    pub fn new(
        style: RopeStyle,
        layout: AttnLayout,
        rotary_dims: usize,
        x: &[usize],
    ) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "rope";
        let &[_, d1, d2, d] = x else {
            return Err(shape_err(K, &[x], "x must be rank 4"));
        };
        let (s, h) = match layout {
            AttnLayout::Bshd => (d1, d2),
            AttnLayout::Bhsd => (d2, d1),
        };
        if !rotary_dims.is_multiple_of(2) || rotary_dims > d {
            return Err(shape_err(K, &[x], format!("rotary dims {rotary_dims} must be even and ≤ {d}")));
        }
        let n = numel(K, "element count", x)?;
        numel(K, "cos/sin element count", &[s, rotary_dims / 2])?;
        let p = RopeParams {
            numel: n,
            d: d as u32,
            rot: rotary_dims as u32,
            s: s as u32,
            h: h as u32,
            bhsd: matches!(layout, AttnLayout::Bhsd) as u32,
            gptj: matches!(style, RopeStyle::GptJ) as u32,
            _pad: 0,
        };
        let groups = (n as u64).div_ceil(WG_1D as u64);
        Ok((p, grid::linear(K, groups, WG_1D)?))
    }
}

/// Params of `attention.wgsl` (see that file for the addressing).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct AttentionParams {
    pub sq: u32,
    pub sk: u32,
    pub hq: u32,
    /// Query heads per kv head.
    pub group: u32,
    pub d: u32,
    pub dv: u32,
    /// 0 none, 1 causal, 2 sliding window, 3 padding, 4 bias.
    pub mask_kind: u32,
    pub window: u32,
    /// Element strides (batch, seq, head) of q, k, v and out.
    pub q_strides: [u32; 3],
    pub k_strides: [u32; 3],
    pub v_strides: [u32; 3],
    pub o_strides: [u32; 3],
    /// Element strides of the mask over (batch, head, query, key); 0 on broadcast dims.
    pub m_strides: [u32; 4],
    pub scale: f32,
    /// 0 = no soft-cap.
    pub softcap: f32,
    /// 1 when the padding mask holds f32 words (nonzero-tested as floats).
    pub mask_float: u32,
    /// First (batch, head) pair of this launch (see [`attention_launches`]).
    pub bh_offset: u32,
    /// 1 when binding 5 holds each batch's valid key count ([`AttentionSpec::kv_lengths`]).
    pub has_lens: u32,
    /// Pads the struct to 128 bytes (push-constant blocks come in 16-byte units).
    pub pad: [u32; 3],
}

/// (batch, seq, head) element strides of a contiguous rank-4 operand with head dim `d`.
fn attn_strides(layout: AttnLayout, s: usize, h: usize, d: usize) -> [u32; 3] {
    // Bounded by the operand's element count, checked to fit u32 before this is called.
    let (s, h, d) = (s as u32, h as u32, d as u32);
    match layout {
        AttnLayout::Bshd => [s * h * d, h * d, d],
        AttnLayout::Bhsd => [s * h * d, d, s * d],
    }
}

impl AttentionParams {
    /// Params for q, k, v of shapes `q`, `k`, `v` (rank 4 per `spec.layout`) and the mask
    /// operand's shape and dtype when the mask kind has one, on a device with `shared_bytes` of
    /// workgroup memory. Returns the params, the variant's column block and the workgroup
    /// counts.
    pub fn new(
        spec: &AttentionSpec,
        q: &[usize],
        k: &[usize],
        v: &[usize],
        mask: Option<(&[usize], DType)>,
        shared_bytes: u32,
    ) -> Result<(Self, AttnBlock, [u32; 3]), GpuError> {
        const K: &str = "attention";
        let bad = |reason: String| shape_err(K, &[q, k, v], reason);
        let view = |x: &[usize]| match (x, spec.layout) {
            (&[b, s, h, d], AttnLayout::Bshd) | (&[b, h, s, d], AttnLayout::Bhsd) => Some((b, s, h, d)),
            _ => None,
        };
        let (Some((b, sq, hq, d)), Some((bk, sk, hkv, dk)), Some((bv, sv, hv, dv))) =
            (view(q), view(k), view(v))
        else {
            return Err(bad("q, k and v must be rank 4".into()));
        };
        if bk != b || bv != b || sv != sk || hv != hkv || dk != d || hkv == 0 || hq % hkv != 0 {
            return Err(bad("q, k and v do not fit together".into()));
        }
        let causal = matches!(spec.mask, MaskKind::Causal | MaskKind::SlidingWindow(_));
        if causal && sk < sq {
            return Err(bad(format!("a causal mask needs Sk ≥ Sq, got {sk} < {sq}")));
        }
        for (what, x) in [("q element count", q), ("k element count", k), ("v element count", v)] {
            numel(K, what, x)?;
        }
        let out = match spec.layout {
            AttnLayout::Bshd => [b, sq, hq, dv],
            AttnLayout::Bhsd => [b, hq, sq, dv],
        };
        numel(K, "output element count", &out)?;

        let (mask_kind, window) = match spec.mask {
            MaskKind::None => (0, 0),
            MaskKind::Causal => (1, 0),
            MaskKind::SlidingWindow(w) => (2, w.min(u32::MAX as usize) as u32),
            MaskKind::Padding => (3, 0),
            MaskKind::Bias => (4, 0),
        };
        let mut m_strides = [0u32; 4];
        let mut mask_float = 0;
        match (spec.mask, mask) {
            (MaskKind::Padding, Some((m, dtype))) => {
                if m != [b, sk] {
                    return Err(bad(format!("padding mask {m:?} is not [B, Sk] = [{b}, {sk}]")));
                }
                numel(K, "mask element count", m)?;
                m_strides = [sk as u32, 0, 0, 1];
                mask_float = u32::from(dtype == DType::F32);
            }
            (MaskKind::Bias, Some((m, _))) => {
                let full = [b, hq, sq, sk];
                if m.len() > 4 {
                    return Err(bad(format!("bias {m:?} has rank above 4")));
                }
                numel(K, "bias element count", m)?;
                let lead = 4 - m.len();
                let mut stride = 1u64;
                for d in (0..4).rev() {
                    let md = if d >= lead { m[d - lead] } else { 1 };
                    if md == full[d] && md != 1 {
                        m_strides[d] = stride as u32;
                    } else if md != 1 {
                        return Err(bad(format!("bias {m:?} does not broadcast to {full:?}")));
                    }
                    stride *= md as u64;
                }
            }
            (MaskKind::Padding | MaskKind::Bias, None) => {
                return Err(bad(format!("mask {:?} needs its mask operand", spec.mask)));
            }
            _ => {}
        }

        let smallest = AttnBlock::D64.shared_bytes();
        let block = AttnBlock::fitting(dv, shared_bytes).ok_or(GpuError::TooLarge {
            kernel: K,
            what: "workgroup memory bytes",
            value: smallest as u64,
            limit: shared_bytes as u64,
        })?;
        let gx = per_dim(K, "query block count", sq.div_ceil(ATTN_BQ))?;
        // May exceed one grid dimension: `attention_launches` splits it.
        let gy = crate::grid::fits_u32(K, "batch × head count", b.saturating_mul(hq) as u64)?;
        let gz = per_dim(K, "value column block count", dv.div_ceil(block.columns()))?;
        let scale = spec.scale.unwrap_or_else(|| (1.0 / (d as f64).sqrt()) as f32);
        let p = AttentionParams {
            sq: sq as u32,
            sk: sk as u32,
            hq: hq as u32,
            group: (hq / hkv) as u32,
            d: d as u32,
            dv: dv as u32,
            mask_kind,
            window,
            q_strides: attn_strides(spec.layout, sq, hq, d),
            k_strides: attn_strides(spec.layout, sk, hkv, d),
            v_strides: attn_strides(spec.layout, sk, hkv, dv),
            o_strides: attn_strides(spec.layout, sq, hq, dv),
            m_strides,
            scale,
            softcap: spec.softcap.unwrap_or(0.0),
            mask_float,
            bh_offset: 0,
            has_lens: u32::from(spec.kv_lengths),
            pad: [0; 3],
        };
        Ok((p, block, [gx, gy, gz]))
    }
}

/// Splits an attention launch whose (batch, head) count (grid y) is past the per-dimension
/// workgroup limit into launches of at most that many pairs, each starting at its `bh_offset`.
pub fn attention_launches(p: AttentionParams, grid: [u32; 3]) -> Vec<(AttentionParams, [u32; 3])> {
    let max = MAX_GROUPS_PER_DIM;
    (0..grid[1])
        .step_by(max as usize)
        .map(|start| {
            let mut q = p;
            q.bh_offset = p.bh_offset + start;
            (q, [grid[0], max.min(grid[1] - start), grid[2]])
        })
        .collect()
}

/// One launch of the tiled matmul: its params and workgroup counts.
pub type MatmulLaunch = (MatmulParams, [u32; 3]);

/// Launches of the tiled matmul that compute a · b for contiguous `a`, `b` (transposes as in
/// [`MatmulParams::from_shapes`]) with any numpy batch broadcast, and the output shape.
///
/// One launch when the kernel's two batch levels can address the broadcast; otherwise the
/// leading batch dims that break it are walked here, one launch per index, each shifting its
/// addresses by element offsets (so no operand is ever expanded in memory).
pub fn matmul_launches(
    a: &[usize],
    b: &[usize],
    transpose_a: bool,
    transpose_b: bool,
) -> Result<(Vec<MatmulLaunch>, Vec<usize>), GpuError> {
    const K: &str = "matmul_tiled";
    let first = MatmulParams::from_shapes_any_batch(a, b, transpose_a, transpose_b);
    if !matches!(first, Err(GpuError::Shape { .. })) || a.len() < 2 || b.len() < 2 {
        return first.and_then(|(p, out, grid)| Ok((split_batches(p, grid)?, out)));
    }
    // Rank-align both operands with leading 1s (free for contiguous data).
    let rank = a.len().max(b.len());
    let pad = |x: &[usize]| {
        let mut v = vec![1; rank - x.len()];
        v.extend_from_slice(x);
        v
    };
    let (ap, bp) = (pad(a), pad(b));
    for what in [&ap, &bp] {
        numel(K, "operand element count", what)?;
    }
    let nb = rank - 2;
    if (0..nb).any(|d| ap[d] != bp[d] && ap[d] != 1 && bp[d] != 1) {
        return first.and_then(|(p, out, grid)| Ok((split_batches(p, grid)?, out)));
    }
    for prefix in 1..=nb {
        let Ok((sub, sub_out, grid)) =
            MatmulParams::from_shapes_any_batch(&ap[prefix..], &bp[prefix..], transpose_a, transpose_b)
        else {
            continue;
        };
        let lead: Vec<usize> = (0..prefix).map(|d| ap[d].max(bp[d])).collect();
        let mut out = lead.clone();
        out.extend_from_slice(&sub_out);
        numel(K, "output element count", &out)?;
        let count: usize = lead.iter().product();
        if count > MAX_MATMUL_LAUNCHES {
            return Err(GpuError::TooLarge {
                kernel: K,
                what: "launches for this batch broadcast",
                value: count as u64,
                limit: MAX_MATMUL_LAUNCHES as u64,
            });
        }
        // Element strides of the leading dims in a, b and the output (all fit u32: checked).
        let suffix = |x: &[usize]| x[prefix..].iter().product::<usize>();
        let (mut sa, mut sb, mut so) = (suffix(&ap), suffix(&bp), suffix(&out));
        let mut strides = vec![(0usize, 0usize, 0usize); prefix];
        for d in (0..prefix).rev() {
            strides[d] = (if ap[d] == 1 { 0 } else { sa }, if bp[d] == 1 { 0 } else { sb }, so);
            (sa, sb, so) = (sa * ap[d], sb * bp[d], so * lead[d]);
        }
        let mut launches = Vec::with_capacity(count);
        for idx in 0..count {
            let (mut rem, mut p) = (idx, sub);
            let (mut ao, mut bo, mut co) = (0, 0, 0);
            for d in (0..prefix).rev() {
                let i = rem % lead[d];
                rem /= lead[d];
                ao += i * strides[d].0;
                bo += i * strides[d].1;
                co += i * strides[d].2;
            }
            (p.a_offset, p.b_offset, p.c_offset) = (ao as u32, bo as u32, co as u32);
            launches.extend(split_batches(p, grid)?);
        }
        return Ok((launches, out));
    }
    first.and_then(|(p, out, grid)| Ok((split_batches(p, grid)?, out)))
}

/// Splits one launch whose batch count (grid z) is past the per-dimension workgroup limit into
/// launches of at most that many batches, moving the operand offsets instead of copying. Whole
/// outer batch levels go together when the inner level fits one launch; otherwise each outer
/// index is split over inner ranges (the launch then has a single level).
fn split_batches(p: MatmulParams, grid: [u32; 3]) -> Result<Vec<MatmulLaunch>, GpuError> {
    let max = crate::grid::MAX_GROUPS_PER_DIM;
    if p.batch <= max {
        return Ok(vec![(p, grid)]);
    }
    let inner = p.batch_inner.max(1);
    let outer = p.batch / inner;
    let mn = p.m * p.n; // ≤ the output element count, checked to fit u32
    let mut launches = Vec::new();
    let mut push = |q: MatmulParams| -> Result<(), GpuError> {
        if launches.len() >= MAX_MATMUL_LAUNCHES {
            return Err(GpuError::TooLarge {
                kernel: "matmul_tiled",
                what: "launches for this batch count",
                value: p.batch as u64,
                limit: (MAX_MATMUL_LAUNCHES as u64) * max as u64,
            });
        }
        launches.push((q, [grid[0], grid[1], q.batch]));
        Ok(())
    };
    if inner <= max {
        let per = max / inner;
        for o0 in (0..outer).step_by(per as usize) {
            let c = per.min(outer - o0);
            let mut q = p;
            q.batch = c * inner;
            q.a_offset += o0 * p.a_batch_outer;
            q.b_offset += o0 * p.b_batch_outer;
            q.c_offset += o0 * inner * mn;
            push(q)?;
        }
    } else {
        for o in 0..outer {
            for i0 in (0..inner).step_by(max as usize) {
                let c = max.min(inner - i0);
                let mut q = p;
                q.batch = c;
                q.batch_inner = c;
                q.a_offset += o * p.a_batch_outer + i0 * p.a_batch_inner;
                q.b_offset += o * p.b_batch_outer + i0 * p.b_batch_inner;
                q.c_offset += (o * inner + i0) * mn;
                push(q)?;
            }
        }
    }
    Ok(launches)
}

#[cfg(test)]
#[path = "nn_params_tests.rs"]
mod tests;
