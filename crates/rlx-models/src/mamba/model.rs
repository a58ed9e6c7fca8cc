//! [`Mamba`]: a Mamba-1 checkpoint loaded onto one device, giving the logits of one token
//! sequence (one full forward per call; the graph of the last length is kept compiled).

use super::graph::{mamba_graph, EMBEDDINGS, INPUT_IDS};
use super::MambaConfig;
use crate::common::checkpoint::Checkpoint;
use crate::common::compile_cache::CompileCache;
use crate::common::safetensors::{Precision, WeightData};
use crate::common::tokens::check_token_ids;
use crate::common::weights::{load_params, set_weights};
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
    weights: Vec<(String, WeightData)>,
    /// The executable of the last sequence length run, by that length.
    compiled: CompileCache<usize, Executable>,
}

crate::common::debug_model!(Mamba, config);

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
        let weights = load_params(&mamba_graph(&config, 1)?, |name, ty| {
            let old = name == EMBEDDINGS && !ckpt.contains(EMBEDDINGS) && ckpt.contains(OLD_EMBEDDINGS);
            // All f32: Precision::F32 widens every stored dtype.
            ckpt.load(if old { OLD_EMBEDDINGS } else { name }, ty.shape.dims(), Precision::F32)
        })?;
        Ok(Mamba { session, config, weights, compiled: CompileCache::new(1) })
    }

    /// The model's configuration.
    pub fn config(&self) -> &MambaConfig {
        &self.config
    }

    /// The device the model runs on.
    pub fn device(&self) -> Device {
        self.session.device()
    }

    /// The session the model runs on (its device's live objects, for soak runs).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Logits of every position of `ids`: row-major [ids.len(), vocab], row i predicting the
    /// token after `ids[..=i]`, as transformers' `MambaForCausalLM(ids).logits[0]`. An empty
    /// sequence or an id outside the vocabulary is [`ModelError::InvalidInput`].
    pub fn logits(&mut self, ids: &[i32]) -> Result<Vec<f32>> {
        let vocab = self.config.vocab_size;
        check_token_ids(ids, vocab)?;
        let len = ids.len();
        let exe = self.compiled.get_or_insert_with(len, || {
            let mut exe = self.session.compile(&mamba_graph(&self.config, len)?)?;
            set_weights(&mut exe, &self.weights)?;
            Ok(exe)
        })?;
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
