//! Kernel family "attention": attention with online softmax over row blocks ([`AttnBlock`]),
//! split-key attention for few query rows ([`split`]) and flash attention on cooperative
//! matrices ([`coop`]). Its keys ([`AttentionKernel`]), variants and params ([`params`]).

pub mod backward;
pub mod coop;
pub mod params;
#[cfg(test)]
mod params_tests;
pub mod split;

use super::{name, params_of, Spec, ATTENTION_BINDINGS};
pub use coop::{CoopHead, CoopLoads, COOP_ATTN_ROWS};
pub use params::{attention_launches, AttentionParams};
use rlx_ir::AttnGradPart;
pub use split::{combine_launches, partial_bytes, split_chunks, split_fits, AttnCombineParams, SPLIT_CHUNK};
use std::borrow::Cow;

const ATTENTION_SRC: &str =
    kernel_src!("attention/attention.wgsl", "include/attention_common.wgsl", "include/attention_kv_f32.wgsl");
const ATTENTION_KVH_SRC: &str =
    kernel_src!("attention/attention.wgsl", "include/attention_common.wgsl", "include/attention_kv_f16.wgsl");

unit_keys! {
    /// How a forward attention kernel finds keys and values stored: f32, or f16 (a KV cache
    /// held in f16 under f32 queries, `Capabilities::half_kv_attention`), read as packed words
    /// and widened exactly in registers (`include/attention_kv_f16.wgsl`), never copied to f32.
    pub enum KvStore {
        F32,
        F16,
    }
}

impl KvStore {
    /// The store of keys and values of dtype `dtype`.
    pub fn of(dtype: rlx_ir::DType) -> Self {
        match dtype {
            rlx_ir::DType::F16 => KvStore::F16,
            _ => KvStore::F32,
        }
    }

    /// The kernel name's part for this store ("" for f32, the common case).
    pub const fn suffix(self) -> &'static str {
        match self {
            KvStore::F32 => "",
            KvStore::F16 => "kvf16",
        }
    }
}

unit_keys! {
    /// The block of output columns one attention workgroup owns (the `DMAX` define): the smallest
    /// that holds the value head dim, or the largest, with the columns split across workgroups.
    pub enum AttnBlock {
        D64,
        D128,
        D256,
    }
}

impl AttnBlock {
    pub fn columns(self) -> usize {
        match self {
            AttnBlock::D64 => 64,
            AttnBlock::D128 => 128,
            AttnBlock::D256 => 256,
        }
    }

    /// The block for a value head dim of `dv`.
    pub fn for_value_dim(dv: usize) -> Self {
        AttnBlock::ALL.into_iter().find(|b| dv <= b.columns()).unwrap_or(AttnBlock::D256)
    }

    /// Workgroup memory of the variant in bytes: q_s, kv_s, s_s, p_s and vis_s of
    /// `attention.wgsl` (1024 + 16·(DMAX + 1) + 3·256 words).
    pub fn shared_bytes(self) -> u32 {
        (1024 + 16 * (self.columns() as u32 + 1) + 3 * 256) * 4
    }

    /// The block for `dv` on a device with `shared` bytes of workgroup memory: the one
    /// [`Self::for_value_dim`] gives, or a smaller one that fits (the columns then split over
    /// more workgroups). `None` when not even the smallest fits.
    pub fn fitting(dv: usize, shared: u32) -> Option<Self> {
        let best = Self::for_value_dim(dv);
        AttnBlock::ALL.into_iter().rev().find(|b| b.columns() <= best.columns() && b.shared_bytes() <= shared)
    }
}

/// Kernels of the attention family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttentionKernel {
    /// Attention with online softmax, one workgroup per block of query rows and of output
    /// columns ([`AttentionParams`]). Bindings q, k, v, mask, out, kv lengths.
    Rows(AttnBlock, KvStore),
    /// Flash attention on cooperative matrices (`attention_coop.wgsl`): f16 operands, f32
    /// accumulation and statistics ([`AttentionParams`]), with q, k, v loaded one value or
    /// four at a time ([`CoopLoads`]). Bindings q, k, v, mask, out, kv lengths.
    Coop(CoopHead, CoopLoads, KvStore),
    /// Split-key attention for few query rows, first launch: per-chunk partials
    /// ([`AttentionParams`]). Bindings q, k, v, mask, out, kv lengths, partials.
    Split(KvStore),
    /// Split-key attention, second launch: merges the partials ([`AttnCombineParams`]).
    /// Bindings partials, out.
    Combine,
    /// Flash attention's backward on f32, one part of the gradient ([`backward`],
    /// [`AttentionParams`]). Bindings q, k, v, mask, out, kv lengths (unread), then the part's
    /// two operands.
    Backward(AttnBlock, AttnGradPart),
    /// Flash attention's backward on cooperative matrices, one part of the gradient
    /// (`attention_bwd_coop.wgsl`); same bindings and params as [`Self::Backward`].
    BackwardCoop(CoopHead, AttnGradPart),
}

