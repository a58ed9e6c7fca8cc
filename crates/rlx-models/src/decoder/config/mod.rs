//! A decoder's config.json (Hugging Face `LlamaForCausalLM`, `Qwen2ForCausalLM`,
//! `Qwen3ForCausalLM`, `MistralForCausalLM`, `Qwen3MoeForCausalLM`) parsed into
//! [`DecoderConfig`]; the experts' keys in `moe.rs`.
//!
//! Both ways transformers writes rope settings are read: `rope_theta` + `rope_scaling` (the Hub's
//! checkpoints, transformers 4.x) and one `rope_parameters` object (transformers 5). Keys this
//! module does not know are ignored, but a known key whose value would change the model in a way
//! the graph does not implement (another activation, another rope type, experts, mixed sliding
//! and full attention layers, …) is a [`crate::ModelError::Config`] naming the key and its value.

use crate::common::config_keys::{parse_config, read_config, Keys};
use crate::error::Result;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

mod moe;
pub use moe::MoeConfig;

/// The model families the decoder graph implements. They share one layer shape (pre-norm
/// RMSNorm, rotary attention with grouped-query heads, SiLU-gated MLP) and differ in biases,
/// q/k norms and sliding-window attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Architecture {
    /// Llama (and the families that share its layout).
    Llama,
    /// Bias on the q, k and v projections (not on o).
    Qwen2,
    /// RMSNorm over each head of q and k (`q_norm`, `k_norm`) before rope.
    Qwen3,
    /// Sliding-window attention on every layer when `sliding_window` is set.
    Mistral,
    /// Qwen3's attention with mixture-of-experts MLPs ([`MoeConfig`]).
    Qwen3Moe,
}

impl Architecture {
    /// Every architecture, in declaration order.
    pub const ALL: [Architecture; 5] = [
        Architecture::Llama,
        Architecture::Qwen2,
        Architecture::Qwen3,
        Architecture::Mistral,
        Architecture::Qwen3Moe,
    ];

    /// The class name in config.json's `architectures`.
    pub fn hf_class(self) -> &'static str {
        match self {
            Architecture::Llama => "LlamaForCausalLM",
            Architecture::Qwen2 => "Qwen2ForCausalLM",
            Architecture::Qwen3 => "Qwen3ForCausalLM",
            Architecture::Mistral => "MistralForCausalLM",
            Architecture::Qwen3Moe => "Qwen3MoeForCausalLM",
        }
    }

    /// config.json's `model_type`.
    pub fn model_type(self) -> &'static str {
        match self {
            Architecture::Llama => "llama",
            Architecture::Qwen2 => "qwen2",
            Architecture::Qwen3 => "qwen3",
            Architecture::Mistral => "mistral",
            Architecture::Qwen3Moe => "qwen3_moe",
        }
    }

    /// transformers' default for an absent `max_position_embeddings`.
    fn default_max_positions(self) -> usize {
        match self {
            Architecture::Llama => 2048,
            Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Qwen3Moe => 32768,
            Architecture::Mistral => 131072,
        }
    }
}

/// How rotary frequencies are rescaled for contexts longer than pretraining's.
#[derive(Clone, Debug, PartialEq)]
pub enum RopeScaling {
    /// Plain rope: frequency i is θ^(−2i/d).
    None,
    /// Position interpolation (`"linear"`): every frequency divided by `factor`.
    Linear {
        /// The divisor.
        factor: f64,
    },
    /// Llama 3.1's `"llama3"`: wavelengths longer than `original_max_position_embeddings /
    /// low_freq_factor` divided by `factor`, shorter than `... / high_freq_factor` kept, the band
    /// between interpolated smoothly. See [`super::rope::inverse_frequencies`].
    Llama3 {
        /// The divisor of the long wavelengths.
        factor: f64,
        /// Wavelengths past `original_max_position_embeddings / low_freq_factor` are divided.
        low_freq_factor: f64,
        /// Wavelengths below `original_max_position_embeddings / high_freq_factor` are kept.
        high_freq_factor: f64,
        /// The context length the model was first trained for.
        original_max_position_embeddings: usize,
    },
    /// llama.cpp's `rope_freqs.weight` (its converter's form of Llama 3.1's `"llama3"`
    /// scaling): frequency i divided by `factors[i]`, one factor per frequency (head_dim / 2).
    Factors(Arc<[f32]>),
}

