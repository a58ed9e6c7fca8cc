//! Block-quantized weight formats (the ggml/GGUF families rlx reads).
//!
//! Contract: [`QuantType`] is the one description of block geometry in rlx. A quantized tensor
//! of `n` elements is `n / block_elems` blocks of `block_bytes` bytes each, stored back to back
//! (as U8 storage); blocks run along the fastest-varying (last, in rlx order) dimension. Sizes
//! are computed with checked arithmetic: an element count that is not whole blocks, or whose
//! byte size overflows `usize`, is a [`QuantError`], never a wrapped number or a panic. What the
//! bytes of a block mean is written beside each variant; rlx-cpu's `quant::dequantize` is the
//! reference decoder.

use std::fmt;
use std::str::FromStr;

/// A block quantization format, as ggml defines it. Every scale stored as f16 is IEEE half
/// precision, little-endian.
#[allow(non_camel_case_types)] // the ggml names, spelled as users know them
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuantType {
    /// 32 elements in 34 bytes: an f16 scale `d`, then 32 signed bytes `q`; `x = q · d`.
    Q8_0,
    /// 32 elements in 18 bytes: an f16 scale `d`, then 16 bytes of 4-bit values. Byte `j` holds
    /// element `j` in its low nibble and element `j + 16` in its high nibble; `x = (q − 8) · d`.
    Q4_0,
    /// 256 elements in 144 bytes: f16 `d`, f16 `dmin`, 12 bytes of eight 6-bit (scale, min)
    /// pairs, 128 bytes of 4-bit values. Eight sub-blocks of 32; `x = d·scale·q − dmin·min`.
    Q4K,
    /// 256 elements in 176 bytes: as [`QuantType::Q4K`] with a fifth bit per element from 32
    /// extra bytes (bit `i` of byte `l` belongs to element `l` of sub-block `i`).
    Q5K,
    /// 256 elements in 210 bytes: 128 bytes of low 4 bits, 64 bytes of high 2 bits, sixteen
    /// signed 8-bit scales (one per 16 elements), then an f16 `d`; `x = d·scale·(q − 32)`.
    Q6K,
}

impl QuantType {
    /// Every format, in declaration order.
    pub const ALL: [QuantType; 5] =
        [QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4K, QuantType::Q5K, QuantType::Q6K];

    /// Elements per block: 32 for the legacy formats, 256 for the K-quants' super-blocks.
    pub fn block_elems(self) -> usize {
        match self {
            QuantType::Q8_0 | QuantType::Q4_0 => 32,
            QuantType::Q4K | QuantType::Q5K | QuantType::Q6K => 256,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            QuantType::Q8_0 => 34,
            QuantType::Q4_0 => 18,
            QuantType::Q4K => 144,
            QuantType::Q5K => 176,
            QuantType::Q6K => 210,
        }
    }

    /// Byte offsets, within one block, of its f16 scales (`d`, and `dmin` for Q4_K / Q5_K). All
    /// are even, so no scale straddles a 32-bit word of a row whose blocks start at even bytes.
    pub fn f16_offsets(self) -> &'static [usize] {
        match self {
            QuantType::Q8_0 | QuantType::Q4_0 => &[0],
            QuantType::Q4K | QuantType::Q5K => &[0, 2],
            QuantType::Q6K => &[208],
        }
    }

    /// The ggml name: `Q8_0`, `Q4_0`, `Q4_K`, `Q5_K`, `Q6_K`.
    pub fn name(self) -> &'static str {
        match self {
            QuantType::Q8_0 => "Q8_0",
            QuantType::Q4_0 => "Q4_0",
            QuantType::Q4K => "Q4_K",
            QuantType::Q5K => "Q5_K",
            QuantType::Q6K => "Q6_K",
        }
    }

    /// Bytes that hold `n_elems` elements. Errors when `n_elems` is not a whole number of
    /// blocks or the size overflows `usize`.
    pub fn byte_len(self, n_elems: usize) -> Result<usize, QuantError> {
        if !n_elems.is_multiple_of(self.block_elems()) {
            return Err(QuantError::PartialBlock { ty: self, elems: n_elems });
        }
        (n_elems / self.block_elems())
            .checked_mul(self.block_bytes())
            .ok_or(QuantError::Overflow { ty: self, elems: n_elems })
    }

    /// Elements held by `n_bytes` bytes of blocks. Errors when `n_bytes` is not a whole number
    /// of blocks or the count overflows `usize`.
    pub fn elem_count(self, n_bytes: usize) -> Result<usize, QuantError> {
        if !n_bytes.is_multiple_of(self.block_bytes()) {
            return Err(QuantError::PartialBlockBytes { ty: self, bytes: n_bytes });
        }
        (n_bytes / self.block_bytes())
            .checked_mul(self.block_elems())
            .ok_or(QuantError::TooManyElems { ty: self, bytes: n_bytes })
    }
}

