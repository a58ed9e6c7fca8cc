//! model.safetensors, memory-mapped (or from bytes the caller fetched: the web): tensors are read straight from the mapping by HF name
//! (with or without the `bert.` prefix), checked against the shape the config implies, and
//! widened from F16/BF16 to f32 (or kept as f16 for [`Precision::F16`]).

use crate::common::bytes::FileBytes;
use crate::error::{ModelError, Result};
use half::{bf16, f16};
use safetensors::tensor::{Metadata, TensorInfo};
use safetensors::{Dtype, SafeTensors};
use std::path::{Path, PathBuf};

/// The compile precision decides the weights' dtype: [`Precision::F16`] keeps them f16 on the
/// device (cast to f32 where used: half the weight memory); `F32` and `Mixed` widen every
/// weight to f32 (matching sentence-transformers' float32; `Mixed` only rounds matmul operands
/// inside the kernels).
pub use rlx_runtime::Precision;

/// Whether weights are stored as f16 at `precision`.
pub fn f16_weights(precision: Precision) -> bool {
    precision == Precision::F16
}

/// Values of one weight tensor, in the precision asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum WeightData {
    /// f32 values.
    F32(Vec<f32>),
    /// f16 values.
    F16(Vec<f16>),
}

impl WeightData {
    /// The values as an f32 tensor of shape `dims` (f16 widened exactly): how the training
    /// drivers set the weights they train.
    pub(crate) fn into_f32_tensor(self, dims: &[usize]) -> Result<rlx_ir::Tensor> {
        let values = match self {
            WeightData::F32(v) => v,
            WeightData::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
        };
        Ok(rlx_ir::Tensor::from_f32(dims.to_vec(), values)?)
    }
}

impl crate::common::weights::Weight for WeightData {
    fn host_data(&self) -> &dyn rlx_runtime::HostData {
        match self {
            WeightData::F32(v) => v,
            WeightData::F16(v) => v,
        }
    }
}

/// A safetensors file, memory-mapped or held in memory.
pub struct SafetensorsFile {
    path: PathBuf,
    mmap: FileBytes,
    /// Bytes before the data section (8-byte length + JSON header).
    data_start: usize,
    metadata: Metadata,
}

impl std::fmt::Debug for SafetensorsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SafetensorsFile").field("path", &self.path).finish()
    }
}

impl SafetensorsFile {
    /// Maps `path` and parses its header.
    pub fn open(path: &Path) -> Result<SafetensorsFile> {
        Self::parse(path, FileBytes::open(path)?)
    }

    /// The file from its bytes (fetched by the caller: the web has no file system). `name`
    /// (a file name or URL) is what errors call it.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<SafetensorsFile> {
        Self::parse(Path::new(name), FileBytes::Owned(bytes))
    }

    fn parse(path: &Path, mmap: FileBytes) -> Result<SafetensorsFile> {
        let (header_len, metadata) = SafeTensors::read_metadata(&mmap)
            .map_err(|e| ModelError::Safetensors { path: path.to_path_buf(), reason: e.to_string() })?;
        Ok(SafetensorsFile { path: path.to_path_buf(), mmap, data_start: header_len + 8, metadata })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Names of every tensor in the file.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.metadata.tensors().into_keys().collect();
        v.sort();
        v
    }

    /// `name`, or the same name with a `bert.` prefix added or removed, whichever the file has.
    fn find(&self, name: &str) -> Option<(String, &TensorInfo)> {
        let alt = alternate_name(name);
        [name.to_string(), alt].into_iter().find_map(|n| self.metadata.info(&n).map(|info| (n, info)))
    }

    /// Tensor `name` with exactly shape `expected`, in `precision`.
    pub fn load(&self, name: &str, expected: &[usize], precision: Precision) -> Result<WeightData> {
        let Some((found, info)) = self.find(name) else {
            return Err(ModelError::MissingTensor {
                name: name.to_string(),
                alt: alternate_name(name),
                expected: expected.to_vec(),
            });
        };
        if info.shape != expected {
            return Err(ModelError::WrongShape {
                name: found,
                expected: expected.to_vec(),
                got: info.shape.clone(),
            });
        }
        let width = match info.dtype {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::BF16 => 2,
            other => return Err(ModelError::UnsupportedDType { name: found, dtype: format!("{other:?}") }),
        };
        let numel: usize = expected.iter().product();
        let (start, end) = info.data_offsets;
        let bytes = self
            .data_start
            .checked_add(start)
            .zip(self.data_start.checked_add(end))
            .and_then(|(s, e)| self.mmap.get(s..e))
            .unwrap_or(&[]);
        let need = numel * width;
        if bytes.len() != need {
            return Err(ModelError::TruncatedTensor {
                name: found,
                shape: expected.to_vec(),
                dtype: format!("{:?}", info.dtype),
                expected: need,
                got: bytes.len(),
            });
        }
        Ok(decode(info.dtype, bytes, precision))
    }
}

