//! The decoder forward on weights the caller gives (a training step's weight states): the same
//! layers as [`super::decoder_graph`], each weight looked up by its Hugging Face name in a map
//! of f32 nodes instead of made as a param. Dense models only: quantized weights cannot be
//! trained and the experts' routing has no gradient here, so a mixture-of-experts config is an
//! error.

use super::{DecoderBuilder, NoCache, QuantizedWeights, RopeInputs};
use crate::decoder::config::DecoderConfig;
use rlx_ir::{Graph, IrError, NodeId, Shape};
use std::collections::HashMap;

fn refuse_moe(cfg: &DecoderConfig) -> Result<(), IrError> {
    if cfg.moe.is_some() {
        return Err(IrError::Attribute {
            op: "decoder",
            attr: "moe",
            shape: Shape::new(&[cfg.hidden_size]),
            reason: format!(
                "{} is a mixture-of-experts model, which training does not support; train a dense \
                 Llama, Qwen2, Qwen3 or Mistral model",
                cfg.architecture.hf_class()
            ),
        });
    }
    Ok(())
}

/// Every weight of a dense decoder, `(HF name, dims)` in graph order: the f32 tensors a
/// training step updates (`lm_head.weight` only when the embeddings are not tied).
pub fn decoder_weight_shapes(cfg: &DecoderConfig) -> Result<Vec<(String, Vec<usize>)>, IrError> {
    refuse_moe(cfg)?;
    let probe = super::decoder_graph(cfg, 1, 1)?;
    Ok(probe.params().iter().map(|(name, _, ty)| (name.to_string(), ty.shape.dims().to_vec())).collect())
}

/// The causal forward on I32 `ids` [batch, seq] with the rope tables `cos`, `sin`
/// ([seq, head_dim / 2], positions 0..seq) and the weights `weights` (by HF name, f32 of the
/// shapes [`decoder_weight_shapes`] lists): f32 logits [batch, seq, vocab].
pub fn decoder_logits_given(
    g: &mut Graph,
    cfg: &DecoderConfig,
    ids: NodeId,
    [cos, sin]: [NodeId; 2],
    weights: &HashMap<String, NodeId>,
) -> Result<NodeId, IrError> {
    refuse_moe(cfg)?;
    let (batch, seq) = match g.ty(ids)?.shape.dims() {
        [b, s] => (*b, *s),
        _ => {
            return Err(IrError::Attribute {
                op: "decoder",
                attr: "input_ids",
                shape: g.ty(ids)?.shape.clone(),
                reason: "token ids must be [batch, seq]".into(),
            })
        }
    };
    let dense = QuantizedWeights::new();
    let mut b = DecoderBuilder::with_given(g, cfg, &dense, weights);
    let rope = RopeInputs { cos, sin, per_row: false };
    let mut x = b.embed(ids, batch * seq)?;
    for i in 0..cfg.num_hidden_layers {
        x = b.layer(i, x, batch, seq, rope, &mut NoCache)?;
    }
    let logits = b.head(x)?;
    b.g.reshape(logits, &[batch, seq, cfg.vocab_size])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::decoder::config::Architecture;
    use crate::decoder::graph::tests::tiny;
    use rlx_ir::DType;

    #[test]
    fn given_weights_replace_every_param() {
        for arch in [Architecture::Llama, Architecture::Qwen2, Architecture::Qwen3] {
            let mut cfg = tiny(arch);
            cfg.tie_word_embeddings = arch == Architecture::Qwen2;
            let shapes = decoder_weight_shapes(&cfg).unwrap();
            assert_eq!(shapes.iter().any(|(n, _)| n == "lm_head.weight"), !cfg.tie_word_embeddings);
            let mut g = Graph::new("t");
            let map: HashMap<String, NodeId> =
                shapes.iter().map(|(n, d)| (n.clone(), g.input(n, d, DType::F32).unwrap())).collect();
            let ids = g.input("ids", &[2, 3], DType::I32).unwrap();
            let cos = g.input("cos", &[3, 2], DType::F32).unwrap();
            let sin = g.input("sin", &[3, 2], DType::F32).unwrap();
            let logits = decoder_logits_given(&mut g, &cfg, ids, [cos, sin], &map).unwrap();
            assert_eq!(g.ty(logits).unwrap().shape.dims(), &[2, 3, 11]);
            assert!(g.params().is_empty(), "{arch:?}: params made despite given weights");
        }
    }

    #[test]
    fn a_missing_or_misshapen_weight_and_moe_are_errors() {
        let cfg = tiny(Architecture::Llama);
        let shapes = decoder_weight_shapes(&cfg).unwrap();
        let mut g = Graph::new("t");
        let mut map: HashMap<String, NodeId> =
            shapes.iter().map(|(n, d)| (n.clone(), g.input(n, d, DType::F32).unwrap())).collect();
        let ids = g.input("ids", &[1, 3], DType::I32).unwrap();
        let cos = g.input("cos", &[3, 2], DType::F32).unwrap();
        let sin = g.input("sin", &[3, 2], DType::F32).unwrap();
        let wrong = g.input("wrong", &[3, 3], DType::F32).unwrap();
        map.insert("model.norm.weight".into(), wrong);
        let e = decoder_logits_given(&mut g, &cfg, ids, [cos, sin], &map).unwrap_err().to_string();
        assert!(e.contains("model.norm.weight") && e.contains("[8]"), "{e}");
        map.remove("model.norm.weight");
        let e = decoder_logits_given(&mut g, &cfg, ids, [cos, sin], &map).unwrap_err().to_string();
        assert!(e.contains("no node was given for weight 'model.norm.weight'"), "{e}");

        let mut moe = tiny(Architecture::Qwen3Moe);
        moe.moe = Some(crate::decoder::config::MoeConfig {
            num_experts: 4,
            top_k: 2,
            intermediate_size: 6,
            norm_topk_prob: true,
            sparse: vec![true; 2],
        });
        let e = decoder_weight_shapes(&moe).unwrap_err().to_string();
        assert!(e.contains("mixture-of-experts"), "{e}");
    }
}
