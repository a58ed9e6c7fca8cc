//! A decoder checkpoint's safetensors: one `model.safetensors`, or the shards that
//! `model.safetensors.index.json` maps each tensor to. Every file is memory-mapped once and
//! tensors are read by name through [`SafetensorsFile::load`] (shape check, dtype widening).

use crate::common::safetensors::{Precision, SafetensorsFile, WeightData};
use crate::error::{ModelError, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// The single-file checkpoint.
pub const SINGLE_FILE: &str = "model.safetensors";
/// The index of a sharded checkpoint.
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// The safetensors files of one checkpoint and which of them holds each tensor.
#[derive(Debug)]
pub struct Checkpoint {
    files: Vec<SafetensorsFile>,
    /// Tensor name → index into `files`.
    owner: HashMap<String, usize>,
}

#[derive(serde::Deserialize)]
struct Index {
    weight_map: BTreeMap<String, String>,
}

impl Checkpoint {
    /// Opens `dir`'s sharded checkpoint when it has an index, else its `model.safetensors`.
    pub fn open(dir: &Path) -> Result<Checkpoint> {
        let index_path = dir.join(INDEX_FILE);
        if index_path.is_file() {
            return Checkpoint::sharded(dir, &index_path);
        }
        let single = dir.join(SINGLE_FILE);
        if !single.is_file() {
            let why = format!("neither {SINGLE_FILE} nor {INDEX_FILE} is in this directory");
            return Err(ModelError::io(single, std::io::Error::new(std::io::ErrorKind::NotFound, why)));
        }
        let file = SafetensorsFile::open(&single)?;
        let owner = file.names().into_iter().map(|n| (n, 0)).collect();
        Ok(Checkpoint { files: vec![file], owner })
    }

    fn sharded(dir: &Path, index_path: &Path) -> Result<Checkpoint> {
        let text = std::fs::read_to_string(index_path).map_err(|e| ModelError::io(index_path, e))?;
        let index: Index = serde_json::from_str(&text)
            .map_err(|source| ModelError::Json { path: index_path.to_path_buf(), source })?;
        let mut files: Vec<SafetensorsFile> = Vec::new();
        let mut names: Vec<HashSet<String>> = Vec::new();
        let mut by_file: HashMap<&str, usize> = HashMap::new();
        let mut owner = HashMap::new();
        for (tensor, file_name) in &index.weight_map {
            // Shards sit beside the index: a name with a directory part is refused rather
            // than followed out of the model directory.
            let plain = Path::new(file_name).file_name().is_some_and(|f| f == file_name.as_str());
            if !plain {
                return Err(ModelError::Config {
                    path: index_path.to_path_buf(),
                    reason: format!(
                        "weight_map.{tensor} = \"{file_name}\": expected a file name in this directory"
                    ),
                });
            }
            let slot = match by_file.get(file_name.as_str()) {
                Some(&i) => i,
                None => {
                    let file = SafetensorsFile::open(&dir.join(file_name))?;
                    names.push(file.names().into_iter().collect());
                    files.push(file);
                    by_file.insert(file_name, files.len() - 1);
                    files.len() - 1
                }
            };
            let holds = names.get(slot).is_some_and(|n| n.contains(tensor));
            if !holds {
                return Err(ModelError::Safetensors {
                    path: dir.join(file_name),
                    reason: format!(
                        "{INDEX_FILE} places tensor '{tensor}' here, but the file has no such tensor"
                    ),
                });
            }
            owner.insert(tensor.clone(), slot);
        }
        Ok(Checkpoint { files, owner })
    }

    /// Number of safetensors files.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Whether a tensor named exactly `name` is in the checkpoint.
    pub fn contains(&self, name: &str) -> bool {
        self.owner.contains_key(name)
    }

    /// Tensor `name` (or the same name with a `model.` prefix added or dropped) with exactly
    /// shape `expected`, in `precision`.
    pub fn load(&self, name: &str, expected: &[usize], precision: Precision) -> Result<WeightData> {
        let alt = match name.strip_prefix("model.") {
            Some(rest) => rest.to_string(),
            None => format!("model.{name}"),
        };
        let found = [name, alt.as_str()]
            .into_iter()
            .find_map(|n| self.owner.get(n).and_then(|&i| self.files.get(i)).map(|f| (n, f)));
        match found {
            Some((n, file)) => file.load(n, expected, precision),
            None => {
                Err(ModelError::MissingTensor { name: name.to_string(), alt, expected: expected.to_vec() })
            }
        }
    }
}
