//! Kernel family "nn": the matmul rungs ([`MatmulRung`]: the 64 tile, plain as
//! `KernelKey::MatmulTiledF32`, and the 128 register tile), plain or with a fused epilogue (bias,
//! activation), softmax (`KernelKey::SoftmaxRowF32`) and log-softmax, the row norms (layer norm,
//! RMS norm, each optionally of x + residual), attention and RoPE. Its keys ([`NnKernel`]),
//! variants and params structs ([`MatmulParams`], [`SoftmaxParams`], [`NormParams`],
//! [`AttentionParams`], [`RopeParams`]).

use super::{size_of, Spec, IN2_OUT, IN3_OUT, IN4_OUT, IN_OUT};
use rlx_ir::UnaryOp;

#[path = "attention_coop.rs"]
mod attention_coop;
#[path = "attention_split.rs"]
mod attention_split;
#[path = "matmul_coop.rs"]
mod matmul_coop;
#[path = "matmul_coop_split.rs"]
mod matmul_coop_split;
#[path = "matmul_params.rs"]
mod matmul_params;
#[path = "matmul_rung.rs"]
mod matmul_rung;
#[path = "matmul_splitk.rs"]
mod matmul_splitk;
#[path = "matmul_vec.rs"]
mod matmul_vec;
#[path = "matmul_vec_multi.rs"]
mod matmul_vec_multi;
#[path = "nn_params.rs"]
mod params;
pub use attention_coop::{CoopHead, COOP_ATTN_ROWS};
pub use attention_split::{
    combine_launches, partial_bytes, split_chunks, split_fits, AttnCombineParams, SPLIT_CHUNK,
};
pub use matmul_coop_split::{coop_split_bindings, CoopSplitParams};
pub use matmul_params::{MatmulParams, MATMUL_TILE};
pub(crate) use matmul_rung::coop_available;
pub use matmul_rung::MatmulRung;
pub use matmul_splitk::{partial_params, split_count, SplitKParams};
pub use matmul_vec::{vec_fits, vec_grid, B_F16, B_F32, VEC_MAX_ROWS};
pub use matmul_vec_multi::{multi_bindings, VecMultiParams, MULTI_MAX_PARTS};
pub use params::{
    attention_launches, matmul_launches, AttentionParams, MatmulLaunch, NormParams, RopeParams, SoftmaxParams,
};

// Both matmul kernels get what they share (matmul_common.wgsl) appended, as every kernel gets the
// prelude: their own line numbers stay those of their files.
const MATMUL_TILED_SRC: &str = concat!(
    include_str!("../../kernels/matmul/matmul_tiled.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_common.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_batch.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_epilogue.wgsl")
);
const MATMUL_REG_SRC: &str = concat!(
    include_str!("../../kernels/matmul/matmul_reg.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_common.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_batch.wgsl"),
    "\n",
    include_str!("../../kernels/include/matmul_epilogue.wgsl")
);
const SOFTMAX_ROW_SRC: &str = include_str!("../../kernels/norm/softmax_row.wgsl");
const NORM_ROW_SRC: &str = include_str!("../../kernels/norm/norm_row.wgsl");
const ATTENTION_SRC: &str = concat!(
    include_str!("../../kernels/attention/attention.wgsl"),
    "\n",
    include_str!("../../kernels/include/attention_common.wgsl")
);
const ROPE_SRC: &str = include_str!("../../kernels/rope/rope.wgsl");

/// An activation a matmul epilogue applies (the ones rlx-opt's epilogue fusion produces).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    Gelu,
    GeluTanh,
    Relu,
    Silu,
    Sigmoid,
    Tanh,
}

impl Epilogue {
    pub const ALL: [Epilogue; 6] = [
        Epilogue::Gelu,
        Epilogue::GeluTanh,
        Epilogue::Relu,
        Epilogue::Silu,
        Epilogue::Sigmoid,
        Epilogue::Tanh,
    ];

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

    /// 1-based position: the row of the matmul tables (0 is "no activation").
    fn index(self) -> usize {
        match self {
            Epilogue::Gelu => 1,
            Epilogue::GeluTanh => 2,
            Epilogue::Relu => 3,
            Epilogue::Silu => 4,
            Epilogue::Sigmoid => 5,
            Epilogue::Tanh => 6,
        }
    }
}

