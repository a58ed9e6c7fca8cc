//! GGUF files (llama.cpp's model format), memory-mapped: metadata, tensor infos and tensor data.
//!
//! Contract:
//! - [`GgufFile::open`] maps the file and reads its whole header before returning: magic,
//!   version (3, or 2, whose layout is the same; 1 and big-endian files are refused), every
//!   metadata entry of every value type (nested arrays included, up to
//!   [`value::MAX_ARRAY_DEPTH`] deep), `general.alignment` (a u32 power of two, 32 when absent)
//!   and every tensor info. A file that opens has only tensors of a [`GgmlType`] rlx reads
//!   (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), rows of whole blocks, sizes that fit
//!   `usize`, and data at aligned offsets inside the file, no two tensors overlapping.
//! - Every length, count and offset read from the file is checked against the bytes that are
//!   there before it is used or anything is reserved for it, so a corrupt or hostile file gives
//!   a [`ModelError::Gguf`] naming the file, the key or tensor and the numbers read; never a
//!   panic, never an allocation larger than a small multiple of the file.
//! - Shapes are rlx's row-major order: GGUF lists dimensions fastest first, so they are
//!   reversed ([`TensorInfo::shape`]). Tensor bytes are borrowed from the mapping as stored
//!   ([`GgufFile::tensor`]); [`to_f32`] widens or dequantizes them with rlx-cpu's reference
//!   decoders (tests and the CPU; GPU paths keep blocks packed).
//! - Typed getters (`get_u32`, `get_str`, …) error with the key and the type found; integer
//!   getters accept any integer type whose value fits, as GGUF writers differ there.
//! - [`gguf_config`] maps llama / qwen2 / qwen3 / qwen3moe metadata to a [`GgufDecoderConfig`];
//!   [`gguf_tokenizer`] builds a `tokenizers::Tokenizer` from the `tokenizer.ggml.*` keys
//!   ([`tokenizer`]). `crate::decoder::Decoder` loads such a file's weights.

mod config;
mod cursor;
mod error;
mod parse;
pub mod pretokenize;
mod tensor;
pub mod tokenizer;
pub mod value;

pub use config::{gguf_config, GgufDecoderConfig, GgufExperts, ARCHITECTURES, DEFAULT_ROPE_THETA};
pub use error::GgufError;
pub use parse::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT};
pub use tensor::{to_f32, GgmlType, TensorInfo, TensorView, MAX_DIMS};
pub use tokenizer::gguf_tokenizer;
pub use value::{GgufArray, GgufValue, GgufValueType};

use crate::common::bytes::FileBytes;
use crate::error::{ModelError, Result};
use parse::Header;
use std::path::{Path, PathBuf};

/// True when `path` names a GGUF file: a file (not a directory) whose first four bytes are
/// the magic number `GGUF`, whatever its name ends with. A file that cannot be read is not one.
pub fn is_gguf(path: &Path) -> bool {
    use std::io::Read as _;
    let mut magic = [0u8; 4];
    !path.is_dir()
        && std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && &magic == b"GGUF"
}

/// A memory-mapped GGUF file whose header has been checked (see the module doc).
pub struct GgufFile {
    path: PathBuf,
    mmap: FileBytes,
    header: Header,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("version", &self.header.version)
            .field("metadata", &self.header.metadata.len())
            .field("tensors", &self.header.tensors.len())
            .finish()
    }
}

