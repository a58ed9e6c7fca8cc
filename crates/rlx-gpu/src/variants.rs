//! The kernel catalogue: one table of every compiled variant, looked up by a typed key.
//!
//! A variant is (source, defines): the WGSL file under `kernels/` and the values of its variant
//! placeholders (see [`crate::preprocess`]). Its name is built from fixed parts,
//! `<kernel>[_<op>]_<dtype>`, and names the compiled module (`binary_add_f32.spv`). Drivers find
//! a variant by [`KernelKey`], never by matching strings.

use crate::preprocess::{preprocess, ParamsBinding};
use crate::{BinaryParams, GpuError, MatmulParams, SoftmaxParams, UnaryParams};
use rlx_ir::{BinaryOp, UnaryOp};

/// Which compiled kernel a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKey {
    /// Broadcasting elementwise binary op on f32 ([`BinaryParams`]).
    Binary(BinaryOp),
    /// Elementwise unary op on contiguous f32 ([`UnaryParams`]).
    Unary(UnaryOp),
    /// Portable shared-memory tiled f32 matmul ([`MatmulParams`]).
    MatmulTiledF32,
    /// Softmax over the last axis, one workgroup per row ([`SoftmaxParams`]).
    SoftmaxRowF32,
    /// Elementwise on every dtype, data movement and reductions ([`crate::catalog::data`]).
    Data(crate::catalog::data::DataKernel),
    /// Matmul epilogues, norms, attention, rope ([`crate::catalog::nn`]).
    Nn(crate::catalog::nn::NnKernel),
}

/// How a kernel uses one of its storage bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `var<storage, read>`: an input.
    Read,
    /// `var<storage, read_write>`: an output.
    ReadWrite,
}

/// One compiled kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelVariant {
    pub key: KernelKey,
    /// Unique name, e.g. "binary_add_f32"; the compiled module's file stem.
    pub name: &'static str,
    /// Path of the WGSL file relative to the crate root, for error messages.
    pub file: &'static str,
    /// The WGSL source (`include_str!`), with placeholders.
    pub source: &'static str,
    /// Values of the variant placeholders.
    pub defines: &'static [(&'static str, &'static str)],
    /// `@workgroup_size` of the entry point (a unit test checks that the WGSL agrees).
    pub workgroup_size: [u32; 3],
    /// Storage bindings `@group(0) @binding(0..)`, in order (checked against the WGSL too).
    pub bindings: &'static [Access],
    /// Size in bytes of the params struct: the push-constant range a driver declares.
    pub params_size: u32,
}

/// Entry point of every kernel.
pub const ENTRY_POINT: &str = "main";

const BINARY_SRC: &str = include_str!("../kernels/binary.wgsl");
const UNARY_SRC: &str = include_str!("../kernels/unary.wgsl");
pub(crate) const MATMUL_TILED_SRC: &str = include_str!("../kernels/matmul_tiled.wgsl");
pub(crate) const SOFTMAX_ROW_SRC: &str = include_str!("../kernels/softmax_row.wgsl");

const IN_IN_OUT: &[Access] = &[Access::Read, Access::Read, Access::ReadWrite];
const IN_OUT: &[Access] = &[Access::Read, Access::ReadWrite];

pub(crate) fn size_of<T>() -> u32 {
    // Params structs are at most 128 bytes (asserted by a test), so this cannot truncate.
    std::mem::size_of::<T>() as u32
}

/// Name and `OP` define of a binary op's variant.
fn binary_parts(op: BinaryOp) -> (&'static str, &'static [(&'static str, &'static str)]) {
    match op {
        BinaryOp::Add => ("binary_add_f32", &[("OP", "OP_ADD")]),
        BinaryOp::Sub => ("binary_sub_f32", &[("OP", "OP_SUB")]),
        BinaryOp::Mul => ("binary_mul_f32", &[("OP", "OP_MUL")]),
        BinaryOp::Div => ("binary_div_f32", &[("OP", "OP_DIV")]),
        BinaryOp::Pow => ("binary_pow_f32", &[("OP", "OP_POW")]),
        BinaryOp::Maximum => ("binary_maximum_f32", &[("OP", "OP_MAXIMUM")]),
        BinaryOp::Minimum => ("binary_minimum_f32", &[("OP", "OP_MINIMUM")]),
    }
}

/// Name and `OP` define of a unary op's variant.
fn unary_parts(op: UnaryOp) -> (&'static str, &'static [(&'static str, &'static str)]) {
    match op {
        UnaryOp::Gelu => ("unary_gelu_f32", &[("OP", "OP_GELU")]),
        UnaryOp::GeluTanh => ("unary_gelu_tanh_f32", &[("OP", "OP_GELU_TANH")]),
        UnaryOp::Silu => ("unary_silu_f32", &[("OP", "OP_SILU")]),
        UnaryOp::Relu => ("unary_relu_f32", &[("OP", "OP_RELU")]),
        UnaryOp::Sigmoid => ("unary_sigmoid_f32", &[("OP", "OP_SIGMOID")]),
        UnaryOp::Tanh => ("unary_tanh_f32", &[("OP", "OP_TANH")]),
        UnaryOp::Exp => ("unary_exp_f32", &[("OP", "OP_EXP")]),
        UnaryOp::Log => ("unary_log_f32", &[("OP", "OP_LOG")]),
        UnaryOp::Sqrt => ("unary_sqrt_f32", &[("OP", "OP_SQRT")]),
        UnaryOp::Rsqrt => ("unary_rsqrt_f32", &[("OP", "OP_RSQRT")]),
        UnaryOp::Neg => ("unary_neg_f32", &[("OP", "OP_NEG")]),
        UnaryOp::Abs => ("unary_abs_f32", &[("OP", "OP_ABS")]),
        UnaryOp::Sin => ("unary_sin_f32", &[("OP", "OP_SIN")]),
        UnaryOp::Cos => ("unary_cos_f32", &[("OP", "OP_COS")]),
        UnaryOp::Recip => ("unary_recip_f32", &[("OP", "OP_RECIP")]),
        UnaryOp::Square => ("unary_square_f32", &[("OP", "OP_SQUARE")]),
    }
}