impl fmt::Display for QuantType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for QuantType {
    type Err = QuantError;

    /// The ggml name, in any letter case (`q4_k` and `Q4_K` are the same).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        QuantType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| QuantError::UnknownName { name: s.to_string() })
    }
}

/// A size that does not fit a format's blocks, or a name that is no format.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum QuantError {
    #[error("{ty}: {elems} elements are not a whole number of {}-element blocks", ty.block_elems())]
    PartialBlock { ty: QuantType, elems: usize },
    #[error("{ty}: {bytes} bytes are not a whole number of {}-byte blocks", ty.block_bytes())]
    PartialBlockBytes { ty: QuantType, bytes: usize },
    #[error("{ty}: the byte size of {elems} elements overflows usize")]
    Overflow { ty: QuantType, elems: usize },
    #[error("{ty}: {bytes} bytes hold more elements than usize counts")]
    TooManyElems { ty: QuantType, bytes: usize },
    /// Packed bytes and an element count that disagree (a decoder's input and output).
    #[error("{ty}: {bytes} bytes of blocks do not hold {elems} elements (they need {} bytes)", need_bytes(*ty, *elems))]
    LengthMismatch { ty: QuantType, bytes: usize, elems: usize },
    #[error("unknown quantization type '{name}'; rlx knows Q8_0, Q4_0, Q4_K, Q5_K and Q6_K")]
    UnknownName { name: String },
}

/// The byte size of `elems` for a message, or why there is none.
fn need_bytes(ty: QuantType, elems: usize) -> String {
    match ty.byte_len(elems) {
        Ok(n) => n.to_string(),
        Err(QuantError::PartialBlock { .. }) => format!("whole {}-element blocks", ty.block_elems()),
        Err(_) => "more than usize".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_matches_ggml() {
        let want = [(32, 34), (32, 18), (256, 144), (256, 176), (256, 210)];
        for (ty, (elems, bytes)) in QuantType::ALL.into_iter().zip(want) {
            assert_eq!((ty.block_elems(), ty.block_bytes()), (elems, bytes), "{ty}");
        }
    }

    #[test]
    fn byte_len_counts_whole_blocks() {
        assert_eq!(QuantType::Q8_0.byte_len(0), Ok(0));
        assert_eq!(QuantType::Q8_0.byte_len(64), Ok(68));
        assert_eq!(QuantType::Q4K.byte_len(4096), Ok(16 * 144));
        assert_eq!(QuantType::Q6K.byte_len(256), Ok(210));
        assert_eq!(QuantType::Q5K.elem_count(352), Ok(512));
    }

    #[test]
    fn partial_blocks_and_overflow_are_refused() {
        assert_eq!(
            QuantType::Q4_0.byte_len(33),
            Err(QuantError::PartialBlock { ty: QuantType::Q4_0, elems: 33 })
        );
        assert!(matches!(QuantType::Q6K.elem_count(211), Err(QuantError::PartialBlockBytes { .. })));
        // Only formats with more bytes than elements per block (Q8_0) can overflow this way.
        let huge = usize::MAX / 32 * 32;
        assert_eq!(
            QuantType::Q8_0.byte_len(huge),
            Err(QuantError::Overflow { ty: QuantType::Q8_0, elems: huge })
        );
        assert!(QuantType::Q6K.byte_len(usize::MAX / 256 * 256).is_ok());
        assert!(matches!(
            QuantType::Q4_0.elem_count(usize::MAX / 18 * 18),
            Err(QuantError::TooManyElems { .. })
        ));
        let msg = QuantType::Q4K.byte_len(100).unwrap_err().to_string();
        assert_eq!(msg, "Q4_K: 100 elements are not a whole number of 256-element blocks");
    }

    #[test]
    fn names_round_trip() {
        for ty in QuantType::ALL {
            assert_eq!(ty.to_string().parse::<QuantType>(), Ok(ty));
            assert_eq!(ty.name().to_lowercase().parse::<QuantType>(), Ok(ty));
        }
        let err = "Q3_K".parse::<QuantType>().unwrap_err();
        assert!(err.to_string().contains("'Q3_K'"), "{err}");
    }

    #[test]
    fn length_mismatch_says_what_is_needed() {
        let e = QuantError::LengthMismatch { ty: QuantType::Q8_0, bytes: 34, elems: 64 };
        assert_eq!(e.to_string(), "Q8_0: 34 bytes of blocks do not hold 64 elements (they need 68 bytes)");
    }
}
