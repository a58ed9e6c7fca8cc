//! Block-quantized weight formats: the ggml/GGUF families rlx reads, and the int, fp8 and nvfp4
//! block formats rlx defines for weights converted on the host ([`crate::quantize`]).
//!
//! Contract: [`QuantType`] is the one description of block geometry in rlx. A quantized tensor
//! of `n` elements is `n / block_elems` blocks of `block_bytes` bytes each, stored back to back
//! (as U8 storage); blocks run along the fastest-varying (last, in rlx order) dimension. Sizes
//! are computed with checked arithmetic: an element count that is not whole blocks, or whose
//! byte size overflows `usize`, is a [`QuantError`], never a wrapped number or a panic. What the
//! bytes of a block mean is written beside each variant; rlx-cpu's `quant::dequantize` is the
//! reference decoder. Multi-byte fields are little-endian. Only the ggml formats
//! ([`QuantType::GGUF`]) are reachable from a GGUF file (rlx-models maps ggml type ids to
//! exactly those); the GPU kernels decode every format.

use std::fmt;
use std::str::FromStr;

/// A block quantization format. Every scale stored as f16 is IEEE half precision; every f32
/// scale IEEE single precision; all little-endian. The formats rlx adds to ggml's have blocks
/// of a whole number of 32-bit words, so a kernel reads their fields without straddling words.
#[allow(non_camel_case_types)] // the ggml names, spelled as users know them
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuantType {
    /// int8 block, symmetric (ggml). 32 elements in 34 bytes: an f16 scale `d`, then 32 signed
    /// bytes `q`; `x = q · d`.
    Q8_0,
    /// int4 block, symmetric (ggml). 32 elements in 18 bytes: an f16 scale `d`, then 16 bytes of
    /// 4-bit values. Byte `j` holds element `j` in its low nibble and element `j + 16` in its
    /// high nibble; `x = (q − 8) · d`.
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
    /// int4 block, asymmetric (ggml's Q4_1, type id 3; rlx's GGUF reader does not map it). 32
    /// elements in 20 bytes: f16 scale `d` (bytes 0..2), f16 minimum `m` (bytes 2..4), then 16
    /// bytes of unsigned 4-bit `q` laid out as [`QuantType::Q4_0`]'s (byte `4 + j`: element `j`
    /// low nibble, `j + 16` high); `x = q · d + m`.
    Q4_1,
    /// int8 block, asymmetric (rlx's; no ggml counterpart: ggml's Q8_1 is symmetric). 32
    /// elements in 36 bytes: f16 scale `d` (bytes 0..2), f16 minimum `m` (bytes 2..4), then 32
    /// unsigned bytes `q` (element `j` at byte `4 + j`); `x = q · d + m`. The zero point is
    /// `m`: an element equal to the block's minimum is exactly `m`.
    Q8Asym,
    /// fp8 e4m3 block (OCP "e4m3fn": bias 7, no infinities, NaN = S.1111.111, max 448). 32
    /// elements in 36 bytes: an f32 scale `s` (bytes 0..4), then 32 e4m3 codes (element `j` at
    /// byte `4 + j`); `x = s · e4m3(q)`. An f32 scale, not f16: a weight block's `amax / 448`
    /// is often below f16's normal range (6.1e-5).
    Fp8E4M3,
    /// fp8 e5m2 block (IEEE-like: bias 15, S.11111.00 is ±inf, S.11111.xx (xx ≠ 0) NaN, max
    /// 57344). Layout as [`QuantType::Fp8E4M3`]: f32 scale `s`, 32 codes; `x = s · e5m2(q)`.
    Fp8E5M2,
    /// NVIDIA's nvfp4: e2m1 values (sign bit 3, two exponent bits, one mantissa bit: ±{0, 0.5,
    /// 1, 1.5, 2, 3, 4, 6}) in micro-blocks of 16 with one fp8 e4m3 scale each. rlx stores 64
    /// elements (4 micro-blocks) in 36 bytes: the 4 e4m3 scales (byte `i` scales elements
    /// `16·i .. 16·i + 16`), then 32 bytes of codes, element `2j` in the low nibble of byte
    /// `4 + j` and `2j + 1` in its high nibble; `x = e4m3(scale) · e2m1(q)`. The per-tensor f32
    /// global scale is not stored: the graph multiplies by it (rlx-nn's `nvfp4_matmul`).
    /// Four micro-blocks per block make the scales one word and a row of codes whole words.
    NvFp4,
    /// int5 block, symmetric (ggml's Q5_0, type id 6). 32 elements in 22 bytes: f16 scale `d`
    /// (bytes 0..2), a little-endian u32 `qh` of fifth bits (bytes 2..6), then 16 bytes of low
    /// nibbles laid out as [`QuantType::Q4_0`]'s (byte `6 + j`: element `j` low nibble, `j + 16`
    /// high). Bit `i` of `qh` is bit 4 of element `i`; `x = (q − 16) · d`.
    Q5_0,
    /// int5 block, asymmetric (ggml's Q5_1, type id 7). 32 elements in 24 bytes: f16 scale `d`
    /// (bytes 0..2), f16 minimum `m` (bytes 2..4), u32 `qh` (bytes 4..8), 16 bytes of low nibbles
    /// (byte `8 + j`), as [`QuantType::Q5_0`]; `q` is unsigned and `x = q · d + m`.
    Q5_1,
    /// ggml's Q2_K (type id 10). 256 elements in 84 bytes: 16 bytes of scales (byte `i` holds
    /// the 4-bit scale of elements `16·i .. 16·i + 16` in its low nibble and their 4-bit min in
    /// its high nibble), 64 bytes of 2-bit values, f16 `d` (bytes 80..82), f16 `dmin` (82..84).
    /// Each half of 128 elements uses 32 value bytes (`16 + 32·half ..`); its group `g` of 32
    /// (0..4) takes bits `2g, 2g + 1` of those bytes (element `l` of the group from byte `l`).
    /// `x = (d·scale)·q − dmin·min`.
    Q2K,
    /// ggml's Q3_K (type id 11). 256 elements in 110 bytes: 32 bytes `hmask`, 64 bytes of low
    /// 2-bit values laid out as [`QuantType::Q2K`]'s (bytes 32..96), 12 bytes of sixteen 6-bit
    /// scales (bytes 96..108), f16 `d` (bytes 108..110). Group `G = 4·half + g` of 32 (0..8)
    /// takes its third bit from bit `G` of `hmask[l]`; the 3-bit value is `low − 4` where that
    /// bit is clear and `low` where it is set. Scale `i` (of elements `16·i ..`, stored as
    /// `s + 32`): its low 4 bits are the low nibble of byte `i` (i < 8) or the high nibble of
    /// byte `i − 8`, its top 2 bits bits `2·(i / 4)..` of byte `8 + i mod 4` of the scales.
    /// `x = (d·(s − 32))·q`.
    Q3K,
    /// ggml's IQ4_NL (type id 20): 4-bit indices into a fixed non-linear table
    /// ([`IQ4NL_VALUES`]). 32 elements in 18 bytes: f16 `d`, then 16 bytes of indices laid out
    /// as [`QuantType::Q4_0`]'s; `x = d · IQ4NL_VALUES[q]`.
    IQ4NL,
    /// ggml's IQ4_XS (type id 23): [`QuantType::IQ4NL`]'s indices with a 6-bit scale per 32.
    /// 256 elements in 136 bytes: f16 `d` (bytes 0..2), u16 `scales_h` (2..4), 4 bytes
    /// `scales_l` (4..8), 128 bytes of indices (8..136). Sub-block `b` (0..8) of 32: scale
    /// `s = (scales_l[b / 2] >> 4·(b mod 2)) & 15 | ((scales_h >> 2b) & 3) << 4`; its indices
    /// are bytes `8 + 16b ..`, laid out as [`QuantType::Q4_0`]'s; `x = (d·(s − 32)) ·
    /// IQ4NL_VALUES[q]`.
    IQ4XS,
    /// ggml's IQ2_XXS (type id 16): 256 elements in 66 bytes: f16 `d`, then eight sub-blocks of
    /// 32 in 8 bytes each (bytes `2 + 8b ..`): four grid indices (one byte each) and a u32 `aux`
    /// whose top 4 bits are the scale `s` and whose bits `7l .. 7l + 7` pick the signs of the
    /// `l`-th 8 elements (`ksigns`: 7 bits plus an eighth that makes the count of minus signs
    /// even). `x = (d·(0.5 + s)·0.25)·grid[index][j]·sign`, grid
    /// [`crate::quant_grids::IQ2XXS_GRID`] (values 8, 25, 43).
    IQ2XXS,
    /// ggml's IQ2_XS (type id 17): 256 elements in 74 bytes: f16 `d`, 32 u16 (bytes 2..66), each
    /// a 9-bit grid index ([`crate::quant_grids::IQ2XS_GRID`]) and a 7-bit sign index
    /// (`ksigns`, as [`QuantType::IQ2XXS`]) for 8 elements, then 8 bytes of 4-bit scales (one per
    /// 16 elements, low nibble first). `x = (d·(0.5 + s)·0.25)·grid·sign`.
    IQ2XS,
    /// ggml's IQ2_S (type id 22): 256 elements in 82 bytes: f16 `d`, 32 bytes of low grid index
    /// bits (2..34), 32 bytes of sign bits (34..66, one byte per 8 elements), 8 bytes `qh`
    /// (66..74: two more index bits per 8 elements, at bits `2·(i mod 4)` of byte `i / 4`), 8
    /// bytes of 4-bit scales (74..82, one per 16). `x = (d·(0.5 + s)·0.25)·grid·sign`, grid
    /// [`crate::quant_grids::IQ2S_GRID`].
    IQ2S,
    /// ggml's IQ3_XXS (type id 18): 256 elements in 98 bytes: f16 `d`, 64 grid indices (bytes
    /// 2..66, 4 elements each, [`crate::quant_grids::IQ3XXS_GRID`]), then eight u32 (66..98), one
    /// per sub-block of 32: scale `s` in the top 4 bits, four 7-bit sign indices as
    /// [`QuantType::IQ2XXS`]'s. `x = (d·(0.5 + s)·0.5)·grid·sign`.
    IQ3XXS,
    /// ggml's IQ3_S (type id 21): 256 elements in 110 bytes: f16 `d`, 64 low index bytes
    /// (2..66), 8 bytes `qh` (66..74, the ninth index bit of entry `i` at bit `i mod 8` of byte
    /// `i / 8`), 32 bytes of sign bits (74..106, one byte per 8 elements), 4 bytes of 4-bit
    /// scales (106..110, one per 32). `x = (d·(1 + 2s))·grid·sign`, grid
    /// [`crate::quant_grids::IQ3S_GRID`] (4 elements per entry).
    IQ3S,
    /// ggml's IQ1_S (type id 19): 256 elements in 50 bytes: f16 `d`, 32 low index bytes (2..34),
    /// eight u16 `qh` (34..50), one per sub-block of 32: bits `3l .. 3l + 3` are the high index
    /// bits of its `l`-th 8 elements, bits 12..15 the scale `s`, bit 15 the sign of the shift
    /// (set: −).
    /// `x = (d·(2s + 1))·(grid + δ)`, δ = ±0.125, grid [`crate::quant_grids::IQ1S_GRID`]
    /// (values −1, 0, 1).
    IQ1S,
    /// ggml's IQ1_M (type id 29): 256 elements in 56 bytes: 32 low index bytes (0..32), 16 bytes
    /// `qh` (32..48: per 8 elements a nibble, low first, 3 high index bits and the shift's sign
    /// in bit 3), four u16 scales (48..56): 3-bit scales per 16 elements (`(sc[k / 4] >> 3·(k
    /// mod 4)) & 7`), and the block's f16 `d` made of the four top nibbles. `x = (d·(2s + 1))·(grid
    /// + δ)`, as [`QuantType::IQ1S`].
    IQ1M,
}