/// The variant that implements `key`.
pub fn variant(key: KernelKey) -> KernelVariant {
    match key {
        KernelKey::Binary(op) => {
            let (name, defines) = binary_parts(op);
            KernelVariant {
                key,
                name,
                file: "kernels/binary.wgsl",
                source: BINARY_SRC,
                defines,
                workgroup_size: [256, 1, 1],
                bindings: IN_IN_OUT,
                params_size: size_of::<BinaryParams>(),
            }
        }
        KernelKey::Unary(op) => {
            let (name, defines) = unary_parts(op);
            KernelVariant {
                key,
                name,
                file: "kernels/unary.wgsl",
                source: UNARY_SRC,
                defines,
                workgroup_size: [256, 1, 1],
                bindings: IN_OUT,
                params_size: size_of::<UnaryParams>(),
            }
        }
        KernelKey::MatmulTiledF32 => KernelVariant {
            key,
            name: "matmul_tiled_f32",
            file: "kernels/matmul_tiled.wgsl",
            source: MATMUL_TILED_SRC,
            defines: crate::catalog::nn::MATMUL_PLAIN_DEFINES,
            workgroup_size: [16, 16, 1],
            bindings: IN_IN_OUT,
            params_size: size_of::<MatmulParams>(),
        },
        KernelKey::SoftmaxRowF32 => KernelVariant {
            key,
            name: "softmax_row_f32",
            file: "kernels/softmax_row.wgsl",
            source: SOFTMAX_ROW_SRC,
            defines: &[("LOG", "false")],
            workgroup_size: [256, 1, 1],
            bindings: IN_OUT,
            params_size: size_of::<SoftmaxParams>(),
        },
        KernelKey::Data(k) => crate::catalog::data::variant(k),
        KernelKey::Nn(k) => crate::catalog::nn::variant(k),
    }
}

/// Every key the catalogue has, in a fixed order.
pub fn keys() -> Vec<KernelKey> {
    let mut keys: Vec<KernelKey> = BinaryOp::ALL.iter().map(|&op| KernelKey::Binary(op)).collect();
    keys.extend(UnaryOp::ALL.iter().map(|&op| KernelKey::Unary(op)));
    keys.push(KernelKey::MatmulTiledF32);
    keys.push(KernelKey::SoftmaxRowF32);
    keys.extend(crate::catalog::data::keys().into_iter().map(KernelKey::Data));
    keys.extend(crate::catalog::nn::keys().into_iter().map(KernelKey::Nn));
    keys
}

/// Every variant, in the order of [`keys`]. Build scripts walk this table.
pub fn variants() -> Vec<KernelVariant> {
    keys().into_iter().map(variant).collect()
}

impl KernelVariant {
    /// The WGSL of this variant with its params declared as `params` says: the text a driver
    /// compiles. Line numbers are those of [`Self::file`].
    pub fn wgsl(&self, params: ParamsBinding) -> Result<String, GpuError> {
        let decl = params.declaration();
        let mut defines: Vec<(&str, &str)> = self.defines.to_vec();
        defines.push(("PARAMS", &decl));
        preprocess(self.source, &defines)
    }

    /// Binding index of the uniform buffer when params travel as a uniform: after the storage
    /// bindings.
    pub fn uniform_params_binding(&self) -> u32 {
        self.bindings.len() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_keys_are_unique_and_consistent() {
        let all = variants();
        assert_eq!(all.len(), keys().len());
        let names: HashSet<_> = all.iter().map(|v| v.name).collect();
        assert_eq!(names.len(), all.len());
        for v in &all {
            assert_eq!(variant(v.key), *v);
            assert!(["_f32", "_i32", "_u32", "_word"].iter().any(|s| v.name.ends_with(s)), "{}", v.name);
            assert!(v.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
        }
        assert_eq!(variant(KernelKey::Binary(BinaryOp::Maximum)).name, "binary_maximum_f32");
        assert_eq!(variant(KernelKey::Unary(UnaryOp::GeluTanh)).name, "unary_gelu_tanh_f32");
    }

    #[test]
    fn op_define_matches_name() {
        for v in variants() {
            if let [("OP", value)] = v.defines {
                let op = v.name.trim_end_matches("_f32").split_once('_').map(|(_, op)| op).unwrap();
                assert_eq!(value.to_ascii_lowercase(), format!("op_{op}"), "{}", v.name);
            }
        }
    }

    #[test]
    fn params_fit_push_constants() {
        for v in variants() {
            assert!(v.params_size <= 128 && v.params_size % 16 == 0, "{}: {}", v.name, v.params_size);
        }
    }
}
