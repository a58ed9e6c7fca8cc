//! The params structs checked member by member against the WGSL: every `#[repr(C)]` params
//! struct's fields (names, offsets, types) must equal naga's reflection of the WGSL struct of
//! the same name, in every kernel that declares it. The field lists below are complete and
//! typed by construction: [`layout!`] destructures the struct without `..` and reads each field
//! as the type written, so a field added, removed or retyped in Rust fails to compile here.

use super::attention::params::AttentionParams;
use super::attention::AttnCombineParams;
use super::cast::CastParams;
use super::elementwise::params::{BinaryParams, UnaryParams, WhereParams, MAX_RANK, WHERE_MAX_RANK};
use super::fft::FftParams;
use super::grouped::GroupedParams;
use super::matmul::{CoopSplitParams, MatmulParams, SplitKParams, VecMultiParams, MULTI_MAX_PARTS};
use super::norm::{NormParams, SoftmaxParams};
use super::quant::QuantParams;
use super::random::RandomParams;
use super::reduce::params::{AxisParams, ReduceParams, TopKParams};
use super::rope::RopeParams;
use super::shape::params::{CopyParams, FillParams, GatherParams};
use super::ssm::{DeltaRuleParams, ScanParams};
use super::state::params::WriteRowsParams;
use crate::{variants, ParamsBinding};
use std::collections::{BTreeMap, BTreeSet};

/// A type as the WGSL layout sees it: a scalar (or nested struct) name and how many of them
/// lie back to back. Arrays and vectors of packed scalars flatten (`array<vec4<u32>, 2>` and
/// `[u32; 8]` are both 8 × `u32`): their bytes are the same.
type Ty = (String, u32);

/// A Rust field type as the WGSL type it must be.
trait Wgsl {
    fn wgsl() -> Ty;
}

impl Wgsl for u32 {
    fn wgsl() -> Ty {
        ("u32".into(), 1)
    }
}

impl Wgsl for i32 {
    fn wgsl() -> Ty {
        ("i32".into(), 1)
    }
}

impl Wgsl for f32 {
    fn wgsl() -> Ty {
        ("f32".into(), 1)
    }
}

impl<T: Wgsl, const N: usize> Wgsl for [T; N] {
    fn wgsl() -> Ty {
        let (t, n) = T::wgsl();
        (t, n * N as u32)
    }
}

impl Wgsl for MatmulParams {
    fn wgsl() -> Ty {
        ("MatmulParams".into(), 1)
    }
}

/// (member name, byte offset, type).
type Members = Vec<(String, u32, Ty)>;

/// `members` with every run of padding (`_pad`, `_pad0`, `pad`, …) as one member `pad`, and
/// numbered members of one type (`n0`, `n1`, `n2`) as one array (`n`): how a run of words is
/// split into fields is not the layout.
fn merge_runs(members: Members) -> Members {
    let mut out: Members = Vec::new();
    for (name, offset, (t, n)) in members {
        let bare = name.trim_start_matches('_');
        let base =
            if bare.starts_with("pad") { "pad" } else { name.trim_end_matches(|c: char| c.is_ascii_digit()) };
        let numbered = base == "pad" || base.len() < name.len();
        match out.last_mut() {
            Some((last, _, (lt, ln))) if numbered && last == base && *lt == t => *ln += n,
            _ => out.push((base.to_string(), offset, (t, n))),
        }
    }
    out
}

/// Adds Rust field `field` at `offset`: as one member, or, where the kernel spells an array
/// out as named words (`q_strides` as `q_sb`, `q_ss`, `q_sh`), as one member per name.
fn push(members: &mut Members, field: &str, offset: usize, (t, n): Ty, names: &[&str]) {
    let offset = offset as u32;
    if names.is_empty() {
        return members.push((field.to_string(), offset, (t, n)));
    }
    let each = n / names.len() as u32;
    for (i, name) in names.iter().enumerate() {
        members.push((name.to_string(), offset + 4 * each * i as u32, (t.clone(), each)));
    }
}

