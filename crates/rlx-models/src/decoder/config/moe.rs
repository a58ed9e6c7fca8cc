//! The mixture-of-experts keys of a `Qwen3MoeForCausalLM` config.json, parsed into
//! [`MoeConfig`]. Training-only keys (`router_aux_loss_coef`, `output_router_logits`) are
//! ignored; a key that would change the forward pass in a way the graph does not implement
//! (a shared expert) is a config error naming it. Other architectures keep refusing every
//! expert key ([`refuse_experts`]).

use super::{Architecture, Keys};
use crate::error::Result;

/// The experts of the sparse layers of a Qwen3-MoE decoder.
#[derive(Clone, Debug, PartialEq)]
pub struct MoeConfig {
    /// Experts per sparse layer E (`num_experts`, or transformers 5's `num_local_experts`).
    pub num_experts: usize,
    /// Experts each token runs k (`num_experts_per_tok`), at most E.
    pub top_k: usize,
    /// Hidden size of one expert's SwiGLU MLP (`moe_intermediate_size`).
    pub intermediate_size: usize,
    /// Renormalize the k chosen routing weights to sum to 1 (`norm_topk_prob`).
    pub norm_topk_prob: bool,
    /// Per layer: experts (true) or the dense MLP of `intermediate_size` (false), from
    /// `decoder_sparse_step` and `mlp_only_layers` as transformers decides it.
    pub sparse: Vec<bool>,
}

impl MoeConfig {
    /// Whether layer `i` runs experts.
    pub fn is_sparse(&self, i: usize) -> bool {
        self.sparse.get(i).copied().unwrap_or(false)
    }
}

const EXPERT_KEYS: [&str; 5] =
    ["num_experts", "num_local_experts", "num_experts_per_tok", "n_routed_experts", "moe_intermediate_size"];

/// For architectures without experts: any non-zero expert key is an error naming it.
pub(super) fn refuse_experts(k: &Keys<'_>) -> Result<()> {
    for key in EXPERT_KEYS {
        if k.get(key).is_some_and(|v| v.as_u64() != Some(0)) {
            return Err(k.bad(key, "mixture-of-experts models are supported only as Qwen3MoeForCausalLM"));
        }
    }
    Ok(())
}

/// The experts of `arch` (`None` for dense architectures) over `layers` layers.
pub(super) fn moe(k: &Keys<'_>, arch: Architecture, layers: usize) -> Result<Option<MoeConfig>> {
    if arch != Architecture::Qwen3Moe {
        refuse_experts(k)?;
        return Ok(None);
    }
    for key in ["shared_expert_intermediate_size", "n_shared_experts"] {
        if k.get(key).is_some_and(|v| v.as_u64() != Some(0)) {
            return Err(k.bad(key, "a shared expert is not supported (Qwen3-MoE has none)"));
        }
    }
    // transformers 4 writes `num_experts`; 5 maps it to `num_local_experts` and writes that.
    let num_experts = match (k.get("num_experts").is_some(), k.get("num_local_experts").is_some()) {
        (true, true) => {
            let (a, b) = (k.size("num_experts")?, k.size("num_local_experts")?);
            if a != b {
                return Err(k.bad("num_local_experts", format!("differs from num_experts {a}")));
            }
            b
        }
        (false, true) => k.size("num_local_experts")?,
        _ => k.size("num_experts")?,
    };
    let top_k = k.size("num_experts_per_tok")?;
    if top_k > num_experts {
        return Err(k.bad("num_experts_per_tok", format!("must be at most num_experts {num_experts}")));
    }
    let intermediate_size = k.size("moe_intermediate_size")?;
    let step = match k.opt_usize("decoder_sparse_step")? {
        Some(0) => return Err(k.bad("decoder_sparse_step", "must be at least 1")),
        Some(s) => s,
        None => 1,
    };
    let dense_only: Vec<usize> = match k.get("mlp_only_layers") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .and_then(|a| a.iter().map(|x| x.as_u64().and_then(|n| usize::try_from(n).ok())).collect())
            .ok_or_else(|| k.bad("mlp_only_layers", "expected a list of layer indices"))?,
    };
    if let Some(bad) = dense_only.iter().find(|&&i| i >= layers) {
        return Err(k.bad("mlp_only_layers", format!("layer {bad} is past num_hidden_layers {layers}")));
    }
    // transformers: layer i has experts unless listed, and only every `step`-th layer (1-based).
    let sparse = (0..layers).map(|i| !dense_only.contains(&i) && (i + 1) % step == 0).collect();
    Ok(Some(MoeConfig {
        num_experts,
        top_k,
        intermediate_size,
        norm_topk_prob: k.opt_bool("norm_topk_prob")?.unwrap_or(false),
        sparse,
    }))
}