/// Which row norm a [`NnKernel::Norm`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormRow {
    /// Bindings x, gamma, beta, out.
    LayerNorm,
    /// Bindings x, gamma, out.
    RmsNorm,
    /// Layer norm of x + residual. Bindings x, residual, gamma, beta, out.
    AddLayerNorm,
    /// RMS norm of x + residual. Bindings x, residual, gamma, out.
    AddRmsNorm,
}

impl NormRow {
    pub const ALL: [NormRow; 4] =
        [NormRow::LayerNorm, NormRow::RmsNorm, NormRow::AddLayerNorm, NormRow::AddRmsNorm];
}

/// The block of output columns one attention workgroup owns (the `DMAX` define): the smallest
/// that holds the value head dim, or the largest, with the columns split across workgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttnBlock {
    D64,
    D128,
    D256,
}

impl AttnBlock {
    pub const ALL: [AttnBlock; 3] = [AttnBlock::D64, AttnBlock::D128, AttnBlock::D256];

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

/// Kernels of the nn family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NnKernel {
    /// `matmul_tiled.wgsl` + bias `[N]`, then the activation if any ([`MatmulParams`]).
    /// Bindings a, b, bias, c.
    MatmulBias(Option<Epilogue>),
    /// `matmul_tiled.wgsl` then an activation, no bias ([`MatmulParams`]). Bindings a, b, c.
    MatmulAct(Epilogue),
    /// `matmul_reg.wgsl` ([`MatmulRung::Reg128`]), plain or with the same epilogues as the
    /// tiled matmul ([`MatmulParams`]). Bindings a, b, [bias,] c.
    MatmulReg { bias: bool, act: Option<Epilogue> },
    /// `matmul_coop.wgsl` ([`MatmulRung::Coop128`] when `wide`, else [`MatmulRung::Coop64`]):
    /// tensor cores, f16 operands, f32 accumulation, the same epilogues ([`MatmulParams`]).
    /// Bindings a, b, [bias,] c.
    MatmulCoop { wide: bool, bias: bool, act: Option<Epilogue> },
    /// `matmul_coop.wgsl` with `matmul_coop_split.wgsl`: up to three matmuls of one A in one
    /// launch, each to its own output with its own bias (the split-QKV epilogue)
    /// ([`CoopSplitParams`]). Bindings a, b0, b1, b2, c0, c1, c2 [, bias0, bias1, bias2].
    MatmulCoopSplit { wide: bool, bias: bool },
    /// `matmul_vec.wgsl`: few rows times a transposed B, one weight row read once per output
    /// column, the same epilogues ([`MatmulParams`]). Bindings a, b, [bias,] c.
    MatmulVec { bias: bool, act: Option<Epilogue>, f16_b: bool },
    /// `matmul_vec_multi.wgsl`, split form: up to three weights times one A in one launch,
    /// each product to its own output with its own bias (q, k and v) ([`VecMultiParams`]).
    /// Bindings a, b0, b1, b2, c0, c1, c2 [, bias0, bias1, bias2].
    /// `norm`: A is RMSNorm(x)·γ, computed by the launch from x, γ (bound last) and eps.
    MatmulVecSplit { bias: bool, f16_b: bool, norm: bool },
    /// `matmul_vec_multi.wgsl`, gated form: `act(a · b0ᵀ) ⊙ (a · b1ᵀ)` in one launch (an MLP's
    /// gate, up and product) ([`VecMultiParams`]). Bindings a, b0, b1, c.
    /// `norm` as for `MatmulVecSplit`.
    MatmulVecGated { act: Option<Epilogue>, f16_b: bool, norm: bool },
    /// Split-K's second step (`matmul_splitk.wgsl`): the sum of a matmul's partial products
    /// over slices of K, then the bias and activation ([`SplitKParams`]). Bindings parts,
    /// [bias,] c.
    MatmulSplitK { bias: bool, act: Option<Epilogue> },
    /// Log-softmax over the last axis, one workgroup per row ([`SoftmaxParams`]).
    LogSoftmaxRow,
    /// A row norm, one workgroup per row ([`NormParams`]).
    Norm(NormRow),
    /// Attention with online softmax ([`AttentionParams`]). Bindings q, k, v, mask, out, kv
    /// lengths.
    Attention(AttnBlock),
    /// Flash attention on cooperative matrices (`attention_coop.wgsl`): f16 operands, f32
    /// accumulation and statistics ([`AttentionParams`]). Bindings q, k, v, mask, out, kv
    /// lengths.
    AttentionCoop(CoopHead),
    /// Split-key attention for few query rows, first launch: per-chunk partials
    /// ([`AttentionParams`]). Bindings q, k, v, mask, out, kv lengths, partials.
    AttentionSplit,
    /// Split-key attention, second launch: merges the partials ([`AttnCombineParams`]).
    /// Bindings partials, out.
    AttentionCombine,
    /// RoPE ([`RopeParams`]). Bindings x, cos, sin, out.
    Rope,
}

