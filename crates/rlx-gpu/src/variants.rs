//! The kernel catalogue: one table of every compiled variant, looked up by a typed key.
//!
//! A variant is (source, defines): the WGSL file under `kernels/` and the values of its variant
//! placeholders (see [`crate::preprocess`]). Its name is built from fixed parts,
//! `<kernel>[_<op>]_<dtype>`, and names the compiled module (`binary_add_f32.spv`). Drivers find
//! a variant by [`KernelKey`], never by matching strings. The families under [`crate::catalog`]
//! define the variants; this module only assembles them into the table.

use crate::catalog::attention::{self, AttentionKernel};
use crate::catalog::cast::{self, CastFn};
use crate::catalog::elementwise::{self, BinaryFn, ElementwiseKernel, UnaryFn};
use crate::catalog::fft::{self, FftKernel};
use crate::catalog::grouped::{self, GroupedKernel};
use crate::catalog::matmul::{self, MatmulKernel};
use crate::catalog::norm::{self, NormKernel};
use crate::catalog::params_wgsl::ParamsStruct;
use crate::catalog::quant::{self, QuantKernel};
use crate::catalog::reduce::{self, ReduceKernel};
use crate::catalog::rope::{self, RopeKernel};
use crate::catalog::shape::{self, ShapeKernel};
use crate::catalog::ssm::{self, SsmKernel};
use crate::catalog::state::{self, StateKernel};
use crate::catalog::{random, Defines, Spec, WordType, PRELUDE};
use crate::preprocess::{preprocess, ParamsBinding};
use crate::GpuError;
use rlx_ir::{BinaryOp, RandomDist, UnaryOp};
use std::borrow::Cow;

pub use crate::catalog::Access;

/// Which compiled kernel a step runs: one variant per op family ([`crate::catalog`]), each
/// holding that family's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKey {
    /// Binary ops and comparisons, unary math and casts on 32-bit words, where
    /// ([`crate::catalog::elementwise`]).
    Elementwise(ElementwiseKernel),
    /// A cast from or to a packed dtype: f16, bf16, u8 ([`crate::catalog::cast`]).
    Cast(CastFn),
    /// Data movement on 32-bit words: strided copy, fill, gather ([`crate::catalog::shape`]).
    Shape(ShapeKernel),
    /// Reductions, arg-reductions, cumsum, top-k ([`crate::catalog::reduce`]).
    Reduce(ReduceKernel),
    /// Matmuls: the rungs, their epilogues, matrix-vector, split-K ([`crate::catalog::matmul`]).
    Matmul(MatmulKernel),
    /// Softmax, log-softmax and the row norms ([`crate::catalog::norm`]).
    Norm(NormKernel),
    /// Attention ([`crate::catalog::attention`]).
    Attention(AttentionKernel),
    /// Rotary position embeddings ([`crate::catalog::rope`]).
    Rope(RopeKernel),
    /// Philox4x32-10 random numbers of one distribution ([`crate::catalog::random`]).
    Random(RandomDist),
    /// Matmuls and row lookups on packed quantized weights ([`crate::catalog::quant`]).
    Quant(QuantKernel),
    /// The experts of a mixture-of-experts layer ([`crate::catalog::grouped`]).
    Grouped(GroupedKernel),
    /// The recurrences of state-space models ([`crate::catalog::ssm`]).
    Ssm(SsmKernel),
    /// Fourier transforms of complex rows in shared memory ([`crate::catalog::fft`]).
    Fft(FftKernel),
    /// Rows written into a state in place ([`crate::catalog::state`]).
    State(StateKernel),
    /// A user-defined op's kernel ([`crate::custom`]); not in [`keys`], which lists the
    /// built-in table.
    Custom(crate::custom::CustomKernel),
}

impl KernelKey {
    /// The f32 arithmetic variant of `op`.
    pub const fn binary_f32(op: BinaryOp) -> Self {
        KernelKey::Elementwise(ElementwiseKernel::Binary(BinaryFn::Arith(op), WordType::F32))
    }

    /// The f32 math variant of `op`.
    pub const fn unary_f32(op: UnaryOp) -> Self {
        KernelKey::Elementwise(ElementwiseKernel::Unary(UnaryFn::F32(op)))
    }

    /// The portable shared-memory tiled f32 matmul, no epilogue.
    pub const MATMUL_TILED_F32: KernelKey = KernelKey::Matmul(MatmulKernel::TILED_F32);

    /// Softmax over the last axis.
    pub const SOFTMAX_ROW_F32: KernelKey = KernelKey::Norm(NormKernel::Softmax);

    /// Whether the kernel uses cooperative matrices (and f16), which only devices with
    /// [`crate::GpuLimits::cooperative_matrix`] can build; the lowering gives them no other.
    pub const fn needs_cooperative_matrix(self) -> bool {
        matches!(
            self,
            KernelKey::Matmul(MatmulKernel::Coop { .. } | MatmulKernel::CoopSplit { .. })
                | KernelKey::Attention(AttentionKernel::Coop(..) | AttentionKernel::BackwardCoop(..))
                | KernelKey::Quant(QuantKernel::Coop(_))
        )
    }
}

