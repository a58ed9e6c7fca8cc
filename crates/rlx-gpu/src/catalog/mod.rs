//! The kernel families, one module folder each (`mod.rs`: keys and variants; `params.rs`: the
//! `#[repr(C)]` params structs; tests beside them). Each family owns its key enum, the `Spec` of
//! each of its variants and its params structs; families depend on nothing in `variants.rs`,
//! which assembles the one table ([`crate::variants`]) from them. The family names are those of
//! every crate (rlx-ir's `infer/`, rlx-cpu's `ops/`, `kernels/<family>/`, rlx-parity's cases).
//!
//! - [`elementwise`]: broadcasting binary ops and comparisons, unary math and casts on 32-bit
//!   words, and where.
//! - [`cast`]: casts from or to the packed dtypes (f16, bf16, u8).
//! - [`shape`]: data movement on 32-bit words (strided copy, fill, gather).
//! - [`reduce`]: reductions over axes, arg-reductions, cumsum and top-k.
//! - [`matmul`]: the matmul rungs, plain or with fused epilogues, matrix-vector and split-K.
//! - [`norm`]: softmax, log-softmax and the row norms.
//! - [`attention`]: attention with online softmax, split-key and on cooperative matrices.
//! - [`rope`]: rotary position embeddings.
//! - [`random`]: counter-based random numbers (Philox4x32-10), uniform and normal.
//! - [`quant`]: matmuls and row lookups on block-quantized weights kept packed.
//! - [`fft`]: Fourier transforms of complex rows in shared memory.
//! - [`grouped`]: the experts of a mixture-of-experts layer, chosen per token on the device.
//! - [`ssm`]: the recurrences of state-space models (selective scan, gated delta rule).
//! - [`state`]: rows written into a state tensor in place.
//!
//! Every variant's name is built from its key (`<kernel>[_<op>]_<dtype>`, built by `name`) and
//! every variant's WGSL is its kernel file followed by the prelude ([`PRELUDE`]).

/// A variant's source: a kernel file under `kernels/` followed by the fragments it uses
/// (`include/...`), one line break between them. Each keeps its own line numbers up to its end
/// (WGSL allows module-scope declarations in any order).
macro_rules! kernel_src {
    ($kernel:literal $(, $fragment:literal)* $(,)?) => {
        concat!(
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $kernel))
            $(, "\n", include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $fragment)))*
        )
    };
}

/// The source of a kernel with one invocation per item (`kernels/<file>`, which defines
/// `invocations()` and `element(i)`) followed by its entry point, `kernels/include/flat_main.wgsl`.
macro_rules! flat_kernel {
    ($file:literal $(, $fragment:literal)*) => {
        kernel_src!($file $(, $fragment)*, "include/flat_main.wgsl")
    };
}

/// The source of a kernel on block-quantized weights (the quant family's, the grouped family's
/// quantized ones) with the shared helpers and the decoder files appended (the decoder, and for
/// the codebook formats its grid; each keeps its own line numbers up to its end; WGSL allows
/// module-scope declarations in any order), then `tail` (the gather's entry point,
/// flat_main.wgsl, which the matmul kernels do not take).
macro_rules! quant_src {
    ($kernel:literal, [$($decoder:literal),+], $tail:expr) => {
        concat!(
            kernel_src!(
                $kernel,
                "include/quant_common.wgsl",
                "include/quant_k_scales.wgsl",
                "include/quant_minifloat.wgsl",
                $($decoder),+
            ),
            $tail
        )
    };
}

/// One source per [`QuantType::ALL`] entry, for `kernel` (then `tail`).
macro_rules! per_type {
    ($kernel:literal) => {
        per_type!($kernel, "")
    };
    ($kernel:literal, $tail:expr) => {
        [
            quant_src!($kernel, ["include/quant_q8_0.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q4_0.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q4_k.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q5_k.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q6_k.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q4_1.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q8_asym.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_fp8_e4m3.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_fp8_e5m2.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_nvfp4.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q5_0.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q5_1.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q2_k.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_q3_k.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq4_nl.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq4_xs.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq2_xxs.wgsl", "include/quant_grid_iq2xxs.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq2_xs.wgsl", "include/quant_grid_iq2xs.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq2_s.wgsl", "include/quant_grid_iq2s.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq3_xxs.wgsl", "include/quant_grid_iq3xxs.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq3_s.wgsl", "include/quant_grid_iq3s.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq1_s.wgsl", "include/quant_grid_iq1s.wgsl"], $tail),
            quant_src!($kernel, ["include/quant_iq1_m.wgsl", "include/quant_grid_iq1s.wgsl"], $tail),
        ]
    };
}

/// `quant_dot_common.wgsl` and one sub-block dot file, as a tail of [`quant_src!`].
macro_rules! dot_src {
    ($dot:literal) => {
        concat!("\n", kernel_src!("include/quant_dot_common.wgsl", $dot))
    };
}

