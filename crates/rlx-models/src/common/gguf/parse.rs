//! The whole header of a GGUF file, read and checked in one pass: magic, version, metadata,
//! alignment, tensor infos and where each tensor's data lies.

use super::cursor::{Cursor, OrTruncated};
use super::error::GgufError;
use super::tensor::{check_layout, index_by_name, read_tensor_info, TensorInfo, TENSOR_INFO_MIN_BYTES};
use super::value::{read_value, GgufValue, GgufValueType};
use std::collections::HashMap;

/// The metadata key that sets the alignment of tensor data.
pub const ALIGNMENT_KEY: &str = "general.alignment";

/// The alignment when the file does not set one.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// The fewest bytes a metadata entry takes: an empty key's length, the value type, a 1-byte value.
const KV_MIN_BYTES: usize = 8 + 4 + 1;

/// A checked header.
#[derive(Debug)]
pub(super) struct Header {
    pub version: u32,
    pub alignment: u64,
    /// Where the data section starts in the file (past the end for a file without tensors
    /// that stops short of the padding).
    pub data_start: usize,
    pub metadata: Vec<(String, GgufValue)>,
    pub metadata_index: HashMap<String, usize>,
    pub tensors: Vec<TensorInfo>,
    pub tensor_index: HashMap<String, usize>,
}

/// Reads and checks the header of the GGUF file `bytes`.
pub(super) fn parse(bytes: &[u8]) -> Result<Header, GgufError> {
    let mut cur = Cursor::new(bytes);
    let magic: [u8; 4] = cur.array().or_truncated(|| "the magic number".into())?;
    if &magic != b"GGUF" {
        return Err(GgufError::BadMagic { found: format!("\"{}\"", magic.escape_ascii()) });
    }
    let version = cur.u32().or_truncated(|| "the version".into())?;
    match version {
        2 | 3 => {}
        v if matches!(v.swap_bytes(), 2 | 3) => return Err(GgufError::BigEndian { version: v.swap_bytes() }),
        v => return Err(GgufError::Version { version: v }),
    }
    let n_tensors = cur.u64().or_truncated(|| "the tensor count".into())?;
    let n_kv = cur.u64().or_truncated(|| "the metadata count".into())?;

    let n_kv = cur.count(n_kv, KV_MIN_BYTES, || "the metadata count".into())?;
    let mut metadata = Vec::with_capacity(n_kv);
    let mut metadata_index = HashMap::with_capacity(n_kv);
    for i in 0..n_kv {
        let key = cur.string(|| format!("metadata key {i}"))?;
        let id = cur.u32().or_truncated(|| format!("the value type of metadata key '{key}'"))?;
        let ty = GgufValueType::from_id(id).ok_or_else(|| GgufError::ValueType { key: key.clone(), id })?;
        let value = read_value(&mut cur, ty, &key)?;
        if metadata_index.insert(key.clone(), i).is_some() {
            return Err(GgufError::DuplicateKey { key });
        }
        metadata.push((key, value));
    }
    let alignment =
        alignment(metadata_index.get(ALIGNMENT_KEY).and_then(|&i| metadata.get(i)).map(|(_, v)| v))?;

    let n_tensors = cur.count(n_tensors, TENSOR_INFO_MIN_BYTES, || "the tensor count".into())?;
    let mut tensors = Vec::with_capacity(n_tensors);
    for i in 0..n_tensors {
        tensors.push(read_tensor_info(&mut cur, i)?);
    }
    let tensor_index = index_by_name(&tensors)?;

    let end = cur.pos();
    // alignment fits a u32, so usize on every target rlx builds for.
    let data_start = usize::try_from(alignment).ok().and_then(|a| end.checked_next_multiple_of(a));
    let data_start = match data_start {
        Some(d) if d <= bytes.len() || tensors.is_empty() => d,
        _ => {
            let need = data_start.map_or(u64::MAX, |d| (d - end) as u64);
            return Err(GgufError::Truncated {
                what: "the padding before the tensor data".into(),
                at: end,
                need,
                len: bytes.len(),
            });
        }
    };
    check_layout(&mut tensors, data_start, bytes.len(), alignment)?;
    Ok(Header { version, alignment, data_start, metadata, metadata_index, tensors, tensor_index })
}