/// One compiled kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelVariant {
    pub key: KernelKey,
    /// Unique name, e.g. "binary_add_f32", built from the key's parts; the compiled module's
    /// file stem.
    pub name: Cow<'static, str>,
    /// Path of the WGSL file relative to the crate root, for error messages.
    pub file: &'static str,
    /// The kernel's WGSL source (`include_str!`), with placeholders; without the prelude.
    pub source: &'static str,
    /// Values of the variant placeholders.
    pub defines: Defines,
    /// `@workgroup_size` of the entry point (a unit test checks that the WGSL agrees).
    pub workgroup_size: [u32; 3],
    /// Storage bindings `@group(0) @binding(0..)`, in order (checked against the WGSL too).
    pub bindings: &'static [Access],
    /// Size in bytes of the params struct: the push-constant range a driver declares.
    pub params_size: u32,
    /// The built-in kernels' params struct, which [`Self::wgsl`] declares after the kernel
    /// (with `p`) from its Rust struct; `None` for a custom op's kernel, whose source declares
    /// its own (`{{PARAMS}} p: Params;`).
    pub params: Option<ParamsStruct>,
}

/// Entry point of every kernel.
pub const ENTRY_POINT: &str = "main";

/// The variant that implements `key`.
pub fn variant(key: KernelKey) -> KernelVariant {
    let spec = match key {
        KernelKey::Elementwise(k) => elementwise::spec(k),
        KernelKey::Cast(f) => cast::spec(f),
        KernelKey::Shape(k) => shape::spec(k),
        KernelKey::Reduce(k) => reduce::spec(k),
        KernelKey::Matmul(k) => matmul::spec(k),
        KernelKey::Norm(k) => norm::spec(k),
        KernelKey::Attention(k) => attention::spec(k),
        KernelKey::Rope(k) => rope::spec(k),
        KernelKey::Random(d) => random::spec(d),
        KernelKey::Quant(k) => quant::spec(k),
        KernelKey::Grouped(k) => grouped::spec(k),
        KernelKey::Ssm(k) => ssm::spec(k),
        KernelKey::Fft(k) => fft::spec(k),
        KernelKey::State(k) => state::spec(k),
        KernelKey::Custom(k) => return crate::custom::variant(k),
    };
    let Spec { name, file, source, defines, workgroup_size, bindings, params } = spec;
    let params_size = params.size;
    KernelVariant {
        key,
        name,
        file,
        source,
        defines,
        workgroup_size,
        bindings,
        params_size,
        params: Some(params),
    }
}

/// Every key the catalogue has, in a fixed order: each family's keys. The match makes a new
/// [`KernelKey`] variant a compile error here until its family is listed; a test lowers graphs
/// of every family and checks that each key lowering emits is in this list.
pub fn keys() -> Vec<KernelKey> {
    let family = |k: KernelKey| -> Vec<KernelKey> {
        match k {
            KernelKey::Elementwise(_) => {
                elementwise::keys().into_iter().map(KernelKey::Elementwise).collect()
            }
            KernelKey::Cast(_) => CastFn::all().map(KernelKey::Cast).collect(),
            KernelKey::Shape(_) => shape::keys().into_iter().map(KernelKey::Shape).collect(),
            KernelKey::Reduce(_) => reduce::keys().into_iter().map(KernelKey::Reduce).collect(),
            KernelKey::Matmul(_) => matmul::keys().into_iter().map(KernelKey::Matmul).collect(),
            KernelKey::Norm(_) => norm::keys().into_iter().map(KernelKey::Norm).collect(),
            KernelKey::Attention(_) => attention::keys().into_iter().map(KernelKey::Attention).collect(),
            KernelKey::Rope(_) => rope::keys().into_iter().map(KernelKey::Rope).collect(),
            KernelKey::Random(_) => random::keys().into_iter().map(KernelKey::Random).collect(),
            KernelKey::Quant(_) => QuantKernel::all().into_iter().map(KernelKey::Quant).collect(),
            KernelKey::Grouped(_) => GroupedKernel::all().into_iter().map(KernelKey::Grouped).collect(),
            KernelKey::Ssm(_) => SsmKernel::all().into_iter().map(KernelKey::Ssm).collect(),
            KernelKey::Fft(_) => fft::keys().into_iter().map(KernelKey::Fft).collect(),
            KernelKey::State(_) => state::keys().into_iter().map(KernelKey::State).collect(),
            KernelKey::Custom(_) => Vec::new(),
        }
    };
    FAMILIES.iter().flat_map(|&k| family(k)).collect()
}

/// One key of each family, in table order: what [`keys`] expands. A test checks that every
/// [`KernelKey`] variant but `Custom` appears here.
const FAMILIES: [KernelKey; 14] = [
    KernelKey::binary_f32(BinaryOp::Add),
    KernelKey::Cast(CastFn::FIRST),
    KernelKey::Shape(ShapeKernel::Copy),
    KernelKey::Reduce(ReduceKernel::Cumsum(WordType::F32)),
    KernelKey::MATMUL_TILED_F32,
    KernelKey::SOFTMAX_ROW_F32,
    KernelKey::Attention(AttentionKernel::Split(crate::catalog::attention::KvStore::F32)),
    KernelKey::Rope(RopeKernel::F32),
    KernelKey::Random(RandomDist::Uniform),
    KernelKey::Quant(QuantKernel::Gather(rlx_ir::QuantType::Q8_0)),
    KernelKey::Grouped(GroupedKernel::Vec { f16_w: false }),
    KernelKey::Ssm(SsmKernel::DeltaRule),
    KernelKey::Fft(FftKernel::Radix2F32),
    KernelKey::State(StateKernel::WriteRows),
];

