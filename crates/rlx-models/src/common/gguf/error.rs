//! Why a GGUF file was refused or a lookup in it failed. Each variant names the key or tensor at
//! fault and the numbers read; [`crate::ModelError::Gguf`] adds the file's path.

use super::tensor::GgmlType;
use rlx_cpu::quant::DecodeError;

/// One finding about a GGUF file, without its path (see [`crate::ModelError::Gguf`]).
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum GgufError {
    #[error("not a GGUF file: it starts with {found}, not \"GGUF\"")]
    BadMagic { found: String },
    #[error(
        "GGUF version {version} is not supported; rlx reads versions 2 and 3 (version 1 used 32-bit \
         counts and lengths): convert the model again with a current llama.cpp"
    )]
    Version { version: u32 },
    #[error(
        "this is a big-endian GGUF file (its version reads {version} byte-swapped); rlx reads \
         little-endian files"
    )]
    BigEndian { version: u32 },
    /// The file ends before a field, or a length points past its end.
    #[error("truncated: {what} at byte {at} needs {need} bytes, but the file ends at byte {len}")]
    Truncated { what: String, at: usize, need: u64, len: usize },
    /// A count of entries that the rest of the file cannot hold.
    #[error("{what} claims {count} entries, but the {left} bytes left in the file hold at most {max}")]
    TooMany { what: String, count: u64, left: usize, max: usize },
    #[error("{what} is not valid UTF-8: {reason}")]
    NotUtf8 { what: String, reason: String },
    #[error("metadata key '{key}' has unknown value type {id}; GGUF value types are 0 to 12")]
    ValueType { key: String, id: u32 },
    #[error("metadata key '{key}' holds the bool byte {byte}; GGUF bools are 0 or 1")]
    Bool { key: String, byte: u8 },
    #[error("metadata key '{key}' nests arrays more than {max} deep")]
    TooDeep { key: String, max: usize },
    #[error("metadata key '{key}' appears twice")]
    DuplicateKey { key: String },
    #[error("tensor '{name}' appears twice")]
    DuplicateTensor { name: String },
    #[error("general.alignment is {found}; it must be a u32 power of two")]
    Alignment { found: String },
    #[error(
        "unknown GGUF tensor type {id}{} for tensor '{tensor}'; rlx reads F32, F16, BF16, Q8_0, Q4_0, \
         Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS", ggml_type_name(*id).map(|n| format!(" (ggml's {n})")).unwrap_or_default()
    )]
    TensorType { tensor: String, id: u32 },
    #[error("tensor '{tensor}' has {n_dims} dimensions; GGUF tensors have at most {max}")]
    Rank { tensor: String, n_dims: u32, max: usize },
    #[error("tensor '{tensor}': dims {dims:?} (fastest first) hold more elements or bytes than this machine can address")]
    ShapeOverflow { tensor: String, dims: Vec<u64> },
    #[error("tensor '{tensor}' of type {ty}: rows of {row} elements are not whole {block}-element blocks")]
    PartialBlock { tensor: String, ty: GgmlType, row: u64, block: usize },
    #[error("tensor '{tensor}': data offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned { tensor: String, offset: u64, alignment: u64 },
    #[error("tensor '{tensor}': its {bytes} bytes of data at offset {offset} (after the {data_start}-byte header) run past the end of the file at byte {len}")]
    DataPastEnd { tensor: String, offset: u64, bytes: usize, data_start: usize, len: usize },
    #[error("tensors '{first}' (data bytes {first_start}..{first_end}) and '{second}' (from data byte {second_start}) overlap")]
    Overlap { first: String, first_start: u64, first_end: u64, second: String, second_start: u64 },
    #[error("metadata key '{key}' is missing")]
    MissingKey { key: String },
    #[error("metadata key '{key}' holds {found}, expected {expected}")]
    WrongType { key: String, expected: &'static str, found: String },
    #[error("metadata key '{key}' = {value}: {reason}")]
    BadValue { key: String, value: String, reason: String },
    #[error("no tensor '{name}' in the file (it has {count})")]
    NoTensor { name: String, count: usize },
    #[error("architecture '{arch}' is not supported; rlx maps the metadata of {known}")]
    Architecture { arch: String, known: String },
    #[error("tensor '{tensor}' of type {ty} and shape {shape:?} needs {need} bytes; the view holds {got}")]
    DataLength { tensor: String, ty: GgmlType, shape: Vec<usize>, need: usize, got: usize },
    #[error("tensor '{tensor}': {source}")]
    Decode { tensor: String, source: DecodeError },
    /// A decoder weight the config needs is not in the file.
    #[error(
        "no tensor '{name}' (the decoder's '{hf_name}', shape {expected:?}) in the file (it has {count})"
    )]
    MissingWeight { name: String, hf_name: String, expected: Vec<usize>, count: usize },
    #[error(
        "tensor '{name}' (the decoder's '{hf_name}') has shape {got:?}, but the config needs {expected:?}"
    )]
    WeightShape { name: String, hf_name: String, expected: Vec<usize>, got: Vec<usize> },
    /// A block-quantized tensor where rlx keeps only dense values (a norm weight or a bias):
    /// quantized blocks stay packed only for 2-D weights (linear layers and the embedding).
    #[error(
        "tensor '{tensor}' is {ty}, but rlx keeps quantized blocks only for 2-D weights (linear \
         layers and the token embedding); store this tensor as F32, F16 or BF16"
    )]
    Quantized { tensor: String, ty: GgmlType },
    /// llama.cpp's per-frequency rope factors (Llama 3.1's `llama3` scaling) need one factor
    /// per rotary frequency: head_dim / 2.
    #[error(
        "tensor 'rope_freqs.weight' has {len} values, but head dim {head_dim} has {half} rope \
         frequencies (one factor each)"
    )]
    RopeFreqs { len: usize, half: usize, head_dim: usize },
    /// The experts' gate and up projections are fused into one param, row for row, so they
    /// must be stored alike.
    #[error(
        "tensors '{gate}' ({gate_ty}) and '{up}' ({up_ty}) must have the same type: rlx fuses each \
         expert's gate and up rows into one matrix; requantize them to one type"
    )]
    ExpertTypes { gate: String, gate_ty: GgmlType, up: String, up_ty: GgmlType },
    #[error("metadata key '{key}' = \"{kind}\": this rope scaling is not supported (none, linear)")]
    RopeScaling { key: String, kind: String },
    #[error(
        "metadata key '{key}' = {rope_dims}: rope on part of each head (head dim {head_dim}) is not \
         supported"
    )]
    PartialRope { key: String, rope_dims: usize, head_dim: usize },
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