/// The alignment `general.alignment` sets: a u32 power of two, or 32 when absent.
fn alignment(value: Option<&GgufValue>) -> Result<u64, GgufError> {
    match value {
        None => Ok(DEFAULT_ALIGNMENT),
        Some(GgufValue::U32(a)) if a.is_power_of_two() => Ok(u64::from(*a)),
        Some(other) => Err(GgufError::Alignment { found: other.describe() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little GGUF writer for hand-made headers.
    #[derive(Default)]
    struct W(Vec<u8>);

    impl W {
        fn header(version: u32, n_tensors: u64, n_kv: u64) -> W {
            let mut w = W(b"GGUF".to_vec());
            w.u32(version).u64(n_tensors).u64(n_kv);
            w
        }
        fn u32(&mut self, v: u32) -> &mut Self {
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn u64(&mut self, v: u64) -> &mut Self {
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn str(&mut self, s: &str) -> &mut Self {
            self.u64(s.len() as u64);
            self.0.extend_from_slice(s.as_bytes());
            self
        }
        fn kv_u32(&mut self, k: &str, v: u32) -> &mut Self {
            self.str(k).u32(4).u32(v)
        }
        /// A 1-D F32 tensor of `n` elements at `offset`.
        fn tensor(&mut self, name: &str, n: u64, offset: u64) -> &mut Self {
            self.str(name).u32(1).u64(n).u32(0).u64(offset)
        }
        /// Zeros up to the next multiple of `a`, then `n` bytes of data.
        fn data(&self, a: usize, n: usize) -> Vec<u8> {
            let mut v = self.0.clone();
            v.resize(v.len().next_multiple_of(a) + n, 0);
            v
        }
    }

    #[test]
    fn a_minimal_file_reads() {
        let mut w = W::header(3, 2, 1);
        w.kv_u32("general.alignment", 16).tensor("a", 3, 0).tensor("b", 2, 16);
        let h = parse(&w.data(16, 24)).unwrap();
        assert_eq!((h.version, h.alignment, h.data_start % 16), (3, 16, 0));
        assert_eq!(h.tensors[1].range, h.data_start + 16..h.data_start + 24);
        assert!(parse(&W::header(2, 0, 0).0).is_ok(), "version 2 has the same layout");
    }

    #[test]
    fn header_findings() {
        let e = |b: &[u8]| parse(b).unwrap_err();
        assert!(matches!(e(b"GGML\x03\0\0\0"), GgufError::BadMagic { found } if found == "\"GGML\""));
        assert_eq!(e(&W::header(1, 0, 0).0), GgufError::Version { version: 1 });
        assert_eq!(e(&W::header(3u32.swap_bytes(), 0, 0).0), GgufError::BigEndian { version: 3 });
        assert!(
            matches!(e(&W::header(3, 0, 1 << 60).0), GgufError::TooMany { count, .. } if count == 1 << 60)
        );
        let mut w = W::header(3, 0, 2);
        w.kv_u32("k", 1).kv_u32("k", 2);
        assert_eq!(e(&w.0), GgufError::DuplicateKey { key: "k".into() });
        let mut w = W::header(3, 0, 1);
        w.str("k").u32(13).u32(0);
        assert_eq!(e(&w.0), GgufError::ValueType { key: "k".into(), id: 13 });
    }

    #[test]
    fn alignment_must_be_a_u32_power_of_two() {
        for (ty, v) in [(4u32, 24u32), (4, 0), (5, 32)] {
            let mut w = W::header(3, 0, 1);
            w.str("general.alignment").u32(ty).u32(v);
            assert!(matches!(parse(&w.0), Err(GgufError::Alignment { .. })), "type {ty} value {v}");
        }
    }

    #[test]
    fn layout_findings() {
        let e = |w: &W, n: usize| parse(&w.data(32, n)).unwrap_err();
        let mut w = W::header(3, 1, 0);
        w.tensor("a", 4, 8);
        assert!(matches!(e(&w, 64), GgufError::Misaligned { offset: 8, alignment: 32, .. }));
        let mut w = W::header(3, 1, 0);
        w.tensor("a", 4, 32);
        assert!(matches!(e(&w, 40), GgufError::DataPastEnd { offset: 32, bytes: 16, .. }));
        let mut w = W::header(3, 1, 0);
        w.tensor("a", 4, u64::MAX / 32 * 32);
        assert!(matches!(e(&w, 64), GgufError::DataPastEnd { .. }));
        let mut w = W::header(3, 2, 0);
        w.tensor("a", 16, 0).tensor("b", 4, 32);
        assert!(
            matches!(e(&w, 96), GgufError::Overlap { first, second, .. } if first == "a" && second == "b")
        );
        let mut w = W::header(3, 2, 0);
        w.tensor("a", 4, 0).tensor("a", 4, 32);
        assert_eq!(e(&w, 64), GgufError::DuplicateTensor { name: "a".into() });
        let mut w = W::header(3, 1, 0);
        w.str("q").u32(2).u64(256).u64(1 << 62).u32(12).u64(0);
        assert!(matches!(e(&w, 0), GgufError::ShapeOverflow { .. }));
        let mut w = W::header(3, 1, 0);
        w.str("q").u32(1).u64(100).u32(12).u64(0);
        assert!(matches!(e(&w, 0), GgufError::PartialBlock { row: 100, block: 256, .. }));
        let mut w = W::header(3, 1, 0);
        w.str("q").u32(5).u64(1).u64(1).u64(1).u64(1).u64(1).u32(0).u64(0);
        assert!(matches!(e(&w, 0), GgufError::Rank { n_dims: 5, .. }));
        let mut w = W::header(3, 1, 0);
        w.str("q").u32(1).u64(32).u32(34).u64(0);
        let msg = e(&w, 0).to_string();
        assert!(msg.starts_with("unknown GGUF tensor type 34 (ggml's TQ1_0) for tensor 'q'"), "{msg}");
    }

    #[test]
    fn zero_sized_tensors_may_share_an_offset() {
        let mut w = W::header(3, 3, 0);
        w.tensor("a", 0, 0).tensor("b", 0, 0).tensor("c", 2, 0);
        assert!(parse(&w.data(32, 8)).is_ok());
    }
}
