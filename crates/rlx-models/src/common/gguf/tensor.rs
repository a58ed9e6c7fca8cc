//! Tensor infos: their types, shapes and where their data lies, each checked before use.

use super::cursor::{le_array, Cursor, OrTruncated};
use super::error::GgufError;
use crate::error::{ModelError, Result};
use rlx_ir::QuantType;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

/// ggml allows at most this many dimensions.
pub const MAX_DIMS: usize = 4;

/// The fewest bytes a tensor info takes: an empty name's length, n_dims, type and offset.
pub(super) const TENSOR_INFO_MIN_BYTES: usize = 8 + 4 + 4 + 8;

/// A tensor's element type, among those rlx reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgmlType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// Blocks of a [`QuantType`], laid along each row (GGUF's first, fastest dimension).
    Quant(QuantType),
}

impl GgmlType {
    /// Every type rlx reads: the float types, then [`QuantType::GGUF`] in its order.
    pub const ALL: [GgmlType; 3 + QuantType::GGUF.len()] = {
        let mut all = [GgmlType::F32; 3 + QuantType::GGUF.len()];
        all[1] = GgmlType::F16;
        all[2] = GgmlType::BF16;
        let mut i = 0;
        while i < QuantType::GGUF.len() {
            all[3 + i] = GgmlType::Quant(QuantType::GGUF[i]);
            i += 1;
        }
        all
    };

    /// The type with ggml id `id`, when rlx reads it.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        GgmlType::ALL.into_iter().find(|t| t.id() == Some(id))
    }

    /// ggml's id (`ggml_type`): F32 0, F16 1, Q4_0 2, Q4_1 3, Q5_0 6, Q5_1 7, Q8_0 8, Q2_K 10,
    /// Q3_K 11, Q4_K 12, Q5_K 13, Q6_K 14, IQ2_XXS 16, IQ2_XS 17, IQ3_XXS 18, IQ1_S 19, IQ4_NL 20,
    /// IQ3_S 21, IQ2_S 22, IQ4_XS 23, IQ1_M 29, BF16 30. `None` for rlx's own
    /// block formats, so no GGUF type id ever maps to them.
    pub fn id(self) -> Option<u32> {
        match self {
            GgmlType::F32 => Some(0),
            GgmlType::F16 => Some(1),
            GgmlType::BF16 => Some(30),
            GgmlType::Quant(QuantType::Q4_0) => Some(2),
            GgmlType::Quant(QuantType::Q4_1) => Some(3),
            GgmlType::Quant(QuantType::Q5_0) => Some(6),
            GgmlType::Quant(QuantType::Q5_1) => Some(7),
            GgmlType::Quant(QuantType::Q8_0) => Some(8),
            GgmlType::Quant(QuantType::Q2K) => Some(10),
            GgmlType::Quant(QuantType::Q3K) => Some(11),
            GgmlType::Quant(QuantType::Q4K) => Some(12),
            GgmlType::Quant(QuantType::Q5K) => Some(13),
            GgmlType::Quant(QuantType::Q6K) => Some(14),
            GgmlType::Quant(QuantType::IQ4NL) => Some(20),
            GgmlType::Quant(QuantType::IQ4XS) => Some(23),
            GgmlType::Quant(QuantType::IQ2XXS) => Some(16),
            GgmlType::Quant(QuantType::IQ2XS) => Some(17),
            GgmlType::Quant(QuantType::IQ3XXS) => Some(18),
            GgmlType::Quant(QuantType::IQ1S) => Some(19),
            GgmlType::Quant(QuantType::IQ3S) => Some(21),
            GgmlType::Quant(QuantType::IQ2S) => Some(22),
            GgmlType::Quant(QuantType::IQ1M) => Some(29),
            GgmlType::Quant(
                QuantType::Q8Asym | QuantType::Fp8E4M3 | QuantType::Fp8E5M2 | QuantType::NvFp4,
            ) => None,
        }
    }

    /// ggml's name: `F32`, `F16`, `BF16`, `Q8_0`, …
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::BF16 => "BF16",
            GgmlType::Quant(q) => q.name(),
        }
    }

    /// Elements per block (1 for the float types): a row's length must be a multiple.
    pub fn block_elems(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => 1,
            GgmlType::Quant(q) => q.block_elems(),
        }
    }

    /// Bytes of `n_elems` elements; `None` when they are not whole blocks or overflow.
    pub fn byte_len(self, n_elems: usize) -> Option<usize> {
        match self {
            GgmlType::F32 => n_elems.checked_mul(4),
            GgmlType::F16 | GgmlType::BF16 => n_elems.checked_mul(2),
            GgmlType::Quant(q) => q.byte_len(n_elems).ok(),
        }
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One tensor's entry in the file, checked: known type, whole blocks per row, byte size that
/// fits, aligned data inside the file that overlaps no other tensor's.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// The tensor's name in the file.
    pub name: String,
    /// rlx's row-major shape: GGUF's dims reversed (GGUF lists the fastest dimension first).
    pub shape: Vec<usize>,
    /// Its element or block type.
    pub ty: GgmlType,
    /// Offset of the data from the start of the data section, as the file gives it.
    pub offset: u64,
    /// Bytes of data.
    pub n_bytes: usize,
    /// Where the data lies in the file (set when the layout is checked).
    pub(super) range: Range<usize>,
}

