//! Flash attention's backward: one kernel per part of the gradient ([`AttnGradPart`]), on f32
//! (`attention_bwd.wgsl`, with the column blocks of the forward's row kernel, [`AttnBlock`]) or
//! on cooperative matrices (`attention_bwd_coop.wgsl`, with the forward coop
//! kernel's head blocks, [`CoopHead`]).
//! The statistics and dq walk key tiles for a block of query rows; dk and dv walk query tiles
//! for a block of key rows, over every query head of their kv head, so no two workgroups add
//! into one output row (WGSL has no float atomics) and the sums are in a fixed order.

use super::{AttnBlock, CoopHead};
use crate::catalog::{name, params_of, per_dim, Spec};
use crate::{Access, GpuError, GpuLimits};
use rlx_backend::{KernelOptions, MatmulKernel};
use rlx_ir::AttnGradPart;
use std::borrow::Cow;

/// Rows per workgroup of the f32 backward kernel (its BR).
pub const BWD_ROWS: usize = 16;
/// Rows per workgroup of the cooperative-matrix backward kernel (its BR).
pub const BWD_COOP_ROWS: usize = 64;

/// The attention kernels' six bindings (q, k, v, mask, out, kv lengths), then the part's two
/// operands: (o, dy) for the statistics, (dy, stats) for the gradients.
const BWD_BINDINGS: &[Access] = &[
    Access::Read,
    Access::Read,
    Access::Read,
    Access::Read,
    Access::ReadWrite,
    Access::Read,
    Access::Read,
    Access::Read,
];

const BWD_SRC: &str = kernel_src!(
    "attention/attention_bwd.wgsl",
    "include/attention_common.wgsl",
    "include/attention_kv_f32.wgsl",
    "include/attention_bwd_common.wgsl"
);
const BWD_COOP_SRC: &str = kernel_src!(
    "attention/attention_bwd_coop.wgsl",
    "include/attention_common.wgsl",
    "include/attention_kv_f32.wgsl",
    "include/attention_bwd_common.wgsl",
    "include/attention_coop_frags.wgsl"
);

/// The PART define of `part`.
fn part_code(part: AttnGradPart) -> u32 {
    match part {
        AttnGradPart::Stats => 0,
        AttnGradPart::Q => 1,
        AttnGradPart::K => 2,
        AttnGradPart::V => 3,
    }
}

/// Workgroup memory of the backward kernel with `block`: a_s, b_s, w_s, vis_s and t_s of
/// `attention_bwd.wgsl` (1024 + 16·65 + 2·256 + 16·DMAX words).
pub fn bwd_shared_bytes(block: AttnBlock) -> u32 {
    (1024 + 16 * 65 + 2 * 256 + 16 * block.columns() as u32) * 4
}

/// The column block of `part` for output rows of `cols` columns on a device with `shared`
/// bytes of workgroup memory (the statistics write two numbers a row and take the smallest).
pub fn bwd_block(part: AttnGradPart, cols: usize, shared: u32) -> Result<AttnBlock, GpuError> {
    let best = if part == AttnGradPart::Stats { AttnBlock::D64 } else { AttnBlock::for_value_dim(cols) };
    AttnBlock::ALL
        .into_iter()
        .rev()
        .find(|b| b.columns() <= best.columns() && bwd_shared_bytes(*b) <= shared)
        .ok_or(GpuError::TooLarge {
            kernel: "attention_bwd",
            what: "workgroup memory bytes",
            value: u64::from(bwd_shared_bytes(AttnBlock::D64)),
            limit: u64::from(shared),
        })
}

/// Workgroup memory of the cooperative-matrix backward kernel with `head`: `t_sh[2·32][DH+8]`
/// halves, `s_sh` and `dp_sh[64][36]` floats, `w_sh[64][40]` halves.
pub const fn bwd_coop_shared_bytes(head: CoopHead) -> u32 {
    2 * 32 * (head.dim() + 8) * 2 + 2 * 64 * 36 * 4 + 64 * 40 * 2
}

/// The cooperative-matrix kernel for a part of the gradient where the device, the precision and
/// the launch allow it, as for the forward ([`CoopHead::select`], over the part's row blocks:
/// `rows` query or key rows of `pairs` (batch, head) pairs); `None` for the f32 kernel.
pub fn bwd_coop_head(
    [d, dv]: [usize; 2],
    rows: u32,
    pairs: u32,
    limits: &GpuLimits,
    options: &KernelOptions,
) -> Result<Option<CoopHead>, String> {
    let Some(head) = CoopHead::select(d, dv, rows, [1, pairs, 1], limits, options)? else {
        return Ok(None);
    };
    let need = bwd_coop_shared_bytes(head);
    match need <= limits.shared_memory_bytes {
        true => Ok(Some(head)),
        false if options.matmul == Some(MatmulKernel::Coop) => Err(format!(
            "attention's backward on cooperative matrices needs {need} bytes of workgroup memory, \
             the device has {}",
            limits.shared_memory_bytes
        )),
        false => Ok(None),
    }
}

