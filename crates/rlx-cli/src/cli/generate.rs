//! `rlx generate`: continuation of a prompt with a causal LM (Llama, Qwen2, Qwen3, Qwen3-MoE,
//! Mistral checkpoints from safetensors, GGUF files, Mamba-1 checkpoints), streamed to stdout
//! token by token; load time, prompt length, the sampling in effect and tokens/s go to stderr.
//!
//! The model is a Hugging Face checkpoint directory or a GGUF file (recognised by its magic
//! number; F32/F16/BF16 and block-quantized tensors), loaded by `rlx_models::load_causal_lm`
//! and run through the `rlx_models::CausalLm` trait. Each token is the argmax or a draw as
//! [`super::sampling`] resolves the flags over generation_config.json. The prompt is text
//! (tokenized with the checkpoint's tokenizer.json, or a GGUF file's own tokenizer) or token
//! ids (`--prompt-ids`, for checkpoints without a tokenizer). Text is streamed with
//! `tokenizers::DecodeStream`, so a character split across tokens prints whole. A decoder
//! decodes over the device-resident KV cache: the prompt goes through in chunks, then each
//! token is one decode step that reads back only that token (see
//! `rlx_models::Decoder::generate`).
//!
//! With `--chat` the text is first rendered through the model's chat template as one user
//! message (after an optional `--system` message), with the assistant's turn opened, and the
//! result is tokenized without adding special tokens again: the template placed them
//! (`rlx_models::ChatTemplate`). Generation stops at every end-of-sequence id the model lists
//! (`rlx_models::decoder::stop_tokens`) and, with `--chat`, at the template's eos token,
//! unless `--ignore-eos`.

use super::sampling::{self, Sampling};
use rlx_models::{causal_tokenizer, load_causal_lm, stop_tokens, ChatTemplate, DecoderOptions, Message};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;
use tokenizers::Tokenizer;

/// Options of `rlx generate`, as the command line gives them.
#[derive(clap::Args)]
pub struct GenerateOptions {
    /// The model: a checkpoint folder (config.json, model.safetensors or a sharded index and,
    /// for a text prompt, tokenizer.json; dense or Qwen3-MoE), a GGUF file, or a Hugging Face
    /// hub name: owner/name, or owner/name-GGUF:Q4_K_M for one GGUF file (fetched into the hub
    /// cache when missing).
    #[arg(long)]
    pub model: PathBuf,
    /// A hub model's branch, tag or commit (default main).
    #[arg(long)]
    pub revision: Option<String>,
    #[command(flatten)]
    pub target: crate::Target,
    /// Tokens to generate at most (generation also stops at an end-of-sequence token); the
    /// prompt and these must fit the model's context.
    #[arg(long, default_value_t = 32)]
    pub max_tokens: usize,
    /// The KV cache's dtype: auto (f16 under mixed and f16 precision, f32 under f32), f32 or
    /// f16 (half the memory; keys and values rounded once as they are written).
    #[arg(long, default_value = "auto")]
    pub kv_cache: rlx_models::KvCache,
    /// Sampling temperature: 0 is greedy (the argmax), T > 0 samples. Default: the model's
    /// generation_config.json (do_sample, temperature), else greedy.
    #[arg(long, allow_negative_numbers = true)]
    pub temperature: Option<f32>,
    /// Sample among the k most likely tokens. Default: generation_config.json's top_k, else 50.
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Nucleus sampling: the smallest set of likeliest tokens whose probability reaches p.
    /// Default: generation_config.json's top_p, else 1 (off).
    #[arg(long, allow_negative_numbers = true)]
    pub top_p: Option<f32>,
    /// transformers' repetition penalty over the prompt and the tokens so far, greedy or
    /// sampled. Default: generation_config.json's, else 1 (off).
    #[arg(long, allow_negative_numbers = true)]
    pub repetition_penalty: Option<f32>,
    /// Seed of the random draws: one seed gives the same tokens on every device.
    #[arg(long, default_value_t = 0)]
    pub seed: u32,
    /// The prompt as comma-separated token ids instead of text.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub prompt_ids: Option<Vec<i32>>,
    /// Format the prompt as one user message with the model's chat template
    /// (tokenizer_config.json, chat_template.jinja or the GGUF file's).
    #[arg(long)]
    pub chat: bool,
    /// With --chat: a system message before the prompt.
    #[arg(long, requires = "chat")]
    pub system: Option<String>,
    /// Keep generating past the model's end-of-sequence tokens.
    #[arg(long)]
    pub ignore_eos: bool,
    /// The prompt text.
    pub prompt: Option<String>,
}

impl GenerateOptions {
    /// How each token is picked: the flags over the model's generation_config.json.
    fn sampling(&self) -> Result<Sampling, String> {
        let flags = sampling::Flags {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            repetition_penalty: self.repetition_penalty,
        };
        let (origin, defaults) = sampling::defaults_of(&self.model)?;
        sampling::resolve(&flags, origin, &defaults)
    }
}

/// The model's tokenizer: a GGUF file's own (`tokenizer.ggml.*`), else the checkpoint
/// directory's tokenizer.json, which must be there.
fn tokenizer(model: &std::path::Path) -> Result<Tokenizer, Box<dyn std::error::Error>> {
    causal_tokenizer(model)?.ok_or_else(|| {
        format!(
            "{} has no tokenizer.json: give the prompt as token ids with --prompt-ids 1,2,3",
            model.display()
        )
        .into()
    })
}

