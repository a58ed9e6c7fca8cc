//! [`MambaConfig`]: the keys of a transformers `MambaForCausalLM` config.json (`MambaConfig`)
//! that the forward pass reads. A key whose value would change the forward pass in a way the
//! graph does not implement (another activation, a config of another model type) is a config
//! error naming it.

use crate::common::config_keys::{parse_config, read_config, Keys};
use crate::error::Result;
use serde_json::Value;
use std::path::Path;

/// A Mamba-1 language model's shape, as transformers' `MambaConfig` has it.
#[derive(Clone, Debug, PartialEq)]
pub struct MambaConfig {
    /// Size of the token vocabulary.
    pub vocab_size: usize,
    /// Width of the residual stream H (`hidden_size`).
    pub hidden_size: usize,
    /// Channels of the mixer I (`intermediate_size`, else `expand · hidden_size`).
    pub intermediate_size: usize,
    /// SSM state size N (`state_size`).
    pub state_size: usize,
    /// Number of layers.
    pub num_hidden_layers: usize,
    /// Depthwise causal convolution width (`conv_kernel`).
    pub conv_kernel: usize,
    /// Rank R of the Δ projection (`time_step_rank`; "auto" is ⌈H / 16⌉, as transformers').
    pub time_step_rank: usize,
    /// RMSNorm epsilon (`layer_norm_epsilon`).
    pub layer_norm_epsilon: f32,
    /// `in_proj` and `out_proj` have biases (`use_bias`).
    pub use_bias: bool,
    /// `conv1d` has a bias (`use_conv_bias`).
    pub use_conv_bias: bool,
    /// `lm_head` is the embedding table (`tie_word_embeddings`, default true).
    pub tie_word_embeddings: bool,
}

/// Whether the config.json at `path` is a Mamba-1 model (`model_type` "mamba", or
/// `architectures` naming `MambaForCausalLM`/`MambaModel`). False for an unreadable file (the
/// decoder loader then reports it).
pub fn is_mamba_config(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let Ok(v) = serde_json::from_str::<Value>(&text) else { return false };
    let by_type = v.get("model_type").and_then(Value::as_str) == Some("mamba");
    let by_arch = v
        .get("architectures")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| matches!(x.as_str(), Some("MambaForCausalLM" | "MambaModel"))));
    by_type || by_arch
}

impl MambaConfig {
    /// Reads and checks `path` (a config.json).
    pub fn from_file(path: &Path) -> Result<MambaConfig> {
        read_config(path, parse)
    }

    /// Parses config.json's text; `path` only names the file in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<MambaConfig> {
        parse_config(text, path, parse)
    }
}

fn parse(k: &Keys<'_>) -> Result<MambaConfig> {
    if let Some(t) = k.opt_str("model_type")? {
        if t != "mamba" {
            return Err(k.bad("model_type", "expected \"mamba\" (Mamba-1's MambaForCausalLM)"));
        }
    }
    if let Some(act) = k.opt_str("hidden_act")? {
        if act != "silu" {
            return Err(k.bad("hidden_act", "only \"silu\" is implemented (every released Mamba uses it)"));
        }
    }
    let hidden_size = k.size("hidden_size")?;
    let intermediate_size = match k.opt_usize("intermediate_size")? {
        Some(0) => return Err(k.bad("intermediate_size", "must be at least 1")),
        Some(n) => n,
        None => {
            let expand = k.opt_f64("expand")?.unwrap_or(2.0);
            if expand <= 0.0 {
                return Err(k.bad("expand", "must be > 0"));
            }
            // transformers: int(expand * hidden_size).
            (expand * hidden_size as f64) as usize
        }
    };
    let time_step_rank = match k.get("time_step_rank") {
        Some(Value::String(s)) if s == "auto" => hidden_size.div_ceil(16),
        None => hidden_size.div_ceil(16),
        Some(_) => k.size("time_step_rank")?,
    };
    let eps = k.opt_f64("layer_norm_epsilon")?.unwrap_or(1e-5);
    if eps < 0.0 {
        return Err(k.bad("layer_norm_epsilon", "must be ≥ 0"));
    }
    Ok(MambaConfig {
        vocab_size: k.size("vocab_size")?,
        hidden_size,
        intermediate_size,
        state_size: k.opt_usize("state_size")?.unwrap_or(16).max(1),
        num_hidden_layers: k.size("num_hidden_layers")?,
        conv_kernel: k.opt_usize("conv_kernel")?.unwrap_or(4).max(1),
        time_step_rank,
        layer_norm_epsilon: eps as f32,
        use_bias: k.opt_bool("use_bias")?.unwrap_or(false),
        use_conv_bias: k.opt_bool("use_conv_bias")?.unwrap_or(true),
        tie_word_embeddings: k.opt_bool("tie_word_embeddings")?.unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse_text(t: &str) -> Result<MambaConfig> {
        MambaConfig::from_json(t, Path::new("config.json"))
    }

    #[test]
    fn defaults_follow_transformers() {
        let c = parse_text(
            r#"{"model_type":"mamba","vocab_size":50,"hidden_size":40,"num_hidden_layers":2,
            "time_step_rank":"auto","expand":2}"#,
        )
        .unwrap();
        assert_eq!((c.intermediate_size, c.time_step_rank, c.state_size, c.conv_kernel), (80, 3, 16, 4));
        assert!(c.tie_word_embeddings && c.use_conv_bias && !c.use_bias);
    }

    #[test]
    fn unimplemented_keys_are_named() {
        let e = parse_text(r#"{"vocab_size":5,"hidden_size":4,"num_hidden_layers":1,"hidden_act":"gelu"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("hidden_act") && e.contains("silu"), "{e}");
        let e = parse_text(r#"{"model_type":"mamba2","vocab_size":5}"#).unwrap_err().to_string();
        assert!(e.contains("model_type"), "{e}");
        let e = parse_text(r#"{"vocab_size":5,"num_hidden_layers":1}"#).unwrap_err().to_string();
        assert!(e.contains("hidden_size"), "{e}");
    }
}