impl GgufFile {
    /// Maps `path` and reads and checks its header.
    pub fn open(path: impl AsRef<Path>) -> Result<GgufFile> {
        let path = path.as_ref();
        let mmap = FileBytes::open(path)?;
        if mmap.is_empty() {
            // An empty file cannot be mapped; say what is missing instead of an I/O error.
            let source = GgufError::Truncated { what: "the magic number".into(), at: 0, need: 4, len: 0 };
            return Err(ModelError::Gguf { path: path.to_path_buf(), source });
        }
        let header =
            parse::parse(&mmap).map_err(|source| ModelError::Gguf { path: path.to_path_buf(), source })?;
        Ok(GgufFile { path: path.to_path_buf(), mmap, header })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format version (2 or 3).
    pub fn version(&self) -> u32 {
        self.header.version
    }

    /// The alignment of tensor data in bytes.
    pub fn alignment(&self) -> u64 {
        self.header.alignment
    }

    /// Where the data section starts in the file; tensor offsets count from here.
    pub fn data_offset(&self) -> usize {
        self.header.data_start
    }

    /// The finding `source`, with this file's path.
    pub fn error(&self, source: GgufError) -> ModelError {
        ModelError::Gguf { path: self.path.clone(), source }
    }

    /// The value of metadata key `key`.
    pub fn metadata(&self, key: &str) -> Option<&GgufValue> {
        let &i = self.header.metadata_index.get(key)?;
        self.header.metadata.get(i).map(|(_, v)| v)
    }

    /// Every metadata entry, in file order.
    pub fn metadata_entries(&self) -> impl Iterator<Item = (&str, &GgufValue)> {
        self.header.metadata.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The value of `key`, or an error saying it is missing.
    fn require(&self, key: &str) -> Result<&GgufValue> {
        self.metadata(key).ok_or_else(|| self.error(GgufError::MissingKey { key: key.to_string() }))
    }

    fn wrong_type(&self, key: &str, expected: &'static str, found: &GgufValue) -> ModelError {
        self.error(GgufError::WrongType { key: key.to_string(), expected, found: found.describe() })
    }

    /// An integer of any type whose value fits `T`.
    fn int<T: TryFrom<i128>>(&self, key: &str, expected: &'static str) -> Result<T> {
        let v = self.require(key)?;
        let i = v.as_i128().ok_or_else(|| self.wrong_type(key, expected, v))?;
        T::try_from(i).map_err(|_| {
            let reason = format!("does not fit {expected}");
            self.error(GgufError::BadValue { key: key.to_string(), value: v.describe(), reason })
        })
    }

    /// An integer value that fits u32 (of any integer type).
    pub fn get_u32(&self, key: &str) -> Result<u32> {
        self.int(key, "u32")
    }

    /// An integer value that fits u64 (of any integer type).
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        self.int(key, "u64")
    }

    /// An integer value that fits usize (of any integer type).
    pub fn get_usize(&self, key: &str) -> Result<usize> {
        self.int(key, "usize")
    }

    /// An integer value that fits i64 (of any integer type).
    pub fn get_i64(&self, key: &str) -> Result<i64> {
        self.int(key, "i64")
    }

    /// An f32 value (an f64 is rounded to the nearest f32).
    pub fn get_f32(&self, key: &str) -> Result<f32> {
        let v = self.require(key)?;
        match *v {
            GgufValue::F32(x) => Ok(x),
            GgufValue::F64(x) => Ok(x as f32),
            _ => Err(self.wrong_type(key, "f32", v)),
        }
    }

    /// The bool at `key`; an error naming the key when it is missing or of another type.
    pub fn get_bool(&self, key: &str) -> Result<bool> {
        match self.require(key)? {
            GgufValue::Bool(b) => Ok(*b),
            other => Err(self.wrong_type(key, "bool", other)),
        }
    }

    /// The string at `key`, as [`GgufFile::get_bool`].
    pub fn get_str(&self, key: &str) -> Result<&str> {
        let v = self.require(key)?;
        v.as_str().ok_or_else(|| self.wrong_type(key, "string", v))
    }

    /// The array at `key`, as [`GgufFile::get_bool`].
    pub fn get_array(&self, key: &str) -> Result<&GgufArray> {
        let v = self.require(key)?;
        v.as_array().ok_or_else(|| self.wrong_type(key, "array", v))
    }

    /// The array of strings at `key`, as [`GgufFile::get_bool`].
    pub fn get_str_array(&self, key: &str) -> Result<&[String]> {
        match self.require(key)? {
            GgufValue::Array(GgufArray::String(v)) => Ok(v),
            other => Err(self.wrong_type(key, "array of string", other)),
        }
    }

    /// The array of f32 at `key`, as [`GgufFile::get_bool`].
    pub fn get_f32_array(&self, key: &str) -> Result<&[f32]> {
        match self.require(key)? {
            GgufValue::Array(GgufArray::F32(v)) => Ok(v),
            other => Err(self.wrong_type(key, "array of f32", other)),
        }
    }

    /// The array of i32 at `key`, as [`GgufFile::get_bool`].
    pub fn get_i32_array(&self, key: &str) -> Result<&[i32]> {
        match self.require(key)? {
            GgufValue::Array(GgufArray::I32(v)) => Ok(v),
            other => Err(self.wrong_type(key, "array of i32", other)),
        }
    }

    /// Every tensor, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.header.tensors
    }

    /// The info of tensor `name`.
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        let &i = self.header.tensor_index.get(name)?;
        self.header.tensors.get(i)
    }

    /// Tensor `name`'s data as stored in the file, with its rlx shape and type.
    pub fn tensor(&self, name: &str) -> Result<TensorView<'_>> {
        let missing =
            || self.error(GgufError::NoTensor { name: name.to_string(), count: self.header.tensors.len() });
        let info = self.tensor_info(name).ok_or_else(missing)?;
        // The range was checked against this mapping when the file was opened.
        let bytes = self.mmap.get(info.range.clone()).ok_or_else(missing)?;
        Ok(TensorView { name: &info.name, shape: info.shape.clone(), ty: info.ty, bytes, path: &self.path })
    }
}

#[cfg(test)]
mod magic_tests {
    use super::is_gguf;

    /// The magic number decides, not the name: a GGUF file named `.bin` is one, a `.gguf` file
    /// of other bytes, a file shorter than the magic and a folder are not.
    #[test]
    fn a_gguf_file_is_recognised_by_its_magic_number() {
        let dir = std::env::temp_dir().join(format!("rlx-is-gguf-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("folder.gguf")).unwrap();
        for (name, bytes, want) in [
            ("model.bin", &b"GGUF\x03\0\0\0"[..], true),
            ("model", &b"GGUF"[..], true),
            ("fake.gguf", &b"{\"not\": 1}"[..], false),
            ("short.gguf", &b"GG"[..], false),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(is_gguf(&path), want, "{name}");
        }
        assert!(!is_gguf(&dir.join("folder.gguf")));
        assert!(!is_gguf(&dir.join("missing.gguf")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