/// One source per [`QuantType::ALL`] entry of the one-row kernel `kernel`: [`per_type!`] with
/// the type's sub-block dot appended (`quant_dot_<type>.wgsl`, or `quant_dot_generic.wgsl` over
/// the decoder for types without their own), after `quant_dot_common.wgsl`.
macro_rules! per_type_dot {
    ($kernel:literal) => {
        [
            quant_src!($kernel, ["include/quant_q8_0.wgsl"], dot_src!("include/quant_dot_q8_0.wgsl")),
            quant_src!($kernel, ["include/quant_q4_0.wgsl"], dot_src!("include/quant_dot_q4_0.wgsl")),
            quant_src!($kernel, ["include/quant_q4_k.wgsl"], dot_src!("include/quant_dot_q4_k.wgsl")),
            quant_src!($kernel, ["include/quant_q5_k.wgsl"], dot_src!("include/quant_dot_q5_k.wgsl")),
            quant_src!($kernel, ["include/quant_q6_k.wgsl"], dot_src!("include/quant_dot_q6_k.wgsl")),
            quant_src!($kernel, ["include/quant_q4_1.wgsl"], dot_src!("include/quant_dot_q4_1.wgsl")),
            quant_src!($kernel, ["include/quant_q8_asym.wgsl"], dot_src!("include/quant_dot_q8_asym.wgsl")),
            quant_src!($kernel, ["include/quant_fp8_e4m3.wgsl"], dot_src!("include/quant_dot_generic.wgsl")),
            quant_src!($kernel, ["include/quant_fp8_e5m2.wgsl"], dot_src!("include/quant_dot_generic.wgsl")),
            quant_src!($kernel, ["include/quant_nvfp4.wgsl"], dot_src!("include/quant_dot_generic.wgsl")),
            quant_src!($kernel, ["include/quant_q5_0.wgsl"], dot_src!("include/quant_dot_q5_0.wgsl")),
            quant_src!($kernel, ["include/quant_q5_1.wgsl"], dot_src!("include/quant_dot_q5_1.wgsl")),
            quant_src!($kernel, ["include/quant_q2_k.wgsl"], dot_src!("include/quant_dot_generic.wgsl")),
            quant_src!($kernel, ["include/quant_q3_k.wgsl"], dot_src!("include/quant_dot_generic.wgsl")),
            quant_src!($kernel, ["include/quant_iq4_nl.wgsl"], dot_src!("include/quant_dot_generic.wgsl")),
            quant_src!($kernel, ["include/quant_iq4_xs.wgsl"], dot_src!("include/quant_dot_generic.wgsl")),
            quant_src!(
                $kernel,
                ["include/quant_iq2_xxs.wgsl", "include/quant_grid_iq2xxs.wgsl"],
                dot_src!("include/quant_dot_generic.wgsl")
            ),
            quant_src!(
                $kernel,
                ["include/quant_iq2_xs.wgsl", "include/quant_grid_iq2xs.wgsl"],
                dot_src!("include/quant_dot_generic.wgsl")
            ),
            quant_src!(
                $kernel,
                ["include/quant_iq2_s.wgsl", "include/quant_grid_iq2s.wgsl"],
                dot_src!("include/quant_dot_generic.wgsl")
            ),
            quant_src!(
                $kernel,
                ["include/quant_iq3_xxs.wgsl", "include/quant_grid_iq3xxs.wgsl"],
                dot_src!("include/quant_dot_generic.wgsl")
            ),
            quant_src!(
                $kernel,
                ["include/quant_iq3_s.wgsl", "include/quant_grid_iq3s.wgsl"],
                dot_src!("include/quant_dot_generic.wgsl")
            ),
            quant_src!(
                $kernel,
                ["include/quant_iq1_s.wgsl", "include/quant_grid_iq1s.wgsl"],
                dot_src!("include/quant_dot_generic.wgsl")
            ),
            quant_src!(
                $kernel,
                ["include/quant_iq1_m.wgsl", "include/quant_grid_iq1s.wgsl"],
                dot_src!("include/quant_dot_generic.wgsl")
            ),
        ]
    };
}

/// A key enum whose variants carry no data, with `ALL`: every variant in declaration order,
/// generated from the one list so that it cannot miss one. Keys are small values that hash.
macro_rules! unit_keys {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];
        }
    };
}

pub mod attention;
pub mod cast;
pub(crate) mod consts_wgsl;
pub mod elementwise;
pub mod fft;
pub mod grouped;
pub mod matmul;
pub mod norm;
pub mod params_wgsl;
pub mod quant;
pub mod random;
pub mod reduce;
pub mod rope;
pub mod shape;
pub mod ssm;
pub mod state;
pub mod words;

#[cfg(test)]
mod layout_tests;

pub(crate) use crate::catalog::params_wgsl::params_of;
use crate::catalog::params_wgsl::ParamsStruct;
use crate::grid::MAX_GROUPS_PER_DIM;
use crate::GpuError;
use std::borrow::Cow;

