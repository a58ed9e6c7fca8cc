//! A decoder from one GGUF file (llama.cpp's format): its metadata mapped to a
//! [`DecoderConfig`] and its tensors read under the decoder's Hugging Face param names.
//!
//! Contract:
//! - Architectures `llama`, `qwen2`, `qwen3` and `qwen3moe` ([`crate::common::gguf::ARCHITECTURES`]);
//!   any other is refused by [`crate::common::gguf::gguf_config`]. A qwen3moe file's experts
//!   (3-D `ffn_*_exps` tensors, the router `ffn_gate_inp`) are read by `gguf_moe.rs`. Rope scaling `none` or `linear` (`{arch}.rope.
//!   scaling.type` / `.factor`); any other type and rope on part of a head are refused, naming
//!   the key. llama.cpp's `rope_freqs.weight` (its converter's form of Llama 3.1's `llama3`
//!   scaling: one factor per frequency, head_dim / 2 of them, else an error naming both) becomes
//!   [`RopeScaling::Factors`], each frequency divided by its factor as ggml's rope does; a
//!   linear factor on top multiplies into every factor.
//! - Tensor names are llama.cpp's (`token_embd.weight`, `blk.N.attn_q.weight`, …,
//!   `output.weight`); [`gguf_name`] maps each param name to its GGUF name. A missing tensor
//!   is an error naming both names and the shape the config needs; a shape other than the
//!   config's is an error naming both shapes.
//! - F32, F16 and BF16 tensors become [`crate::common::safetensors::WeightData`] by the same rules as
//!   safetensors ones (f32, or f16 for [`Precision::F16`]). Block-quantized matrices (linear
//!   weights, embeddings, expert stacks; any [`rlx_ir::QuantType`], each tensor its own) are
//!   kept as their blocks ([`ParamData::Quant`]) and never dequantized on the host; a
//!   quantized 1-D tensor (a norm, a bias) is refused.
//! - llama.cpp's converter permutes the rows of the llama q and k projections (weights and
//!   biases) so that ggml's rope rotates adjacent pairs; qwen2 and qwen3 are stored unpermuted
//!   (ggml's NeoX rope). The rows of llama's `attn_q` / `attn_k` are put back in Hugging Face
//!   order here, so one graph serves both file kinds; quantized rows are whole blocks and move
//!   as whole rows of bytes.

use super::config::{Architecture, DecoderConfig, RopeScaling};
use super::params::ParamData;
use crate::common::gguf::{gguf_config, GgmlType, GgufDecoderConfig, GgufError, GgufFile};
use crate::common::safetensors::{decode, Precision};
use crate::error::{ModelError, Result};
use safetensors::Dtype;

/// `{arch}.rope.scaling.type` values taken as "no scaling".
const NO_SCALING: [&str; 2] = ["none", ""];

/// The [`DecoderConfig`] that a GGUF file's metadata describes (see the module doc).
pub fn decoder_config(file: &GgufFile) -> Result<DecoderConfig> {
    let g = gguf_config(file)?;
    let architecture = match g.architecture.as_str() {
        "llama" => Architecture::Llama,
        "qwen2" => Architecture::Qwen2,
        "qwen3" => Architecture::Qwen3,
        "qwen3moe" => Architecture::Qwen3Moe,
        other => {
            let known = crate::common::gguf::ARCHITECTURES.join(", ");
            return Err(file.error(GgufError::Architecture { arch: other.to_string(), known }));
        }
    };
    let key = |k: &str| format!("{}.{k}", g.architecture);
    if g.rope_dims != g.head_dim {
        return Err(file.error(GgufError::PartialRope {
            key: key("rope.dimension_count"),
            rope_dims: g.rope_dims,
            head_dim: g.head_dim,
        }));
    }
    Ok(DecoderConfig {
        architecture,
        vocab_size: g.vocab_size,
        hidden_size: g.hidden_size,
        intermediate_size: g.intermediate_size,
        num_hidden_layers: g.num_layers,
        num_attention_heads: g.num_heads,
        num_key_value_heads: g.num_kv_heads,
        head_dim: g.head_dim,
        rms_norm_eps: g.rms_norm_eps,
        rope_theta: f64::from(g.rope_theta),
        rope_scaling: rope_freqs(file, &g, rope_scaling(file, &g)?)?,
        max_position_embeddings: g.max_position_embeddings,
        tie_word_embeddings: g.tied_embeddings,
        qkv_bias: g.qkv_bias,
        o_bias: g.o_bias,
        qk_norm: g.qk_norm,
        // llama.cpp's llama / qwen2 / qwen3 / qwen3moe attend to the whole causal context.
        sliding_window: None,
        torch_dtype: None,
        moe: super::gguf_moe::moe_config(file, &g),
    })
}

