//! Kernel family "matmul": the matmul rungs ([`MatmulRung`]: the 64 tile, the 128 register
//! tile, the cooperative-matrix tiles), plain or with a fused epilogue (bias, activation), the
//! matrix-vector kernels for few rows (one product, or several over one A), split-K, and the
//! launch planner. Its keys ([`MatmulKernel`]), variants and params ([`MatmulParams`],
//! [`SplitKParams`], [`VecMultiParams`], [`CoopSplitParams`]).

mod coop;
mod coop_split;
mod launch;
#[cfg(test)]
mod launch_tests;
mod params;
#[cfg(test)]
mod params_tests;
mod rung;
mod splitk;
mod vec;
mod vec_multi;

use super::{name, params_of, Defines, Spec, IN2_OUT, IN3_OUT};
pub use coop_split::{coop_split_bindings, CoopSplitParams};
pub use launch::{matmul_launches, MatmulLaunch};
pub use params::{MatmulParams, MATMUL_TILE};
use rlx_ir::UnaryOp;
pub(crate) use rung::coop_available;
pub use rung::{MatmulRung, MIN_WIDE_WORKGROUPS};
pub use splitk::{
    partial_params, rest_params, split_count, split_parts, SplitKParams, SIMT_SPLIT_WORKGROUPS,
};
use std::borrow::Cow;
pub use vec::{vec_fits, vec_grid, B_F16, B_F32, VEC_MAX_ROWS};
pub use vec_multi::{multi_bindings, VecMultiParams, MULTI_MAX_PARTS};

// Both matmul kernels get what they share (matmul_common.wgsl) appended, as every kernel gets the
// prelude: their own line numbers stay those of their files.
const MATMUL_TILED_SRC: &str = kernel_src!(
    "matmul/matmul_tiled.wgsl",
    "include/matmul_common.wgsl",
    "include/matmul_batch.wgsl",
    "include/matmul_epilogue.wgsl"
);
const MATMUL_REG_SRC: &str = kernel_src!(
    "matmul/matmul_reg.wgsl",
    "include/matmul_common.wgsl",
    "include/matmul_batch.wgsl",
    "include/matmul_epilogue.wgsl"
);

unit_keys! {
    /// An activation a matmul epilogue applies (the ones rlx-opt's epilogue fusion produces).
    pub enum Epilogue {
        Gelu,
        GeluTanh,
        Relu,
        Silu,
        Sigmoid,
        Tanh,
    }
}

impl Epilogue {
    /// The epilogue computing `op`, if there is one.
    pub fn from_unary(op: UnaryOp) -> Option<Self> {
        match op {
            UnaryOp::Gelu => Some(Epilogue::Gelu),
            UnaryOp::GeluTanh => Some(Epilogue::GeluTanh),
            UnaryOp::Relu => Some(Epilogue::Relu),
            UnaryOp::Silu => Some(Epilogue::Silu),
            UnaryOp::Sigmoid => Some(Epilogue::Sigmoid),
            UnaryOp::Tanh => Some(Epilogue::Tanh),
            _ => None,
        }
    }

    /// The activation part of a variant name, the unary op's name (`gelu_tanh`).
    pub fn name(self) -> &'static str {
        match self {
            Epilogue::Gelu => "gelu",
            Epilogue::GeluTanh => "gelu_tanh",
            Epilogue::Relu => "relu",
            Epilogue::Silu => "silu",
            Epilogue::Sigmoid => "sigmoid",
            Epilogue::Tanh => "tanh",
        }
    }
}