/// Shared helpers every kernel may call (`kernels/include/prelude.wgsl`), appended to every variant.
pub const PRELUDE: &str = include_str!("../../kernels/include/prelude.wgsl");

/// How a kernel uses one of its storage bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `var<storage, read>`: an input.
    Read,
    /// `var<storage, read_write>`: an output.
    ReadWrite,
}

unit_keys! {
    /// A 32-bit word type as kernels compute on it. Bool words compare and move as `U32`.
    pub enum WordType {
        F32,
        I32,
        U32,
    }
}

impl WordType {
    /// The dtype part of a variant name: `f32`, `i32`, `u32`.
    pub fn name(self) -> &'static str {
        match self {
            WordType::F32 => "f32",
            WordType::I32 => "i32",
            WordType::U32 => "u32",
        }
    }

    /// The `T` define of the kernels that take one (`T_F32`, …).
    pub(crate) fn define(self) -> (&'static str, Cow<'static, str>) {
        ("T", upper("T_", self.name()))
    }
}

/// Values of a variant's placeholders (see [`crate::preprocess`]).
pub type Defines = Vec<(&'static str, Cow<'static, str>)>;

/// A variant name from its fixed parts (kernel, op, options, dtype), joined by `_`; empty parts
/// are skipped: `name(&["binary", "add", "f32"])` is `binary_add_f32`.
pub(crate) fn name(parts: &[&str]) -> Cow<'static, str> {
    let parts: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    Cow::Owned(parts.join("_"))
}

/// `prefix` then `part` in upper case: the WGSL constant of a name part (`OP_` + `add`).
pub(crate) fn upper(prefix: &str, part: &str) -> Cow<'static, str> {
    Cow::Owned(format!("{prefix}{}", part.to_ascii_uppercase()))
}

/// Defines from fixed texts.
pub(crate) fn defines(pairs: &[(&'static str, &'static str)]) -> Defines {
    pairs.iter().map(|&(n, v)| (n, Cow::Borrowed(v))).collect()
}

/// What a family says about one variant; [`crate::KernelVariant`] adds the key.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Spec {
    /// `<kernel>[_<op>]_<dtype>`: the compiled module's file stem.
    pub name: Cow<'static, str>,
    /// Path relative to the crate root, for error messages.
    pub file: &'static str,
    pub source: &'static str,
    pub defines: Defines,
    pub workgroup_size: [u32; 3],
    pub bindings: &'static [Access],
    /// The params struct, declared after the kernel from its Rust struct ([`params_wgsl`]).
    pub params: ParamsStruct,
}

impl Spec {
    /// A variant with a 256-thread 1-D workgroup (most kernels have one).
    pub(crate) fn wg256(
        (name, defines): (Cow<'static, str>, Defines),
        file: &'static str,
        source: &'static str,
        bindings: &'static [Access],
        params: ParamsStruct,
    ) -> Spec {
        Spec { name, file, source, defines, workgroup_size: [256, 1, 1], bindings, params }
    }

    /// The value of define `name`, if the variant has it.
    #[cfg(test)]
    pub(crate) fn define(&self, name: &str) -> Option<&str> {
        self.defines.iter().find(|(d, _)| *d == name).map(|(_, v)| v.as_ref())
    }
}

pub(crate) const OUT: &[Access] = &[Access::ReadWrite];
pub(crate) const IN_OUT: &[Access] = &[Access::Read, Access::ReadWrite];
pub(crate) const IN2_OUT: &[Access] = &[Access::Read, Access::Read, Access::ReadWrite];
pub(crate) const IN3_OUT: &[Access] = &[Access::Read, Access::Read, Access::Read, Access::ReadWrite];
/// The attention kernels: q, k, v, mask (read), out (read_write), kv lengths (read).
pub(crate) const ATTENTION_BINDINGS: &[Access] =
    &[Access::Read, Access::Read, Access::Read, Access::Read, Access::ReadWrite, Access::Read];
pub(crate) const IN4_OUT: &[Access] =
    &[Access::Read, Access::Read, Access::Read, Access::Read, Access::ReadWrite];

/// A shape error of `kernel` naming the operand shapes.
pub(crate) fn shape_err(kernel: &'static str, shapes: &[&[usize]], reason: impl Into<String>) -> GpuError {
    let shapes = shapes.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(" and ");
    GpuError::Shape { kernel, shapes, reason: reason.into() }
}

/// `n` as a workgroup count of one grid dimension, or the error saying it is too many.
pub(crate) fn per_dim(kernel: &'static str, what: &'static str, n: usize) -> Result<u32, GpuError> {
    if n > MAX_GROUPS_PER_DIM as usize {
        return Err(GpuError::TooLarge { kernel, what, value: n as u64, limit: MAX_GROUPS_PER_DIM as u64 });
    }
    Ok(n as u32)
}