fn rope_scaling(file: &GgufFile, g: &GgufDecoderConfig) -> Result<RopeScaling> {
    let key = format!("{}.rope.scaling.type", g.architecture);
    let factor = g.rope_scaling_factor.map(f64::from);
    match (g.rope_scaling_type.as_deref(), factor) {
        (Some(t), _) if NO_SCALING.contains(&t) => Ok(RopeScaling::None),
        (None, None) => Ok(RopeScaling::None),
        (None, Some(1.0)) => Ok(RopeScaling::None),
        (Some("linear") | None, Some(factor)) => Ok(RopeScaling::Linear { factor }),
        (Some("linear"), None) => {
            let key = format!("{}.rope.scaling.factor", g.architecture);
            Err(file.error(GgufError::MissingKey { key }))
        }
        (Some(kind), _) => Err(file.error(GgufError::RopeScaling { key, kind: kind.to_string() })),
    }
}

/// `scaling` with llama.cpp's `rope_freqs.weight` applied when the file has it: ggml divides
/// frequency i by factor i, then scales it linearly, so a linear factor multiplies into each.
fn rope_freqs(file: &GgufFile, g: &GgufDecoderConfig, scaling: RopeScaling) -> Result<RopeScaling> {
    if !g.rope_freqs {
        return Ok(scaling);
    }
    let mut factors = file.tensor("rope_freqs.weight")?.to_f32()?;
    let half = g.head_dim / 2;
    if factors.len() != half {
        return Err(file.error(GgufError::RopeFreqs { len: factors.len(), half, head_dim: g.head_dim }));
    }
    if let RopeScaling::Linear { factor } = scaling {
        factors.iter_mut().for_each(|f| *f *= factor as f32);
    }
    Ok(RopeScaling::Factors(factors.into()))
}