/// Everything the decoder graph and the weight loader need from config.json.
#[derive(Clone, Debug, PartialEq)]
pub struct DecoderConfig {
    /// The model family.
    pub architecture: Architecture,
    /// Size of the token vocabulary.
    pub vocab_size: usize,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the MLP.
    pub intermediate_size: usize,
    /// Number of layers.
    pub num_hidden_layers: usize,
    /// Query heads per layer.
    pub num_attention_heads: usize,
    /// K/V heads; `num_attention_heads` is a multiple of it (grouped-query attention).
    pub num_key_value_heads: usize,
    /// Per-head size; `hidden_size / num_attention_heads` unless config.json says otherwise.
    pub head_dim: usize,
    /// Epsilon of every RMSNorm.
    pub rms_norm_eps: f32,
    /// Rope base θ.
    pub rope_theta: f64,
    /// How rope frequencies are scaled.
    pub rope_scaling: RopeScaling,
    /// Longest context the checkpoint was trained for.
    pub max_position_embeddings: usize,
    /// The output projection is the token embedding table (no `lm_head.weight` needed).
    pub tie_word_embeddings: bool,
    /// Bias on the q, k and v projections.
    pub qkv_bias: bool,
    /// Bias on the attention output projection.
    pub o_bias: bool,
    /// Per-head RMSNorm on q and k before rope (Qwen3).
    pub qk_norm: bool,
    /// Every layer attends to at most this many keys, the newest included.
    pub sliding_window: Option<usize>,
    /// `torch_dtype` (or transformers 5's `dtype`), as written; informational only: the
    /// safetensors headers decide how weights are read.
    pub torch_dtype: Option<String>,
    /// The experts, for mixture-of-experts architectures (`None`: every layer's MLP is dense).
    pub moe: Option<MoeConfig>,
}

impl DecoderConfig {
    /// Reads and checks `path` (a config.json).
    pub fn from_file(path: &Path) -> Result<DecoderConfig> {
        read_config(path, parse)
    }

    /// Parses config.json's text; `path` only names the file in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<DecoderConfig> {
        parse_config(text, path, parse)
    }

    /// Width of the q projection (and of attention's output): heads × head_dim.
    pub fn q_dim(&self) -> usize {
        self.num_attention_heads * self.head_dim
    }

    /// Width of the k and v projections: kv heads × head_dim.
    pub fn kv_dim(&self) -> usize {
        self.num_key_value_heads * self.head_dim
    }
}

/// Error-message prefix for keys inside the rope objects.
fn scope_of(key: &str) -> &'static str {
    match key {
        "rope_parameters" => "rope_parameters.",
        "rope_scaling" => "rope_scaling.",
        _ => "",
    }
}

fn parse(k: &Keys<'_>) -> Result<DecoderConfig> {
    let architecture = architecture(k)?;
    refuse_unsupported(k)?;
    let layers = k.size("num_hidden_layers")?;
    crate::bert::config::check_layers("num_hidden_layers", layers).map_err(|reason| k.err(reason))?;
    let moe = moe::moe(k, architecture, layers)?;
    let vocab_size = k.size("vocab_size")?;
    let hidden_size = k.size("hidden_size")?;
    let intermediate_size = k.size("intermediate_size")?;
    let num_hidden_layers = layers;
    let num_attention_heads = k.size("num_attention_heads")?;
    let num_key_value_heads = match k.opt_usize("num_key_value_heads")? {
        None => num_attention_heads,
        Some(0) => return Err(k.bad("num_key_value_heads", "must be at least 1")),
        Some(n) => n,
    };
    if !num_attention_heads.is_multiple_of(num_key_value_heads) {
        return Err(k.bad(
            "num_key_value_heads",
            format!("num_attention_heads {num_attention_heads} is not a multiple of it"),
        ));
    }
    let head_dim = match k.opt_usize("head_dim")? {
        Some(d) => d,
        None if hidden_size.is_multiple_of(num_attention_heads) => hidden_size / num_attention_heads,
        None => {
            return Err(k.bad(
                "hidden_size",
                format!(
                    "not a multiple of num_attention_heads {num_attention_heads} and no head_dim is given"
                ),
            ))
        }
    };
    if head_dim < 2 || !head_dim.is_multiple_of(2) {
        return Err(k.err(format!("head_dim {head_dim} must be even and ≥ 2 (rope rotates pairs)")));
    }
    let rms_norm_eps = k.opt_f64("rms_norm_eps")?.unwrap_or(1e-6);
    if rms_norm_eps < 0.0 {
        return Err(k.bad("rms_norm_eps", "must be ≥ 0"));
    }
    let max_position_embeddings = match k.opt_usize("max_position_embeddings")? {
        Some(0) => return Err(k.bad("max_position_embeddings", "must be at least 1")),
        Some(n) => n,
        None => architecture.default_max_positions(),
    };
    let (rope_theta, rope_scaling) = rope(k, max_position_embeddings)?;
    let attention_bias = k.opt_bool("attention_bias")?.unwrap_or(false);
    let (qkv_bias, o_bias) = match architecture {
        Architecture::Llama | Architecture::Qwen3 | Architecture::Qwen3Moe => {
            (attention_bias, attention_bias)
        }
        Architecture::Qwen2 => (true, false),
        Architecture::Mistral => (false, false),
    };
    let torch_dtype = match k.opt_str("torch_dtype")? {
        Some(s) => Some(s),
        None => k.opt_str("dtype")?,
    };
    Ok(DecoderConfig {
        architecture,
        vocab_size,
        hidden_size,
        intermediate_size,
        num_hidden_layers,
        num_attention_heads,
        num_key_value_heads,
        head_dim,
        rms_norm_eps: rms_norm_eps as f32,
        rope_theta,
        rope_scaling,
        max_position_embeddings,
        tie_word_embeddings: k.opt_bool("tie_word_embeddings")?.unwrap_or(false),
        qkv_bias,
        o_bias,
        qk_norm: matches!(architecture, Architecture::Qwen3 | Architecture::Qwen3Moe),
        sliding_window: sliding_window(k, architecture, num_hidden_layers)?,
        torch_dtype: torch_dtype.map(str::to_string),
        moe,
    })
}

