//! The kernel catalogue: one table of every compiled variant, looked up by a typed key.
//!
//! A variant is (source, defines): the WGSL file under `kernels/` and the values of its variant
//! placeholders (see [`crate::preprocess`]). Its name is built from fixed parts,
//! `<kernel>[_<op>]_<dtype>`, and names the compiled module (`binary_add_f32.spv`). Drivers find
//! a variant by [`KernelKey`], never by matching strings. The families under [`crate::catalog`]
//! define the variants; this module only assembles them into the table.

use crate::catalog::cast::{self, CastFn};
use crate::catalog::elementwise::{self, BinaryFn, UnaryFn};
use crate::catalog::grouped::{self, GroupedKernel};
use crate::catalog::quant::{self, QuantKernel};
use crate::catalog::{data, fft, nn, random, Spec, WordType, PRELUDE};
use crate::preprocess::{preprocess, ParamsBinding};
use crate::GpuError;
use rlx_ir::{BinaryOp, RandomDist, UnaryOp};

pub use crate::catalog::Access;

/// Which compiled kernel a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKey {
    /// Broadcasting elementwise binary op or comparison on one word type
    /// ([`crate::BinaryParams`], [`crate::catalog::elementwise`]).
    Binary(BinaryFn, WordType),
    /// Elementwise unary op on a contiguous tensor: f32 math, casts between 32-bit dtypes, i32
    /// neg/abs ([`crate::UnaryParams`], [`crate::catalog::elementwise`]).
    Unary(UnaryFn),
    /// A cast from or to a packed dtype: f16, bf16, u8 ([`crate::CastParams`],
    /// [`crate::catalog::cast`]).
    Cast(CastFn),
    /// Portable shared-memory tiled f32 matmul ([`crate::MatmulParams`]).
    MatmulTiledF32,
    /// Softmax over the last axis, one workgroup per row ([`crate::SoftmaxParams`]).
    SoftmaxRowF32,
    /// Where, data movement and reductions on 32-bit words ([`crate::catalog::data`]).
    Data(data::DataKernel),
    /// Matmul epilogues, log-softmax, norms, attention, rope ([`crate::catalog::nn`]).
    Nn(nn::NnKernel),
    /// Philox4x32-10 random numbers of one distribution ([`crate::catalog::random`]).
    Random(RandomDist),
    /// Matmuls and row lookups on packed quantized weights ([`crate::catalog::quant`]).
    Quant(QuantKernel),
    /// The experts of a mixture-of-experts layer ([`crate::catalog::grouped`]).
    Grouped(GroupedKernel),
    /// Radix-2 Fourier transforms of complex rows in shared memory ([`crate::catalog::fft`]).
    FftRadix2F32,
    /// A user-defined op's kernel ([`crate::custom`]); not in [`keys`], which lists the
    /// built-in table.
    Custom(crate::custom::CustomKernel),
}

impl KernelKey {
    /// The f32 arithmetic variant of `op`.
    pub const fn binary_f32(op: BinaryOp) -> Self {
        KernelKey::Binary(BinaryFn::Arith(op), WordType::F32)
    }

    /// The f32 math variant of `op`.
    pub const fn unary_f32(op: UnaryOp) -> Self {
        KernelKey::Unary(UnaryFn::F32(op))
    }

    /// Whether the kernel uses cooperative matrices (and f16), which only devices with
    /// [`crate::GpuLimits::cooperative_matrix`] can build; the lowering gives them no other.
    pub const fn needs_cooperative_matrix(self) -> bool {
        matches!(
            self,
            KernelKey::Nn(
                nn::NnKernel::MatmulCoop { .. }
                    | nn::NnKernel::MatmulCoopSplit { .. }
                    | nn::NnKernel::AttentionCoop(_)
            ) | KernelKey::Quant(QuantKernel::Coop(_))
        )
    }
}

/// One compiled kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelVariant {
    pub key: KernelKey,
    /// Unique name, e.g. "binary_add_f32"; the compiled module's file stem.
    pub name: &'static str,
    /// Path of the WGSL file relative to the crate root, for error messages.
    pub file: &'static str,
    /// The kernel's WGSL source (`include_str!`), with placeholders; without the prelude.
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

