//! `rlx logits`: a decoder's logits over a prompt, written as raw little-endian f32 rows
//! [prompt tokens, vocabulary] (numpy: `np.fromfile(path, "<f4").reshape(n, vocab)`), for
//! comparisons with another implementation. One forward pass over the whole prompt (no KV
//! cache), on the device and at the precision asked for; shape and timing go to stderr.
//!
//! A directory whose config.json is a Mamba-1 model (`model_type` "mamba") runs through
//! [`rlx_models::Mamba`] (f32 only) instead of the attention decoder: the two share the
//! checkpoint layout and this output format, not their graphs.

use rlx::prelude::{Device, Precision};
use rlx_models::decoder::Decoder;
use rlx_models::mamba::{is_mamba_config, Mamba};
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
    let (logits, vocab, device) = if o.model.is_dir() && is_mamba_config(&o.model.join("config.json")) {
        if o.precision != Precision::F32 {
            return Err(format!("Mamba models run at f32 only; drop --precision {}", o.precision).into());
        }
        let mut m = Mamba::load(&o.model, o.device)?;
        (m.logits(&o.prompt_ids)?, m.config().vocab_size, m.device())
    } else {
        let mut dec = Decoder::load(&o.model, o.device, o.precision)?;
        (dec.logits(&o.prompt_ids)?, dec.config().vocab_size, dec.device())
    };
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
