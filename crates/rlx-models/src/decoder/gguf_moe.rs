//! The experts of a llama.cpp `qwen3moe` GGUF file, read onto the Qwen3-MoE decoder's params.
//!
//! - Metadata: `qwen3moe.expert_count` (E), `.expert_used_count` (k) and
//!   `.expert_feed_forward_length` (one expert's hidden size I) give the [`MoeConfig`]; a layer
//!   has experts when the file has its router `blk.N.ffn_gate_inp.weight`, else it is the dense
//!   MLP of `feed_forward_length` (`ffn_gate` / `ffn_up` / `ffn_down`). llama.cpp's qwen3moe
//!   always renormalizes the k routing weights, so `norm_topk_prob` is true.
//! - Tensors: the router `ffn_gate_inp` [E, hidden] is `mlp.gate.weight`; `ffn_down_exps`
//!   [E, hidden, I] is `mlp.experts.down_proj`; `ffn_gate_exps` and `ffn_up_exps` [E, I, hidden]
//!   are fused here into `mlp.experts.gate_up_proj` [E, 2·I, hidden] (each expert's gate rows,
//!   then its up rows) by moving whole rows, so quantized experts stay the file's blocks. The
//!   two must be stored alike (the same dense or block type), else an error names both.

use super::config::MoeConfig;
use super::gguf::GgufWeights;
use super::params::ParamData;
use crate::common::gguf::{GgufDecoderConfig, GgufError, GgufFile};
use crate::common::safetensors::{Precision, WeightData};
use crate::error::Result;

/// The decoder's experts for a file whose metadata gave `g` (`None` for dense files).
pub(super) fn moe_config(file: &GgufFile, g: &GgufDecoderConfig) -> Option<MoeConfig> {
    let e = g.experts.as_ref()?;
    let sparse = (0..g.num_layers)
        .map(|i| file.tensor_info(&format!("blk.{i}.ffn_gate_inp.weight")).is_some())
        .collect();
    Some(MoeConfig {
        num_experts: e.count,
        top_k: e.used,
        intermediate_size: e.feed_forward_length,
        norm_topk_prob: true,
        sparse,
    })
}

/// llama.cpp's name (after `blk.N.`) of the expert param `part` (a layer param's name after
/// `model.layers.N.`), when it is one file tensor.
pub(super) fn expert_name(part: &str) -> Option<&'static str> {
    match part {
        "mlp.gate.weight" => Some("ffn_gate_inp.weight"),
        "mlp.experts.down_proj" => Some("ffn_down_exps.weight"),
        _ => None,
    }
}

impl GgufWeights {
    /// `model.layers.N.mlp.experts.gate_up_proj` [E, 2·I, hidden] from the file's
    /// `blk.N.ffn_gate_exps.weight` and `blk.N.ffn_up_exps.weight` (see the module doc).
    pub(super) fn load_gate_up(
        &self,
        name: &str,
        expected: &[usize],
        precision: Precision,
    ) -> Result<ParamData> {
        let layer = name.strip_prefix("model.layers.").and_then(|r| r.split_once('.')).map(|(l, _)| l);
        let (Some(layer), &[experts, rows, cols]) = (layer, expected) else {
            return Err(self.file().error(GgufError::MissingWeight {
                name: name.to_string(),
                hf_name: name.to_string(),
                expected: expected.to_vec(),
                count: self.file().tensors().len(),
            }));
        };
        let half = [experts, rows / 2, cols];
        let gate_name = format!("blk.{layer}.ffn_gate_exps.weight");
        let up_name = format!("blk.{layer}.ffn_up_exps.weight");
        let gate = self.load_tensor(&gate_name, name, &half, precision)?;
        let up = self.load_tensor(&up_name, name, &half, precision)?;
        let fused = match (gate, up) {
            (ParamData::Dense(WeightData::F32(g)), ParamData::Dense(WeightData::F32(u))) => {
                Some(ParamData::Dense(WeightData::F32(interleave(&g, &u, experts))))
            }
            (ParamData::Dense(WeightData::F16(g)), ParamData::Dense(WeightData::F16(u))) => {
                Some(ParamData::Dense(WeightData::F16(interleave(&g, &u, experts))))
            }
            (ParamData::Quant { quant: qg, bytes: g }, ParamData::Quant { quant: qu, bytes: u })
                if qg == qu =>
            {
                Some(ParamData::Quant { quant: qg, bytes: interleave(&g, &u, experts) })
            }
            _ => None,
        };
        fused.ok_or_else(|| {
            let ty = |n: &str| self.file().tensor_info(n).map(|i| i.ty);
            match (ty(&gate_name), ty(&up_name)) {
                (Some(gate_ty), Some(up_ty)) => {
                    self.file().error(GgufError::ExpertTypes { gate: gate_name, gate_ty, up: up_name, up_ty })
                }
                // Both loaded above, so both exist.
                _ => self
                    .file()
                    .error(GgufError::NoTensor { name: gate_name, count: self.file().tensors().len() }),
            }
        })
    }
}

/// Expert e's part of `gate`, then of `up`, for each of the `experts` equal parts.
fn interleave<T: Copy>(gate: &[T], up: &[T], experts: usize) -> Vec<T> {
    let part = gate.len().checked_div(experts).unwrap_or(0);
    let mut out = Vec::with_capacity(gate.len() + up.len());
    for (g, u) in gate.chunks(part.max(1)).zip(up.chunks(part.max(1))) {
        out.extend_from_slice(g);
        out.extend_from_slice(u);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn gate_and_up_rows_interleave_per_expert() {
        // 2 experts of 2 gate rows and 2 up rows of 1 element.
        let gate = [1, 2, 3, 4];
        let up = [10, 20, 30, 40];
        assert_eq!(interleave(&gate, &up, 2), [1, 2, 10, 20, 3, 4, 30, 40]);
    }

    #[test]
    fn expert_names_map_to_llama_cpp() {
        assert_eq!(
            super::super::gguf::gguf_name("model.layers.3.mlp.gate.weight").as_deref(),
            Some("blk.3.ffn_gate_inp.weight")
        );
        assert_eq!(
            super::super::gguf::gguf_name("model.layers.0.mlp.experts.down_proj").as_deref(),
            Some("blk.0.ffn_down_exps.weight")
        );
        assert_eq!(super::super::gguf::gguf_name("model.layers.0.mlp.experts.gate_up_proj"), None);
    }
}
