//! Split-key attention for few query rows (`attention_split.wgsl` then
//! `attention_combine.wgsl`): the decode step's attention. One workgroup per (chunk of
//! [`SPLIT_CHUNK`] keys, query row) writes the chunk's partial softmax statistics and weighted
//! values; a second launch merges the chunks per row.
//!
//! Chosen for at most [`SPLIT_MAX_ROWS`] query rows with head dims up to [`SPLIT_MAX_D`] (the
//! q row is held in shared memory), unless a forced matmul kernel picks the row-blocked ones.
//! Why: with one query row per head, the row-blocked kernel wastes 15 of its 16 rows and walks
//! all keys in one workgroup per head (14 workgroups on a 132-SM GPU for Qwen2.5-0.5B), which
//! measured 140 µs per layer over a 512-key cache on the H200.

use super::KvStore;
use crate::catalog::{name, params_of, Spec, IN_OUT};
use crate::grid::MAX_GROUPS_PER_DIM;
use crate::Access;
use bytemuck::{Pod, Zeroable};
use std::borrow::Cow;

/// Keys per workgroup of the split kernel (its CH; one per invocation).
pub const SPLIT_CHUNK: usize = 64;
/// Query rows up to which the split kernel is chosen.
pub const SPLIT_MAX_ROWS: u32 = 4;
/// Largest q/k head dim the split kernel holds.
pub const SPLIT_MAX_D: usize = 256;

/// The split kernel's bindings: the attention kernels' six, then the partials (read_write).
const SPLIT_BINDINGS: &[Access] = &[
    Access::Read,
    Access::Read,
    Access::Read,
    Access::Read,
    Access::ReadWrite,
    Access::Read,
    Access::ReadWrite,
];

const SPLIT_SRC: &str = kernel_src!(
    "attention/attention_split.wgsl",
    "include/attention_common.wgsl",
    "include/attention_kv_f32.wgsl"
);
const SPLIT_KVH_SRC: &str = kernel_src!(
    "attention/attention_split.wgsl",
    "include/attention_common.wgsl",
    "include/attention_kv_f16.wgsl"
);
const COMBINE_SRC: &str = kernel_src!("attention/attention_combine.wgsl");

/// Params of `attention_combine.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct AttnCombineParams {
    pub chunks: u32,
    pub dv: u32,
    pub hq: u32,
    pub sq: u32,
    /// Element strides (batch, seq, head) of the output.
    pub o_sb: u32,
    pub o_ss: u32,
    pub o_sh: u32,
    /// First row of this launch.
    pub row_offset: u32,
}

/// Chunks of keys for `sk` keys (at least one, so an empty cache still writes its rows).
pub fn split_chunks(sk: usize) -> u32 {
    sk.div_ceil(SPLIT_CHUNK).max(1) as u32
}

/// Whether the split kernel takes `sq` query rows of head dim `d`.
pub fn split_fits(sq: u32, d: usize) -> bool {
    sq <= SPLIT_MAX_ROWS && d <= SPLIT_MAX_D
}

/// Bytes of the partials of `rows` query rows over `chunks` chunks with value dim `dv`.
pub fn partial_bytes(rows: u64, chunks: u32, dv: usize) -> u64 {
    rows.saturating_mul(u64::from(chunks)).saturating_mul(2 + dv as u64).saturating_mul(4)
}

/// Launches of the combine kernel over `rows` rows: params with their row offsets, grids.
pub fn combine_launches(p: AttnCombineParams, rows: u32) -> Vec<(AttnCombineParams, [u32; 3])> {
    (0..rows)
        .step_by(MAX_GROUPS_PER_DIM as usize)
        .map(|start| {
            (AttnCombineParams { row_offset: start, ..p }, [1, MAX_GROUPS_PER_DIM.min(rows - start), 1])
        })
        .collect()
}

pub(super) fn split_spec(kv: KvStore) -> Spec {
    let params = params_of::<super::AttentionParams>();
    Spec {
        name: name(&["attention_split", kv.suffix(), "f32"]),
        file: "kernels/attention/attention_split.wgsl",
        source: match kv {
            KvStore::F32 => SPLIT_SRC,
            KvStore::F16 => SPLIT_KVH_SRC,
        },
        defines: vec![("QKV", Cow::Borrowed("f32")), ("LW", Cow::Borrowed("1"))],
        workgroup_size: [SPLIT_CHUNK as u32, 1, 1],
        bindings: SPLIT_BINDINGS,
        params,
    }
}

pub(super) fn combine_spec() -> Spec {
    Spec {
        name: name(&["attention_combine", "f32"]),
        file: "kernels/attention/attention_combine.wgsl",
        source: COMBINE_SRC,
        defines: Vec::new(),
        workgroup_size: [64, 1, 1],
        bindings: IN_OUT,
        params: params_of::<AttnCombineParams>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_partials_and_launches() {
        assert_eq!((split_chunks(0), split_chunks(64), split_chunks(65)), (1, 1, 2));
        assert!(split_fits(1, 64) && split_fits(4, 256) && !split_fits(5, 64) && !split_fits(1, 320));
        assert_eq!(partial_bytes(14, 4, 64), 14 * 4 * 66 * 4);
        let p =
            AttnCombineParams { chunks: 2, dv: 64, hq: 1, sq: 1, o_sb: 0, o_ss: 0, o_sh: 0, row_offset: 0 };
        let l = combine_launches(p, 70_000);
        assert_eq!(l.len(), 2);
        assert_eq!((l[1].0.row_offset, l[1].1[1]), (65_535, 70_000 - 65_535));
        assert_eq!(std::mem::size_of::<AttnCombineParams>(), 32);
    }
}