fn known_list() -> String {
    Architecture::ALL.iter().map(|a| a.hf_class()).collect::<Vec<_>>().join(", ")
}

/// `architectures` (exactly one known class), else `model_type`.
fn architecture(k: &Keys<'_>) -> Result<Architecture> {
    if let Some(v) = k.get("architectures") {
        let names: Option<Vec<&str>> = v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect());
        return match names.as_deref() {
            Some([one]) => Architecture::ALL
                .into_iter()
                .find(|a| a.hf_class() == *one)
                .ok_or_else(|| k.bad("architectures", format!("not a supported decoder ({})", known_list()))),
            _ => Err(k.bad("architectures", format!("expected a list of one of {}", known_list()))),
        };
    }
    match k.opt_str("model_type")? {
        Some(t) => Architecture::ALL.into_iter().find(|a| a.model_type() == t).ok_or_else(|| {
            k.bad("model_type", "not a supported decoder (llama, qwen2, qwen3, mistral, qwen3_moe)")
        }),
        None => Err(k.err("neither 'architectures' nor 'model_type' says which model this is".into())),
    }
}

/// Keys whose presence (or value) means a model the graph would compute wrongly.
fn refuse_unsupported(k: &Keys<'_>) -> Result<()> {
    if let Some(act) = k.opt_str("hidden_act")? {
        if act != "silu" {
            return Err(k.bad("hidden_act", "not supported; these decoders use silu (a SiLU-gated MLP)"));
        }
    }
    if k.opt_bool("mlp_bias")? == Some(true) {
        return Err(k.bad("mlp_bias", "biases on the MLP projections are not supported"));
    }
    if k.get("quantization_config").is_some() {
        return Err(k.err(
            "key 'quantization_config' is present: quantized checkpoints are not supported (use an F32, F16 or BF16 one)"
                .into(),
        ));
    }
    Ok(())
}

