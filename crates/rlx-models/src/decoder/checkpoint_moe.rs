//! Expert weights of a mixture-of-experts checkpoint, in either spelling transformers writes:
//!
//! - fused (transformers 5): `mlp.experts.gate_up_proj` [E, 2·I, H] (each expert's gate rows,
//!   then its up rows) and `mlp.experts.down_proj` [E, H, I];
//! - per expert (transformers 4, the Hub's Qwen3-MoE checkpoints):
//!   `mlp.experts.{j}.gate_proj.weight` [I, H], `…up_proj.weight` [I, H],
//!   `…down_proj.weight` [H, I], stacked here on the host into the fused layout.
//!
//! The decoder graph's params use the fused names.

use crate::common::checkpoint::Checkpoint;
use crate::common::safetensors::{Precision, WeightData};
use crate::error::Result;

/// Suffixes of the fused expert params.
pub const GATE_UP: &str = "mlp.experts.gate_up_proj";
pub const DOWN: &str = "mlp.experts.down_proj";

impl Checkpoint {
    /// Param `name` of shape `expected`: an expert stack built from per-expert tensors when the
    /// checkpoint has no fused one, else the tensor itself ([`Checkpoint::load`]).
    pub fn load_param(&self, name: &str, expected: &[usize], precision: Precision) -> Result<WeightData> {
        let fused_here = self.contains(name) || self.contains(&alt_name(name));
        let stack = match (name.strip_suffix("gate_up_proj"), name.strip_suffix("down_proj")) {
            _ if fused_here => None,
            (Some(prefix), _) if name.ends_with(GATE_UP) => Some((prefix, &["gate_proj", "up_proj"][..])),
            (_, Some(prefix)) if name.ends_with(DOWN) => Some((prefix, &["down_proj"][..])),
            _ => None,
        };
        let (Some((prefix, parts)), &[experts, rows, cols]) = (stack, expected) else {
            return self.load(name, expected, precision);
        };
        let part_rows = rows / parts.len();
        let mut out: Option<WeightData> = None;
        for j in 0..experts {
            for part in parts {
                let one = self.load(&format!("{prefix}{j}.{part}.weight"), &[part_rows, cols], precision)?;
                out = Some(match (out, one) {
                    (None, one) => one,
                    (Some(WeightData::F32(mut a)), WeightData::F32(b)) => {
                        a.extend(b);
                        WeightData::F32(a)
                    }
                    (Some(WeightData::F16(mut a)), WeightData::F16(b)) => {
                        a.extend(b);
                        WeightData::F16(a)
                    }
                    // One precision gives one storage for every tensor; mixed ones widen.
                    (Some(a), b) => WeightData::F32(f32s(a).into_iter().chain(f32s(b)).collect()),
                });
            }
        }
        Ok(out.unwrap_or(WeightData::F32(Vec::new())))
    }
}

fn alt_name(name: &str) -> String {
    match name.strip_prefix("model.") {
        Some(rest) => rest.to_string(),
        None => format!("model.{name}"),
    }
}

fn f32s(w: WeightData) -> Vec<f32> {
    match w {
        WeightData::F32(v) => v,
        WeightData::F16(v) => v.into_iter().map(half::f16::to_f32).collect(),
    }
}