pub(super) type Defines = [(&'static str, &'static str); 7];

/// The ACT define of each epilogue column: no activation, then [`Epilogue::index`] order.
pub(super) const ACT_NAMES: [&str; 7] =
    ["ACT_NONE", "ACT_GELU", "ACT_GELU_TANH", "ACT_RELU", "ACT_SILU", "ACT_SIGMOID", "ACT_TANH"];

/// The variant names of a matmul-family kernel `stem` with every epilogue: [no bias, bias] ×
/// [no activation, then [`Epilogue::index`]], e.g. `stem_bias_gelu_tanh_f32`.
macro_rules! epilogue_names {
    ($stem:literal) => {
        [
            [
                concat!($stem, "_f32"),
                concat!($stem, "_gelu_f32"),
                concat!($stem, "_gelu_tanh_f32"),
                concat!($stem, "_relu_f32"),
                concat!($stem, "_silu_f32"),
                concat!($stem, "_sigmoid_f32"),
                concat!($stem, "_tanh_f32"),
            ],
            [
                concat!($stem, "_bias_f32"),
                concat!($stem, "_bias_gelu_f32"),
                concat!($stem, "_bias_gelu_tanh_f32"),
                concat!($stem, "_bias_relu_f32"),
                concat!($stem, "_bias_silu_f32"),
                concat!($stem, "_bias_sigmoid_f32"),
                concat!($stem, "_bias_tanh_f32"),
            ],
        ]
    };
}
pub(super) use epilogue_names;

/// The epilogue defines of `matmul_tiled.wgsl` (see that file).
pub(super) const fn matmul_defines(bias: bool, act: &'static str) -> Defines {
    if bias {
        [
            ("ACT", act),
            ("HAS_BIAS", "true"),
            ("BIAS_DECL", "@group(0) @binding(2) var<storage, read> bias: array<f32>;"),
            ("BIAS_AT", "return bias[col];"),
            ("C_BINDING", "3"),
            ("AB_ELEM", "f32"),
            ("B_ELEM", "f32"),
        ]
    } else {
        [
            ("ACT", act),
            ("HAS_BIAS", "false"),
            ("BIAS_DECL", ""),
            ("BIAS_AT", "return 0.0;"),
            ("C_BINDING", "2"),
            ("AB_ELEM", "f32"),
            ("B_ELEM", "f32"),
        ]
    }
}

/// Rows: no bias, then bias. Columns: no activation, then [`Epilogue::index`].
static MATMUL_DEFINES: [[Defines; 7]; 2] = {
    let mut table = [[matmul_defines(false, "ACT_NONE"); 7]; 2];
    let mut i = 0;
    while i < 7 {
        table[0][i] = matmul_defines(false, ACT_NAMES[i]);
        table[1][i] = matmul_defines(true, ACT_NAMES[i]);
        i += 1;
    }
    table
};

/// Per rung ([`MatmulRung::ALL`] order), rows: no bias, then bias. Columns: no activation, then
/// [`Epilogue::index`].
static MATMUL_NAMES: [[[&str; 7]; 2]; 2] = [epilogue_names!("matmul_tiled"), epilogue_names!("matmul_reg")];