/// `rope_theta` and the scaling, from `rope_parameters` (transformers 5) or `rope_theta` +
/// `rope_scaling` (transformers 4).
fn rope(k: &Keys<'_>, max_positions: usize) -> Result<(f64, RopeScaling)> {
    let params = k.opt_object("rope_parameters", scope_of("rope_parameters"))?;
    let theta_in_params = match &params {
        Some(p) => p.opt_f64("rope_theta")?,
        None => None,
    };
    let scaling = match params {
        Some(p) => Some(p),
        None => k.opt_object("rope_scaling", scope_of("rope_scaling"))?,
    };
    let rope_theta = match theta_in_params {
        Some(t) => t,
        None => k.opt_f64("rope_theta")?.unwrap_or(10000.0),
    };
    if rope_theta <= 0.0 {
        return Err(k.err(format!("rope_theta = {rope_theta}: must be > 0")));
    }
    partial_rotary(k)?;
    let Some(s) = scaling else { return Ok((rope_theta, RopeScaling::None)) };
    partial_rotary(&s)?;
    if let Some((layer_type, _)) = s.map.iter().find(|(_, v)| v.is_object()) {
        return Err(s.err(format!(
            "{}{layer_type} is an object: rope parameters per layer type are not supported",
            s.scope
        )));
    }
    let kind = match s.opt_str("rope_type")? {
        Some(t) => Some(t),
        None => s.opt_str("type")?,
    };
    let key = if s.get("rope_type").is_some() { "rope_type" } else { "type" };
    let scaling = match kind.unwrap_or("default") {
        "default" => RopeScaling::None,
        "linear" => RopeScaling::Linear { factor: s.positive("factor")? },
        "llama3" => {
            let (low, high) = (s.positive("low_freq_factor")?, s.positive("high_freq_factor")?);
            if high <= low {
                return Err(s.bad("high_freq_factor", format!("must be greater than low_freq_factor {low}")));
            }
            let original = match s.opt_usize("original_max_position_embeddings")? {
                Some(0) => return Err(s.bad("original_max_position_embeddings", "must be at least 1")),
                Some(n) => n,
                None => max_positions,
            };
            RopeScaling::Llama3 {
                factor: s.positive("factor")?,
                low_freq_factor: low,
                high_freq_factor: high,
                original_max_position_embeddings: original,
            }
        }
        _ => return Err(s.bad(key, "this rope type is not supported (default, linear, llama3)")),
    };
    Ok((rope_theta, scaling))
}

/// Rope on only part of each head is not implemented here (the IR op could, the config
/// plumbing does not): refuse any factor other than 1.
fn partial_rotary(k: &Keys<'_>) -> Result<()> {
    match k.opt_f64("partial_rotary_factor")? {
        Some(f) if f != 1.0 => {
            Err(k.bad("partial_rotary_factor", "partial rotary embeddings are not supported"))
        }
        _ => Ok(()),
    }
}

/// The one attention kind all layers share: `None` (full causal) or a window. Qwen2/Qwen3 slide
/// only when `use_sliding_window` is true, and then only on layers ≥ `max_window_layers`
/// (unless `layer_types` lists the kinds); Mistral slides on every layer when `sliding_window`
/// is set, whatever `layer_types` says; Llama never slides. Layers of both kinds in one model are refused.
fn sliding_window(k: &Keys<'_>, arch: Architecture, layers: usize) -> Result<Option<usize>> {
    let window = match arch {
        Architecture::Llama => return Ok(None),
        Architecture::Mistral => k.opt_usize("sliding_window")?,
        Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Qwen3Moe => {
            if k.opt_bool("use_sliding_window")?.unwrap_or(false) {
                k.opt_usize("sliding_window")?
            } else {
                None
            }
        }
    };
    if window == Some(0) {
        return Err(k.bad("sliding_window", "a window of 0 hides every token; use null or ≥ 1"));
    }
    // MistralForCausalLM ignores `layer_types` (transformers warns and slides on every layer).
    let layer_types = if arch == Architecture::Mistral { None } else { k.get("layer_types") };
    let sliding: Vec<bool> = match layer_types {
        Some(v) => {
            let kinds = v.as_array().filter(|a| a.len() == layers).ok_or_else(|| {
                k.bad("layer_types", format!("expected a list of {layers} layer kinds (num_hidden_layers)"))
            })?;
            kinds
                .iter()
                .map(|t| match t.as_str() {
                    Some("full_attention") => Ok(false),
                    Some("sliding_attention") => Ok(true),
                    _ => Err(k.bad(
                        "layer_types",
                        format!("unknown layer kind {t} (full_attention, sliding_attention)"),
                    )),
                })
                .collect::<Result<_>>()?
        }
        None => match arch {
            Architecture::Qwen2 | Architecture::Qwen3 | Architecture::Qwen3Moe => {
                let first = k.opt_usize("max_window_layers")?.unwrap_or(28);
                (0..layers).map(|i| window.is_some() && i >= first).collect()
            }
            _ => vec![window.is_some(); layers],
        },
    };
    let all = sliding.iter().all(|&s| s);
    if !all && sliding.iter().any(|&s| s) {
        let key = if layer_types.is_some() { "layer_types" } else { "use_sliding_window" };
        return Err(k.bad(
            key,
            "layers mixing sliding-window and full attention are not supported (check max_window_layers)",
        ));
    }
    match (all, window) {
        (true, Some(w)) => Ok(Some(w)),
        (true, None) => Err(k.bad(
            "layer_types",
            "layers are marked sliding_attention but no sliding window is in effect (sliding_window / use_sliding_window)",
        )),
        (false, _) => Ok(None),
    }
}

#[cfg(test)]
mod tests;