/// Writes `bits` (an f16) as the `d` of an IQ1_M block: its four nibbles into the top nibbles
/// of the block's four u16 scale words (bytes 48..56), low nibble first; the 3-bit scales
/// below them stay. A block shorter than 56 bytes is left as it is.
pub fn iq1m_write_d(block: &mut [u8], bits: u16) {
    for k in 0..4 {
        let Some(word) = block.get_mut(48 + 2 * k..50 + 2 * k) else { return };
        let old = u16::from_le_bytes([word[0], word[1]]);
        let new = (old & 0x0fff) | (((bits >> (4 * k)) & 0xf) << 12);
        word.copy_from_slice(&new.to_le_bytes());
    }
}

/// The 16 values an IQ4_NL / IQ4_XS index selects (ggml's `kvalues_iq4nl`).
pub const IQ4NL_VALUES: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

impl QuantType {
    /// Every format, in declaration order.
    pub const ALL: [QuantType; 23] = [
        QuantType::Q8_0,
        QuantType::Q4_0,
        QuantType::Q4K,
        QuantType::Q5K,
        QuantType::Q6K,
        QuantType::Q4_1,
        QuantType::Q8Asym,
        QuantType::Fp8E4M3,
        QuantType::Fp8E5M2,
        QuantType::NvFp4,
        QuantType::Q5_0,
        QuantType::Q5_1,
        QuantType::Q2K,
        QuantType::Q3K,
        QuantType::IQ4NL,
        QuantType::IQ4XS,
        QuantType::IQ2XXS,
        QuantType::IQ2XS,
        QuantType::IQ2S,
        QuantType::IQ3XXS,
        QuantType::IQ3S,
        QuantType::IQ1S,
        QuantType::IQ1M,
    ];

