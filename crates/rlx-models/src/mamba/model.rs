//! [`Mamba`]: a Mamba-1 checkpoint loaded onto one device, giving the logits of one token
//! sequence (one full forward per call; the graph of the last length is kept compiled).

use super::graph::{mamba_graph, EMBEDDINGS, INPUT_IDS};
use super::MambaConfig;
use crate::common::checkpoint::Checkpoint;
use crate::common::safetensors::{Precision, WeightData};
use crate::error::{ModelError, Result};
use rlx_runtime::{Device, Executable, HostData, Session};
use std::path::Path;

/// Older checkpoints (state-spaces/mamba-*-hf before transformers renamed it) call the
/// embedding table this; transformers' load hook maps it to [`EMBEDDINGS`].
const OLD_EMBEDDINGS: &str = "backbone.embedding.weight";

/// A Mamba-1 language model on one device.
pub struct Mamba {
    session: Session,
    config: MambaConfig,
    weights: Vec<(String, Vec<f32>)>,
    /// The executable of the last sequence length run, with that length.
    compiled: Option<(usize, Executable)>,
}

impl std::fmt::Debug for Mamba {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mamba").field("device", &self.session.device()).field("config", &self.config).finish()
    }
}

impl Mamba {
    /// Opens `device` and loads the checkpoint directory `dir` (config.json plus
    /// model.safetensors or a sharded index; F32, F16 or BF16 tensors, widened to f32). Every
    /// weight is read and checked against the config here: a missing tensor or a wrong shape
    /// is an error naming it.
    pub fn load(dir: &Path, device: Device) -> Result<Mamba> {
        Mamba::with_session(dir, Session::new(device)?)
    }

    /// [`Mamba::load`] onto an opened session.
    pub fn with_session(dir: &Path, session: Session) -> Result<Mamba> {
        let config = MambaConfig::from_file(&dir.join("config.json"))?;
        let ckpt = Checkpoint::open(dir)?;
        let probe = mamba_graph(&config, 1)?;
        let mut weights = Vec::new();
        for (name, _, ty) in probe.params() {
            let dims = ty.shape.dims();
            let source = if name == EMBEDDINGS && !ckpt.contains(EMBEDDINGS) && ckpt.contains(OLD_EMBEDDINGS)
            {
                OLD_EMBEDDINGS
            } else {
                name
            };
            let data = match ckpt.load(source, dims, Precision::F32)? {
                WeightData::F32(v) => v,
                WeightData::F16(v) => v.into_iter().map(f32::from).collect(),
            };
            weights.push((name.to_string(), data));
        }
        Ok(Mamba { session, config, weights, compiled: None })
    }

    pub fn config(&self) -> &MambaConfig {
        &self.config
    }

    pub fn device(&self) -> Device {
        self.session.device()
    }

    /// Logits of every position of `ids`: row-major [ids.len(), vocab], row i predicting the
    /// token after `ids[..=i]`, as transformers' `MambaForCausalLM(ids).logits[0]`. An empty
    /// sequence or an id outside the vocabulary is [`ModelError::InvalidInput`].
    pub fn logits(&mut self, ids: &[i32]) -> Result<Vec<f32>> {
        let vocab = self.config.vocab_size;
        if ids.is_empty() {
            return Err(ModelError::InvalidInput {
                reason: "the token sequence is empty; give at least one token id".into(),
            });
        }
        if let Some((pos, id)) = ids.iter().enumerate().find(|(_, &id)| id < 0 || id as usize >= vocab) {
            return Err(ModelError::InvalidInput {
                reason: format!("token id {id} at position {pos} is outside the vocabulary 0..{vocab}"),
            });
        }
        let len = ids.len();
        if self.compiled.as_ref().map(|(l, _)| *l) != Some(len) {
            let g = mamba_graph(&self.config, len)?;
            let mut exe = self.session.compile(&g)?;
            for (name, data) in &self.weights {
                exe.set_param(name, data)?;
            }
            self.compiled = Some((len, exe));
        }
        let Some((_, exe)) = self.compiled.as_mut() else {
            return Err(ModelError::InvalidInput { reason: "internal: no compiled graph".into() });
        };
        let ids_vec = ids.to_vec();
        let inputs: [(&str, &dyn HostData); 1] = [(INPUT_IDS, &ids_vec)];
        let out = exe.run(&inputs)?;
        let values = out.first().map(|t| t.to_f32_vec()).unwrap_or_default();
        if values.len() != len * vocab {
            return Err(ModelError::OutputSize { batch: len, dim: vocab, got: values.len() });
        }
        Ok(values)
    }
}
