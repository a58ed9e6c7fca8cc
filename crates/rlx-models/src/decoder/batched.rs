//! The batched decode step: one graph that advances up to `slots` sequences by one token each,
//! every sequence with its own KV-cache slot, position and length.
//!
//! Each layer's keys and values live in [`rlx_ir::Graph::state`]s of shape
//! [slots, capacity, kv_heads, head_dim] (f32), named by [`batch_cache_names`]: slot `s` is the
//! cache of whichever sequence holds it. A step writes row `s` of this step's keys at
//! `offsets[s]` of slot `s` (`write_rows` with one offset per slot), then attends with
//! `lengths = offsets + 1` per slot (`attention_with_lengths`): the query of slot `s` sits at
//! position `offsets[s]` and sees that slot's first `offsets[s] + 1` keys only. The rotary
//! tables are constants gathered by [`POSITIONS`], one row per slot. Nothing depends on which
//! slots are in use, so sequences join and leave between steps without recompiling: a free slot
//! still computes (offset 0, length 1, token 0: finite, its output ignored).
//!
//! A sequence joins through the single-sequence prefill graph of [`super::cached`] (its own
//! [1, capacity, …] cache) and then [`slot_copy_graph`], which writes that cache into its slot
//! (`write_rows` along axis 0 at offset `slot`). All three graphs are compiled as one group, so
//! they share the weights and the states.
//!
//! Inputs, all I32: [`INPUT_IDS`] [slots, 1], [`POSITIONS`] \[slots\], [`OFFSETS`] \[slots\].
//! Output: I32 \[slots\], each slot's greedy token ([`NON_FINITE_TOKEN`] where that slot's
//! logits hold a NaN or an infinity), and with [`BatchOutput::TokensAndLogits`] its logits
//! [slots, vocab] as well.
//!
//! The mixed step ([`batched_mixed_graph`]) is the same graph with `rows` tokens per slot:
//! ids [slots, rows], positions \[slots · rows\], and [`PICKS`] \[slots\], the flat row
//! (slot · rows + r) whose logits each slot returns. A slot writes its rows at `offsets[s]` and
//! attends with `offsets[s] + rows` keys, so row r sits at position `offsets[s] + r` under the
//! causal mask: a joining sequence puts `rows` tokens of its prompt there (a prefill chunk), a
//! decoding one its last token in row 0 and padding after it, which lands past its position,
//! hidden from row 0, and is overwritten by its next tokens. Prefill chunks of new sequences
//! thus run in the same step as the others' decode ([`super::BatchDecoder::enqueue`]). The
//! caches hold `rows` spare positions past the batch's capacity, so that no slot's rows are
//! ever cut off.

use super::cached::{cache_names, finite_or_minus_one, CacheHook, POSITIONS};
use super::config::DecoderConfig;
use super::graph::{DecoderBuilder, RopeInputs, INPUT_IDS};
use super::params::QuantizedWeights;
use super::rope::rope_tables;
use crate::common::safetensors::Precision;
use rlx_ir::{DType, Graph, IrError, NodeId, Tensor};

#[cfg(doc)]
use super::cached::NON_FINITE_TOKEN;

/// I32 \[slots\]: where each slot's new row goes in its cache (its position).
pub const OFFSETS: &str = "offsets";
/// I32 \[1\] of [`slot_copy_graph`]: the slot the single-sequence cache is copied into.
pub const SLOT: &str = "slot";
/// I32 \[slots\] of [`batched_mixed_graph`]: the flat row (slot · rows + r) whose logits
/// each slot returns.
pub const PICKS: &str = "picks";

/// What the batched step returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOutput {
    /// The greedy tokens, I32 \[slots\].
    Tokens,
    /// The greedy tokens and the logits [slots, vocab] (for tests and host-side sampling).
    TokensAndLogits,
}

/// The state names of layer `i`'s batched keys and values.
pub fn batch_cache_names(i: usize) -> (String, String) {
    (format!("batch_cache.{i}.keys"), format!("batch_cache.{i}.values"))
}

/// The graph's inputs: ids [slots, 1], positions \[slots\], offsets \[slots\], all I32.
#[derive(Clone, Copy, Debug)]
pub struct BatchInputs {
    /// I32 [slots, rows]: each slot's tokens (its last token, rows = 1, for a decode step).
    pub ids: NodeId,
    /// I32 \[slots · rows\]: each token's position (the rotary table row).
    pub positions: NodeId,
    /// I32 \[slots\]: where each slot's new keys go in its cache; its length is this + rows.
    pub offsets: NodeId,
    /// I32 \[slots\], with more than one row per slot: the flat row each slot's logits come
    /// from ([`PICKS`]); `None` with one row per slot.
    pub picks: Option<NodeId>,
    /// The dtype the slots' caches are held in (f32 or f16).
    pub kv: DType,
}

