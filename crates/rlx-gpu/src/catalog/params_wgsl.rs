//! The WGSL declaration of every params struct, generated from its Rust `#[repr(C)]` struct: the
//! Rust struct is the one declaration, and kernels write no `struct XParams` and no `p: XParams`
//! of their own. A variant's WGSL ends with the generated struct and the declaration of `p`
//! (see [`crate::KernelVariant::wgsl`]).
//!
//! Each struct's field list below is complete and typed by construction: `wgsl_struct!`
//! destructures the struct without `..` and reads each field as the type written, so a field
//! added, removed or retyped in Rust fails to compile here. A test compares naga's offsets of
//! every generated struct with Rust's `offset_of!` (`layout_tests.rs`).
//!
//! How a Rust field becomes WGSL members (uniform buffers need 16-byte array strides, so arrays
//! of words travel as vectors of four):
//! - a scalar (`u32`, `i32`, `f32`) is one member of that type;
//! - 4 words (`[u32; 4]`) are one `vec4<u32>`; 4·n words (`[u32; 8]`, `[[u32; 4]; 7]`) one
//!   `array<vec4<u32>, n>`;
//! - any other count of words is one member per word, numbered: `pad: [u32; 3]` is `pad0`,
//!   `pad1`, `pad2`;
//! - `field: [u32; 3] => [q_sb, q_ss, q_sh]` names the words' members (split evenly);
//! - a nested params struct is spelled out member by member.

use super::attention::params::AttentionParams;
use super::attention::AttnCombineParams;
use super::cast::CastParams;
use super::elementwise::params::{BinaryParams, UnaryParams, WhereParams};
use super::fft::FftParams;
use super::grouped::GroupedParams;
use super::matmul::{CoopSplitParams, MatmulParams, SplitKParams, VecMultiParams};
use super::norm::{NormParams, SoftmaxParams};
use super::quant::QuantParams;
use super::random::RandomParams;
use super::reduce::params::{AxisParams, ReduceParams, TopKParams};
use super::rope::RopeParams;
use super::shape::params::{CopyParams, FillParams, GatherParams, ScatterAddParams};
use super::ssm::{DeltaRuleParams, ScanParams};
use super::state::params::WriteRowsParams;
use crate::ParamsBinding;
use std::fmt::Write as _;

/// One WGSL member of a params struct: its name, WGSL type and the byte offset of the Rust
/// field (or word of it) it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub ty: String,
    pub offset: u32,
}

/// A field type made of 32-bit words: a scalar or an array of them.
pub trait Words {
    /// The WGSL scalar of each word.
    const SCALAR: &'static str;
    /// How many words.
    const COUNT: u32;
}

impl Words for u32 {
    const SCALAR: &'static str = "u32";
    const COUNT: u32 = 1;
}

impl Words for i32 {
    const SCALAR: &'static str = "i32";
    const COUNT: u32 = 1;
}

impl Words for f32 {
    const SCALAR: &'static str = "f32";
    const COUNT: u32 = 1;
}

impl<T: Words, const N: usize> Words for [T; N] {
    const SCALAR: &'static str = T::SCALAR;
    // Params structs are at most 128 bytes, so N cannot truncate.
    const COUNT: u32 = T::COUNT * N as u32;
}

/// A Rust field type as WGSL members (see the module doc).
pub trait WgslField {
    /// Pushes the members of field `field` at byte `offset`, named `names` when not empty.
    fn push_members(field: &str, names: &[&str], offset: u32, out: &mut Vec<Member>);
}

impl<T: Words> WgslField for T {
    fn push_members(field: &str, names: &[&str], offset: u32, out: &mut Vec<Member>) {
        let (scalar, count) = (T::SCALAR, T::COUNT);
        if !names.is_empty() {
            let each = count / names.len() as u32;
            for (i, name) in names.iter().enumerate() {
                push_words(name, scalar, each, offset + 4 * each * i as u32, out);
            }
        } else {
            push_words(field, scalar, count, offset, out);
        }
    }
}

/// `count` words of `scalar` named `name` at `offset`, typed by the rules of the module doc.
fn push_words(name: &str, scalar: &str, count: u32, offset: u32, out: &mut Vec<Member>) {
    let ty = match count {
        1 => scalar.to_string(),
        4 => format!("vec4<{scalar}>"),
        n if n % 4 == 0 => format!("array<vec4<{scalar}>, {}>", n / 4),
        n => {
            for i in 0..n {
                out.push(Member {
                    name: format!("{name}{i}"),
                    ty: scalar.to_string(),
                    offset: offset + 4 * i,
                });
            }
            return;
        }
    };
    out.push(Member { name: name.to_string(), ty, offset });
}