    /// The ggml formats rlx reads from GGUF files (type ids 8, 2, 12, 13, 14, 3, 6, 7, 10, 11,
    /// 20, 23, 16, 17, 22, 18, 21, 19, 29): [`QuantType::is_ggml`], in declaration order.
    pub const GGUF: [QuantType; 19] = QuantType::ggml_subset();

    /// Whether ggml defines this format (so GGUF files may carry it); false for rlx's own.
    pub const fn is_ggml(self) -> bool {
        !matches!(self, QuantType::Q8Asym | QuantType::Fp8E4M3 | QuantType::Fp8E5M2 | QuantType::NvFp4)
    }

    /// The first `N` formats of [`QuantType::ALL`] that are [`QuantType::is_ggml`]; a unit test
    /// checks that `N` is their count.
    const fn ggml_subset<const N: usize>() -> [QuantType; N] {
        let mut out = [QuantType::Q8_0; N];
        let (mut i, mut n) = (0, 0);
        while i < QuantType::ALL.len() && n < N {
            let t = QuantType::ALL[i];
            if t.is_ggml() {
                out[n] = t;
                n += 1;
            }
            i += 1;
        }
        out
    }

    /// Elements per block: 32 for the legacy, int8, fp8 and IQ4_NL formats, 64 for nvfp4 (four
    /// micro-blocks of 16), 256 for the K-quants' and the other IQ formats' super-blocks.
    pub fn block_elems(self) -> usize {
        match self {
            QuantType::Q8_0
            | QuantType::Q4_0
            | QuantType::Q4_1
            | QuantType::Q5_0
            | QuantType::Q5_1
            | QuantType::IQ4NL
            | QuantType::Q8Asym
            | QuantType::Fp8E4M3
            | QuantType::Fp8E5M2 => 32,
            QuantType::NvFp4 => 64,
            QuantType::Q4K
            | QuantType::Q5K
            | QuantType::Q6K
            | QuantType::Q2K
            | QuantType::Q3K
            | QuantType::IQ4XS
            | QuantType::IQ2XXS
            | QuantType::IQ2XS
            | QuantType::IQ2S
            | QuantType::IQ3XXS
            | QuantType::IQ3S
            | QuantType::IQ1S
            | QuantType::IQ1M => 256,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            QuantType::Q8_0 => 34,
            QuantType::Q4_0 | QuantType::IQ4NL => 18,
            QuantType::Q4K => 144,
            QuantType::Q5K => 176,
            QuantType::Q6K => 210,
            QuantType::Q4_1 => 20,
            QuantType::Q5_0 => 22,
            QuantType::Q5_1 => 24,
            QuantType::Q2K => 84,
            QuantType::Q3K => 110,
            QuantType::IQ4XS => 136,
            QuantType::IQ2XXS => 66,
            QuantType::IQ2XS => 74,
            QuantType::IQ2S => 82,
            QuantType::IQ3XXS => 98,
            QuantType::IQ3S => 110,
            QuantType::IQ1S => 50,
            QuantType::IQ1M => 56,
            QuantType::Q8Asym | QuantType::Fp8E4M3 | QuantType::Fp8E5M2 | QuantType::NvFp4 => 36,
        }
    }