/// Every variant, in the order of [`keys`]. Build scripts walk this table.
pub fn variants() -> Vec<KernelVariant> {
    keys().into_iter().map(variant).collect()
}

impl KernelVariant {
    /// The WGSL of this variant with its params declared as `params` says: the text a driver
    /// compiles. It is the kernel file with its placeholders filled, then the prelude
    /// ([`PRELUDE`]), then the params struct generated from Rust and the declaration of `p`
    /// ([`crate::catalog::params_wgsl`]), then the op-code constants generated from Rust
    /// (`crate::catalog::consts_wgsl`), so line numbers up to the kernel's last line are
    /// those of [`Self::file`].
    pub fn wgsl(&self, params: ParamsBinding) -> Result<String, GpuError> {
        let decl = params.declaration();
        let mut defines: Vec<(&str, &str)> = self.defines.iter().map(|(n, v)| (*n, v.as_ref())).collect();
        defines.push(("PARAMS", &decl));
        let mut text = preprocess(self.source, &defines)?;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
        text.push_str(PRELUDE);
        if let Some(p) = &self.params {
            text.push('\n');
            text.push_str(&p.wgsl(params));
        }
        text.push('\n');
        text.push_str(&crate::catalog::consts_wgsl::declarations(self.key));
        Ok(text)
    }

    /// [`Self::name`] as a `&'static str`, for APIs that keep kernel names (errors, profiles):
    /// each distinct name is leaked once, so this holds at most one copy per variant.
    pub fn static_name(&self) -> &'static str {
        use std::sync::{Mutex, OnceLock};
        static NAMES: OnceLock<Mutex<std::collections::HashSet<&'static str>>> = OnceLock::new();
        let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&n) = names.get(self.name.as_ref()) {
            return n;
        }
        let n: &'static str = Box::leak(self.name.to_string().into_boxed_str());
        names.insert(n);
        n
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
        let names: HashSet<_> = all.iter().map(|v| v.name.clone()).collect();
        assert_eq!(names.len(), all.len());
        for v in &all {
            assert_eq!(variant(v.key), *v);
            let dtypes = ["_f32", "_i32", "_u32", "_word", "_f16", "_bf16", "_u8", "_bool"];
            assert!(dtypes.iter().any(|s| v.name.ends_with(s)), "{}", v.name);
            assert!(v.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'));
        }
        assert_eq!(variant(KernelKey::binary_f32(BinaryOp::Maximum)).name, "binary_maximum_f32");
        assert_eq!(variant(KernelKey::unary_f32(UnaryOp::GeluTanh)).name, "unary_gelu_tanh_f32");
        assert_eq!(variant(KernelKey::MATMUL_TILED_F32).name, "matmul_tiled_f32");
        assert_eq!(variant(KernelKey::SOFTMAX_ROW_F32).name, "softmax_row_f32");
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
        // The params struct and `p`, then the op-code constants come last, generated from Rust.
        let params = v.params.unwrap().wgsl(ParamsBinding::Immediate);
        let consts = crate::catalog::consts_wgsl::declarations(v.key);
        assert!(consts.contains("const OP_ADD: u32 = 0u;\n"), "{consts}");
        assert!(text.ends_with(&format!("{PRELUDE}\n{params}\n{consts}")), "{text}");
    }

    #[test]
    fn every_family_is_in_the_table() {
        // Adding a KernelKey variant breaks this match until it is listed in FAMILIES.
        let index = |k: &KernelKey| match k {
            KernelKey::Elementwise(_) => 0,
            KernelKey::Cast(_) => 1,
            KernelKey::Shape(_) => 2,
            KernelKey::Reduce(_) => 3,
            KernelKey::Matmul(_) => 4,
            KernelKey::Norm(_) => 5,
            KernelKey::Attention(_) => 6,
            KernelKey::Rope(_) => 7,
            KernelKey::Random(_) => 8,
            KernelKey::Quant(_) => 9,
            KernelKey::Grouped(_) => 10,
            KernelKey::Ssm(_) => 11,
            KernelKey::Fft(_) => 12,
            KernelKey::State(_) => 13,
            KernelKey::Custom(_) => 14,
        };
        // Custom comes last and is no family of the table: every index before it is.
        let custom = index(&KernelKey::Custom(crate::custom::CustomKernel(0)));
        let seen: Vec<usize> = FAMILIES.iter().map(index).collect();
        assert_eq!(seen, (0..custom).collect::<Vec<_>>());
        for k in keys() {
            assert!(FAMILIES.iter().any(|f| index(f) == index(&k)));
        }
    }
}