/// A params struct that a kernel's WGSL declares from Rust.
pub trait WgslStruct {
    /// The struct's name in both languages.
    const NAME: &'static str;
    /// Its WGSL members in order, padding included.
    fn members() -> Vec<Member>;
}

/// A variant's params struct: what [`crate::KernelVariant::wgsl`] declares after the kernel.
#[derive(Clone, Copy)]
pub struct ParamsStruct {
    /// The struct's name (`BinaryParams`).
    pub name: &'static str,
    /// Its size in bytes: the push-constant range a driver declares.
    pub size: u32,
    members: fn() -> Vec<Member>,
}

impl PartialEq for ParamsStruct {
    fn eq(&self, other: &Self) -> bool {
        // A name is one Rust struct.
        self.name == other.name
    }
}

impl std::fmt::Debug for ParamsStruct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} bytes)", self.name, self.size)
    }
}

impl ParamsStruct {
    /// The WGSL members, with the byte offsets of the Rust fields they stand for.
    pub fn members(&self) -> Vec<Member> {
        (self.members)()
    }

    /// `struct Name { ... }` and the declaration of `p` as `binding` says, one member a line.
    pub fn wgsl(&self, binding: ParamsBinding) -> String {
        let mut text = format!("// {} from its Rust struct (rlx-gpu catalog/params_wgsl.rs).\n", self.name);
        let _ = writeln!(text, "struct {} {{", self.name);
        for m in self.members() {
            let _ = writeln!(text, "    {}: {},", m.name, m.ty);
        }
        let _ = writeln!(text, "}}\n{} p: {};", binding.declaration(), self.name);
        text
    }
}

/// The params struct `T`, for a variant's `Spec`.
pub(crate) fn params_of<T: WgslStruct>() -> ParamsStruct {
    // Params structs are at most 128 bytes (asserted by a test), so this cannot truncate.
    ParamsStruct { name: T::NAME, size: std::mem::size_of::<T>() as u32, members: T::members }
}

/// Implements [`WgslStruct`] (and [`WgslField`], to nest it) for a params struct from its
/// complete field list; see the module doc.
macro_rules! wgsl_struct {
    ($name:ident { $($field:ident: $ty:ty $(=> [$($w:ident),*])?),* $(,)? }) => {
        impl WgslStruct for $name {
            const NAME: &'static str = stringify!($name);
            fn members() -> Vec<Member> {
                #[allow(dead_code)]
                fn complete(v: $name) {
                    let $name { $($field: _),* } = v;
                    $(let _: $ty = v.$field;)*
                }
                let mut out = Vec::new();
                $(
                    let names: &[&str] = &[$($(stringify!($w)),*)?];
                    let offset = std::mem::offset_of!($name, $field) as u32;
                    <$ty as WgslField>::push_members(stringify!($field), names, offset, &mut out);
                )*
                out
            }
        }

        impl WgslField for $name {
            fn push_members(_field: &str, _names: &[&str], offset: u32, out: &mut Vec<Member>) {
                out.extend(Self::members().into_iter().map(|m| Member { offset: offset + m.offset, ..m }));
            }
        }
    };
}

// One struct a line: the lists are what the compiler checks, not code to read.
#[rustfmt::skip]
mod structs {
    use super::*;
    use crate::catalog::elementwise::params::{MAX_RANK, WHERE_MAX_RANK};
    use crate::catalog::matmul::MULTI_MAX_PARTS;

