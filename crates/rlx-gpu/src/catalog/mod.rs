//! The kernel families. Each family owns its key enum, the `Spec` of each of its variants and
//! its params structs; families depend on nothing in `variants.rs`, which assembles the one
//! table ([`crate::variants`]) from them.
//!
//! - [`elementwise`]: broadcasting binary ops and comparisons, unary math and casts, every
//!   32-bit dtype.
//! - [`cast`]: casts from or to the packed dtypes (f16, bf16, u8).
//! - [`data`]: where, data movement and reductions on 32-bit words.
//! - [`nn`]: matmul (plain and with fused epilogues), softmax, row norms, attention, RoPE.
//! - [`random`]: counter-based random numbers (Philox4x32-10), uniform and normal.
//! - [`quant`]: matmuls and row lookups on block-quantized weights kept packed.
//! - [`fft`]: Fourier transforms of complex rows in shared memory.
//! - [`grouped`]: the experts of a mixture-of-experts layer, chosen per token on the device.
//! - [`ssm`]: the recurrences of state-space models (selective scan, gated delta rule).
//!
//! Every variant's WGSL is its kernel file followed by the prelude ([`PRELUDE`]).

pub mod cast;
pub mod data;
pub mod elementwise;
pub mod fft;
pub mod grouped;
pub mod nn;
pub mod quant;
pub mod random;
pub mod ssm;

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

/// A 32-bit word type as kernels compute on it. Bool words compare and move as `U32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WordType {
    F32,
    I32,
    U32,
}

impl WordType {
    pub const ALL: [WordType; 3] = [WordType::F32, WordType::I32, WordType::U32];
}

/// Values of a variant's placeholders (see [`crate::preprocess`]).
pub(crate) type Defines = &'static [(&'static str, &'static str)];

/// What a family says about one variant; [`crate::KernelVariant`] adds the key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spec {
    /// `<kernel>[_<op>]_<dtype>`: the compiled module's file stem.
    pub name: &'static str,
    /// Path relative to the crate root, for error messages.
    pub file: &'static str,
    pub source: &'static str,
    pub defines: Defines,
    pub workgroup_size: [u32; 3],
    pub bindings: &'static [Access],
    pub params_size: u32,
}

impl Spec {
    /// A variant with a 256-thread 1-D workgroup (most kernels have one).
    pub(crate) fn wg256(
        (name, defines): (&'static str, Defines),
        file: &'static str,
        source: &'static str,
        bindings: &'static [Access],
        params_size: u32,
    ) -> Spec {
        Spec { name, file, source, defines, workgroup_size: [256, 1, 1], bindings, params_size }
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

/// Size of a params struct: the push-constant range a driver declares.
pub(crate) fn size_of<T>() -> u32 {
    // Params structs are at most 128 bytes (asserted by a test), so this cannot truncate.
    std::mem::size_of::<T>() as u32
}
