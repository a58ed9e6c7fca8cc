//! Why a GGUF file was refused or a lookup in it failed. Each variant names the key or tensor at
//! fault and the numbers read; [`crate::ModelError::Gguf`] adds the file's path.

use super::tensor::GgmlType;
use rlx_cpu::quant::DecodeError;

/// One finding about a GGUF file, without its path (see [`crate::ModelError::Gguf`]).
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum GgufError {
    /// The file does not start with "GGUF".
    #[error("not a GGUF file: it starts with {found}, not \"GGUF\"")]
    BadMagic {
        /// The first bytes, printed.
        found: String,
    },
    /// A GGUF version rlx does not read.
    #[error(
        "GGUF version {version} is not supported; rlx reads versions 2 and 3 (version 1 used 32-bit \
         counts and lengths): convert the model again with a current llama.cpp"
    )]
    Version {
        /// The version read.
        version: u32,
    },
    /// A big-endian GGUF file.
    #[error(
        "this is a big-endian GGUF file (its version reads {version} byte-swapped); rlx reads \
         little-endian files"
    )]
    BigEndian {
        /// The version as read.
        version: u32,
    },
    /// The file ends before a field, or a length points past its end.
    #[error("truncated: {what} at byte {at} needs {need} bytes, but the file ends at byte {len}")]
    Truncated {
        /// What was being read.
        what: String,
        /// The byte offset.
        at: usize,
        /// Bytes needed.
        need: u64,
        /// The file's length in bytes.
        len: usize,
    },
    /// A count of entries that the rest of the file cannot hold.
    #[error("{what} claims {count} entries, but the {left} bytes left in the file hold at most {max}")]
    TooMany {
        /// What was being read.
        what: String,
        /// The count claimed.
        count: u64,
        /// Bytes left in the file.
        left: usize,
        /// The most the bytes left can hold.
        max: usize,
    },
    /// A string that is not UTF-8.
    #[error("{what} is not valid UTF-8: {reason}")]
    NotUtf8 {
        /// What was being read.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// A metadata value of an unknown type.
    #[error("metadata key '{key}' has unknown value type {id}; GGUF value types are 0 to 12")]
    ValueType {
        /// The metadata key.
        key: String,
        /// The type id read.
        id: u32,
    },
    /// A bool that is neither 0 nor 1.
    #[error("metadata key '{key}' holds the bool byte {byte}; GGUF bools are 0 or 1")]
    Bool {
        /// The metadata key.
        key: String,
        /// The byte read.
        byte: u8,
    },
    /// Arrays nested too deep.
    #[error("metadata key '{key}' nests arrays more than {max} deep")]
    TooDeep {
        /// The metadata key.
        key: String,
        /// The deepest nesting allowed.
        max: usize,
    },
    /// A metadata key that appears twice.
    #[error("metadata key '{key}' appears twice")]
    DuplicateKey {
        /// The metadata key.
        key: String,
    },
    /// A tensor that appears twice.
    #[error("tensor '{name}' appears twice")]
    DuplicateTensor {
        /// The tensor's name.
        name: String,
    },
    /// A `general.alignment` that is not a u32 power of two.
    #[error("general.alignment is {found}; it must be a u32 power of two")]
    Alignment {
        /// The value found.
        found: String,
    },
    /// A tensor type rlx does not read.
    #[error(
        "unknown GGUF tensor type {id}{} for tensor '{tensor}'; rlx reads F32, F16, BF16, Q8_0, Q4_0, \
         Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, \
         IQ1_M, IQ4_NL and IQ4_XS", ggml_type_name(*id).map(|n| format!(" (ggml's {n})")).unwrap_or_default()
    )]
    TensorType {
        /// The tensor's name.
        tensor: String,
        /// The type id read.
        id: u32,
    },
    /// A tensor with too many dims.
    #[error("tensor '{tensor}' has {n_dims} dimensions; GGUF tensors have at most {max}")]
    Rank {
        /// The tensor's name.
        tensor: String,
        /// The dims read.
        n_dims: u32,
        /// The most dims GGUF allows.
        max: usize,
    },
    /// A tensor too large to address.
    #[error("tensor '{tensor}': dims {dims:?} (fastest first) hold more elements or bytes than this machine can address")]
    ShapeOverflow {
        /// The tensor's name.
        tensor: String,
        /// The dims, fastest first.
        dims: Vec<u64>,
    },
    /// Rows that are not whole blocks.
    #[error("tensor '{tensor}' of type {ty}: rows of {row} elements are not whole {block}-element blocks")]
    PartialBlock {
        /// The tensor's name.
        tensor: String,
        /// The tensor's type.
        ty: GgmlType,
        /// The row length in elements.
        row: u64,
        /// The block size in elements.
        block: usize,
    },
    /// Tensor data off the alignment.
    #[error("tensor '{tensor}': data offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned {
        /// The tensor's name.
        tensor: String,
        /// The data offset.
        offset: u64,
        /// The file's alignment.
        alignment: u64,
    },
    /// Tensor data past the end of the file.
    #[error("tensor '{tensor}': its {bytes} bytes of data at offset {offset} (after the {data_start}-byte header) run past the end of the file at byte {len}")]
    DataPastEnd {
        /// The tensor's name.
        tensor: String,
        /// The data offset.
        offset: u64,
        /// The tensor's size in bytes.
        bytes: usize,
        /// Where the data section starts.
        data_start: usize,
        /// The file's length in bytes.
        len: usize,
    },
    /// Two tensors whose data overlap.
    #[error("tensors '{first}' (data bytes {first_start}..{first_end}) and '{second}' (from data byte {second_start}) overlap")]
    Overlap {
        /// The first tensor.
        first: String,
        /// Where its data starts.
        first_start: u64,
        /// Where its data ends.
        first_end: u64,
        /// The second tensor.
        second: String,
        /// Where its data starts.
        second_start: u64,
    },
    /// A metadata key that is not there.
    #[error("metadata key '{key}' is missing")]
    MissingKey {
        /// The metadata key.
        key: String,
    },
    /// A metadata value of another type than asked.
    #[error("metadata key '{key}' holds {found}, expected {expected}")]
    WrongType {
        /// The metadata key.
        key: String,
        /// The type expected.
        expected: &'static str,
        /// The type found.
        found: String,
    },
    /// A metadata value out of range.
    #[error("metadata key '{key}' = {value}: {reason}")]
    BadValue {
        /// The metadata key.
        key: String,
        /// The value read.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A tensor that is not in the file.
    #[error("no tensor '{name}' in the file (it has {count})")]
    NoTensor {
        /// The tensor asked for.
        name: String,
        /// How many tensors the file has.
        count: usize,
    },
    /// An architecture rlx does not map.
    #[error("architecture '{arch}' is not supported; rlx maps the metadata of {known}")]
    Architecture {
        /// The architecture named in the file.
        arch: String,
        /// The architectures rlx maps.
        known: String,
    },
    /// A tensor view of the wrong size.
    #[error("tensor '{tensor}' of type {ty} and shape {shape:?} needs {need} bytes; the view holds {got}")]
    DataLength {
        /// The tensor's name.
        tensor: String,
        /// The tensor's type.
        ty: GgmlType,
        /// The shape asked for.
        shape: Vec<usize>,
        /// Bytes needed.
        need: usize,
        /// Bytes the view holds.
        got: usize,
    },
    /// Blocks that do not decode.
    #[error("tensor '{tensor}': {source}")]
    Decode {
        /// The tensor's name.
        tensor: String,
        /// Why its blocks do not decode.
        source: DecodeError,
    },
    /// A decoder weight the config needs is not in the file.
    #[error(
        "no tensor '{name}' (the decoder's '{hf_name}', shape {expected:?}) in the file (it has {count})"
    )]
    MissingWeight {
        /// The GGUF name of the weight.
        name: String,
        /// The Hugging Face name of the weight.
        hf_name: String,
        /// The shape the config needs.
        expected: Vec<usize>,
        /// How many tensors the file has.
        count: usize,
    },
    /// A decoder weight of another shape than the config needs.
    #[error(
        "tensor '{name}' (the decoder's '{hf_name}') has shape {got:?}, but the config needs {expected:?}"
    )]
    WeightShape {
        /// The GGUF name of the weight.
        name: String,
        /// The Hugging Face name of the weight.
        hf_name: String,
        /// The shape the config needs.
        expected: Vec<usize>,
        /// The tensor's shape.
        got: Vec<usize>,
    },
    /// A block-quantized tensor where rlx keeps only dense values (a norm weight or a bias):
    /// quantized blocks stay packed only for 2-D weights (linear layers and the embedding).
    #[error(
        "tensor '{tensor}' is {ty}, but rlx keeps quantized blocks only for 2-D weights (linear \
         layers and the token embedding); store this tensor as F32, F16 or BF16"
    )]
    Quantized {
        /// The tensor's name.
        tensor: String,
        /// The tensor's type.
        ty: GgmlType,
    },
    /// llama.cpp's per-frequency rope factors (Llama 3.1's `llama3` scaling) need one factor
    /// per rotary frequency: head_dim / 2.
    #[error(
        "tensor 'rope_freqs.weight' has {len} values, but head dim {head_dim} has {half} rope \
         frequencies (one factor each)"
    )]
    RopeFreqs {
        /// The factors in the file.
        len: usize,
        /// Rope frequencies per head (head_dim / 2).
        half: usize,
        /// The head dim.
        head_dim: usize,
    },
    /// The experts' gate and up projections are fused into one param, row for row, so they
    /// must be stored alike.
    #[error(
        "tensors '{gate}' ({gate_ty}) and '{up}' ({up_ty}) must have the same type: rlx fuses each \
         expert's gate and up rows into one matrix; requantize them to one type"
    )]
    ExpertTypes {
        /// The gate projection's tensor.
        gate: String,
        /// Its type.
        gate_ty: GgmlType,
        /// The up projection's tensor.
        up: String,
        /// Its type.
        up_ty: GgmlType,
    },
    /// A rope scaling rlx does not support.
    #[error("metadata key '{key}' = \"{kind}\": this rope scaling is not supported (none, linear)")]
    RopeScaling {
        /// The metadata key.
        key: String,
        /// The scaling named.
        kind: String,
    },
    /// Rope on part of each head.
    #[error(
        "metadata key '{key}' = {rope_dims}: rope on part of each head (head dim {head_dim}) is not \
         supported"
    )]
    PartialRope {
        /// The metadata key.
        key: String,
        /// The rotary dims read.
        rope_dims: usize,
        /// The head dim.
        head_dim: usize,
    },
}

/// ggml's name of a tensor type id (for messages about types rlx does not read).
fn ggml_type_name(id: u32) -> Option<&'static str> {
    const NAMES: [&str; 42] = [
        "F32", "F16", "Q4_0", "Q4_1", "", "", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
        "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8",
        "I16", "I32", "I64", "F64", "IQ1_M", "BF16", "", "", "", "TQ1_0", "TQ2_0", "", "", "", "MXFP4",
        "NVFP4", "Q1_0",
    ];
    NAMES.get(usize::try_from(id).ok()?).copied().filter(|n| !n.is_empty())
}