    wgsl_struct!(AttentionParams { sq: u32, sk: u32, hq: u32, group: u32, d: u32, dv: u32, mask_kind: u32, window: u32, q_strides: [u32; 3] => [q_sb, q_ss, q_sh], k_strides: [u32; 3] => [k_sb, k_ss, k_sh], v_strides: [u32; 3] => [v_sb, v_ss, v_sh], o_strides: [u32; 3] => [o_sb, o_ss, o_sh], m_strides: [u32; 4] => [m_sb, m_sh, m_si, m_sj], scale: f32, softcap: f32, mask_float: u32, bh_offset: u32, has_lens: u32, pad: [u32; 3] });
    wgsl_struct!(AttnCombineParams { chunks: u32, dv: u32, hq: u32, sq: u32, o_sb: u32, o_ss: u32, o_sh: u32, row_offset: u32 });
    wgsl_struct!(CastParams { numel: u32, words: u32, _pad: [u32; 2] });
    wgsl_struct!(BinaryParams { numel: u32, rank: u32, _pad: [u32; 2], shape: [u32; MAX_RANK], a_strides: [u32; MAX_RANK], b_strides: [u32; MAX_RANK] });
    wgsl_struct!(UnaryParams { numel: u32, _pad: [u32; 3] });
    wgsl_struct!(WhereParams { numel: u32, rank: u32, _pad: [u32; 2], dims: [[u32; 4]; WHERE_MAX_RANK] });
    wgsl_struct!(FftParams { n: u32, log2n: u32, rows: u32, per_group: u32, inverse: u32, pad: [u32; 3] });
    wgsl_struct!(GroupedParams { t: u32, s: u32, top: u32, n: u32, k: u32, e: u32, row_bytes: u32, last_word: u32 });
    wgsl_struct!(CoopSplitParams { mm: MatmulParams, n1: u32, n2: u32, tiles0: u32, tiles1: u32 });
    wgsl_struct!(MatmulParams { m: u32, n: u32, k: u32, batch: u32, batch_inner: u32, a_stride_m: u32, a_stride_k: u32, b_stride_k: u32, b_stride_n: u32, a_batch_outer: u32, a_batch_inner: u32, b_batch_outer: u32, b_batch_inner: u32, a_offset: u32, b_offset: u32, c_offset: u32 });
    wgsl_struct!(SplitKParams { mn: u32, n: u32, splits: u32, c_offset: u32 });
    wgsl_struct!(VecMultiParams { m: u32, k: u32, a_stride_m: u32, a_stride_k: u32, a_offset: u32, n: [u32; MULTI_MAX_PARTS], eps: f32, pad: [u32; 3] });
    wgsl_struct!(SoftmaxParams { rows: u32, cols: u32, _pad: [u32; 2] });
    wgsl_struct!(NormParams { rows: u32, cols: u32, eps: f32, _pad: u32 });
    wgsl_struct!(QuantParams { m: u32, n: u32, k: u32, row_bytes: u32, last_word: u32, pad: [u32; 3] });
    wgsl_struct!(RandomParams { numel: u32, blocks: u32, _pad: [u32; 2] });
    wgsl_struct!(ReduceParams { n_groups: u32, count: u32, chunk: u32, chunks: u32, kept_rank: u32, red_rank: u32, divisor: f32, row_threads: u32, kept_shape: [u32; 4], kept_strides: [u32; 4], red_shape: [u32; 4], red_strides: [u32; 4] });
    wgsl_struct!(AxisParams { lines: u32, len: u32, inner: u32, row_threads: u32 });
    wgsl_struct!(TopKParams { lines: u32, len: u32, inner: u32, k: u32, largest: u32, row_threads: u32, _pad: [u32; 2] });
    wgsl_struct!(RopeParams { numel: u32, d: u32, rot: u32, s: u32, h: u32, bhsd: u32, gptj: u32, _pad: u32 });
    wgsl_struct!(CopyParams { numel: u32, rank: u32, src_base: u32, out_base: u32, shape: [u32; MAX_RANK], src_strides: [u32; MAX_RANK], out_strides: [u32; MAX_RANK] });
    wgsl_struct!(FillParams { numel: u32, value: u32, _pad: [u32; 2] });
    wgsl_struct!(GatherParams { numel: u32, len: u32, nidx: u32, inner: u32 });
    wgsl_struct!(ScatterAddParams { groups: u32, len: u32, nidx: u32, inner: u32, lanes: u32, blocks: u32, _pad: [u32; 2] });
    wgsl_struct!(ScanParams { batch: u32, d: u32, l: u32, n: u32, groups: u32, chunk: u32, chunks: u32, softplus: u32, threads: u32, pad: [u32; 3] });
    wgsl_struct!(DeltaRuleParams { batch: u32, l: u32, h: u32, k: u32, v: u32, mode: u32, scale: f32, col_blocks: u32 });
    wgsl_struct!(WriteRowsParams { numel: u32, n: u32, cap: u32, inner: u32, offset_stride: u32, _pad: [u32; 3] });
}
