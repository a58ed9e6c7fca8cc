//! A [`Trainer`]'s checkpoint: one safetensors file holding every weight under its own name,
//! each optimizer moment as `optim.{slot}/{weight}` (F32), and in the metadata the format tag,
//! the step counts, the optimizer, clipping and schedule settings and the loss scaler's state.
//! Resuming checks everything before it changes anything: a failed resume leaves the trainer
//! as it was.

use super::Trainer;
use crate::error::{ModelError, Result};
use rlx_ir::Tensor;
use rlx_nn::state_name;
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::Path;

/// The `format` metadata of a trainer checkpoint.
const FORMAT: &str = "rlx-trainer-1";

/// The tensor holding `weight`'s optimizer moment `slot` ("m", "v").
pub(super) fn slot_tensor(weight: &str, slot: &str) -> String {
    format!("optim.{slot}/{weight}")
}

/// Every tensor of the checkpoint, in the export graph's output order (weights, then each
/// slot's moments), with its shape.
fn tensor_names(tr: &Trainer) -> Vec<(String, Vec<usize>, Option<&'static str>, String)> {
    let slots = tr.cfg.opts.optimizer.slots();
    let mut v = Vec::new();
    for slot in std::iter::once(None).chain(slots.iter().map(|s| Some(*s))) {
        for (w, dims) in &tr.weights {
            let file_name = match slot {
                None => w.clone(),
                Some(s) => slot_tensor(w, s),
            };
            v.push((file_name, dims.clone(), slot, w.clone()));
        }
    }
    v
}

fn settings(tr: &Trainer) -> HashMap<String, String> {
    let mut m = HashMap::new();
    m.insert("format".to_string(), FORMAT.to_string());
    m.insert("steps".to_string(), tr.steps.to_string());
    m.insert("updates".to_string(), tr.updates.to_string());
    m.insert("optimizer".to_string(), format!("{:?}", tr.cfg.opts.optimizer));
    m.insert("clip_grad_norm".to_string(), format!("{:?}", tr.cfg.opts.clip_grad_norm));
    m.insert("schedule".to_string(), format!("{:?}", tr.cfg.schedule));
    if let Some(s) = tr.cfg.loss_scale {
        m.insert("loss_scale".to_string(), s.scale().to_string());
        m.insert("loss_scale_good_steps".to_string(), s.good_steps().to_string());
    }
    m
}

pub(super) fn save(tr: &mut Trainer, path: &Path) -> Result<()> {
    let values = tr.export()?;
    let tensors: Vec<(String, Tensor)> =
        tensor_names(tr).into_iter().zip(values).map(|((name, ..), t)| (name, t)).collect();
    crate::common::safetensors::write_f32(path, &tensors, Some(settings(tr)))
}

pub(super) fn resume(tr: &mut Trainer, path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
    let not_st = |e: safetensors::SafeTensorError| ModelError::Safetensors {
        path: path.to_path_buf(),
        reason: format!("{e}; a trainer checkpoint is a file written by Trainer::save_checkpoint"),
    };
    let (_, meta) = SafeTensors::read_metadata(&bytes).map_err(not_st)?;
    let st = SafeTensors::deserialize(&bytes).map_err(not_st)?;
    let fail = |reason: String| ModelError::TrainCheckpoint { path: path.to_path_buf(), reason };
    let empty = HashMap::new();
    let meta = meta.metadata().as_ref().unwrap_or(&empty);
    if meta.get("format").map(String::as_str) != Some(FORMAT) {
        return Err(fail(format!(
            "not a trainer checkpoint (its metadata has no format '{FORMAT}'); resume from a file \
             written by Trainer::save_checkpoint, or load plain weights with set_weight"
        )));
    }
    let ours = format!("{:?}", tr.cfg.opts.optimizer);
    let theirs = meta.get("optimizer").cloned().unwrap_or_default();
    if theirs != ours {
        return Err(fail(format!(
            "saved with optimizer {theirs}, but this trainer uses {ours}; the moments of one \
             optimizer mean nothing to another: configure the trainer with the checkpoint's \
             optimizer, or start afresh from its weights with set_weight"
        )));
    }
    let count = |key: &str| -> Result<u64> {
        meta.get(key)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| fail(format!("metadata '{key}' is missing or not a step count")))
    };
    let (steps, updates) = (count("steps")?, count("updates")?);
    let mut scaler = tr.cfg.loss_scale;
    if let (Some(s), Some(scale)) = (scaler.as_mut(), meta.get("loss_scale")) {
        let scale: f32 =
            scale.parse().map_err(|_| fail(format!("metadata 'loss_scale' {scale} is not a number")))?;
        let good = count("loss_scale_good_steps")?;
        s.restore(scale, good).map_err(|e| fail(e.to_string()))?;
    }
    let phase = (steps % 2) as usize;
    let mut states = Vec::new();
    for (name, dims, slot, weight) in tensor_names(tr) {
        let view = st.tensor(&name).map_err(|_| {
            fail(format!(
                "tensor '{name}' (shape {dims:?}) is missing; this trainer's weights are not the ones \
                 the checkpoint was saved for: resume with the model configuration that saved it"
            ))
        })?;
        if view.dtype() != Dtype::F32 {
            return Err(fail(format!(
                "tensor '{name}' is {:?}; a trainer checkpoint holds F32",
                view.dtype()
            )));
        }
        if view.shape() != dims.as_slice() {
            return Err(fail(format!(
                "tensor '{name}' has shape {:?} but the trainer's weight has shape {dims:?}; resume with \
                 the model configuration that saved the checkpoint",
                view.shape()
            )));
        }
        let v: Vec<f32> =
            view.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let t = Tensor::from_f32(dims.clone(), v)?;
        states.push((state_name(&weight, slot, phase), t));
    }
    for (state, t) in &states {
        tr.set_state(state, t)?;
    }
    tr.steps = steps;
    tr.updates = updates;
    tr.cfg.loss_scale = scaler;
    Ok(())
}