const RES_DECL: &str = "@group(0) @binding(1) var<storage, read> residual: array<f32>;";

fn norm_spec(row: NormRow) -> Spec {
    // (name, defines, bindings)
    let (name, defines, bindings): (&'static str, &'static [(&'static str, &'static str)], _) = match row {
        NormRow::LayerNorm => (
            "nn_layer_norm_f32",
            &[
                ("ADD", "false"),
                ("LAYER", "true"),
                ("RES_DECL", ""),
                ("RES_AT", "return 0.0;"),
                ("G_BINDING", "1"),
                ("BETA_DECL", "@group(0) @binding(2) var<storage, read> beta: array<f32>;"),
                ("BETA_AT", "return beta[j];"),
                ("OUT_BINDING", "3"),
            ],
            IN3_OUT,
        ),
        NormRow::RmsNorm => (
            "nn_rms_norm_f32",
            &[
                ("ADD", "false"),
                ("LAYER", "false"),
                ("RES_DECL", ""),
                ("RES_AT", "return 0.0;"),
                ("G_BINDING", "1"),
                ("BETA_DECL", ""),
                ("BETA_AT", "return 0.0;"),
                ("OUT_BINDING", "2"),
            ],
            IN2_OUT,
        ),
        NormRow::AddLayerNorm => (
            "nn_add_layer_norm_f32",
            &[
                ("ADD", "true"),
                ("LAYER", "true"),
                ("RES_DECL", RES_DECL),
                ("RES_AT", "return residual[i];"),
                ("G_BINDING", "2"),
                ("BETA_DECL", "@group(0) @binding(3) var<storage, read> beta: array<f32>;"),
                ("BETA_AT", "return beta[j];"),
                ("OUT_BINDING", "4"),
            ],
            IN4_OUT,
        ),
        NormRow::AddRmsNorm => (
            "nn_add_rms_norm_f32",
            &[
                ("ADD", "true"),
                ("LAYER", "false"),
                ("RES_DECL", RES_DECL),
                ("RES_AT", "return residual[i];"),
                ("G_BINDING", "2"),
                ("BETA_DECL", ""),
                ("BETA_AT", "return 0.0;"),
                ("OUT_BINDING", "3"),
            ],
            IN3_OUT,
        ),
    };
    Spec {
        name,
        file: "kernels/norm/norm_row.wgsl",
        source: NORM_ROW_SRC,
        defines,
        workgroup_size: [256, 1, 1],
        bindings,
        params_size: size_of::<NormParams>(),
    }
}

/// The matmul of `rung` with a bias or not and activation `act` (an [`Epilogue::index`], 0 =
/// none). Both rungs take the same defines, bindings and params.
fn matmul_spec(rung: MatmulRung, bias: bool, act: usize) -> Spec {
    let row = usize::from(bias);
    let (r, file, source) = match rung {
        MatmulRung::Tiled64 => (0, "kernels/matmul/matmul_tiled.wgsl", MATMUL_TILED_SRC),
        MatmulRung::Reg128 => (1, "kernels/matmul/matmul_reg.wgsl", MATMUL_REG_SRC),
        MatmulRung::Coop64 | MatmulRung::Coop128 => {
            return matmul_coop::coop_spec(rung == MatmulRung::Coop128, bias, act)
        }
    };
    Spec {
        name: MATMUL_NAMES[r][row][act],
        file,
        source,
        defines: &MATMUL_DEFINES[row][act],
        workgroup_size: [16, 16, 1],
        bindings: if bias { IN3_OUT } else { IN2_OUT },
        params_size: size_of::<MatmulParams>(),
    }
}

/// The portable shared-memory tiled f32 matmul, no epilogue ([`MatmulParams`]).
pub(crate) fn matmul_tiled() -> Spec {
    matmul_spec(MatmulRung::Tiled64, false, 0)
}

