//! The `prefill` workload of `rlx bench`: one forward pass of a random-init decoder LLM of a real
//! model's shape over a prompt (batch 1), logits for the last position only, as a generation's
//! first step computes them. The shapes are those of Qwen2.5-0.5B and Llama-3.2-1B (their HF
//! config.json values), so the same configs can be built in transformers for the reference.

use rlx::prelude::{Graph, Precision};
use rlx_models::decoder::{decoder_graph_with, rope_tables, DecoderConfig, LogitRows};
use std::path::Path;

/// A decoder shape `rlx bench prefill` builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DecoderShape {
    /// Qwen2.5-0.5B: 24 layers, hidden 896, 14 heads / 2 kv heads, FFN 4864, vocab 151 936.
    #[value(name = "qwen2.5-0.5b")]
    Qwen25Half,
    /// Llama-3.2-1B: 16 layers, hidden 2048, 32 heads / 8 kv heads, FFN 8192, vocab 128 256.
    #[value(name = "llama-3.2-1b")]
    Llama32One,
}

const QWEN25_05B: &str = r#"{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
 "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
 "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
 "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
 "hidden_act": "silu", "tie_word_embeddings": true, "use_sliding_window": false,
 "sliding_window": 32768, "max_window_layers": 21, "torch_dtype": "bfloat16"}"#;

const LLAMA32_1B: &str = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
 "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
 "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
 "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
 "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
 "original_max_position_embeddings": 8192, "rope_type": "llama3"},
 "hidden_act": "silu", "tie_word_embeddings": true, "attention_bias": false,
 "mlp_bias": false, "torch_dtype": "bfloat16"}"#;

impl DecoderShape {
    pub fn name(self) -> &'static str {
        match self {
            DecoderShape::Qwen25Half => "qwen2.5-0.5b",
            DecoderShape::Llama32One => "llama-3.2-1b",
        }
    }

    /// The model's config, parsed by the same code as a checkpoint's config.json.
    pub fn config(self) -> Result<DecoderConfig, rlx_models::ModelError> {
        let text = match self {
            DecoderShape::Qwen25Half => QWEN25_05B,
            DecoderShape::Llama32One => LLAMA32_1B,
        };
        DecoderConfig::from_json(text, Path::new(self.name()))
    }
}

/// A prefill of `seq` tokens: the graph, its f32 inputs (rope tables), its i32 inputs (token
/// ids, the logits row) and its FLOPs (2 per weight per token, plus causal attention).
pub struct Prefill {
    pub graph: Graph,
    pub f32_inputs: Vec<(String, Vec<f32>)>,
    pub i32_inputs: Vec<(String, Vec<i32>)>,
    pub flops: f64,
}

pub fn prefill(
    shape: DecoderShape,
    seq: usize,
    precision: Precision,
) -> Result<Prefill, Box<dyn std::error::Error>> {
    let cfg = shape.config()?;
    let graph = decoder_graph_with(&cfg, 1, seq, precision, LogitRows::Selected, &Default::default())?;
    let positions: Vec<usize> = (0..seq).collect();
    let rope = rope_tables(&cfg, &positions);
    let vocab = cfg.vocab_size as i32;
    // Token ids spread over the vocabulary (the values do not change the work).
    let ids = (0..seq as i32).map(|i| (i * 7919 + 11) % vocab).collect();
    let (h, kv, ffn) = (cfg.hidden_size as f64, cfg.kv_dim() as f64, cfg.intermediate_size as f64);
    let per_layer = h * cfg.q_dim() as f64 * 2.0 + 2.0 * h * kv + 3.0 * h * ffn;
    let s = seq as f64;
    let attention = 2.0 * cfg.num_attention_heads as f64 * s * s * cfg.head_dim as f64;
    let flops =
        cfg.num_hidden_layers as f64 * (2.0 * per_layer * s + attention) + 2.0 * h * cfg.vocab_size as f64;
    Ok(Prefill {
        graph,
        f32_inputs: vec![
            (rlx_models::decoder::graph::ROPE_COS.into(), rope.cos),
            (rlx_models::decoder::graph::ROPE_SIN.into(), rope.sin),
        ],
        i32_inputs: vec![
            (rlx_models::decoder::graph::INPUT_IDS.into(), ids),
            (rlx_models::decoder::graph::LOGIT_ROWS.into(), vec![seq as i32 - 1]),
        ],
        flops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_parse_with_their_real_sizes() {
        let q = DecoderShape::Qwen25Half.config().unwrap();
        assert_eq!((q.hidden_size, q.num_hidden_layers, q.head_dim, q.num_key_value_heads), (896, 24, 64, 2));
        let l = DecoderShape::Llama32One.config().unwrap();
        assert_eq!((l.hidden_size, l.num_hidden_layers, l.head_dim, l.vocab_size), (2048, 16, 64, 128_256));
    }
}