/// Kernels of the matmul family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatmulKernel {
    /// `matmul_tiled.wgsl` ([`MatmulRung::Tiled64`]), plain or with a bias `[N]` and then the
    /// activation ([`MatmulParams`]). Bindings a, b, \[bias,\] c.
    Tiled { bias: bool, act: Option<Epilogue> },
    /// `matmul_reg.wgsl` ([`MatmulRung::Reg128`]), plain or with the same epilogues as the
    /// tiled matmul ([`MatmulParams`]). Bindings a, b, \[bias,\] c.
    Reg { bias: bool, act: Option<Epilogue> },
    /// `matmul_coop.wgsl` ([`MatmulRung::Coop128`] when `wide`, else [`MatmulRung::Coop64`]):
    /// tensor cores, f16 operands, f32 accumulation, the same epilogues ([`MatmulParams`]).
    /// Bindings a, b, \[bias,\] c. `f16_b`: B is bound as the f16 it is stored in (an
    /// absorbed cast, see `lower::matmul::absorbed_casts`).
    Coop { wide: bool, bias: bool, act: Option<Epilogue>, f16_b: bool },
    /// `matmul_coop.wgsl` with `matmul_coop_split.wgsl`: up to three matmuls of one A in one
    /// launch, each to its own output with its own bias (the split-QKV epilogue)
    /// ([`CoopSplitParams`]). Bindings a, b0, b1, b2, c0, c1, c2 [, bias0, bias1, bias2].
    /// `f16_b` as for `Coop`.
    CoopSplit { wide: bool, bias: bool, f16_b: bool },
    /// `matmul_vec.wgsl`: few rows times a transposed B, one weight row read once per output
    /// column, the same epilogues ([`MatmulParams`]). Bindings a, b, \[bias,\] c.
    Vec { bias: bool, act: Option<Epilogue>, f16_b: bool },
    /// `matmul_vec_multi.wgsl`, split form: up to three weights times one A in one launch,
    /// each product to its own output with its own bias (q, k and v) ([`VecMultiParams`]).
    /// Bindings a, b0, b1, b2, c0, c1, c2 [, bias0, bias1, bias2].
    /// `norm`: A is RMSNorm(x)·γ, computed by the launch from x, γ (bound last) and eps.
    VecSplit { bias: bool, f16_b: bool, norm: bool },
    /// `matmul_vec_multi.wgsl`, gated form: `act(a · b0ᵀ) ⊙ (a · b1ᵀ)` in one launch (an MLP's
    /// gate, up and product) ([`VecMultiParams`]). Bindings a, b0, b1, c.
    /// `norm` as for `VecSplit`.
    VecGated { act: Option<Epilogue>, f16_b: bool, norm: bool },
    /// Split-K's second step (`matmul_splitk.wgsl`): the sum of a matmul's partial products
    /// over slices of K, then the bias and activation ([`SplitKParams`]). Bindings parts,
    /// \[bias,\] c.
    SplitK { bias: bool, act: Option<Epilogue> },
}

impl MatmulKernel {
    /// The portable shared-memory tiled f32 matmul, no epilogue.
    pub const TILED_F32: MatmulKernel = MatmulKernel::Tiled { bias: false, act: None };
}

/// `<stem>[_bias][_<act>]_f32`: the name of a matmul variant with an epilogue.
pub(crate) fn epilogue_name(stem: &str, bias: bool, act: Option<Epilogue>) -> Cow<'static, str> {
    name(&[stem, if bias { "bias" } else { "" }, act.map_or("", Epilogue::name), "f32"])
}

/// The `ACT` define: `ACT_NONE` or the activation's constant in `matmul_epilogue.wgsl`.
pub(crate) fn act_define(act: Option<Epilogue>) -> (&'static str, Cow<'static, str>) {
    ("ACT", super::upper("ACT_", act.map_or("none", Epilogue::name)))
}

/// The epilogue defines (see `matmul_epilogue.wgsl`): the activation, and the bias bound at
/// `bias_binding` with the output after it (or the output there, without a bias).
pub(crate) fn epilogue_defines(bias: bool, act: Option<Epilogue>, bias_binding: u32) -> Defines {
    let pick = |a: &'static str, b: &'static str| Cow::Borrowed(if bias { a } else { b });
    let decl = format!("@group(0) @binding({bias_binding}) var<storage, read> bias: array<f32>;");
    vec![
        act_define(act),
        ("HAS_BIAS", pick("true", "false")),
        ("BIAS_DECL", if bias { Cow::Owned(decl) } else { Cow::Borrowed("") }),
        ("BIAS_AT", pick("return bias[col];", "return 0.0;")),
        ("C_BINDING", Cow::Owned((bias_binding + u32::from(bias)).to_string())),
    ]
}

/// The defines of `matmul_tiled.wgsl` (see that file): the epilogue (bias at binding 2) and the
/// element types the operands are read as.
pub(crate) fn matmul_defines(
    bias: bool,
    act: Option<Epilogue>,
    ab: &'static str,
    b: &'static str,
) -> Defines {
    let mut d = epilogue_defines(bias, act, 2);
    d.extend([("AB_ELEM", Cow::Borrowed(ab)), ("B_ELEM", Cow::Borrowed(b))]);
    d
}

/// The f32 matmul of `rung` with a bias or not and activation `act`. Both f32 rungs take the
/// same defines, bindings and params.
fn matmul_spec(rung: MatmulRung, bias: bool, act: Option<Epilogue>) -> Spec {
    let (stem, file, source) = match rung {
        MatmulRung::Tiled64 => ("matmul_tiled", "kernels/matmul/matmul_tiled.wgsl", MATMUL_TILED_SRC),
        MatmulRung::Reg128 => ("matmul_reg", "kernels/matmul/matmul_reg.wgsl", MATMUL_REG_SRC),
        MatmulRung::Coop64 | MatmulRung::Coop128 => {
            return coop::coop_spec(rung == MatmulRung::Coop128, bias, act, false)
        }
    };
    Spec {
        name: epilogue_name(stem, bias, act),
        file,
        source,
        defines: matmul_defines(bias, act, "f32", "f32"),
        workgroup_size: [16, 16, 1],
        bindings: if bias { IN3_OUT } else { IN2_OUT },
        params: params_of::<MatmulParams>(),
    }
}

