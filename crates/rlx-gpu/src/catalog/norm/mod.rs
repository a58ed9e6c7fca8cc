//! Kernel family "norm": softmax and log-softmax over the last axis (`softmax_row.wgsl`) and
//! the row norms (`norm_row.wgsl`: layer norm, RMS norm, each optionally of x + residual), one
//! workgroup per row. Its keys ([`NormKernel`]), variants and params ([`params`]).

pub mod params;
#[cfg(test)]
mod params_tests;

use super::{defines, name, params_of, Spec, IN2_OUT, IN3_OUT, IN4_OUT, IN_OUT};
pub use params::{NormParams, SoftmaxParams};
use std::borrow::Cow;

const SOFTMAX_ROW_SRC: &str = kernel_src!("norm/softmax_row.wgsl", "include/row_main.wgsl");
const NORM_ROW_SRC: &str = kernel_src!("norm/norm_row.wgsl", "include/row_main.wgsl");

unit_keys! {
    /// Which row norm a [`NormKernel::Row`] computes.
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
}

/// Kernels of the norm family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormKernel {
    /// Softmax over the last axis, one workgroup per row ([`SoftmaxParams`]).
    Softmax,
    /// Log-softmax over the last axis, one workgroup per row ([`SoftmaxParams`]).
    LogSoftmax,
    /// A row norm, one workgroup per row ([`NormParams`]).
    Row(NormRow),
}

impl NormRow {
    /// The kernel part of the variant name.
    fn name(self) -> &'static str {
        match self {
            NormRow::LayerNorm => "layer_norm",
            NormRow::RmsNorm => "rms_norm",
            NormRow::AddLayerNorm => "add_layer_norm",
            NormRow::AddRmsNorm => "add_rms_norm",
        }
    }
}

const RES_DECL: &str = "@group(0) @binding(1) var<storage, read> residual: array<f32>;";

fn norm_spec(row: NormRow) -> Spec {
    let add = matches!(row, NormRow::AddLayerNorm | NormRow::AddRmsNorm);
    let layer = matches!(row, NormRow::LayerNorm | NormRow::AddLayerNorm);
    let pick = |yes: bool, a: &'static str, b: &'static str| Cow::Borrowed(if yes { a } else { b });
    // x, [residual,] gamma, [beta,] out.
    let gamma = 1 + u32::from(add);
    let out = gamma + 1 + u32::from(layer);
    let beta_decl = format!("@group(0) @binding({}) var<storage, read> beta: array<f32>;", gamma + 1);
    let defines = vec![
        ("ADD", pick(add, "true", "false")),
        ("LAYER", pick(layer, "true", "false")),
        ("RES_DECL", pick(add, RES_DECL, "")),
        ("RES_AT", pick(add, "return residual[i];", "return 0.0;")),
        ("G_BINDING", Cow::Owned(gamma.to_string())),
        ("BETA_DECL", if layer { Cow::Owned(beta_decl) } else { Cow::Borrowed("") }),
        ("BETA_AT", pick(layer, "return beta[j];", "return 0.0;")),
        ("OUT_BINDING", Cow::Owned(out.to_string())),
    ];
    Spec {
        name: name(&[row.name(), "f32"]),
        file: "kernels/norm/norm_row.wgsl",
        source: NORM_ROW_SRC,
        defines,
        workgroup_size: [256, 1, 1],
        bindings: [IN_OUT, IN2_OUT, IN3_OUT, IN4_OUT][out as usize - 1],
        params: params_of::<NormParams>(),
    }
}

/// The variant of `k`.
pub(crate) fn spec(k: NormKernel) -> Spec {
    let softmax = |kernel: &str, log: &'static str| {
        let parts = (name(&[kernel, "f32"]), defines(&[("LOG", log)]));
        Spec::wg256(
            parts,
            "kernels/norm/softmax_row.wgsl",
            SOFTMAX_ROW_SRC,
            IN_OUT,
            params_of::<SoftmaxParams>(),
        )
    };
    match k {
        NormKernel::Softmax => softmax("softmax_row", "false"),
        NormKernel::LogSoftmax => softmax("log_softmax_row", "true"),
        NormKernel::Row(row) => norm_spec(row),
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<NormKernel> {
    let mut keys = vec![NormKernel::Softmax, NormKernel::LogSoftmax];
    keys.extend(NormRow::ALL.map(NormKernel::Row));
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_norm_has_its_variant() {
        let names: Vec<_> = keys().into_iter().map(|k| spec(k).name).collect();
        assert_eq!(
            names,
            [
                "softmax_row_f32",
                "log_softmax_row_f32",
                "layer_norm_f32",
                "rms_norm_f32",
                "add_layer_norm_f32",
                "add_rms_norm_f32"
            ]
        );
        assert_eq!(spec(NormKernel::Row(NormRow::AddLayerNorm)).bindings.len(), 5);
    }
}