    /// Byte offsets, within one block, of its f16 scales (`d`, and `dmin` or `m` where the
    /// format has one); empty for the fp8 and nvfp4 formats, whose scales are f32 or e4m3, and
    /// for IQ1_M, whose f16 is spread over the top nibbles of four scale words. All
    /// are even, so no scale straddles a 32-bit word of a row whose blocks start at even bytes.
    pub fn f16_offsets(self) -> &'static [usize] {
        match self {
            QuantType::Q8_0
            | QuantType::Q4_0
            | QuantType::Q5_0
            | QuantType::IQ4NL
            | QuantType::IQ4XS
            | QuantType::IQ2XXS
            | QuantType::IQ2XS
            | QuantType::IQ2S
            | QuantType::IQ3XXS
            | QuantType::IQ3S
            | QuantType::IQ1S => &[0],
            QuantType::Q4K | QuantType::Q5K | QuantType::Q4_1 | QuantType::Q5_1 | QuantType::Q8Asym => {
                &[0, 2]
            }
            QuantType::Q6K => &[208],
            QuantType::Q2K => &[80, 82],
            QuantType::Q3K => &[108],
            QuantType::Fp8E4M3 | QuantType::Fp8E5M2 | QuantType::NvFp4 | QuantType::IQ1M => &[],
        }
    }

    /// The name: ggml's (`Q8_0`, `Q4_0`, `Q4_K`, `Q5_K`, `Q6_K`, `Q4_1`, `Q5_0`, `Q5_1`, `Q2_K`,
    /// `Q3_K`, `IQ4_NL`, `IQ4_XS`, `IQ2_XXS`, `IQ2_XS`, `IQ2_S`, `IQ3_XXS`, `IQ3_S`, `IQ1_S`,
    /// `IQ1_M`) or rlx's (`Q8_ASYM`, `FP8_E4M3`, `FP8_E5M2`, `NVFP4`).
    pub fn name(self) -> &'static str {
        match self {
            QuantType::Q8_0 => "Q8_0",
            QuantType::Q4_0 => "Q4_0",
            QuantType::Q4K => "Q4_K",
            QuantType::Q5K => "Q5_K",
            QuantType::Q6K => "Q6_K",
            QuantType::Q4_1 => "Q4_1",
            QuantType::Q8Asym => "Q8_ASYM",
            QuantType::Fp8E4M3 => "FP8_E4M3",
            QuantType::Fp8E5M2 => "FP8_E5M2",
            QuantType::NvFp4 => "NVFP4",
            QuantType::Q5_0 => "Q5_0",
            QuantType::Q5_1 => "Q5_1",
            QuantType::Q2K => "Q2_K",
            QuantType::Q3K => "Q3_K",
            QuantType::IQ4NL => "IQ4_NL",
            QuantType::IQ4XS => "IQ4_XS",
            QuantType::IQ2XXS => "IQ2_XXS",
            QuantType::IQ2XS => "IQ2_XS",
            QuantType::IQ2S => "IQ2_S",
            QuantType::IQ3XXS => "IQ3_XXS",
            QuantType::IQ3S => "IQ3_S",
            QuantType::IQ1S => "IQ1_S",
            QuantType::IQ1M => "IQ1_M",
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
    /// An element count that is not whole blocks.
    #[error("{ty}: {elems} elements are not a whole number of {}-element blocks", ty.block_elems())]
    PartialBlock {
        /// The format.
        ty: QuantType,
        /// The element count given.
        elems: usize,
    },
    /// A byte count that is not whole blocks.
    #[error("{ty}: {bytes} bytes are not a whole number of {}-byte blocks", ty.block_bytes())]
    PartialBlockBytes {
        /// The format.
        ty: QuantType,
        /// The byte count given.
        bytes: usize,
    },
    /// An element count whose packed size does not fit in `usize`.
    #[error("{ty}: the byte size of {elems} elements overflows usize")]
    Overflow {
        /// The format.
        ty: QuantType,
        /// The element count given.
        elems: usize,
    },
    /// A byte count that unpacks to more elements than `usize` counts.
    #[error("{ty}: {bytes} bytes hold more elements than usize counts")]
    TooManyElems {
        /// The format.
        ty: QuantType,
        /// The byte count given.
        bytes: usize,
    },
    /// Packed bytes and an element count that disagree (a decoder's input and output).
    #[error("{ty}: {bytes} bytes of blocks do not hold {elems} elements (they need {} bytes)", need_bytes(*ty, *elems))]
    LengthMismatch {
        /// The format.
        ty: QuantType,
        /// The packed bytes given.
        bytes: usize,
        /// The element count asked for.
        elems: usize,
    },
    /// A name that is no format rlx knows.
    #[error(
        "unknown quantization type '{name}'; rlx knows Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, Q4_1, \
         Q8_ASYM, FP8_E4M3, FP8_E5M2, NVFP4, Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS, IQ2_XXS, \
         IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M"
    )]
    UnknownName {
        /// The name given.
        name: String,
    },
    /// A format rlx reads but does not write (the K-quants, Q5_0, Q5_1 and the IQ formats,
    /// which llama.cpp's tools make).
    #[error(
        "{ty}: rlx has no quantizer for this format (make it with llama.cpp's llama-quantize); \
         rlx::quantize writes Q8_0, Q4_0, Q4_1, Q8_ASYM, FP8_E4M3, FP8_E5M2 and NVFP4"
    )]
    NoQuantizer {
        /// The format.
        ty: QuantType,
    },
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
        // ggml's block_* sizes (gguf-py's GGML_QUANT_SIZES), in the order of GGUF.
        let want = [
            (32, 34),
            (32, 18),
            (256, 144),
            (256, 176),
            (256, 210),
            (32, 20),
            (32, 22),
            (32, 24),
            (256, 84),
            (256, 110),
            (32, 18),
            (256, 136),
            (256, 66),
            (256, 74),
            (256, 82),
            (256, 98),
            (256, 110),
            (256, 50),
            (256, 56),
        ];
        for (ty, (elems, bytes)) in QuantType::GGUF.into_iter().zip(want) {
            assert_eq!((ty.block_elems(), ty.block_bytes()), (elems, bytes), "{ty}");
        }
        // GGUF is in declaration order.
        let pos = |t: &QuantType| QuantType::ALL.iter().position(|a| a == t);
        let list = &QuantType::GGUF[..];
        assert!(list.windows(2).all(|w| pos(&w[0]) < pos(&w[1])), "{list:?}");
        let count = |f: fn(QuantType) -> bool| QuantType::ALL.into_iter().filter(|&t| f(t)).count();
        assert_eq!(count(QuantType::is_ggml), QuantType::GGUF.len());
        assert!(QuantType::GGUF.into_iter().all(QuantType::is_ggml));
        let rlx_own = QuantType::ALL.into_iter().filter(|t| !QuantType::GGUF.contains(t));
        assert_eq!(rlx_own.count() + QuantType::GGUF.len(), QuantType::ALL.len());
    }

    #[test]
    fn rlx_formats_are_whole_words() {
        let want = [(32, 20), (32, 36), (32, 36), (32, 36), (64, 36)];
        for (ty, (elems, bytes)) in QuantType::ALL[5..10].iter().zip(want) {
            assert_eq!((ty.block_elems(), ty.block_bytes()), (elems, bytes), "{ty}");
            assert_eq!(ty.block_bytes() % 4, 0, "{ty}");
        }
        assert_eq!(QuantType::NvFp4.byte_len(128), Ok(72));
        assert!(matches!(QuantType::NvFp4.byte_len(96), Err(QuantError::PartialBlock { .. })));
    }

    #[test]
    fn scales_lie_inside_their_blocks() {
        for ty in QuantType::ALL {
            for &at in ty.f16_offsets() {
                assert!(at % 2 == 0 && at + 2 <= ty.block_bytes(), "{ty}: {at}");
            }
        }
        assert_eq!(IQ4NL_VALUES.windows(2).filter(|w| w[0] < w[1]).count(), 15, "sorted");
    }

    #[test]
    fn iq1m_d_goes_to_the_top_nibbles() {
        let mut b = [0x5au8; 56];
        iq1m_write_d(&mut b, 0x3c00);
        let words: Vec<u16> = b[48..].chunks_exact(2).map(|w| u16::from_le_bytes([w[0], w[1]])).collect();
        assert_eq!(words, [0x0a5a, 0x0a5a, 0xca5a, 0x3a5a]);
        assert_eq!(b[..48], [0x5a; 48]);
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
        assert_eq!("iq4_nl".parse::<QuantType>(), Ok(QuantType::IQ4NL));
        assert_eq!("q2_k".parse::<QuantType>(), Ok(QuantType::Q2K));
        let err = "Q3_K_M".parse::<QuantType>().unwrap_err();
        assert!(err.to_string().contains("'Q3_K_M'"), "{err}");
    }

    #[test]
    fn length_mismatch_says_what_is_needed() {
        let e = QuantError::LengthMismatch { ty: QuantType::Q8_0, bytes: 34, elems: 64 };
        assert_eq!(e.to_string(), "Q8_0: 34 bytes of blocks do not hold 64 elements (they need 68 bytes)");
    }
}
