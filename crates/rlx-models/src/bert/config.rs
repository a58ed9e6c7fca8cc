//! The model directory's JSON files: config.json (the BERT sizes), sentence_bert_config.json
//! (max_seq_length) and 1_Pooling/config.json (the pooling mode).

use crate::error::{ModelError, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The most layers a config may declare. Released transformers have at most a few hundred; a
/// larger count is a corrupt or hostile file, refused before anything is built or allocated per
/// layer (a count of 10^11 made the loaders build graphs and per-layer tables for hours).
pub const MAX_LAYERS: usize = 4096;

/// `n` when it is at most [`MAX_LAYERS`], else the reason naming `key`.
pub(crate) fn check_layers(key: &str, n: usize) -> std::result::Result<usize, String> {
    if n > MAX_LAYERS {
        Err(format!("{key} {n} is more than {MAX_LAYERS} layers; the file is corrupt"))
    } else {
        Ok(n)
    }
}

/// The feed-forward activation named by `hidden_act`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `gelu`: the exact (erf) form.
    Gelu,
    /// `gelu_new`, `gelu_pytorch_tanh`: the tanh approximation.
    GeluTanh,
    /// `relu`.
    Relu,
}

/// How token embeddings become one sentence embedding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// Mean over the tokens the attention mask marks valid.
    Mean,
    /// The first (\[CLS\]) token.
    Cls,
}

/// The sizes of a BERT encoder, from config.json.
#[derive(Clone, Debug, PartialEq)]
pub struct BertConfig {
    /// Size of the token vocabulary.
    pub vocab_size: usize,
    /// Width of the hidden states.
    pub hidden_size: usize,
    /// Number of encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer.
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Longest sequence the position embeddings cover.
    pub max_position_embeddings: usize,
    /// Number of token types (segments).
    pub type_vocab_size: usize,
    /// Epsilon of every LayerNorm.
    pub layer_norm_eps: f32,
    /// The feed-forward activation (`hidden_act`).
    pub activation: Activation,
}

impl BertConfig {
    /// BERT-base (uncased): 12 layers, hidden 768, 12 heads, FFN 3072, erf GELU.
    pub fn base() -> BertConfig {
        BertConfig {
            vocab_size: 30522,
            hidden_size: 768,
            num_hidden_layers: 12,
            num_attention_heads: 12,
            intermediate_size: 3072,
            max_position_embeddings: 512,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            activation: Activation::Gelu,
        }
    }

    /// Per-head size: `hidden_size / num_attention_heads`.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads.max(1)
    }

    /// FLOPs (2 per multiply-add) of the encoder stack's matmuls and attention on `batch`
    /// sequences of `seq` tokens: the work that dominates (norms and elementwise ops left out).
    pub fn encoder_flops(&self, batch: usize, seq: usize) -> f64 {
        let t = (batch * seq) as f64;
        let (h, f) = (self.hidden_size as f64, self.intermediate_size as f64);
        let projections = 2.0 * t * h * h * 4.0;
        let ffn = 2.0 * t * h * f * 2.0;
        // q·kᵀ and p·v: batch × heads × seq × seq × head_dim each.
        let heads = (batch * self.num_attention_heads) as f64;
        let attention = 2.0 * 2.0 * heads * (seq * seq * self.head_dim()) as f64;
        self.num_hidden_layers as f64 * (projections + ffn + attention)
    }
}

#[derive(Deserialize)]
struct RawConfig {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    type_vocab_size: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    #[serde(default = "default_act")]
    hidden_act: String,
    #[serde(default)]
    position_embedding_type: Option<String>,
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_act() -> String {
    "gelu".to_string()
}

#[derive(Deserialize)]
struct RawSbertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize, Default)]
struct RawPooling {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

/// Everything the JSON files of a model directory say.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    /// The encoder's shape.
    pub bert: BertConfig,
    /// Longest token sequence fed to the model (longer inputs are truncated).
    pub max_seq_length: usize,
    /// How token vectors become one sentence vector.
    pub pooling: Pooling,
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))
}

fn parse_json<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|source| ModelError::Json { path: path.to_path_buf(), source })
}

fn bad(path: &Path, reason: impl Into<String>) -> ModelError {
    ModelError::Config { path: path.to_path_buf(), reason: reason.into() }
}

/// Parses config.json.
pub fn read_bert_config(path: &Path) -> Result<BertConfig> {
    bert_config_from_json(path, &read_text(path)?)
}

