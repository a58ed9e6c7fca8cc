//! The cooperative-matrix matmul variants (`matmul_coop.wgsl`, rungs [`MatmulRung::Coop64`] and
//! [`MatmulRung::Coop128`]): per tile, plain or with the same epilogues as the f32 rungs.
//!
//! The tile geometry reaches the WGSL as defines; the strings below must agree with
//! [`MatmulRung::tile`], [`MatmulRung::threads`] and [`MatmulRung::coop_stage`], which a unit
//! test checks.

use super::{matmul_defines, Defines, MatmulParams, MatmulRung};
use crate::catalog::{size_of, Spec, IN2_OUT, IN3_OUT};

const COOP_SRC: &str = concat!(
    include_str!("../../kernels/matmul/matmul_coop.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_common.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_batch.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_epilogue.wgsl")
);

type CoopDefines = [(&'static str, &'static str); 14];

/// The tile defines of one coop rung: TILE, SG_ROWS, SG_COLS, THREADS, STAGE, STAGES2, C_SHARED.
pub(super) const fn tile_defines(wide: bool) -> [(&'static str, &'static str); 7] {
    if wide {
        [
            ("TILE", "128"),
            ("SG_ROWS", "4"),
            ("SG_COLS", "2"),
            ("THREADS", "256"),
            ("STAGE", "5120"),
            ("STAGES2", "10240"),
            ("C_SHARED", "2048"),
        ]
    } else {
        [
            ("TILE", "64"),
            ("SG_ROWS", "2"),
            ("SG_COLS", "2"),
            ("THREADS", "128"),
            ("STAGE", "2560"),
            ("STAGES2", "5120"),
            ("C_SHARED", "1024"),
        ]
    }
}

/// The epilogue defines of the f32 rungs but the operands viewed as vec4, then the tile.
const fn coop_defines(wide: bool, epilogue: Defines) -> CoopDefines {
    let tile = tile_defines(wide);
    let mut out = [("", ""); 14];
    let mut i = 0;
    while i < 5 {
        out[i] = epilogue[i];
        i += 1;
    }
    out[5] = ("AB_ELEM", "vec4<f32>");
    out[6] = ("B_ELEM", "vec4<f32>");
    i = 7;
    while i < 14 {
        out[i] = tile[i - 7];
        i += 1;
    }
    out
}

/// [narrow, wide] × [no bias, bias] × [no activation, then `Epilogue::index`].
static COOP_DEFINES: [[[CoopDefines; 7]; 2]; 2] = {
    let mut table = [[[coop_defines(false, matmul_defines(false, "ACT_NONE")); 7]; 2]; 2];
    let mut w = 0;
    while w < 2 {
        let mut b = 0;
        while b < 2 {
            let mut a = 0;
            while a < 7 {
                table[w][b][a] = coop_defines(w == 1, matmul_defines(b == 1, super::ACT_NAMES[a]));
                a += 1;
            }
            b += 1;
        }
        w += 1;
    }
    table
};

/// Same layout as [`COOP_DEFINES`].
static COOP_NAMES: [[[&str; 7]; 2]; 2] =
    [super::epilogue_names!("matmul_coop64"), super::epilogue_names!("matmul_coop128")];

/// The coop matmul with the wide (128) or narrow (64) tile, a bias or not and activation `act`
/// (an `Epilogue::index`, 0 = none).
pub(super) fn coop_spec(wide: bool, bias: bool, act: usize) -> Spec {
    let rung = if wide { MatmulRung::Coop128 } else { MatmulRung::Coop64 };
    let (w, b) = (usize::from(wide), usize::from(bias));
    Spec {
        name: COOP_NAMES[w][b][act],
        file: "kernels/matmul/matmul_coop.wgsl",
        source: COOP_SRC,
        defines: &COOP_DEFINES[w][b][act],
        workgroup_size: [rung.threads(), 1, 1],
        bindings: if bias { IN3_OUT } else { IN2_OUT },
        params_size: size_of::<MatmulParams>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn define(d: &[(&str, &str)], name: &str) -> u32 {
        d.iter().find(|(n, _)| *n == name).and_then(|(_, v)| v.parse().ok()).unwrap()
    }

    #[test]
    fn tile_defines_agree_with_the_rungs() {
        for (wide, rung) in [(false, MatmulRung::Coop64), (true, MatmulRung::Coop128)] {
            let s = coop_spec(wide, true, 3);
            let d = s.defines;
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
            assert!(d.contains(&("ACT", "ACT_RELU")) && d.contains(&("HAS_BIAS", "true")));
        }
    }
}