/// llama.cpp's name of the decoder param `name` (a Hugging Face name as
/// [`super::decoder_graph`] gives it), or `None` for a name outside the decoder's.
pub fn gguf_name(name: &str) -> Option<String> {
    let fixed = match name {
        "model.embed_tokens.weight" => Some("token_embd.weight"),
        "model.norm.weight" => Some("output_norm.weight"),
        "lm_head.weight" => Some("output.weight"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let rest = name.strip_prefix("model.layers.")?;
    let (layer, part) = rest.split_once('.')?;
    layer.parse::<usize>().ok()?;
    if let Some(experts) = super::gguf_moe::expert_name(part) {
        return Some(format!("blk.{layer}.{experts}"));
    }
    let (module, suffix) = part.rsplit_once('.')?;
    let short = match module {
        "input_layernorm" => "attn_norm",
        "post_attention_layernorm" => "ffn_norm",
        "self_attn.q_proj" => "attn_q",
        "self_attn.k_proj" => "attn_k",
        "self_attn.v_proj" => "attn_v",
        "self_attn.o_proj" => "attn_output",
        "self_attn.q_norm" => "attn_q_norm",
        "self_attn.k_norm" => "attn_k_norm",
        "mlp.gate_proj" => "ffn_gate",
        "mlp.up_proj" => "ffn_up",
        "mlp.down_proj" => "ffn_down",
        _ => return None,
    };
    Some(format!("blk.{layer}.{short}.{suffix}"))
}

/// A GGUF file's decoder weights, read by param name (see the module doc).
#[derive(Debug)]
pub struct GgufWeights {
    file: GgufFile,
    /// Heads of q and of k, for llama's row order; `None` when rows are stored as they are used.
    permuted: Option<(usize, usize)>,
    head_dim: usize,
}

impl GgufWeights {
    /// Reads weights from `file`, whose metadata gave `config`.
    pub fn new(file: GgufFile, config: &DecoderConfig) -> GgufWeights {
        let permuted = (config.architecture == Architecture::Llama)
            .then_some((config.num_attention_heads, config.num_key_value_heads));
        GgufWeights { file, permuted, head_dim: config.head_dim }
    }

    /// The GGUF file the weights are read from.
    pub fn file(&self) -> &GgufFile {
        &self.file
    }

    /// Param `name` with exactly shape `expected` (in elements), in `precision`; a
    /// block-quantized matrix comes back as its blocks ([`ParamData::Quant`]).
    pub fn load(&self, name: &str, expected: &[usize], precision: Precision) -> Result<ParamData> {
        if name.ends_with(super::checkpoint_moe::GATE_UP) {
            return self.load_gate_up(name, expected, precision);
        }
        let Some(gname) = gguf_name(name) else {
            let count = self.file.tensors().len();
            return Err(self.file.error(GgufError::MissingWeight {
                name: name.to_string(),
                hf_name: name.to_string(),
                expected: expected.to_vec(),
                count,
            }));
        };
        self.load_tensor(&gname, name, expected, precision)
    }

    /// The file's tensor `gname` as param `name` (see [`GgufWeights::load`]).
    pub(super) fn load_tensor(
        &self,
        gname: &str,
        name: &str,
        expected: &[usize],
        precision: Precision,
    ) -> Result<ParamData> {
        let err = |source| self.file.error(source);
        let gname = gname.to_string();
        let Some(info) = self.file.tensor_info(&gname) else {
            return Err(err(GgufError::MissingWeight {
                name: gname,
                hf_name: name.to_string(),
                expected: expected.to_vec(),
                count: self.file.tensors().len(),
            }));
        };
        let dtype = match info.ty {
            GgmlType::F32 => Some(Dtype::F32),
            GgmlType::F16 => Some(Dtype::F16),
            GgmlType::BF16 => Some(Dtype::BF16),
            ty @ GgmlType::Quant(_) if expected.len() < 2 => {
                return Err(err(GgufError::Quantized { tensor: gname, ty }))
            }
            GgmlType::Quant(_) => None,
        };
        // The shape (a vector, a matrix or an expert stack) must be the config's exactly.
        if info.shape != expected {
            return Err(err(GgufError::WeightShape {
                name: gname,
                hf_name: name.to_string(),
                expected: expected.to_vec(),
                got: info.shape.clone(),
            }));
        }
        let view = self.file.tensor(&gname)?;
        let heads = match self.permuted {
            Some((q, _)) if name.contains(".self_attn.q_proj.") => Some(q),
            Some((_, k)) if name.contains(".self_attn.k_proj.") => Some(k),
            _ => None,
        };
        // Rows are permuted as whole rows of bytes: [rows, row bytes] of 1-byte elements (a
        // quantized row is whole blocks, so this moves blocks intact).
        let rows = expected.first().copied().unwrap_or(0);
        let row_bytes = view.bytes.len().checked_div(rows).unwrap_or(0);
        let bytes = match heads {
            Some(heads) => std::borrow::Cow::Owned(
                unpermute_rows(view.bytes, &[rows, row_bytes], heads, self.head_dim, 1)
                    .ok_or_else(|| bad_permute(&self.file, &gname, expected, heads, self.head_dim))?,
            ),
            None => std::borrow::Cow::Borrowed(view.bytes),
        };
        Ok(match (dtype, info.ty) {
            (Some(dtype), _) => ParamData::Dense(decode(dtype, &bytes, precision)),
            (None, GgmlType::Quant(quant)) => ParamData::Quant { quant, bytes: bytes.into_owned() },
            // Every dense type has a dtype above.
            (None, ty) => return Err(err(GgufError::Quantized { tensor: gname, ty })),
        })
    }
}

fn bad_permute(file: &GgufFile, name: &str, shape: &[usize], heads: usize, head_dim: usize) -> ModelError {
    file.error(GgufError::WeightShape {
        name: name.to_string(),
        hf_name: format!("{heads} heads of {head_dim} rows"),
        expected: vec![heads * head_dim],
        got: shape.to_vec(),
    })
}

/// Undoes llama.cpp's `permute` of a q or k projection: within each head of `head_dim` rows,
/// the file's row `2j + s` is Hugging Face's row `s · head_dim/2 + j` (s ∈ {0, 1}). `shape` is
/// `[rows, in]` (a weight) or `[rows]` (a bias); `width` the bytes of one element. `None` when
/// the rows are not `heads` whole heads of an even size or the bytes do not fill the shape.
pub fn unpermute_rows(
    bytes: &[u8],
    shape: &[usize],
    heads: usize,
    head_dim: usize,
    width: usize,
) -> Option<Vec<u8>> {
    let rows = *shape.first()?;
    let row_bytes = shape.iter().skip(1).product::<usize>().checked_mul(width)?;
    if !head_dim.is_multiple_of(2)
        || rows != heads.checked_mul(head_dim)?
        || bytes.len() != rows.checked_mul(row_bytes)?
    {
        return None;
    }
    let half = head_dim / 2;
    let mut out = Vec::with_capacity(bytes.len());
    for hf_row in 0..rows {
        let (h, within) = (hf_row / head_dim, hf_row % head_dim);
        let (s, j) = (within / half, within % half);
        let src = h * head_dim + 2 * j + s;
        out.extend_from_slice(bytes.get(src * row_bytes..(src + 1) * row_bytes)?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn names_map_to_llama_cpp() {
        let cases = [
            ("model.embed_tokens.weight", "token_embd.weight"),
            ("model.norm.weight", "output_norm.weight"),
            ("lm_head.weight", "output.weight"),
            ("model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"),
            ("model.layers.11.self_attn.q_proj.bias", "blk.11.attn_q.bias"),
            ("model.layers.1.self_attn.o_proj.weight", "blk.1.attn_output.weight"),
            ("model.layers.1.self_attn.k_norm.weight", "blk.1.attn_k_norm.weight"),
            ("model.layers.2.post_attention_layernorm.weight", "blk.2.ffn_norm.weight"),
            ("model.layers.2.mlp.down_proj.weight", "blk.2.ffn_down.weight"),
        ];
        for (hf, gguf) in cases {
            assert_eq!(gguf_name(hf).as_deref(), Some(gguf), "{hf}");
        }
        assert_eq!(gguf_name("model.layers.x.mlp.up_proj.weight"), None);
        assert_eq!(gguf_name("model.layers.0.mlp.experts.weight"), None);
    }

    /// llama.cpp's permute, written the way its converter does it: reshape rows to
    /// [heads, 2, head_dim/2], swap the last two axes.
    fn permute(rows: &[u32], heads: usize, head_dim: usize) -> Vec<u32> {
        let half = head_dim / 2;
        let mut out = vec![0; rows.len()];
        for h in 0..heads {
            for s in 0..2 {
                for j in 0..half {
                    out[h * head_dim + j * 2 + s] = rows[h * head_dim + s * half + j];
                }
            }
        }
        out
    }

    #[test]
    fn unpermute_inverts_llama_cpp_permute() {
        let (heads, head_dim, cols) = (3, 6, 2);
        let hf: Vec<u32> = (0..(heads * head_dim) as u32).collect();
        let file_rows = permute(&hf, heads, head_dim);
        // A weight [rows, cols] of u16 elements: each row holds its file row index twice.
        let bytes: Vec<u8> = file_rows
            .iter()
            .flat_map(|&r| std::iter::repeat_n((r as u16).to_le_bytes(), cols))
            .flatten()
            .collect();
        let back = unpermute_rows(&bytes, &[heads * head_dim, cols], heads, head_dim, 2).unwrap();
        let rows: Vec<u16> = back.chunks_exact(2 * cols).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        assert_eq!(rows, hf.iter().map(|&r| r as u16).collect::<Vec<_>>());
        assert!(unpermute_rows(&bytes, &[heads * head_dim, cols], 2, head_dim, 2).is_none());
        assert!(unpermute_rows(&bytes[1..], &[heads * head_dim, cols], heads, head_dim, 2).is_none());
    }
}
