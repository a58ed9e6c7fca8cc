//! `rlx logits`: a causal LM's logits over a prompt, written as raw little-endian f32 rows
//! [prompt tokens, vocabulary] (numpy: `np.fromfile(path, "<f4").reshape(n, vocab)`), for
//! comparisons with another implementation. One forward pass over the whole prompt (no KV
//! cache), on the device and at the precision asked for; shape and timing go to stderr.
//!
//! The model is whatever [`rlx_models::load_causal_lm`] loads: an attention decoder, or a
//! Mamba-1 model (f32 only) for a directory whose config.json says so. Both give the same
//! output format through [`rlx_models::CausalLm`].

use rlx::prelude::{Device, Precision};
use rlx_models::{load_causal_lm, DecoderOptions};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// Options of `rlx logits`.
#[derive(Clone, Debug)]
pub struct LogitsOptions {
    pub model: PathBuf,
    pub device: Device,
    pub precision: Precision,
    pub prompt_ids: Vec<i32>,
    pub out: PathBuf,
}

pub fn run(o: &LogitsOptions) -> Result<(), Box<dyn std::error::Error>> {
    if o.prompt_ids.is_empty() {
        return Err("--prompt-ids needs at least one token id".into());
    }
    let t = Instant::now();
    let mut model =
        load_causal_lm(&o.model, o.device, DecoderOptions { precision: o.precision, ..Default::default() })?;
    let (logits, vocab, device) = (model.logits(&o.prompt_ids)?, model.vocab_size(), model.device());
    // Nothing is written when a row holds a NaN or an infinity: the file would pass as data.
    super::finite::check_rows(logits.chunks(vocab.max(1)), "the logits of prompt token")?;
    let mut bytes = Vec::with_capacity(logits.len() * 4);
    for v in &logits {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let mut f = std::fs::File::create(&o.out).map_err(|e| format!("creating {}: {e}", o.out.display()))?;
    f.write_all(&bytes).map_err(|e| format!("writing {}: {e}", o.out.display()))?;
    eprintln!(
        "logits: [{}, {vocab}] f32 from {} on {} at {} written to {} in {:.2} s",
        o.prompt_ids.len(),
        o.model.display(),
        device,
        o.precision,
        o.out.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