/// The name and members of a Rust params struct; see the module doc.
macro_rules! layout {
    ($name:ident { $($field:ident: $ty:ty $(=> [$($w:ident),*])?),* $(,)? }) => {{
        #[allow(dead_code)]
        fn complete(v: $name) {
            let $name { $($field: _),* } = v;
            $(let _: $ty = v.$field;)*
        }
        let mut members = Members::new();
        $(
            let names: &[&str] = &[$($(stringify!($w)),*)?];
            push(&mut members, stringify!($field), std::mem::offset_of!($name, $field), <$ty as Wgsl>::wgsl(), names);
        )*
        (stringify!($name), merge_runs(members))
    }};
}

/// `members` with each member of a nested params struct in place of the struct: a kernel may
/// spell the nested struct's members out (`CoopSplitParams` does, for `MatmulParams`).
fn flatten(members: &Members, structs: &BTreeMap<&'static str, Members>) -> Members {
    let mut out = Members::new();
    for (name, offset, (t, n)) in members {
        match structs.get(t.as_str()) {
            Some(inner) if *n == 1 => {
                out.extend(flatten(inner, structs).into_iter().map(|(m, o, ty)| (m, offset + o, ty)))
            }
            _ => out.push((name.clone(), *offset, (t.clone(), *n))),
        }
    }
    out
}

// One struct a line: the lists are what the compiler checks, not code to read.
#[rustfmt::skip]
fn rust_structs() -> BTreeMap<&'static str, Members> {
    BTreeMap::from([
        layout!(AttentionParams { sq: u32, sk: u32, hq: u32, group: u32, d: u32, dv: u32, mask_kind: u32, window: u32, q_strides: [u32; 3] => [q_sb, q_ss, q_sh], k_strides: [u32; 3] => [k_sb, k_ss, k_sh], v_strides: [u32; 3] => [v_sb, v_ss, v_sh], o_strides: [u32; 3] => [o_sb, o_ss, o_sh], m_strides: [u32; 4] => [m_sb, m_sh, m_si, m_sj], scale: f32, softcap: f32, mask_float: u32, bh_offset: u32, has_lens: u32, pad: [u32; 3] }),
        layout!(AttnCombineParams { chunks: u32, dv: u32, hq: u32, sq: u32, o_sb: u32, o_ss: u32, o_sh: u32, row_offset: u32 }),
        layout!(CastParams { numel: u32, words: u32, _pad: [u32; 2] }),
        layout!(BinaryParams { numel: u32, rank: u32, _pad: [u32; 2], shape: [u32; MAX_RANK], a_strides: [u32; MAX_RANK], b_strides: [u32; MAX_RANK] }),
        layout!(UnaryParams { numel: u32, _pad: [u32; 3] }),
        layout!(WhereParams { numel: u32, rank: u32, _pad: [u32; 2], dims: [[u32; 4]; WHERE_MAX_RANK] }),
        layout!(FftParams { n: u32, log2n: u32, rows: u32, per_group: u32, inverse: u32, pad: [u32; 3] }),
        layout!(GroupedParams { t: u32, s: u32, top: u32, n: u32, k: u32, e: u32, pad: [u32; 2] }),
        layout!(CoopSplitParams { mm: MatmulParams, n1: u32, n2: u32, tiles0: u32, tiles1: u32 }),
        layout!(MatmulParams { m: u32, n: u32, k: u32, batch: u32, batch_inner: u32, a_stride_m: u32, a_stride_k: u32, b_stride_k: u32, b_stride_n: u32, a_batch_outer: u32, a_batch_inner: u32, b_batch_outer: u32, b_batch_inner: u32, a_offset: u32, b_offset: u32, c_offset: u32 }),
        layout!(SplitKParams { mn: u32, n: u32, splits: u32, c_offset: u32 }),
        layout!(VecMultiParams { m: u32, k: u32, a_stride_m: u32, a_stride_k: u32, a_offset: u32, n: [u32; MULTI_MAX_PARTS], eps: f32, pad: [u32; 3] }),
        layout!(SoftmaxParams { rows: u32, cols: u32, _pad: [u32; 2] }),
        layout!(NormParams { rows: u32, cols: u32, eps: f32, _pad: u32 }),
        layout!(QuantParams { m: u32, n: u32, k: u32, row_bytes: u32, last_word: u32, pad: [u32; 3] }),
        layout!(RandomParams { numel: u32, blocks: u32, _pad: [u32; 2] }),
        layout!(ReduceParams { n_groups: u32, count: u32, chunk: u32, chunks: u32, kept_rank: u32, red_rank: u32, divisor: f32, row_threads: u32, kept_shape: [u32; 4], kept_strides: [u32; 4], red_shape: [u32; 4], red_strides: [u32; 4] }),
        layout!(AxisParams { lines: u32, len: u32, inner: u32, row_threads: u32 }),
        layout!(TopKParams { lines: u32, len: u32, inner: u32, k: u32, largest: u32, row_threads: u32, _pad: [u32; 2] }),
        layout!(RopeParams { numel: u32, d: u32, rot: u32, s: u32, h: u32, bhsd: u32, gptj: u32, _pad: u32 }),
        layout!(CopyParams { numel: u32, rank: u32, src_base: u32, out_base: u32, shape: [u32; MAX_RANK], src_strides: [u32; MAX_RANK], out_strides: [u32; MAX_RANK] }),
        layout!(FillParams { numel: u32, value: u32, _pad: [u32; 2] }),
        layout!(GatherParams { numel: u32, len: u32, nidx: u32, inner: u32 }),
        layout!(ScanParams { batch: u32, d: u32, l: u32, n: u32, groups: u32, chunk: u32, chunks: u32, softplus: u32, threads: u32, pad: [u32; 3] }),
        layout!(DeltaRuleParams { batch: u32, l: u32, h: u32, k: u32, v: u32, mode: u32, scale: f32, col_blocks: u32 }),
        layout!(WriteRowsParams { numel: u32, n: u32, cap: u32, inner: u32 }),
    ])
}

