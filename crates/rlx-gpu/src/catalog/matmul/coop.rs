//! The cooperative-matrix matmul variants (`matmul_coop.wgsl`, rungs [`MatmulRung::Coop64`] and
//! [`MatmulRung::Coop128`]): per tile, plain or with the same epilogues as the f32 rungs.
//!
//! The tile geometry reaches the WGSL as defines; the strings below must agree with
//! [`MatmulRung::tile`], [`MatmulRung::threads`] and [`MatmulRung::coop_stage`], which a unit
//! test checks.

use super::{epilogue_name, matmul_defines, Epilogue, MatmulParams, MatmulRung};
use crate::catalog::Defines;
use crate::catalog::{params_of, Spec, IN2_OUT, IN3_OUT};
use std::borrow::Cow;

const COOP_SRC: &str = kernel_src!(
    "matmul/matmul_coop.wgsl",
    "include/matmul_common.wgsl",
    "include/matmul_batch.wgsl",
    "include/matmul_epilogue.wgsl"
);

/// How the coop kernels bind B: as the f16 it is stored in, or as f32.
pub(super) fn b_elem(f16_b: bool) -> &'static str {
    if f16_b {
        "vec4<f16>"
    } else {
        "vec4<f32>"
    }
}

/// The tile defines of one coop rung: TILE, SG_ROWS, SG_COLS, THREADS, STAGE, STAGES2, C_SHARED.
pub(super) fn tile_defines(wide: bool) -> Defines {
    let rung = if wide { MatmulRung::Coop128 } else { MatmulRung::Coop64 };
    let (sg_rows, sg_cols) = if wide { (4u32, 2u32) } else { (2, 2) };
    let stage = rung.coop_stage();
    [
        ("TILE", rung.tile()),
        ("SG_ROWS", sg_rows),
        ("SG_COLS", sg_cols),
        ("THREADS", rung.threads()),
        ("STAGE", stage),
        ("STAGES2", 2 * stage),
        ("C_SHARED", rung.threads() / 32 * 256),
    ]
    .into_iter()
    .map(|(n, v)| (n, Cow::Owned(v.to_string())))
    .collect()
}

/// The coop matmul with the wide (128) or narrow (64) tile, a bias or not and activation `act`:
/// the epilogue defines of the f32 rungs but the operands viewed as vec4, then the tile. B is
/// bound as vec4<f16> when `f16_b` (the weight as stored), else as vec4<f32>.
pub(super) fn coop_spec(wide: bool, bias: bool, act: Option<Epilogue>, f16_b: bool) -> Spec {
    let rung = if wide { MatmulRung::Coop128 } else { MatmulRung::Coop64 };
    let mut defines = matmul_defines(bias, act, "vec4<f32>", b_elem(f16_b));
    defines.extend(tile_defines(wide));
    let stem = match (wide, f16_b) {
        (false, false) => "matmul_coop64",
        (true, false) => "matmul_coop128",
        (false, true) => "matmul_coop64_f16w",
        (true, true) => "matmul_coop128_f16w",
    };
    Spec {
        name: epilogue_name(stem, bias, act),
        file: "kernels/matmul/matmul_coop.wgsl",
        source: COOP_SRC,
        defines,
        workgroup_size: [rung.threads(), 1, 1],
        bindings: if bias { IN3_OUT } else { IN2_OUT },
        params: params_of::<MatmulParams>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn define(s: &Spec, name: &str) -> u32 {
        s.define(name).and_then(|v| v.parse().ok()).unwrap()
    }

    #[test]
    fn tile_defines_agree_with_the_rungs() {
        for (wide, rung) in [(false, MatmulRung::Coop64), (true, MatmulRung::Coop128)] {
            let s = coop_spec(wide, true, Some(Epilogue::Relu), false);
            let d = &s;
            assert_eq!(define(d, "TILE"), rung.tile(), "{rung:?}");
            assert_eq!(define(d, "THREADS"), rung.threads());
            assert_eq!(define(d, "SG_ROWS") * define(d, "SG_COLS") * 32, rung.threads());
            // Each subgroup owns 32 rows: the subgroup rows cover the tile.
            assert_eq!(define(d, "SG_ROWS") * 32, rung.tile());
            assert_eq!(define(d, "STAGE"), rung.coop_stage());
            assert_eq!(define(d, "STAGES2"), 2 * rung.coop_stage());
            assert_eq!(define(d, "C_SHARED"), rung.threads() / 32 * 256);
            // 2 arrays of STAGES2 halves + C_SHARED floats.
            assert_eq!(2 * define(d, "STAGES2") * 2 + define(d, "C_SHARED") * 4, rung.shared_bytes());
            assert_eq!(
                s.name,
                if wide { "matmul_coop128_bias_relu_f32" } else { "matmul_coop64_bias_relu_f32" }
            );
            assert!(s.define("ACT") == Some("ACT_RELU") && s.define("HAS_BIAS") == Some("true"));
            assert_eq!(s.define("B_ELEM"), Some("vec4<f32>"));
            let h = coop_spec(wide, false, None, true);
            assert_eq!(h.define("B_ELEM"), Some("vec4<f16>"));
            assert!(h.name.contains("_f16w"), "{}", h.name);
        }
    }
}
