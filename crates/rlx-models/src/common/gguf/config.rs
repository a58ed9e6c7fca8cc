//! A decoder's hyper-parameters from llama.cpp's metadata keys (`{arch}.embedding_length`, …).

use super::error::GgufError;
use super::GgufFile;
use crate::error::Result;

/// The architectures whose metadata [`gguf_config`] maps (`general.architecture`).
pub const ARCHITECTURES: [&str; 4] = ["llama", "qwen2", "qwen3", "qwen3moe"];

/// `{arch}.rope.freq_base` when a file does not set it (llama.cpp's default).
pub const DEFAULT_ROPE_THETA: f32 = 10_000.0;

/// A llama-style decoder's shape, as a GGUF file's metadata gives it. Counts are at least 1,
/// heads divide evenly into key/value groups, and the epsilon and RoPE base are finite and
/// positive.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufDecoderConfig {
    /// `general.architecture`: one of [`ARCHITECTURES`].
    pub architecture: String,
    /// `{arch}.embedding_length`.
    pub hidden_size: usize,
    /// `{arch}.block_count`.
    pub num_layers: usize,
    /// `{arch}.feed_forward_length`.
    pub intermediate_size: usize,
    /// `{arch}.attention.head_count`.
    pub num_heads: usize,
    /// `{arch}.attention.head_count_kv`; `num_heads` when absent (no grouped-query attention).
    pub num_kv_heads: usize,
    /// `{arch}.attention.key_length`; `hidden_size / num_heads` when absent (qwen3 sets it
    /// apart from that).
    pub head_dim: usize,
    /// `{arch}.rope.dimension_count` (rotated dims per head); `head_dim` when absent.
    pub rope_dims: usize,
    /// `{arch}.attention.layer_norm_rms_epsilon`.
    pub rms_norm_eps: f32,
    /// `{arch}.rope.freq_base`; [`DEFAULT_ROPE_THETA`] when absent.
    pub rope_theta: f32,
    /// `{arch}.context_length`.
    pub max_position_embeddings: usize,
    /// The length of `tokenizer.ggml.tokens`.
    pub vocab_size: usize,
    /// True when the file has no `output.weight`: the output projection is the token embedding.
    pub tied_embeddings: bool,
    /// Bias on the q, k and v projections: always for qwen2 (llama.cpp's qwen2 requires
    /// `attn_q.bias`, …), else when the file has `blk.0.attn_q.bias`.
    pub qkv_bias: bool,
    /// Bias on the attention output projection: when the file has `blk.0.attn_output.bias`.
    pub o_bias: bool,
    /// Per-head RMSNorm on q and k before rope (`attn_q_norm`, `attn_k_norm`): qwen3.
    pub qk_norm: bool,
    /// `{arch}.rope.scaling.type` (`none`, `linear`, `yarn`, …) when set.
    pub rope_scaling_type: Option<String>,
    /// `{arch}.rope.scaling.factor` when set (finite and positive).
    pub rope_scaling_factor: Option<f32>,
    /// True when the file has `rope_freqs.weight`: llama.cpp's per-frequency rope factors, which
    /// its converter writes for Llama 3.1's `llama3` rope scaling.
    pub rope_freqs: bool,
    /// The experts of a `qwen3moe` file; `None` for the dense architectures.
    pub experts: Option<GgufExperts>,
}

/// A mixture-of-experts file's expert keys.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufExperts {
    /// `{arch}.expert_count` E.
    pub count: usize,
    /// `{arch}.expert_used_count` k, at most E.
    pub used: usize,
    /// `{arch}.expert_feed_forward_length`: one expert's hidden size.
    pub feed_forward_length: usize,
}

