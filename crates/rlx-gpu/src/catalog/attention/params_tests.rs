use super::params::*;
use super::AttnBlock;
use crate::GpuError;
use rlx_ir::{AttentionSpec, AttnLayout, DType, MaskKind};

/// Lavapipe's workgroup memory.
const SHARED: u32 = 32 * 1024;

#[test]
fn params_sizes_match_the_wgsl_structs() {
    // 32 words: 8 sizes, 4 × 3 operand strides, 4 mask strides, scale, softcap, flag,
    // offset, lengths flag, 3 pad: the 128 bytes every device takes as push constants.
    assert_eq!(std::mem::size_of::<AttentionParams>(), 128);
}

#[test]
fn attention_strides_per_layout() {
    // q [B=2, S=5, H=4, D=8] Bshd; k/v with 2 kv heads and 7 keys, Dv = 3.
    let s = AttentionSpec::new(AttnLayout::Bshd, MaskKind::None);
    let (p, block, grid) =
        AttentionParams::new(&s, &[2, 5, 4, 8], &[2, 7, 2, 8], &[2, 7, 2, 3], None, SHARED).unwrap();
    assert_eq!((p.sq, p.sk, p.hq, p.group, p.d, p.dv), (5, 7, 4, 2, 8, 3));
    assert_eq!(p.q_strides, [160, 32, 8]);
    assert_eq!(p.k_strides, [112, 16, 8]);
    assert_eq!(p.v_strides, [42, 6, 3]);
    assert_eq!(p.o_strides, [60, 12, 3]);
    assert_eq!(block, AttnBlock::D64);
    assert_eq!(grid, [1, 8, 1]);
    assert!((p.scale - 1.0 / 8f32.sqrt()).abs() < 1e-7);
    assert_eq!(p.softcap, 0.0);

    let s = AttentionSpec::new(AttnLayout::Bhsd, MaskKind::Causal).scale(0.5).softcap(30.0);
    let (p, block, grid) =
        AttentionParams::new(&s, &[1, 4, 33, 300], &[1, 4, 40, 300], &[1, 4, 40, 300], None, SHARED).unwrap();
    assert_eq!(p.q_strides, [4 * 33 * 300, 300, 33 * 300]);
    assert_eq!(p.k_strides, [4 * 40 * 300, 300, 40 * 300]);
    assert_eq!((p.mask_kind, p.scale, p.softcap), (1, 0.5, 30.0));
    // Dv 300 > 256: two column blocks of 256; 33 rows: three blocks of 16.
    assert_eq!((block, grid), (AttnBlock::D256, [3, 4, 2]));
}

#[test]
fn attention_mask_strides() {
    let s = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Padding);
    let q = [3, 5, 2, 4];
    let kv = [3, 6, 2, 4];
    let (p, _, _) = AttentionParams::new(&s, &q, &kv, &kv, Some((&[3, 6], DType::F32)), SHARED).unwrap();
    assert_eq!((p.mask_kind, p.m_strides, p.mask_float), (3, [6, 0, 0, 1], 1));
    let (p, _, _) = AttentionParams::new(&s, &q, &kv, &kv, Some((&[3, 6], DType::Bool)), SHARED).unwrap();
    assert_eq!(p.mask_float, 0);
    assert!(AttentionParams::new(&s, &q, &kv, &kv, Some((&[3, 5], DType::I32)), SHARED).is_err());
    assert!(AttentionParams::new(&s, &q, &kv, &kv, None, SHARED).is_err());

    // Bias [B, 1, Sq, Sk] and [Sk] broadcast to [B, H, Sq, Sk] = [3, 2, 5, 6].
    let s = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Bias);
    let (p, _, _) =
        AttentionParams::new(&s, &q, &kv, &kv, Some((&[3, 1, 5, 6], DType::F32)), SHARED).unwrap();
    assert_eq!((p.mask_kind, p.m_strides), (4, [30, 0, 6, 1]));
    let (p, _, _) = AttentionParams::new(&s, &q, &kv, &kv, Some((&[6], DType::F32)), SHARED).unwrap();
    assert_eq!(p.m_strides, [0, 0, 0, 1]);
    let (p, _, _) = AttentionParams::new(&s, &q, &kv, &kv, Some((&[2, 5, 1], DType::F32)), SHARED).unwrap();
    assert_eq!(p.m_strides, [0, 5, 1, 0]);
    assert!(AttentionParams::new(&s, &q, &kv, &kv, Some((&[4, 6], DType::F32)), SHARED).is_err());
}

#[test]
fn attention_rejects_what_does_not_fit() {
    let s = AttentionSpec::new(AttnLayout::Bshd, MaskKind::Causal);
    // Causal with fewer keys than queries.
    assert!(AttentionParams::new(&s, &[1, 5, 1, 4], &[1, 4, 1, 4], &[1, 4, 1, 4], None, SHARED).is_err());
    let s = AttentionSpec::new(AttnLayout::Bshd, MaskKind::None);
    // 3 query heads over 2 kv heads.
    assert!(AttentionParams::new(&s, &[1, 5, 3, 4], &[1, 5, 2, 4], &[1, 5, 2, 4], None, SHARED).is_err());
    // k head dim differs from q's.
    assert!(AttentionParams::new(&s, &[1, 5, 2, 4], &[1, 5, 2, 5], &[1, 5, 2, 4], None, SHARED).is_err());
    let e = AttentionParams::new(&s, &[1, 16 * 65_536, 1, 1], &[1, 1, 1, 1], &[1, 1, 1, 1], None, SHARED)
        .unwrap_err();
    assert!(matches!(e, GpuError::TooLarge { what: "query block count", .. }), "{e}");
    let e = AttentionParams::new(&s, &[1, 5, 2, 4], &[1, 5, 2, 4], &[1, 5, 2, 4], None, 4096).unwrap_err();
    assert!(matches!(e, GpuError::TooLarge { what: "workgroup memory bytes", .. }), "{e}");
}

#[test]
fn attention_block_shrinks_to_the_shared_memory() {
    let s = AttentionSpec::new(AttnLayout::Bshd, MaskKind::None);
    let d = [1, 3, 1, 256];
    let (_, block, grid) = AttentionParams::new(&s, &d, &d, &d, None, 16 * 1024).unwrap();
    assert_eq!((block, grid), (AttnBlock::D128, [1, 1, 2]));
}

#[test]
fn attention_pairs_past_one_grid_dimension_split_into_launches() {
    let s = AttentionSpec::new(AttnLayout::Bhsd, MaskKind::None);
    let dims = [35_001, 2, 1, 4];
    let (p, _, grid) = AttentionParams::new(&s, &dims, &dims, &dims, None, SHARED).unwrap();
    assert_eq!(grid[1], 70_002);
    let launches = attention_launches(p, grid);
    assert_eq!(launches.len(), 2);
    assert_eq!((launches[0].0.bh_offset, launches[0].1[1]), (0, 65_535));
    assert_eq!((launches[1].0.bh_offset, launches[1].1[1]), (65_535, 70_002 - 65_535));
}