/// Softmax or log-softmax over the last axis, one workgroup per row ([`SoftmaxParams`]).
fn softmax_spec(log: bool) -> Spec {
    let (name, defines): (_, super::Defines) = if log {
        ("log_softmax_row_f32", &[("LOG", "true")])
    } else {
        ("softmax_row_f32", &[("LOG", "false")])
    };
    Spec::wg256(
        (name, defines),
        "kernels/norm/softmax_row.wgsl",
        SOFTMAX_ROW_SRC,
        IN_OUT,
        size_of::<SoftmaxParams>(),
    )
}

/// Softmax over the last axis, one workgroup per row ([`SoftmaxParams`]).
pub(crate) fn softmax_row() -> Spec {
    softmax_spec(false)
}

pub(crate) fn spec(k: NnKernel) -> Spec {
    match k {
        NnKernel::MatmulBias(act) => matmul_spec(MatmulRung::Tiled64, true, act.map_or(0, Epilogue::index)),
        NnKernel::MatmulAct(act) => matmul_spec(MatmulRung::Tiled64, false, act.index()),
        NnKernel::MatmulReg { bias, act } => {
            matmul_spec(MatmulRung::Reg128, bias, act.map_or(0, Epilogue::index))
        }
        NnKernel::MatmulCoop { wide, bias, act } => {
            matmul_coop::coop_spec(wide, bias, act.map_or(0, Epilogue::index))
        }
        NnKernel::MatmulVec { bias, act, f16_b } => {
            matmul_vec::vec_spec(bias, act.map_or(0, Epilogue::index), f16_b)
        }
        NnKernel::MatmulCoopSplit { wide, bias } => matmul_coop_split::coop_split_spec(wide, bias),
        NnKernel::MatmulVecSplit { bias, f16_b, norm } => matmul_vec_multi::split_spec(bias, f16_b, norm),
        NnKernel::MatmulVecGated { act, f16_b, norm } => matmul_vec_multi::gated_spec(act, f16_b, norm),
        NnKernel::MatmulSplitK { bias, act } => {
            matmul_splitk::splitk_spec(bias, act.map_or(0, Epilogue::index))
        }
        NnKernel::LogSoftmaxRow => softmax_spec(true),
        NnKernel::Norm(row) => norm_spec(row),
        NnKernel::Attention(block) => {
            let parts: (_, super::Defines) = match block {
                AttnBlock::D64 => ("nn_attention_d64_f32", &[("DMAX", "64u")]),
                AttnBlock::D128 => ("nn_attention_d128_f32", &[("DMAX", "128u")]),
                AttnBlock::D256 => ("nn_attention_d256_f32", &[("DMAX", "256u")]),
            };
            let size = size_of::<AttentionParams>();
            Spec::wg256(parts, "kernels/attention/attention.wgsl", ATTENTION_SRC, super::ATTENTION_BINDINGS, size)
        }
        NnKernel::AttentionCoop(head) => attention_coop::spec(head),
        NnKernel::AttentionSplit => attention_split::split_spec(),
        NnKernel::AttentionCombine => attention_split::combine_spec(),
        NnKernel::Rope => {
            let size = size_of::<RopeParams>();
            Spec::wg256(("nn_rope_f32", &[]), "kernels/rope/rope.wgsl", ROPE_SRC, IN3_OUT, size)
        }
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<NnKernel> {
    let mut keys = vec![NnKernel::MatmulBias(None)];
    keys.extend(Epilogue::ALL.map(|a| NnKernel::MatmulBias(Some(a))));
    keys.extend(Epilogue::ALL.map(NnKernel::MatmulAct));
    for bias in [false, true] {
        keys.push(NnKernel::MatmulReg { bias, act: None });
        keys.extend(Epilogue::ALL.map(|a| NnKernel::MatmulReg { bias, act: Some(a) }));
    }
    for wide in [false, true] {
        for bias in [false, true] {
            keys.push(NnKernel::MatmulCoop { wide, bias, act: None });
            keys.extend(Epilogue::ALL.map(|a| NnKernel::MatmulCoop { wide, bias, act: Some(a) }));
            keys.push(NnKernel::MatmulCoopSplit { wide, bias });
        }
    }
    for bias in [false, true] {
        for f16_b in [false, true] {
            keys.push(NnKernel::MatmulVec { bias, act: None, f16_b });
            keys.extend(Epilogue::ALL.map(|a| NnKernel::MatmulVec { bias, act: Some(a), f16_b }));
            keys.push(NnKernel::MatmulVecSplit { bias, f16_b, norm: false });
            keys.push(NnKernel::MatmulVecSplit { bias, f16_b, norm: true });
        }
    }
    for norm in [false, true] {
        for f16_b in [false, true] {
            keys.push(NnKernel::MatmulVecGated { act: None, f16_b, norm });
            keys.extend(Epilogue::ALL.map(|a| NnKernel::MatmulVecGated { act: Some(a), f16_b, norm }));
        }
    }
    for bias in [false, true] {
        keys.push(NnKernel::MatmulSplitK { bias, act: None });
        keys.extend(Epilogue::ALL.map(|a| NnKernel::MatmulSplitK { bias, act: Some(a) }));
    }
    keys.push(NnKernel::LogSoftmaxRow);
    keys.extend(NormRow::ALL.map(NnKernel::Norm));
    keys.extend(AttnBlock::ALL.map(NnKernel::Attention));
    keys.extend(CoopHead::ALL.map(NnKernel::AttentionCoop));
    keys.push(NnKernel::AttentionSplit);
    keys.push(NnKernel::AttentionCombine);
    keys.push(NnKernel::Rope);
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_epilogue_has_its_own_variant() {
        let names: Vec<&str> = keys().into_iter().map(|k| spec(k).name).collect();
        // Then 14 matrix-vector variants on f16 weights, the two split-key attention launches,
        // the grouped matrix-vector ones (8 split, 28 gated, half of them with the RMS norm) and
        // the 4 split coop launches.
        assert_eq!(names.len(), 7 + 6 + 14 + 28 + 14 + 14 + 1 + 4 + 3 + 2 + 1 + 14 + 2 + 8 + 28 + 4);
        assert!(
            names.contains(&"matmul_vec_split_bias_f16w_f32") && names.contains(&"matmul_vec_gated_silu_f32")
        );
        assert!(names.contains(&"matmul_reg_f32") && names.contains(&"matmul_reg_bias_tanh_f32"));
        assert!(names.contains(&"matmul_tiled_bias_gelu_tanh_f32"));
        assert!(names.contains(&"matmul_tiled_silu_f32"));
        // The plain matmul and softmax have keys of their own (`KernelKey::MatmulTiledF32`, …).
        assert!(!names.contains(&"matmul_tiled_f32"));
        assert_eq!(matmul_tiled().name, "matmul_tiled_f32");
        assert_eq!(softmax_row().name, "softmax_row_f32");
        assert_eq!(spec(NnKernel::MatmulBias(Some(Epilogue::Relu))).name, "matmul_tiled_bias_relu_f32");
        assert_eq!(spec(NnKernel::MatmulBias(None)).bindings.len(), 4);
        assert_eq!(spec(NnKernel::MatmulAct(Epilogue::Tanh)).bindings.len(), 3);
    }

    #[test]
    fn epilogue_defines_name_the_activation() {
        for a in Epilogue::ALL {
            let v = spec(NnKernel::MatmulAct(a));
            let act = v.defines.iter().find(|(n, _)| *n == "ACT").map(|(_, v)| *v).unwrap();
            let stem = v.name.trim_start_matches("matmul_tiled_").trim_end_matches("_f32");
            assert_eq!(act, format!("ACT_{}", stem.to_ascii_uppercase()), "{}", v.name);
            let r = spec(NnKernel::MatmulReg { bias: true, act: Some(a) });
            let stem = r.name.trim_start_matches("matmul_reg_bias_").trim_end_matches("_f32");
            assert_eq!(act, format!("ACT_{}", stem.to_ascii_uppercase()), "{}", r.name);
            assert_eq!(r.defines, spec(NnKernel::MatmulBias(Some(a))).defines);
        }
        for (op, e) in [(UnaryOp::Gelu, Some(Epilogue::Gelu)), (UnaryOp::Exp, None)] {
            assert_eq!(Epilogue::from_unary(op), e);
        }
    }

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
}