/// The grid of `part` before the (batch, head) split of `attention_launches`: row blocks
/// (query rows for the statistics and dq, key rows for dk and dv) of `block_rows` rows,
/// (batch, head) pairs, and column blocks of `block_cols` columns (`None`: every column in one
/// workgroup, as the tensor-core kernel holds them). Both backward kernels take it: the f32
/// one with [`BWD_ROWS`] and its [`AttnBlock`]'s columns, the tensor-core one with
/// [`BWD_COOP_ROWS`] and `None`.
pub fn bwd_grid(
    part: AttnGradPart,
    (block_rows, block_cols): (usize, Option<usize>),
    [sq, sk]: [usize; 2],
    pairs: u32,
    cols: usize,
) -> Result<[u32; 3], GpuError> {
    const K: &str = "attention_bwd";
    let rows = match part {
        AttnGradPart::Stats | AttnGradPart::Q => sq,
        AttnGradPart::K | AttnGradPart::V => sk,
    };
    let gz = match block_cols {
        Some(c) if part != AttnGradPart::Stats => cols.div_ceil(c.max(1)).max(1),
        _ => 1,
    };
    Ok([
        per_dim(K, "row block count", rows.div_ceil(block_rows.max(1)))?,
        pairs,
        per_dim(K, "column block count", gz)?,
    ])
}

pub(super) fn bwd_spec(block: AttnBlock, part: AttnGradPart) -> Spec {
    let cols = block.columns();
    let parts = (
        name(&["attention_bwd", part.name(), &format!("d{cols}"), "f32"]),
        vec![
            ("DMAX", Cow::Owned(format!("{cols}u"))),
            ("PART", Cow::Owned(format!("{}u", part_code(part)))),
            ("QKV", Cow::Borrowed("f32")),
            ("LW", Cow::Borrowed("1")),
        ],
    );
    let params = params_of::<super::AttentionParams>();
    Spec::wg256(parts, "kernels/attention/attention_bwd.wgsl", BWD_SRC, BWD_BINDINGS, params)
}

pub(super) fn bwd_coop_spec(head: CoopHead, part: AttnGradPart) -> Spec {
    let dim = head.dim();
    Spec {
        name: name(&["attention_bwd_coop", part.name(), &format!("d{dim}"), "f32"]),
        file: "kernels/attention/attention_bwd_coop.wgsl",
        source: BWD_COOP_SRC,
        defines: vec![
            ("DH", Cow::Owned(dim.to_string())),
            ("PART", Cow::Owned(format!("{}u", part_code(part)))),
            ("QKV", Cow::Borrowed("f32")),
            ("LW", Cow::Borrowed("1")),
        ],
        workgroup_size: [128, 1, 1],
        bindings: BWD_BINDINGS,
        params: params_of::<super::AttentionParams>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_grids_and_names() {
        assert_eq!(bwd_shared_bytes(AttnBlock::D64), 14_400);
        // Vulkan's guaranteed 16 KiB hold D64 only; lavapipe's 32 KiB every block.
        assert_eq!(bwd_block(AttnGradPart::Q, 128, 16 * 1024).unwrap(), AttnBlock::D64);
        assert_eq!(bwd_block(AttnGradPart::K, 256, 32 * 1024).unwrap(), AttnBlock::D256);
        assert_eq!(bwd_block(AttnGradPart::Stats, 256, 32 * 1024).unwrap(), AttnBlock::D64);
        assert!(bwd_block(AttnGradPart::V, 64, 8 * 1024).is_err());
        let f32_d64 = (BWD_ROWS, Some(AttnBlock::D64.columns()));
        assert_eq!(bwd_grid(AttnGradPart::K, f32_d64, [5, 33], 6, 100).unwrap(), [3, 6, 2]);
        assert_eq!(bwd_grid(AttnGradPart::Stats, f32_d64, [17, 3], 6, 100).unwrap(), [2, 6, 1]);
        // The tensor-core kernel: 64-row blocks, every column in one workgroup.
        assert_eq!(bwd_grid(AttnGradPart::V, (BWD_COOP_ROWS, None), [5, 130], 6, 100).unwrap(), [3, 6, 1]);
        let s = bwd_spec(AttnBlock::D128, AttnGradPart::V);
        assert_eq!(s.name, "attention_bwd_v_d128_f32");
        assert_eq!(s.define("PART"), Some("3u"));
        let s = bwd_coop_spec(CoopHead::D64, AttnGradPart::K);
        assert_eq!(s.name, "attention_bwd_coop_k_d64_f32");
        let src = kernel_src!("attention/attention_bwd_coop.wgsl");
        assert!(src.contains("const BR: u32 = 64u;") && src.contains("@workgroup_size(128, 1, 1)"));
        assert_eq!(BWD_COOP_ROWS, 64);
    }

    #[test]
    fn the_coop_backward_is_chosen_as_the_forward() {
        use rlx_backend::Precision;
        let h200 = GpuLimits::hopper();
        let mixed = KernelOptions { precision: Precision::Mixed, matmul: None };
        let head = |rows, pairs, l: &GpuLimits, o: &KernelOptions| bwd_coop_head([64, 64], rows, pairs, l, o);
        // MiniLM's fine-tune: b64 · h12, 128 rows; batch 1 launches too few workgroups.
        assert_eq!(head(128, 768, &h200, &mixed), Ok(Some(CoopHead::D64)));
        assert_eq!(head(128, 12, &h200, &mixed), Ok(None));
        let f32 = KernelOptions { precision: Precision::F32, matmul: None };
        assert_eq!(head(128, 768, &h200, &f32), Ok(None));
        assert_eq!(head(128, 768, &GpuLimits::lavapipe(), &mixed), Ok(None));
        let small = GpuLimits { shared_memory_bytes: 32 * 1024 + 1024, ..h200.clone() };
        assert_eq!(head(128, 768, &small, &mixed), Ok(Some(CoopHead::D64)));
        let forced = KernelOptions { precision: Precision::Mixed, matmul: Some(MatmulKernel::Coop) };
        let wide = bwd_coop_head([128, 128], 128, 768, &small, &forced).unwrap_err();
        assert!(wide.contains("40960"), "{wide}");
        assert_eq!(bwd_coop_shared_bytes(CoopHead::D64), 32_768);
    }
}
