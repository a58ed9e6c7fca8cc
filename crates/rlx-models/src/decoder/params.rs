//! A decoder param's data as loaded, and which params stay block-quantized.
//!
//! A GGUF file may store linear weights and the embedding table as blocks of a [`QuantType`];
//! they are kept as those bytes (U8 params [rows, row_bytes]) and decoded by the device inside
//! `QuantMatMul` / `QuantGather` (a mixture-of-experts layer's expert stacks inside
//! `QuantGroupedMatMul`), never widened on the host.

use crate::common::safetensors::WeightData;
use rlx_ir::QuantType;
use std::collections::BTreeMap;

/// The Hugging Face names of the params stored block-quantized, with their format. Empty for
/// dense checkpoints.
pub type QuantizedWeights = BTreeMap<String, QuantType>;

/// One param's values.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamData {
    /// f32 or f16 values.
    Dense(WeightData),
    /// Whole blocks of `quant`, row after row (Hugging Face row order), as the file holds them.
    Quant {
        /// The block format.
        quant: QuantType,
        /// The packed blocks.
        bytes: Vec<u8>,
    },
}

impl crate::common::weights::Weight for ParamData {
    fn host_data(&self) -> &dyn rlx_runtime::HostData {
        match self {
            ParamData::Dense(w) => w.host_data(),
            ParamData::Quant { bytes, .. } => bytes,
        }
    }
}

/// The quantized params among `params`.
pub fn quantized_weights<'a>(params: impl IntoIterator<Item = &'a (String, ParamData)>) -> QuantizedWeights {
    params
        .into_iter()
        .filter_map(|(name, data)| match data {
            ParamData::Quant { quant, .. } => Some((name.clone(), *quant)),
            ParamData::Dense(_) => None,
        })
        .collect()
}
