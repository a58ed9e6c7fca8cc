//! Static shapes, and the one place element counts and byte sizes are checked.
//!
//! Invariant: every shape held by a [`crate::Graph`] node or a [`crate::Tensor`] passed
//! [`Shape::check_size`] when it was created (in `Graph::push`, `Graph::push_leaf`, inference and
//! `Tensor::new`), so its element count fits in `usize` and its byte size in [`MAX_TENSOR_BYTES`].
//! For those shapes [`Shape::numel`], [`Shape::strides`] and [`TensorType::size_bytes`] are exact.
//! A shape built by hand that was never checked gets saturated (never wrapped, never panicking)
//! answers from them; check it with [`Shape::checked_numel`] or [`Shape::check_size`] first.

use crate::{DType, IrError};
use std::fmt;

/// The largest byte size any tensor may have, on every backend: `isize::MAX`, the most a single
/// host allocation can hold (no device has more memory). Backends declare their own, smaller
/// limit in `Capabilities::max_tensor_bytes`, which rlx-opt checks when compiling.
pub const MAX_TENSOR_BYTES: u64 = isize::MAX as u64;

/// A static shape: one `usize` per dimension. The empty shape `[]` is a scalar.
///
/// Building one checks nothing (the dims are public and shapes are built everywhere); sizes are
/// checked where a shape becomes a graph node's type or a tensor's (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    /// The shape with these dims, outermost first.
    pub fn new(dims: &[usize]) -> Self {
        Shape(dims.to_vec())
    }

    /// The shape of a scalar: rank 0, one element.
    pub fn scalar() -> Self {
        Shape(Vec::new())
    }

    /// The dims, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// The number of dims.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements (1 for a scalar, 0 if any dim is 0). Exact for every shape of a graph
    /// node or tensor (see the module doc); an unchecked shape whose dims overflow `usize` gives
    /// `usize::MAX` instead of wrapping.
    pub fn numel(&self) -> usize {
        if self.0.contains(&0) {
            0
        } else {
            self.span().unwrap_or(usize::MAX)
        }
    }

    /// Number of elements, or `None` when the non-zero dims multiply past `usize::MAX`. A shape
    /// such as `[0, 2^40, 2^40]` is `None` too: it holds nothing, but its strides overflow.
    pub fn checked_numel(&self) -> Option<usize> {
        let span = self.span()?;
        Some(if self.0.contains(&0) { 0 } else { span })
    }

    /// Product of the dims with zeros counted as 1: the largest stride-times-dim any index
    /// computation on this shape reaches.
    fn span(&self) -> Option<usize> {
        self.0.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d.max(1)))
    }

    /// Checks that a tensor of this shape and `dtype` can exist: its element count fits in
    /// `usize` and its byte size ([`DType::storage_bytes`] per element) is at most
    /// [`MAX_TENSOR_BYTES`]. Returns the element count, or `TooLarge` naming `op`.
    pub fn check_size(&self, op: &'static str, dtype: DType) -> Result<usize, IrError> {
        let per = dtype.storage_bytes() as u64;
        let bytes = self.checked_numel().and_then(|n| (n as u64).checked_mul(per).map(|b| (n, b)));
        match bytes {
            Some((n, b)) if b <= MAX_TENSOR_BYTES => Ok(n),
            _ => Err(IrError::TooLarge {
                op,
                shape: self.clone(),
                dtype,
                what: self.describe_size(per),
                limit: MAX_TENSOR_BYTES,
            }),
        }
    }

    /// "N elements × B bytes = T bytes", computed in u128 so that it never wraps.
    fn describe_size(&self, per: u64) -> String {
        let elems = self.0.iter().try_fold(1u128, |acc, &d| acc.checked_mul(d.max(1) as u128));
        match elems {
            Some(n) if self.0.contains(&0) => {
                format!("index arithmetic over {n} positions (its non-zero dims), past usize::MAX")
            }
            Some(n) => match n.checked_mul(per as u128) {
                Some(b) => format!("{n} elements × {per} bytes = {b} bytes"),
                None => format!("{n} elements × {per} bytes (more than 2^128 bytes)"),
            },
            None => "more than 2^128 elements".to_string(),
        }
    }

    /// Row-major (C order) strides in elements (exact for checked shapes, saturating otherwise).
    pub fn strides(&self) -> Vec<usize> {
        let mut s = vec![1usize; self.0.len()];
        for i in (0..self.0.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1].saturating_mul(self.0[i + 1]);
        }
        s
    }

    /// Last dimension, or 1 for a scalar.
    pub fn last(&self) -> usize {
        self.0.last().copied().unwrap_or(1)
    }
}

impl From<&[usize]> for Shape {
    fn from(d: &[usize]) -> Self {
        Shape(d.to_vec())
    }
}

impl From<Vec<usize>> for Shape {
    fn from(d: Vec<usize>) -> Self {
        Shape(d)
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(d: [usize; N]) -> Self {
        Shape(d.to_vec())
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "]")
    }
}

/// A shape with its element type: what every node produces.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// The dims.
    pub shape: Shape,
    /// The element type.
    pub dtype: DType,
}

impl TensorType {
    /// A type of `shape` and `dtype`.
    pub fn new(shape: impl Into<Shape>, dtype: DType) -> Self {
        TensorType { shape: shape.into(), dtype }
    }

    /// The element count of the shape.
    pub fn numel(&self) -> usize {
        self.shape.numel()
    }

    /// Host size in bytes (exact for checked types; saturating otherwise).
    pub fn size_bytes(&self) -> usize {
        self.numel().saturating_mul(self.dtype.size_bytes())
    }

    /// Size in bytes as the widest backend stores it ([`DType::storage_bytes`] per element):
    /// what size limits are checked against. Exact for checked types; saturating otherwise.
    pub fn storage_bytes(&self) -> u64 {
        (self.numel() as u64).saturating_mul(self.dtype.storage_bytes() as u64)
    }

    /// [`Shape::check_size`] for this type.
    pub fn check_size(&self, op: &'static str) -> Result<(), IrError> {
        self.shape.check_size(op, self.dtype).map(|_| ())
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.dtype, self.shape)
    }
}
