//! The batched decode step of rlx-models (`batched_decode_graph`): tiny random decoders whose
//! slots sit at different positions (first row, middle, the cache's last row), with grouped
//! heads, q/k norms and biases (qwen3) and a sliding window (mistral), with the KV cache in f32
//! and in f16 (`_kvf16`); and the mixed step (`decode_batch_mixed_*`: several rows per slot, a
//! picked row's logits each). Outputs: each slot's
//! greedy token (exact), its logits, and the batched caches after the step's writes. The caches
//! start zeroed, so what precedes a slot's row is zeros; the join path (a prefilled cache copied
//! into a slot) is covered by rlx-models' decoder_batch tests.

use crate::{Case, CaseCtx};
use rlx_ir::{DType, IrError, NodeId, Op, Tensor};
use rlx_models::decoder::{
    batched_decode_outputs, Architecture, BatchInputs, BatchOutput, DecoderConfig, QuantizedWeights,
    RopeScaling,
};
use rlx_models::Precision;

pub(super) fn cases(out: &mut Vec<Case>) {
    // (tag, architecture, sliding window, capacity, one offset per slot)
    type D = (&'static str, Architecture, Option<usize>, usize, &'static [i32]);
    let list: [D; 3] = [
        ("llama_b3", Architecture::Llama, None, 13, &[4, 0, 12]),
        ("qwen3_b5", Architecture::Qwen3, None, 7, &[6, 2, 0, 3, 1]),
        ("mistral_window_b2", Architecture::Mistral, Some(3), 9, &[8, 5]),
    ];
    for (tag, arch, window, capacity, offsets) in list {
        out.push(Case::new(format!("decode_batch_{tag}"), move |c| {
            decode(c, config(arch, window, capacity), capacity, offsets, DType::F32)
        }));
    }
    // The KV cache held in f16: new rows rounded as they are written (moved as words on a GPU),
    // attention reading the f16 cache as stored (the split-key kernel at one row a slot).
    for (tag, arch, window, capacity, offsets) in [list[0], list[2]] {
        out.push(Case::new(format!("decode_batch_{tag}_kvf16"), move |c| {
            decode(c, config(arch, window, capacity), capacity, offsets, DType::F16)
        }));
    }
    // The mixed step: 3 rows per slot (a prompt chunk, or a token and padding), each slot's
    // logits from its own picked row; offsets up to the cache's spare rows.
    for (tag, arch, window, kv) in [
        ("llama_b3", Architecture::Llama, None, DType::F32),
        ("qwen3_b3_kvf16", Architecture::Qwen3, None, DType::F16),
        ("mistral_window_b3", Architecture::Mistral, Some(3), DType::F32),
    ] {
        out.push(Case::new(format!("decode_batch_mixed_{tag}"), move |c| {
            mixed(c, config(arch, window, 12), 12, &[0, 5, 9], &[2, 0, 1], kv)
        }));
    }
}

/// The mixed step over `at.len()` slots of `rows` = 3 tokens each, slot s writing from
/// `at[s]` and returning the logits of its row `pick[s]`.
fn mixed(
    c: &mut CaseCtx,
    cfg: DecoderConfig,
    capacity: usize,
    at: &[i32],
    pick: &[i32],
    kv: DType,
) -> Result<Vec<NodeId>, IrError> {
    const ROWS: i32 = 3;
    let slots = at.len();
    let ids = c.input_i32("input_ids", &[slots, ROWS as usize], 0, cfg.vocab_size as i32 - 1)?;
    let pos: Vec<i32> = at.iter().flat_map(|&o| (0..ROWS).map(move |r| o + r)).collect();
    let positions = c.input_tensor("positions", Tensor::from_i32([slots * ROWS as usize], pos)?)?;
    let offsets = c.input_tensor("offsets", Tensor::from_i32([slots], at.to_vec())?)?;
    let flat: Vec<i32> = pick.iter().enumerate().map(|(s, &r)| s as i32 * ROWS + r).collect();
    let picks = c.input_tensor("picks", Tensor::from_i32([slots], flat)?)?;
    let inputs = BatchInputs { ids, positions, offsets, picks: Some(picks), kv };
    let (q, out) = (QuantizedWeights::new(), BatchOutput::TokensAndLogits);
    let mut outs = batched_decode_outputs(c, &cfg, capacity, Precision::F32, out, &q, inputs)?;
    c.fill_params(crate::trained_like)?;
    let writes = c.nodes().iter().enumerate().filter(|(_, n)| matches!(n.op, Op::WriteRows { .. }));
    outs.extend(writes.map(|(i, _)| NodeId(i as u32)));
    Ok(outs)
}

/// Hidden 32, 4 query heads and 2 KV heads of dim 8, FFN 48, 2 layers, a vocabulary of 37.
fn config(arch: Architecture, sliding_window: Option<usize>, capacity: usize) -> DecoderConfig {
    DecoderConfig {
        architecture: arch,
        vocab_size: 37,
        hidden_size: 32,
        intermediate_size: 48,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 8,
        rms_norm_eps: 1e-6,
        rope_theta: 10000.0,
        rope_scaling: RopeScaling::None,
        max_position_embeddings: capacity,
        tie_word_embeddings: false,
        qkv_bias: arch == Architecture::Qwen3,
        o_bias: false,
        qk_norm: arch == Architecture::Qwen3,
        sliding_window,
        torch_dtype: None,
        moe: None,
    }
}

fn decode(
    c: &mut CaseCtx,
    cfg: DecoderConfig,
    capacity: usize,
    at: &[i32],
    kv: DType,
) -> Result<Vec<NodeId>, IrError> {
    let slots = at.len();
    let ids = c.input_i32("input_ids", &[slots, 1], 0, cfg.vocab_size as i32 - 1)?;
    let positions = c.input_tensor("positions", Tensor::from_i32([slots], at.to_vec())?)?;
    let offsets = c.input_tensor("offsets", Tensor::from_i32([slots], at.to_vec())?)?;
    let inputs = BatchInputs { ids, positions, offsets, picks: None, kv };
    let (q, out) = (QuantizedWeights::new(), BatchOutput::TokensAndLogits);
    let mut outs = batched_decode_outputs(c, &cfg, capacity, Precision::F32, out, &q, inputs)?;
    c.fill_params(crate::trained_like)?;
    // The caches after this step's writes: each slot's row at its own offset.
    let writes = c.nodes().iter().enumerate().filter(|(_, n)| matches!(n.op, Op::WriteRows { .. }));
    let writes: Vec<NodeId> = writes.map(|(i, _)| NodeId(i as u32)).collect();
    outs.extend(writes);
    Ok(outs)
}