/// The variant of `k`.
pub(crate) fn spec(k: AttentionKernel) -> Spec {
    match k {
        AttentionKernel::Rows(block, kv) => {
            let cols = block.columns();
            let parts = (
                name(&["attention", &format!("d{cols}"), kv.suffix(), "f32"]),
                vec![
                    ("DMAX", Cow::Owned(format!("{cols}u"))),
                    ("QKV", Cow::Borrowed("f32")),
                    ("LW", Cow::Borrowed("1")),
                ],
            );
            let params = params_of::<AttentionParams>();
            let source = match kv {
                KvStore::F32 => ATTENTION_SRC,
                KvStore::F16 => ATTENTION_KVH_SRC,
            };
            Spec::wg256(parts, "kernels/attention/attention.wgsl", source, ATTENTION_BINDINGS, params)
        }
        AttentionKernel::Coop(head, loads, kv) => coop::spec(head, loads, kv),
        AttentionKernel::Split(kv) => split::split_spec(kv),
        AttentionKernel::Combine => split::combine_spec(),
        AttentionKernel::Backward(block, part) => backward::bwd_spec(block, part),
        AttentionKernel::BackwardCoop(head, part) => backward::bwd_coop_spec(head, part),
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<AttentionKernel> {
    let mut keys = Vec::new();
    for kv in KvStore::ALL {
        keys.extend(AttnBlock::ALL.map(|block| AttentionKernel::Rows(block, kv)));
        for head in CoopHead::ALL {
            keys.extend(CoopLoads::ALL.map(|loads| AttentionKernel::Coop(head, loads, kv)));
        }
        keys.push(AttentionKernel::Split(kv));
    }
    keys.push(AttentionKernel::Combine);
    // The statistics write two numbers a row and always take the smallest block.
    keys.push(AttentionKernel::Backward(AttnBlock::D64, AttnGradPart::Stats));
    keys.extend(CoopHead::ALL.map(|head| AttentionKernel::BackwardCoop(head, AttnGradPart::Stats)));
    for part in [AttnGradPart::Q, AttnGradPart::K, AttnGradPart::V] {
        keys.extend(AttnBlock::ALL.map(|block| AttentionKernel::Backward(block, part)));
        keys.extend(CoopHead::ALL.map(|head| AttentionKernel::BackwardCoop(head, part)));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_block_fits_the_value_dim() {
        assert_eq!(AttnBlock::for_value_dim(1), AttnBlock::D64);
        assert_eq!(AttnBlock::for_value_dim(64), AttnBlock::D64);
        assert_eq!(AttnBlock::for_value_dim(65), AttnBlock::D128);
        assert_eq!(AttnBlock::for_value_dim(256), AttnBlock::D256);
        assert_eq!(AttnBlock::for_value_dim(1000), AttnBlock::D256);
        // Lavapipe's 32 KiB hold every block, Vulkan's guaranteed 16 KiB all but D256.
        assert_eq!(AttnBlock::D256.shared_bytes(), 23_616);
        assert_eq!(AttnBlock::fitting(256, 32 * 1024), Some(AttnBlock::D256));
        assert_eq!(AttnBlock::fitting(256, 16 * 1024), Some(AttnBlock::D128));
        assert_eq!(AttnBlock::fitting(40, 16 * 1024), Some(AttnBlock::D64));
        assert_eq!(AttnBlock::fitting(40, 8 * 1024), None);
    }

    #[test]
    fn blocks_are_named_for_their_columns() {
        assert_eq!(spec(AttentionKernel::Rows(AttnBlock::D128, KvStore::F32)).name, "attention_d128_f32");
        assert_eq!(spec(AttentionKernel::Rows(AttnBlock::D64, KvStore::F32)).define("DMAX"), Some("64u"));
        assert_eq!(spec(AttentionKernel::Split(KvStore::F32)).name, "attention_split_f32");
        // Keys and values stored f16 take their own variant, with the f16 loads appended.
        let half = spec(AttentionKernel::Split(KvStore::F16));
        assert_eq!(half.name, "attention_split_kvf16_f32");
        assert!(
            half.source.contains("fn halves")
                && !spec(AttentionKernel::Split(KvStore::F32)).source.contains("fn halves")
        );
        assert_eq!(KvStore::of(rlx_ir::DType::F16), KvStore::F16);
        assert_eq!(KvStore::of(rlx_ir::DType::F32), KvStore::F32);
    }
}