impl TensorInfo {
    /// Number of elements.
    pub fn n_elems(&self) -> usize {
        self.shape.iter().product()
    }
}

/// Reads tensor info `index`; the offset is checked later, against the data section.
pub(super) fn read_tensor_info(cur: &mut Cursor<'_>, index: usize) -> Result<TensorInfo, GgufError> {
    let name = cur.string(|| format!("the name of tensor {index}"))?;
    let n_dims = cur.u32().or_truncated(|| format!("the dimension count of tensor '{name}'"))?;
    let rank = usize::try_from(n_dims).ok().filter(|&n| n <= MAX_DIMS);
    let Some(rank) = rank else {
        return Err(GgufError::Rank { tensor: name, n_dims, max: MAX_DIMS });
    };
    let mut dims = Vec::with_capacity(rank);
    for d in 0..rank {
        dims.push(cur.u64().or_truncated(|| format!("dimension {d} of tensor '{name}'"))?);
    }
    let id = cur.u32().or_truncated(|| format!("the type of tensor '{name}'"))?;
    let offset = cur.u64().or_truncated(|| format!("the data offset of tensor '{name}'"))?;
    let ty = GgmlType::from_id(id).ok_or_else(|| GgufError::TensorType { tensor: name.clone(), id })?;

    let overflow = || GgufError::ShapeOverflow { tensor: name.clone(), dims: dims.clone() };
    let shape: Vec<usize> =
        dims.iter().rev().map(|&d| usize::try_from(d).map_err(|_| overflow())).collect::<Result<_, _>>()?;
    let n_elems = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or_else(overflow)?;
    let row = dims.first().copied().unwrap_or(1);
    if row % ty.block_elems() as u64 != 0 {
        return Err(GgufError::PartialBlock { tensor: name, ty, row, block: ty.block_elems() });
    }
    let n_bytes = ty.byte_len(n_elems).ok_or_else(overflow)?;
    Ok(TensorInfo { name, shape, ty, offset, n_bytes, range: 0..0 })
}

