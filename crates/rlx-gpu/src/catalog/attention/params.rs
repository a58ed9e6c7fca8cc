//! Params of the attention kernels (`attention.wgsl` and its split and coop forms),
//! byte-identical to the WGSL struct of the same name, and the launch splitter.

use super::AttnBlock;
use crate::catalog::{per_dim, shape_err};
use crate::grid::{numel, MAX_GROUPS_PER_DIM};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_ir::{AttentionSpec, AttnLayout, DType, MaskKind};

/// The `mask_kind` codes of [`AttentionParams`], which `attention_common.wgsl` knows as
/// `MASK_*` (generated from these, `crate::catalog::consts_wgsl::mask_kinds`).
pub mod mask {
    pub const NONE: u32 = 0;
    pub const CAUSAL: u32 = 1;
    pub const SLIDING: u32 = 2;
    pub const PADDING: u32 = 3;
    pub const BIAS: u32 = 4;
}

/// Query rows per attention workgroup (BQ in `attention.wgsl`).
const ATTN_BQ: usize = 16;

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
    /// One of the [`mask`] codes.
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
            MaskKind::None => (mask::NONE, 0),
            MaskKind::Causal => (mask::CAUSAL, 0),
            MaskKind::SlidingWindow(w) => (mask::SLIDING, w.min(u32::MAX as usize) as u32),
            MaskKind::Padding => (mask::PADDING, 0),
            MaskKind::Bias => (mask::BIAS, 0),
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
