//! Element types.

use std::fmt;

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary16 (`half::f16`).
    F16,
    /// bfloat16: f32's sign and exponent with a 7-bit mantissa (the top half of an f32).
    BF16,
    /// Signed 32-bit integers.
    I32,
    /// Unsigned 32-bit integers.
    U32,
    /// Unsigned bytes: image data and packed quantized weights.
    U8,
    /// Booleans: one byte on the host, one 32-bit word on GPUs.
    Bool,
}

impl DType {
    /// Bytes per element as stored on every backend (Bool is stored as one `u32` word on GPUs,
    /// but the host representation is one byte; this is the host size).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::Bool => 1,
        }
    }

    /// Bytes per element in the widest storage any backend uses: [`DType::size_bytes`], except
    /// Bool, which GPUs store as one 32-bit word. Size limits are checked with this, so a tensor
    /// that passes them fits on every backend's storage of its dtype.
    pub fn storage_bytes(self) -> usize {
        match self {
            DType::Bool => 4,
            other => other.size_bytes(),
        }
    }

    /// Every dtype, in declaration order.
    pub const ALL: [DType; 7] =
        [DType::F32, DType::F16, DType::BF16, DType::I32, DType::U32, DType::U8, DType::Bool];

    /// F32, F16 or BF16.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16)
    }

    /// I32, U32 or U8.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::U32 | DType::U8)
    }

    /// The lower-case name ("f32", "bf16", "bool", ...), as dumps and messages print it.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::U8 => "u8",
            DType::Bool => "bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