/// Reads a [`GgufDecoderConfig`] from `file`'s metadata. A missing required key, a value of the
/// wrong type or out of range, or an architecture other than [`ARCHITECTURES`] is an error
/// naming the key (or the architecture).
pub fn gguf_config(file: &GgufFile) -> Result<GgufDecoderConfig> {
    let arch = file.get_str("general.architecture")?;
    if !ARCHITECTURES.contains(&arch) {
        let known = ARCHITECTURES.join(", ");
        return Err(file.error(GgufError::Architecture { arch: arch.to_string(), known }));
    }
    let key = |k: &str| format!("{arch}.{k}");
    let bad = |k: &str, reason: String| {
        let value = file.metadata(k).map(|v| v.describe()).unwrap_or_default();
        file.error(GgufError::BadValue { key: k.to_string(), value, reason })
    };
    let count = |k: &str| -> Result<usize> {
        let k = key(k);
        match file.get_usize(&k)? {
            0 => Err(bad(&k, "must be at least 1".into())),
            n => Ok(n),
        }
    };
    let optional_count =
        |k: &str, default: usize| if file.metadata(&key(k)).is_some() { count(k) } else { Ok(default) };
    let positive = |k: &str, default: Option<f32>| -> Result<f32> {
        let k = key(k);
        let v = match default {
            Some(d) if file.metadata(&k).is_none() => d,
            _ => file.get_f32(&k)?,
        };
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(bad(&k, "must be finite and positive".into()))
        }
    };

    let hidden_size = count("embedding_length")?;
    let num_heads = count("attention.head_count")?;
    let num_kv_heads = optional_count("attention.head_count_kv", num_heads)?;
    if num_heads % num_kv_heads != 0 {
        let reason = format!("must divide the head count {num_heads}");
        return Err(bad(&key("attention.head_count_kv"), reason));
    }
    let head_dim = if file.metadata(&key("attention.key_length")).is_some() {
        count("attention.key_length")?
    } else if hidden_size % num_heads == 0 {
        hidden_size / num_heads
    } else {
        let reason =
            format!("is not a multiple of the head count {num_heads}, and attention.key_length is not set");
        return Err(bad(&key("embedding_length"), reason));
    };
    let rope_dims = optional_count("rope.dimension_count", head_dim)?;
    if rope_dims > head_dim || rope_dims % 2 != 0 {
        let reason = format!("must be even and at most the head dim {head_dim}");
        return Err(bad(&key("rope.dimension_count"), reason));
    }
    let vocab_size = file.get_str_array("tokenizer.ggml.tokens")?.len();
    if vocab_size == 0 {
        return Err(bad("tokenizer.ggml.tokens", "must hold at least one token".into()));
    }
    let rope_scaling_type = match file.metadata(&key("rope.scaling.type")) {
        Some(_) => Some(file.get_str(&key("rope.scaling.type"))?.to_string()),
        None => None,
    };
    let rope_scaling_factor = match file.metadata(&key("rope.scaling.factor")) {
        Some(_) => Some(positive("rope.scaling.factor", None)?),
        None => None,
    };
    let experts = if arch == "qwen3moe" {
        let (experts, used) = (count("expert_count")?, count("expert_used_count")?);
        if used > experts {
            let reason = format!("must be at most expert_count {experts}");
            return Err(bad(&key("expert_used_count"), reason));
        }
        Some(GgufExperts { count: experts, used, feed_forward_length: count("expert_feed_forward_length")? })
    } else {
        None
    };
    let has = |name: &str| file.tensor_info(name).is_some();
    Ok(GgufDecoderConfig {
        experts,
        qkv_bias: arch == "qwen2" || has("blk.0.attn_q.bias"),
        o_bias: has("blk.0.attn_output.bias"),
        qk_norm: arch == "qwen3" || arch == "qwen3moe",
        rope_scaling_type,
        rope_scaling_factor,
        rope_freqs: has("rope_freqs.weight"),
        architecture: arch.to_string(),
        hidden_size,
        num_layers: crate::bert::config::check_layers(&key("block_count"), count("block_count")?)
            .map_err(|reason| bad(&key("block_count"), reason))?,
        intermediate_size: count("feed_forward_length")?,
        num_heads,
        num_kv_heads,
        head_dim,
        rope_dims,
        rms_norm_eps: positive("attention.layer_norm_rms_epsilon", None)?,
        rope_theta: positive("rope.freq_base", Some(DEFAULT_ROPE_THETA))?,
        max_position_embeddings: count("context_length")?,
        vocab_size,
        tied_embeddings: file.tensor_info("output.weight").is_none(),
    })
}