/// The prompt's tokens: the text through the tokenizer (through the chat template first with
/// `--chat`), or the ids as given; and the ids that end the generation.
type Prompt = (Option<Tokenizer>, Vec<i32>, Vec<i32>);

fn prompt(o: &GenerateOptions) -> Result<Prompt, Box<dyn std::error::Error>> {
    let mut stops = if o.ignore_eos { Vec::new() } else { stop_tokens(&o.model)? };
    let (tok, ids) = match (&o.prompt_ids, &o.prompt) {
        (Some(_), None) if o.chat => {
            return Err("--chat formats a text prompt through the chat template: give the prompt as text, not --prompt-ids".into())
        }
        (Some(ids), None) => (None, ids.clone()),
        (None, Some(text)) => {
            let tok = tokenizer(&o.model)?;
            let (text, special) = if o.chat {
                let template = ChatTemplate::for_model(&o.model)?;
                eprintln!("generate: chat template of {}", template.origin().display());
                let mut messages: Vec<Message> = o.system.iter().map(Message::system).collect();
                messages.push(Message::user(text));
                // The eos token the template ends a turn with stops the generation too.
                let eos = template.eos_token().and_then(|t| tok.token_to_id(t)).map(|id| id as i32);
                if let Some(id) = eos.filter(|id| !o.ignore_eos && !stops.contains(id)) {
                    stops.push(id);
                }
                // The template placed the special tokens: none are added again.
                (template.render(&messages, true)?, false)
            } else {
                (text.clone(), true)
            };
            let enc = tok.encode(text, special).map_err(|e| format!("tokenizing the prompt: {e}"))?;
            let ids = enc.get_ids().iter().map(|&i| i as i32).collect();
            (Some(tok), ids)
        }
        _ => return Err("give either a text prompt or --prompt-ids, not both".into()),
    };
    Ok((tok, ids, stops))
}

pub fn run(o: &GenerateOptions) -> Result<(), Box<dyn std::error::Error>> {
    let sampling = o.sampling()?;
    // The prompt first: a missing tokenizer or chat template is told before the model loads.
    let (tok, mut ids, stops) = prompt(o)?;
    let t = Instant::now();
    eprintln!("generate: loading {} on {}", o.model.display(), o.target.device);
    let mut model = load_causal_lm(
        &o.model,
        o.target.device,
        DecoderOptions { precision: o.target.precision, kv_cache: o.kv_cache, ..Default::default() },
    )?;
    eprintln!(
        "generate: {} ({} layers) on {} loaded in {:.1} s",
        model.architecture(),
        model.num_layers(),
        model.device(),
        t.elapsed().as_secs_f64()
    );
    let spec = sampling.spec(model.vocab_size());
    eprintln!("generate: {}", sampling.describe());
    let prompt_len = ids.len();
    let prompt = ids.clone();
    let mut out = super::stdout::stdout();
    // Each token's text is printed once it is whole: the stream holds back a token that
    // ends inside a character until the token completing it comes.
    let mut stream = tok.as_ref().map(|tok| tok.decode_stream(true));
    let mut printed = String::new();
    let mut failure: Option<Box<dyn std::error::Error>> = None;
    let mut first_token = None;
    let mut stopped = None;
    let start = Instant::now();
    let mut emit = |next: i32| -> Result<(), Box<dyn std::error::Error>> {
        ids.push(next);
        match &mut stream {
            Some(stream) => {
                if let Some(piece) = stream.step(next as u32).map_err(|e| format!("decoding: {e}"))? {
                    write!(out, "{piece}")?;
                    printed.push_str(&piece);
                }
            }
            None => write!(out, "{}{next}", if ids.len() == prompt_len + 1 { "" } else { " " })?,
        }
        out.flush()?;
        Ok(())
    };
    let generated = model.generate(&prompt, o.max_tokens, &spec, o.seed, &mut |next| {
        first_token.get_or_insert_with(|| start.elapsed());
        match emit(next) {
            Ok(()) if stops.contains(&next) => {
                stopped = Some(next);
                false
            }
            Ok(()) => true,
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    // What the stream still holds (a character the last token left unfinished) is printed
    // as the whole decode gives it.
    if let Some(tok) = &tok {
        let text = tok.decode(&new_ids(&ids, prompt_len), true).map_err(|e| format!("decoding: {e}"))?;
        if let Some(rest) = text.strip_prefix(printed.as_str()) {
            write!(out, "{rest}")?;
        }
    }
    writeln!(out)?;
    let secs = start.elapsed().as_secs_f64();
    let first = first_token.map_or(0.0, |d| d.as_secs_f64());
    let n = generated.len();
    // Tokens after the first come one decode step each; the first one also pays the prefill.
    let decode_rate = (n.saturating_sub(1)) as f64 / (secs - first).max(1e-9);
    eprintln!(
        "generate: prompt {prompt_len} tokens, {n} generated in {secs:.2} s (first after {:.1} ms, then \
         {decode_rate:.1} tokens/s; {} {}){}",
        first * 1e3,
        if !sampling.samples() { "greedy".to_string() } else { format!("sampled, seed {}", o.seed) },
        model.generation_method(),
        stopped.map(|id| format!("; stopped at end-of-sequence token {id}")).unwrap_or_default()
    );
    Ok(())
}

fn new_ids(ids: &[i32], prompt_len: usize) -> Vec<u32> {
    ids[prompt_len..].iter().map(|&i| i as u32).collect()
}