/// Parses the text of config.json; `path` is what errors call it.
pub fn bert_config_from_json(path: &Path, text: &str) -> Result<BertConfig> {
    let raw: RawConfig = parse_json(path, text)?;
    let activation = match raw.hidden_act.as_str() {
        "gelu" => Activation::Gelu,
        "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Activation::GeluTanh,
        "relu" => Activation::Relu,
        other => {
            return Err(bad(path, format!("hidden_act '{other}' is not supported (gelu, gelu_new, relu)")))
        }
    };
    if let Some(kind) = raw.position_embedding_type.as_deref() {
        if kind != "absolute" {
            return Err(bad(path, format!("position_embedding_type '{kind}' is not supported (absolute)")));
        }
    }
    let sizes = [
        ("vocab_size", raw.vocab_size),
        ("hidden_size", raw.hidden_size),
        ("num_attention_heads", raw.num_attention_heads),
        ("intermediate_size", raw.intermediate_size),
        ("max_position_embeddings", raw.max_position_embeddings),
        ("type_vocab_size", raw.type_vocab_size),
    ];
    if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
        return Err(bad(path, format!("{name} must be at least 1")));
    }
    check_layers("num_hidden_layers", raw.num_hidden_layers).map_err(|reason| bad(path, reason))?;
    if !raw.hidden_size.is_multiple_of(raw.num_attention_heads) {
        return Err(bad(
            path,
            format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                raw.hidden_size, raw.num_attention_heads
            ),
        ));
    }
    if !(raw.layer_norm_eps.is_finite() && raw.layer_norm_eps >= 0.0) {
        return Err(bad(path, format!("layer_norm_eps {} must be finite and ≥ 0", raw.layer_norm_eps)));
    }
    Ok(BertConfig {
        vocab_size: raw.vocab_size,
        hidden_size: raw.hidden_size,
        num_hidden_layers: raw.num_hidden_layers,
        num_attention_heads: raw.num_attention_heads,
        intermediate_size: raw.intermediate_size,
        max_position_embeddings: raw.max_position_embeddings,
        type_vocab_size: raw.type_vocab_size,
        layer_norm_eps: raw.layer_norm_eps as f32,
        activation,
    })
}

/// Reads config.json plus, when present, sentence_bert_config.json and 1_Pooling/config.json
/// (absent: max_seq_length = max_position_embeddings, mean pooling).
pub fn read_model_config(dir: &Path) -> Result<ModelConfig> {
    let optional = |path: PathBuf| path.exists().then(|| read_text(&path)).transpose();
    let config = read_text(&dir.join("config.json"))?;
    let sbert = optional(dir.join(SBERT_CONFIG))?;
    let pooling = optional(dir.join(POOLING_CONFIG))?;
    model_config_from_json(dir, &config, sbert.as_deref(), pooling.as_deref())
}

/// sentence-transformers' config file, relative to the model directory.
pub const SBERT_CONFIG: &str = "sentence_bert_config.json";
/// The pooling config file, relative to the model directory.
pub const POOLING_CONFIG: &str = "1_Pooling/config.json";

/// [`read_model_config`] from the texts of config.json, sentence_bert_config.json and
/// 1_Pooling/config.json (the last two optional), fetched by the caller: the web has no file
/// system. `dir` (a folder or base URL) is what errors call their location.
pub fn model_config_from_json(
    dir: &Path,
    config: &str,
    sbert: Option<&str>,
    pooling: Option<&str>,
) -> Result<ModelConfig> {
    let bert = bert_config_from_json(&dir.join("config.json"), config)?;
    let sbert_path = dir.join(SBERT_CONFIG);
    let max_seq_length = match sbert {
        Some(text) => {
            let raw: RawSbertConfig = parse_json(&sbert_path, text)?;
            raw.max_seq_length.unwrap_or(bert.max_position_embeddings)
        }
        None => bert.max_position_embeddings,
    };
    if max_seq_length < 2 || max_seq_length > bert.max_position_embeddings {
        return Err(bad(
            &sbert_path,
            format!(
                "max_seq_length {max_seq_length} must lie in 2..={} (max_position_embeddings)",
                bert.max_position_embeddings
            ),
        ));
    }
    let pooling_path: PathBuf = dir.join(POOLING_CONFIG);
    let pooling = if let Some(text) = pooling {
        let raw: RawPooling = parse_json(&pooling_path, text)?;
        match (
            raw.pooling_mode_mean_tokens,
            raw.pooling_mode_cls_token,
            raw.pooling_mode_max_tokens || raw.pooling_mode_mean_sqrt_len_tokens,
        ) {
            (true, false, false) => Pooling::Mean,
            (false, true, false) => Pooling::Cls,
            _ => return Err(bad(&pooling_path, "only one of mean or cls token pooling is supported")),
        }
    } else {
        Pooling::Mean
    };
    Ok(ModelConfig { bert, max_seq_length, pooling })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Found by fuzzing (fuzz/regressions/model_dir): a config.json declaring 10^11 layers made
    /// the embedder build its probe graph layer by layer for hours instead of refusing it.
    #[test]
    fn absurd_layer_counts_are_refused() {
        let dir = std::env::temp_dir().join(format!("rlx-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        let config = |layers: u64| {
            format!(
                r#"{{"vocab_size":6,"hidden_size":4,"num_hidden_layers":{layers},"num_attention_heads":2,
                "intermediate_size":8,"max_position_embeddings":4,"type_vocab_size":1,
                "layer_norm_eps":1e-12,"hidden_act":"gelu"}}"#
            )
        };
        std::fs::write(&path, config(100_000_000_000)).unwrap();
        let e = read_bert_config(&path).unwrap_err().to_string();
        assert!(e.contains("num_hidden_layers") && e.contains("4096"), "{e}");
        std::fs::write(&path, config(MAX_LAYERS as u64)).unwrap();
        assert_eq!(read_bert_config(&path).unwrap().num_hidden_layers, MAX_LAYERS);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
