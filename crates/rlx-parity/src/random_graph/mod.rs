//! Random well-typed graphs for differential testing (issue 12 §2).
//!
//! A [`GraphSpec`] is plain data: the dims of the first input and a list of [`Step`]s, each an
//! op family ([`Kind`]) plus three small selector numbers. [`build`] turns any spec into a graph
//! that verifies: a step reads its operands from the values built so far by index (modulo their
//! count) and adapts what it cannot use (a rank too small, shapes that do not broadcast, a result
//! past [`MAX_NUMEL`]) instead of failing. So every spec is valid, and proptest can shrink a
//! failing one freely: fewer steps, smaller selectors, smaller dims.
//!
//! Values are kept well conditioned so that a relative comparison with the CPU means something:
//! inputs are uniform in [-2, 2), the domain-limited ops (log, sqrt, rsqrt, recip, div, pow) see
//! `|x| + 0.5`, and a value whose magnitude bound passes 4 is scaled down by a power of two
//! (exact) before it joins the pool. Outputs of integer type only come from ops on exact data
//! (argmax of a fresh input), so ties and rounding cannot make them differ between devices.
//!
//! A spec has a one-line text form ([`GraphSpec::to_text`], [`GraphSpec::parse`]) used by the
//! saved regressions (`tests/diff_regressions.txt`) and the `diff` binary.

mod build;

pub use build::{build, tolerance, MAX_NUMEL};

use proptest::prelude::*;
use std::fmt;

/// Sizes a dim is drawn from: 1, primes, powers of two and their neighbours (tile edges).
pub const SIZES: [usize; 14] = [1, 2, 3, 5, 7, 8, 16, 17, 31, 33, 64, 65, 127, 129];

/// One op family of the generator. The selectors of a [`Step`] pick the variant (which unary
/// op, which axis, which size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Unary,
    Binary,
    Select,
    Reduce,
    ArgMax,
    MatMul,
    BatchMatMul,
    Softmax,
    Norm,
    Transpose,
    Reshape,
    Concat,
    Slice,
    Pad,
    Reverse,
    Expand,
    Gather,
    Cumsum,
    CastF16,
}

impl Kind {
    /// Every family; shrinking moves towards the first (`Unary`).
    pub const ALL: [Kind; 19] = [
        Kind::Unary,
        Kind::Binary,
        Kind::Select,
        Kind::Reduce,
        Kind::ArgMax,
        Kind::MatMul,
        Kind::BatchMatMul,
        Kind::Softmax,
        Kind::Norm,
        Kind::Transpose,
        Kind::Reshape,
        Kind::Concat,
        Kind::Slice,
        Kind::Pad,
        Kind::Reverse,
        Kind::Expand,
        Kind::Gather,
        Kind::Cumsum,
        Kind::CastF16,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Unary => "unary",
            Kind::Binary => "binary",
            Kind::Select => "select",
            Kind::Reduce => "reduce",
            Kind::ArgMax => "argmax",
            Kind::MatMul => "matmul",
            Kind::BatchMatMul => "bmm",
            Kind::Softmax => "softmax",
            Kind::Norm => "norm",
            Kind::Transpose => "transpose",
            Kind::Reshape => "reshape",
            Kind::Concat => "concat",
            Kind::Slice => "slice",
            Kind::Pad => "pad",
            Kind::Reverse => "reverse",
            Kind::Expand => "expand",
            Kind::Gather => "gather",
            Kind::Cumsum => "cumsum",
            Kind::CastF16 => "cast_f16",
        }
    }

    fn from_name(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// One step: `kind` applied to pool values `a` and `b` (indices modulo the pool size), with `k`
/// choosing the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    pub kind: Kind,
    pub a: u8,
    pub b: u8,
    pub k: u8,
}

/// A random graph as data (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GraphSpec {
    /// Dims of the first input `x` (rank 1 to 4); [`build`] shrinks the largest until the
    /// element count fits [`MAX_NUMEL`].
    pub dims: Vec<usize>,
    pub steps: Vec<Step>,
    /// Extra outputs besides the last value (0 to 3).
    pub outputs: u8,
}

/// Why a spec's text form did not parse.
#[derive(Debug, thiserror::Error)]
#[error("bad graph spec '{text}': {reason} (expected e.g. '3x17;unary.0.1.5,matmul.2.0.7;o1')")]
pub struct SpecParseError {
    pub text: String,
    pub reason: String,
}

impl GraphSpec {
    /// `dims;step,step,...;oN` with dims as `3x17` and a step as `kind.a.b.k`.
    pub fn to_text(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(usize::to_string).collect();
        let steps: Vec<String> =
            self.steps.iter().map(|s| format!("{}.{}.{}.{}", s.kind.name(), s.a, s.b, s.k)).collect();
        format!("{};{};o{}", dims.join("x"), steps.join(","), self.outputs)
    }

    /// The inverse of [`GraphSpec::to_text`].
    pub fn parse(text: &str) -> Result<GraphSpec, SpecParseError> {
        let text = text.trim();
        let bad = |reason: String| SpecParseError { text: text.to_string(), reason };
        let parts: Vec<&str> = text.split(';').collect();
        let [dims, steps, outputs] = parts[..] else {
            return Err(bad(format!("{} ';'-separated parts, want 3", parts.len())));
        };
        let dims = dims
            .split('x')
            .map(|d| d.parse::<usize>().map_err(|e| bad(format!("dim '{d}': {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        if dims.is_empty() || dims.len() > 4 || dims.contains(&0) {
            return Err(bad("dims must be 1 to 4 sizes, none zero".into()));
        }
        let steps = steps
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                let f: Vec<&str> = s.split('.').collect();
                let [kind, a, b, k] = f[..] else {
                    return Err(bad(format!("step '{s}' is not kind.a.b.k")));
                };
                let kind = Kind::from_name(kind).ok_or_else(|| bad(format!("unknown step kind '{kind}'")))?;
                let num = |v: &str| v.parse::<u8>().map_err(|e| bad(format!("step '{s}': '{v}': {e}")));
                Ok(Step { kind, a: num(a)?, b: num(b)?, k: num(k)? })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = outputs
            .strip_prefix('o')
            .and_then(|o| o.parse::<u8>().ok())
            .filter(|&o| o <= 3)
            .ok_or_else(|| bad(format!("outputs '{outputs}' is not o0..o3")))?;
        Ok(GraphSpec { dims, steps, outputs })
    }

    /// A short stable name (seeds the case's data): `diff_` + a hash of the text form.
    pub fn case_name(&self) -> String {
        // FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
        let h = self
            .to_text()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
        format!("diff_{h:016x}")
    }
}

impl fmt::Display for GraphSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

fn kind() -> impl Strategy<Value = Kind> {
    (0..Kind::ALL.len()).prop_map(|i| Kind::ALL[i])
}

fn step() -> impl Strategy<Value = Step> {
    (kind(), any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(kind, a, b, k)| Step { kind, a, b, k })
}

/// Specs of 1 to `max_steps` steps on an input of rank 1 to 4 with dims from [`SIZES`].
pub fn spec_strategy(max_steps: usize) -> impl Strategy<Value = GraphSpec> {
    let dims = proptest::collection::vec((0..SIZES.len()).prop_map(|i| SIZES[i]), 1..=4);
    let steps = proptest::collection::vec(step(), 1..=max_steps.max(1));
    (dims, steps, 0u8..=3).prop_map(|(dims, steps, outputs)| GraphSpec { dims, steps, outputs })
}

#[cfg(test)]
mod tests;