/// Little-endian bytes of F32/F16/BF16 into the asked precision (the mapping may be unaligned,
/// so values are assembled from bytes rather than cast in place).
pub(crate) fn decode(dtype: Dtype, bytes: &[u8], precision: Precision) -> WeightData {
    let halves = || bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
    match (dtype, f16_weights(precision)) {
        (Dtype::F16, true) => WeightData::F16(halves().map(f16::from_bits).collect()),
        (Dtype::F16, false) => WeightData::F32(halves().map(|b| f16::from_bits(b).to_f32()).collect()),
        (Dtype::BF16, false) => WeightData::F32(halves().map(|b| bf16::from_bits(b).to_f32()).collect()),
        (Dtype::BF16, true) => {
            WeightData::F16(halves().map(|b| f16::from_f32(bf16::from_bits(b).to_f32())).collect())
        }
        (_, half) => {
            let v = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
            if half {
                WeightData::F16(v.map(f16::from_f32).collect())
            } else {
                WeightData::F32(v.collect())
            }
        }
    }
}

fn alternate_name(name: &str) -> String {
    match name.strip_prefix("bert.") {
        Some(rest) => rest.to_string(),
        None => format!("bert.{name}"),
    }
}

/// Writes `tensors` (`(name, tensor)`, every element widened or kept as f32) to the
/// safetensors file `path`, with string `metadata` in its header: a fine-tuned model's
/// weights and a training checkpoint. The file appears whole or not at all (written beside
/// `path`, then renamed).
pub fn write_f32(
    path: &Path,
    tensors: &[(String, rlx_ir::Tensor)],
    metadata: Option<std::collections::HashMap<String, String>>,
) -> Result<()> {
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(name, t)| {
            let data = t.to_f32_vec().iter().flat_map(|x| x.to_le_bytes()).collect();
            (name.clone(), t.shape().dims().to_vec(), data)
        })
        .collect();
    let bad = |reason: String| ModelError::Safetensors { path: path.to_path_buf(), reason };
    let views = bytes
        .iter()
        .map(|(name, dims, data)| {
            safetensors::tensor::TensorView::new(Dtype::F32, dims.clone(), data)
                .map(|v| (name.as_str(), v))
                .map_err(|e| bad(format!("tensor '{name}': {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let out = safetensors::serialize(views, metadata).map_err(|e| bad(e.to_string()))?;
    // Written beside and renamed: a crash mid-write never leaves half a file at `path`.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let write_err = |p: &Path, source| ModelError::Write { path: p.to_path_buf(), source };
    std::fs::write(&tmp, out).map_err(|e| write_err(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        write_err(path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_each_dtype() {
        let f32_bytes: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(decode(Dtype::F32, &f32_bytes, Precision::F32), WeightData::F32(vec![1.5, -2.0]));
        let h: Vec<u8> =
            [f16::from_f32(0.5), f16::from_f32(-3.0)].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(decode(Dtype::F16, &h, Precision::F32), WeightData::F32(vec![0.5, -3.0]));
        let b: Vec<u8> =
            [bf16::from_f32(0.25), bf16::from_f32(8.0)].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(decode(Dtype::BF16, &b, Precision::F32), WeightData::F32(vec![0.25, 8.0]));
        assert_eq!(
            decode(Dtype::F32, &f32_bytes, Precision::F16),
            WeightData::F16(vec![f16::from_f32(1.5), f16::from_f32(-2.0)])
        );
    }

    #[test]
    fn alternate_adds_or_strips_prefix() {
        assert_eq!(alternate_name("embeddings.x"), "bert.embeddings.x");
        assert_eq!(alternate_name("bert.embeddings.x"), "embeddings.x");
    }
}