/// naga's type `ty` in the notation of [`Wgsl`].
fn wgsl_type(module: &naga::Module, ty: naga::Handle<naga::Type>) -> Ty {
    let t = &module.types[ty];
    match &t.inner {
        naga::TypeInner::Scalar(s) => (scalar(*s), 1),
        naga::TypeInner::Vector { size, scalar: s } => (scalar(*s), *size as u32),
        naga::TypeInner::Array { base, size: naga::ArraySize::Constant(n), stride } => {
            let (e, count) = wgsl_type(module, *base);
            // Only packed elements flatten; a padded stride stays visible in the count.
            let packed = module.types[*base].inner.size(module.to_ctx()) == *stride;
            let e = if packed { e } else { format!("{e} (stride {stride})") };
            (e, count * n.get())
        }
        naga::TypeInner::Struct { .. } => (t.name.clone().unwrap_or_default(), 1),
        other => (format!("{other:?}"), 1),
    }
}

fn scalar(s: naga::Scalar) -> String {
    let kind = match s.kind {
        naga::ScalarKind::Sint => "i",
        naga::ScalarKind::Uint => "u",
        naga::ScalarKind::Float => "f",
        other => return format!("{other:?}"),
    };
    format!("{kind}{}", s.width * 8)
}

#[test]
fn params_structs_match_the_wgsl_member_by_member() {
    let rust = rust_structs();
    assert_eq!(rust.len(), 26, "every params struct is listed once");
    let mut seen = BTreeSet::new();
    let mut sources = BTreeSet::new();
    for v in variants() {
        if !sources.insert((v.file, v.source)) {
            continue;
        }
        let text = v.wgsl(ParamsBinding::Immediate).unwrap();
        let module = naga::front::wgsl::parse_str(&text).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        for (_, t) in module.types.iter() {
            let (Some(name), naga::TypeInner::Struct { members, .. }) = (&t.name, &t.inner) else {
                continue;
            };
            if !name.ends_with("Params") {
                continue;
            }
            let expected = rust
                .get(name.as_str())
                .unwrap_or_else(|| panic!("{}: WGSL struct {name} has no Rust twin", v.file));
            let got: Members = members
                .iter()
                .map(|m| (m.name.clone().unwrap_or_default(), m.offset, wgsl_type(&module, m.ty)))
                .collect();
            let got = merge_runs(got);
            assert_eq!(flatten(&got, &rust), flatten(expected, &rust), "{name} in {}", v.file);
            seen.insert(name.clone());
        }
    }
    let missing: Vec<_> = rust.keys().filter(|n| !seen.contains(**n)).collect();
    assert!(missing.is_empty(), "no kernel declares {missing:?}");
}
