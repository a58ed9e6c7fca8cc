//! The split-QKV epilogue of the tensor-core rung: `matmul_coop.wgsl` with
//! `matmul_coop_split.wgsl` in place of the one-output bindings, so that one launch computes up
//! to three matmuls of one A and writes each result (with its bias) to its own output. The
//! lowering decides which matmuls form a group (`lower/matmul_group.rs`).

use super::coop::tile_defines;
use super::vec_multi::ACCESS;
use super::{act_define, MatmulRung};
use crate::catalog::{name, params_of, Spec};
use crate::{GpuError, MatmulParams};
use std::borrow::Cow;

const SPLIT_SRC: &str = kernel_src!(
    "matmul/matmul_coop.wgsl",
    "matmul/matmul_coop_split.wgsl",
    "include/matmul_batch.wgsl",
    "include/matmul_epilogue.wgsl"
);

/// The params of the split launch (must match `CoopSplitParams` in matmul_coop_split.wgsl): part
/// 0's matmul params, then the other parts' N and the column tiles of parts 0 and 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CoopSplitParams {
    pub mm: MatmulParams,
    pub n1: u32,
    pub n2: u32,
    pub tiles0: u32,
    pub tiles1: u32,
}

impl CoopSplitParams {
    /// `p`: part 0's params (A [M, K] times B_0 [N_0, K]); `n`: every part's N (a missing
    /// third part has N = 0). Returns the params and the grid of `rung`.
    pub fn new(p: MatmulParams, n: [u32; 3], rung: MatmulRung) -> Result<(Self, [u32; 3]), GpuError> {
        let tile = rung.tile();
        let tiles = n.map(|x| x.div_ceil(tile));
        let total = tiles.iter().map(|&t| u64::from(t)).sum::<u64>();
        let rows = p.m.div_ceil(tile);
        let x = u32::try_from(total).map_err(|_| GpuError::TooLarge {
            kernel: "matmul_coop_split",
            what: "column tiles",
            value: total,
            limit: u64::from(u32::MAX),
        })?;
        let params = CoopSplitParams {
            mm: MatmulParams { n: n[0], ..p },
            n1: n[1],
            n2: n[2],
            tiles0: tiles[0],
            tiles1: tiles[1],
        };
        Ok((params, [x.max(1), rows.max(1), 1]))
    }
}

/// Storage bindings of a launch (for the device's per-stage limit): a, b0, b1, b2, c0, c1, c2
/// [, bias0, bias1, bias2], as the split matrix-vector launch binds them.
pub fn coop_split_bindings(bias: bool) -> u32 {
    if bias {
        10
    } else {
        7
    }
}

const BIAS_DECL: &str = "@group(0) @binding(7) var<storage, read> bias0: array<f32>; \
     @group(0) @binding(8) var<storage, read> bias1: array<f32>; \
     @group(0) @binding(9) var<storage, read> bias2: array<f32>;";
const BIAS_AT: &str =
    "if (part == 0u) { return bias0[col]; } else if (part == 1u) { return bias1[col]; } return bias2[col];";

/// The split launch on the wide (128) or narrow (64) tile, with biases or not.
pub(super) fn coop_split_spec(wide: bool, bias: bool, f16_b: bool) -> Spec {
    let rung = if wide { MatmulRung::Coop128 } else { MatmulRung::Coop64 };
    let pick = |a: &'static str, b: &'static str| Cow::Borrowed(if bias { a } else { b });
    let mut defines = tile_defines(wide);
    defines.extend([
        act_define(None),
        ("HAS_BIAS", pick("true", "false")),
        ("SPLIT_BIAS_DECL", pick(BIAS_DECL, "")),
        ("SPLIT_BIAS_AT", pick(BIAS_AT, "return 0.0;")),
        ("B_ELEM", Cow::Borrowed(super::coop::b_elem(f16_b))),
    ]);
    let tile = if wide { "matmul_coop128" } else { "matmul_coop64" };
    Spec {
        name: name(&[tile, "split", if bias { "bias" } else { "" }, if f16_b { "f16w" } else { "" }, "f32"]),
        file: "kernels/matmul/matmul_coop_split.wgsl",
        source: SPLIT_SRC,
        defines,
        workgroup_size: [rung.threads(), 1, 1],
        bindings: &ACCESS[..coop_split_bindings(bias) as usize],
        params: params_of::<CoopSplitParams>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_runs_over_every_part_s_column_tiles() {
        let (p, _, _) = MatmulParams::from_shapes(&[512, 896], &[896, 896], false, true).unwrap();
        let (s, grid) = CoopSplitParams::new(p, [896, 128, 128], MatmulRung::Coop64).unwrap();
        assert_eq!(grid, [14 + 2 + 2, 8, 1]);
        assert_eq!((s.mm.n, s.n1, s.n2, s.tiles0, s.tiles1), (896, 128, 128, 14, 2));
        let (_, grid) = CoopSplitParams::new(p, [896, 130, 0], MatmulRung::Coop128).unwrap();
        assert_eq!(grid, [7 + 2, 4, 1]);
        assert_eq!(std::mem::size_of::<CoopSplitParams>(), 80);
        assert_eq!(coop_split_spec(true, true, false).name, "matmul_coop128_split_bias_f32");
        assert_eq!(coop_split_spec(false, false, true).name, "matmul_coop64_split_f16w_f32");
        assert_eq!(coop_split_bindings(true), 10);
    }
}