/// Places every tensor in the file: offsets aligned, data inside the file, no two overlapping.
pub(super) fn check_layout(
    tensors: &mut [TensorInfo],
    data_start: usize,
    file_len: usize,
    alignment: u64,
) -> Result<(), GgufError> {
    for t in tensors.iter_mut() {
        if t.offset % alignment != 0 {
            return Err(GgufError::Misaligned { tensor: t.name.clone(), offset: t.offset, alignment });
        }
        let start = usize::try_from(t.offset).ok().and_then(|o| o.checked_add(data_start));
        let range = start.and_then(|s| Some(s..s.checked_add(t.n_bytes)?)).filter(|r| r.end <= file_len);
        t.range = range.ok_or_else(|| GgufError::DataPastEnd {
            tensor: t.name.clone(),
            offset: t.offset,
            bytes: t.n_bytes,
            data_start,
            len: file_len,
        })?;
    }
    let mut order: Vec<&TensorInfo> = tensors.iter().filter(|t| t.n_bytes > 0).collect();
    order.sort_by_key(|t| t.range.start);
    for pair in order.windows(2) {
        if let [a, b] = pair {
            if a.range.end > b.range.start {
                return Err(GgufError::Overlap {
                    first: a.name.clone(),
                    first_start: a.offset,
                    first_end: a.offset.saturating_add(a.n_bytes as u64),
                    second: b.name.clone(),
                    second_start: b.offset,
                });
            }
        }
    }
    Ok(())
}

/// Refuses two tensors of one name; gives the index by name.
pub(super) fn index_by_name(tensors: &[TensorInfo]) -> Result<HashMap<String, usize>, GgufError> {
    let mut index = HashMap::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        if index.insert(t.name.clone(), i).is_some() {
            return Err(GgufError::DuplicateTensor { name: t.name.clone() });
        }
    }
    Ok(index)
}

/// A tensor's data as it lies in the mapped file.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorView<'a> {
    /// The tensor's name in the file.
    pub name: &'a str,
    /// rlx's row-major shape (GGUF's dims reversed).
    pub shape: Vec<usize>,
    /// Its element or block type.
    pub ty: GgmlType,
    /// The packed data: little-endian floats, or whole blocks of `ty`.
    pub bytes: &'a [u8],
    /// The file it lies in (for messages).
    pub path: &'a Path,
}

impl TensorView<'_> {
    /// The values widened (F16, BF16) or dequantized (block types) to f32, by rlx-cpu's
    /// reference decoders. For tests and the CPU; GPU paths keep the blocks packed.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        to_f32(self)
    }
}

/// The values of `view` as f32 (see [`TensorView::to_f32`]). The element count comes from the
/// shape and is checked against the byte length before anything is allocated.
pub fn to_f32(view: &TensorView<'_>) -> Result<Vec<f32>> {
    let fail = |source| ModelError::Gguf { path: view.path.to_path_buf(), source };
    let tensor = || view.name.to_string();
    let n = view.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let need = n.and_then(|n| view.ty.byte_len(n));
    let (Some(n), Some(need)) = (n, need) else {
        let dims = view.shape.iter().rev().map(|&d| d as u64).collect();
        return Err(fail(GgufError::ShapeOverflow { tensor: tensor(), dims }));
    };
    if need != view.bytes.len() {
        return Err(fail(GgufError::DataLength {
            tensor: tensor(),
            ty: view.ty,
            shape: view.shape.clone(),
            need,
            got: view.bytes.len(),
        }));
    }
    let decode = |source| fail(GgufError::Decode { tensor: tensor(), source });
    let mut out = vec![0f32; n];
    match view.ty {
        GgmlType::F32 => {
            for (y, b) in out.iter_mut().zip(view.bytes.chunks_exact(4)) {
                *y = f32::from_le_bytes(le_array(b));
            }
        }
        GgmlType::F16 => rlx_cpu::quant::widen_f16(view.bytes, &mut out).map_err(decode)?,
        GgmlType::BF16 => rlx_cpu::quant::widen_bf16(view.bytes, &mut out).map_err(decode)?,
        GgmlType::Quant(q) => rlx_cpu::quant::dequantize(q, view.bytes, &mut out).map_err(decode)?,
    }
    Ok(out)
}