/// The variant of `k`.
pub(crate) fn spec(k: MatmulKernel) -> Spec {
    match k {
        MatmulKernel::Tiled { bias, act } => matmul_spec(MatmulRung::Tiled64, bias, act),
        MatmulKernel::Reg { bias, act } => matmul_spec(MatmulRung::Reg128, bias, act),
        MatmulKernel::Coop { wide, bias, act, f16_b } => coop::coop_spec(wide, bias, act, f16_b),
        MatmulKernel::Vec { bias, act, f16_b } => vec::vec_spec(bias, act, f16_b),
        MatmulKernel::CoopSplit { wide, bias, f16_b } => coop_split::coop_split_spec(wide, bias, f16_b),
        MatmulKernel::VecSplit { bias, f16_b, norm } => vec_multi::split_spec(bias, f16_b, norm),
        MatmulKernel::VecGated { act, f16_b, norm } => vec_multi::gated_spec(act, f16_b, norm),
        MatmulKernel::SplitK { bias, act } => splitk::splitk_spec(bias, act),
    }
}

/// No activation, then every epilogue.
fn acts() -> impl Iterator<Item = Option<Epilogue>> {
    std::iter::once(None).chain(Epilogue::ALL.map(Some))
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<MatmulKernel> {
    let mut keys = Vec::new();
    for bias in [false, true] {
        keys.extend(acts().map(|act| MatmulKernel::Tiled { bias, act }));
        keys.extend(acts().map(|act| MatmulKernel::Reg { bias, act }));
        keys.extend(acts().map(|act| MatmulKernel::SplitK { bias, act }));
        for (wide, f16_b) in [(false, false), (true, false), (false, true), (true, true)] {
            keys.extend(acts().map(|act| MatmulKernel::Coop { wide, bias, act, f16_b }));
            keys.push(MatmulKernel::CoopSplit { wide, bias, f16_b });
        }
        for f16_b in [false, true] {
            keys.extend(acts().map(|act| MatmulKernel::Vec { bias, act, f16_b }));
            keys.extend([false, true].map(|norm| MatmulKernel::VecSplit { bias, f16_b, norm }));
        }
    }
    for norm in [false, true] {
        for f16_b in [false, true] {
            keys.extend(acts().map(|act| MatmulKernel::VecGated { act, f16_b, norm }));
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_epilogue_has_its_own_variant() {
        let names: Vec<Cow<'static, str>> = keys().into_iter().map(|k| spec(k).name).collect();
        // Per bias: 7 tiled, 7 reg, 7 split-K, 4 × (7 coop + 1 coop split) (two tiles, B as f32
        // or f16), 2 × (7 vec + 2 vec split); then 28 gated.
        assert_eq!(names.len(), 2 * (7 + 7 + 7 + 4 * 8 + 2 * 9) + 28);
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        let has = |n: &str| names.iter().any(|x| x == n);
        assert!(has("matmul_vec_split_bias_f16w_f32") && has("matmul_vec_gated_silu_f32"));
        assert!(has("matmul_reg_f32") && has("matmul_reg_bias_tanh_f32"));
        assert!(has("matmul_coop64_f16w_f32") && has("matmul_coop128_split_bias_f16w_f32"));
        assert!(has("matmul_tiled_bias_gelu_tanh_f32") && has("matmul_tiled_silu_f32"));
        assert_eq!(spec(MatmulKernel::TILED_F32).name, "matmul_tiled_f32");
        let relu = MatmulKernel::Tiled { bias: true, act: Some(Epilogue::Relu) };
        assert_eq!(spec(relu).name, "matmul_tiled_bias_relu_f32");
        assert_eq!(spec(MatmulKernel::Tiled { bias: true, act: None }).bindings.len(), 4);
        assert_eq!(spec(MatmulKernel::Tiled { bias: false, act: Some(Epilogue::Tanh) }).bindings.len(), 3);
    }

    #[test]
    fn epilogue_defines_name_the_activation() {
        for a in Epilogue::ALL {
            let v = spec(MatmulKernel::Tiled { bias: false, act: Some(a) });
            let act = v.define("ACT").unwrap();
            let stem = v.name.trim_start_matches("matmul_tiled_").trim_end_matches("_f32");
            assert_eq!(act, format!("ACT_{}", stem.to_ascii_uppercase()), "{}", v.name);
            let r = spec(MatmulKernel::Reg { bias: true, act: Some(a) });
            let stem = r.name.trim_start_matches("matmul_reg_bias_").trim_end_matches("_f32");
            assert_eq!(act, format!("ACT_{}", stem.to_ascii_uppercase()), "{}", r.name);
            assert_eq!(r.defines, spec(MatmulKernel::Tiled { bias: true, act: Some(a) }).defines);
        }
        for (op, e) in [(UnaryOp::Gelu, Some(Epilogue::Gelu)), (UnaryOp::Exp, None)] {
            assert_eq!(Epilogue::from_unary(op), e);
        }
    }
}