/// Adds the batched step to `g` on the given inputs (see the module doc); returns its outputs.
/// Taking the inputs lets a caller that records input data (the parity table) make them.
pub fn batched_decode_outputs(
    g: &mut Graph,
    cfg: &DecoderConfig,
    capacity: usize,
    precision: Precision,
    output: BatchOutput,
    quant: &QuantizedWeights,
    inputs: BatchInputs,
) -> Result<Vec<NodeId>, IrError> {
    let ids = g.ty(inputs.ids)?.shape.clone();
    let (slots, rows) = match *ids.dims() {
        [slots, rows] => (slots, rows),
        _ => {
            return Err(IrError::Attribute {
                op: "batched_decode",
                attr: "ids",
                shape: ids,
                reason: "the token ids must be I32 [slots, rows]".into(),
            })
        }
    };
    let width = g.constant(Tensor::from_i32([1], vec![i32::try_from(rows).unwrap_or(i32::MAX)])?)?;
    let lens = g.add(inputs.offsets, width)?;
    let all: Vec<usize> = (0..capacity).collect();
    let tables = rope_tables(cfg, &all);
    let cos_table = g.constant(Tensor::from_f32([capacity, tables.half], tables.cos)?)?;
    let sin_table = g.constant(Tensor::from_f32([capacity, tables.half], tables.sin)?)?;
    // [slots · rows, half]: one table row per token, each at its own position.
    let cos = g.gather(cos_table, inputs.positions, 0)?;
    let sin = g.gather(sin_table, inputs.positions, 0)?;

    let dims = [slots, capacity, cfg.num_key_value_heads, cfg.head_dim];
    let mut hook =
        CacheHook { names: batch_cache_names, dims, offset: inputs.offsets, lens, dtype: inputs.kv };
    let mut b = DecoderBuilder::new(g, cfg, precision, quant);
    let rope = RopeInputs { cos, sin, per_row: true };
    let mut x = b.embed(inputs.ids, slots * rows)?;
    for i in 0..cfg.num_hidden_layers {
        x = b.layer(i, x, slots, rows, rope, &mut hook)?;
    }
    // One row of logits per slot: the picked row of each slot's chunk.
    let x = match inputs.picks {
        Some(picks) => b.g.gather(x, picks, 0)?,
        None => x,
    };
    let logits = b.head(x)?;
    let tokens = g.argmax(logits, 1, false)?;
    let tokens = finite_or_minus_one(g, logits, tokens)?;
    Ok(match output {
        BatchOutput::Tokens => vec![tokens],
        BatchOutput::TokensAndLogits => vec![tokens, logits],
    })
}

/// The batched decode step over `slots` cache slots of `capacity` positions each, held in `kv`;
/// weights stored as `precision` says and the ones in `quant` block-quantized, with the same
/// params as [`super::decoder_graph_with`].
pub fn batched_decode_graph(
    cfg: &DecoderConfig,
    slots: usize,
    capacity: usize,
    precision: Precision,
    kv: DType,
    output: BatchOutput,
    quant: &QuantizedWeights,
) -> Result<Graph, IrError> {
    batched_mixed_graph(cfg, slots, 1, capacity, (precision, kv), output, quant)
}

/// The mixed step: [`batched_decode_graph`] with `rows` tokens per slot and, past one row, the
/// [`PICKS`] input (see the module doc). One row is the decode step itself.
pub fn batched_mixed_graph(
    cfg: &DecoderConfig,
    slots: usize,
    rows: usize,
    capacity: usize,
    (precision, kv): (Precision, DType),
    output: BatchOutput,
    quant: &QuantizedWeights,
) -> Result<Graph, IrError> {
    let arch = cfg.architecture.model_type();
    let name = match rows {
        1 => format!("{arch}_batched_b{slots}_c{capacity}"),
        _ => format!("{arch}_batched_b{slots}_t{rows}_c{capacity}"),
    };
    let mut g = Graph::new(name);
    let inputs = BatchInputs {
        ids: g.input(INPUT_IDS, &[slots, rows], DType::I32)?,
        positions: g.input(POSITIONS, &[slots * rows], DType::I32)?,
        offsets: g.input(OFFSETS, &[slots], DType::I32)?,
        picks: match rows {
            1 => None,
            _ => Some(g.input(PICKS, &[slots], DType::I32)?),
        },
        kv,
    };
    let outs = batched_decode_outputs(&mut g, cfg, capacity, precision, output, quant, inputs)?;
    g.set_outputs(&outs)?;
    Ok(g)
}