/// The variant that implements `key`.
pub fn variant(key: KernelKey) -> KernelVariant {
    let spec = match key {
        KernelKey::Binary(f, t) => elementwise::binary(f, t),
        KernelKey::Unary(f) => elementwise::unary(f),
        KernelKey::Cast(f) => cast::spec(f),
        KernelKey::MatmulTiledF32 => nn::matmul_tiled(),
        KernelKey::SoftmaxRowF32 => nn::softmax_row(),
        KernelKey::Data(k) => data::spec(k),
        KernelKey::Nn(k) => nn::spec(k),
        KernelKey::Random(d) => random::spec(d),
        KernelKey::Quant(k) => quant::spec(k),
        KernelKey::Grouped(k) => grouped::spec(k),
        KernelKey::FftRadix2F32 => fft::spec(),
        KernelKey::Custom(k) => return crate::custom::variant(k),
    };
    let Spec { name, file, source, defines, workgroup_size, bindings, params_size } = spec;
    KernelVariant { key, name, file, source, defines, workgroup_size, bindings, params_size }
}

/// Every key the catalogue has, in a fixed order.
pub fn keys() -> Vec<KernelKey> {
    let mut keys: Vec<KernelKey> =
        elementwise::binary_keys().into_iter().map(|(f, t)| KernelKey::Binary(f, t)).collect();
    keys.extend(UnaryFn::all().map(KernelKey::Unary));
    keys.extend(CastFn::all().map(KernelKey::Cast));
    keys.push(KernelKey::MatmulTiledF32);
    keys.push(KernelKey::SoftmaxRowF32);
    keys.extend(data::keys().into_iter().map(KernelKey::Data));
    keys.extend(nn::keys().into_iter().map(KernelKey::Nn));
    keys.extend(random::keys().into_iter().map(KernelKey::Random));
    keys.extend(QuantKernel::all().into_iter().map(KernelKey::Quant));
    keys.extend(GroupedKernel::all().into_iter().map(KernelKey::Grouped));
    keys.push(KernelKey::FftRadix2F32);
    keys
}

/// Every variant, in the order of [`keys`]. Build scripts walk this table.
pub fn variants() -> Vec<KernelVariant> {
    keys().into_iter().map(variant).collect()
}

impl KernelVariant {
    /// The WGSL of this variant with its params declared as `params` says: the text a driver
    /// compiles. It is the kernel file with its placeholders filled, then the prelude
    /// ([`PRELUDE`]), so line numbers up to the kernel's last line are those of [`Self::file`].
    pub fn wgsl(&self, params: ParamsBinding) -> Result<String, GpuError> {
        let decl = params.declaration();
        let mut defines: Vec<(&str, &str)> = self.defines.to_vec();
        defines.push(("PARAMS", &decl));
        let mut text = preprocess(self.source, &defines)?;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
        text.push_str(PRELUDE);
        Ok(text)
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
            let dtypes = ["_f32", "_i32", "_u32", "_word", "_f16", "_bf16", "_u8", "_bool"];
            assert!(dtypes.iter().any(|s| v.name.ends_with(s)), "{}", v.name);
            assert!(v.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
        }
        assert_eq!(variant(KernelKey::binary_f32(BinaryOp::Maximum)).name, "binary_maximum_f32");
        assert_eq!(variant(KernelKey::unary_f32(UnaryOp::GeluTanh)).name, "unary_gelu_tanh_f32");
        assert_eq!(variant(KernelKey::MatmulTiledF32).name, "matmul_tiled_f32");
        assert_eq!(variant(KernelKey::SoftmaxRowF32).name, "softmax_row_f32");
        let f16_to_u8 = CastFn::new(rlx_ir::DType::F16, rlx_ir::DType::U8).unwrap();
        assert_eq!(variant(KernelKey::Cast(f16_to_u8)).name, "cast_f16_u8");
    }

    #[test]
    fn exactly_the_cooperative_matrix_keys_enable_it() {
        for v in variants() {
            let enables = v.source.contains("enable wgpu_cooperative_matrix;");
            assert_eq!(enables, v.key.needs_cooperative_matrix(), "{}", v.name);
        }
        assert!(keys().into_iter().any(KernelKey::needs_cooperative_matrix));
    }

    #[test]
    fn params_fit_push_constants() {
        for v in variants() {
            assert!(v.params_size <= 128 && v.params_size % 16 == 0, "{}: {}", v.name, v.params_size);
        }
    }

    #[test]
    fn the_kernel_keeps_its_line_numbers() {
        let v = variant(KernelKey::binary_f32(BinaryOp::Add));
        let text = v.wgsl(ParamsBinding::Immediate).unwrap();
        let kernel_lines = v.source.lines().count();
        for (i, (a, b)) in v.source.lines().zip(text.lines()).enumerate() {
            if !a.contains("{{") {
                assert_eq!(a, b, "line {}", i + 1);
            }
        }
        assert!(text.lines().nth(kernel_lines + 1).is_some_and(|l| PRELUDE.starts_with(l)));
    }
}