/// Copies the single-sequence cache of [`super::cached`] ([1, capacity, …] per layer, in `kv`)
/// into slot [`SLOT`] of the batched cache: `write_rows` along axis 0. Its output is the sum of
/// one pair of elements of each written state, as f32 (a graph needs an output, and an unread
/// write would be dropped as dead code; the writes are what matters). The pair is a gathered
/// row of two elements, which a GPU moves as one word whatever the dtype, so an f16 cache is
/// never widened for it.
pub fn slot_copy_graph(
    cfg: &DecoderConfig,
    slots: usize,
    capacity: usize,
    kv: DType,
) -> Result<Graph, IrError> {
    let mut g = Graph::new(format!("{}_slot_copy_b{slots}_c{capacity}", cfg.architecture.model_type()));
    let slot = g.input(SLOT, &[1], DType::I32)?;
    let batch_dims = [slots, capacity, cfg.num_key_value_heads, cfg.head_dim];
    let single_dims = [1, capacity, cfg.num_key_value_heads, cfg.head_dim];
    let mut outs = Vec::new();
    for i in 0..cfg.num_hidden_layers {
        let (single_k, single_v) = cache_names(i);
        let (batch_k, batch_v) = batch_cache_names(i);
        for (from, to) in [(single_k, batch_k), (single_v, batch_v)] {
            let src = g.state(&from, &single_dims, kv)?;
            let dst = g.state(&to, &batch_dims, kv)?;
            outs.push(g.write_rows(dst, src, slot, 0)?);
        }
    }
    let first = g.constant(Tensor::from_i32([1], vec![0])?)?;
    let pairs = (slots * capacity * cfg.num_key_value_heads * cfg.head_dim) / 2;
    let mut total = None;
    for w in outs {
        let rows = g.reshape(w, &[pairs, 2])?;
        let pair = g.gather(rows, first, 0)?;
        let pair = match kv {
            DType::F32 => pair,
            _ => g.cast(pair, DType::F32)?,
        };
        total = Some(match total {
            None => pair,
            Some(t) => g.add(t, pair)?,
        });
    }
    let out = match total {
        Some(t) => t,
        None => g.cast(slot, DType::F32)?,
    };
    g.set_outputs(&[out])?;
    Ok(g)
}

#[cfg(test)]
mod tests {
    // Test helpers unwrap and panic: a failure is the point.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::decoder::config::Architecture;
    use crate::decoder::graph::tests::tiny;

    #[test]
    fn one_slot_cache_pair_per_layer_and_a_token_per_slot() {
        let cfg = tiny(Architecture::Qwen3);
        let q = QuantizedWeights::new();
        let g =
            batched_decode_graph(&cfg, 3, 16, Precision::F32, DType::F32, BatchOutput::TokensAndLogits, &q)
                .unwrap();
        let states: Vec<String> = g.states().iter().map(|(n, _, _)| n.to_string()).collect();
        assert_eq!(
            states,
            ["batch_cache.0.keys", "batch_cache.0.values", "batch_cache.1.keys", "batch_cache.1.values"]
        );
        assert_eq!(g.states()[0].2.shape.dims(), [3, 16, 2, 4]);
        let tokens = g.ty(g.outputs()[0]).unwrap();
        assert_eq!((tokens.shape.dims(), tokens.dtype), (&[3usize][..], DType::I32));
        assert_eq!(g.ty(g.outputs()[1]).unwrap().shape.dims(), [3, 11]);
        let inputs: Vec<&str> = g.inputs().iter().map(|(n, _, _)| *n).collect();
        assert_eq!(inputs, [INPUT_IDS, POSITIONS, OFFSETS]);
        // Same params as the single-sequence graphs: one set of weights serves the group.
        let single = crate::decoder::cached::cached_decoder_graph(
            &cfg,
            1,
            16,
            Precision::F32,
            DType::F32,
            crate::decoder::cached::StepOutput::Token,
            &q,
        )
        .unwrap();
        let names = |g: &Graph| g.params().iter().map(|(n, _, _)| n.to_string()).collect::<Vec<_>>();
        assert_eq!(names(&g), names(&single));

        let copy = slot_copy_graph(&cfg, 3, 16, DType::F32).unwrap();
        let states: Vec<String> = copy.states().iter().map(|(n, _, _)| n.to_string()).collect();
        assert_eq!(states.len(), 8);
        let half = slot_copy_graph(&cfg, 3, 16, DType::F16).unwrap();
        assert!(half.states().iter().all(|(_, _, t)| t.dtype == DType::F16));
        assert_eq!(half.ty(half.outputs()[0]).unwrap().dtype, DType::F32);
        assert!(states.contains(&"kv_cache.1.values".to_string()));
        assert!(states.contains(&"batch_cache.1.values".to_string()));
    }
}
