//! The model-file loaders on files written from fuzz input: a model directory (config.json,
//! tokenizer.json, the optional sentence-transformers configs and model.safetensors) loaded as
//! `Embedder` or `Decoder` do, and a GGUF file opened, read (metadata, every tensor) and loaded
//! as a decoder, with its config, tokenizer and chat template.

use rlx_models::decoder::gguf::decoder_config;
use rlx_models::{
    gguf_config, gguf_tokenizer, ChatTemplate, Decoder, DecoderOptions, Device, Embedder, EmbedderOptions,
    GgufFile, Message, Precision, SentenceTokenizer,
};
use rlx_runtime::Session;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Separates the files of a model-directory input. Text, so seeds stay readable; the last part
/// (model.safetensors) takes the rest of the input, separators included.
pub const SEPARATOR: &[u8] = b"\n#rlx-fuzz-file#\n";

/// The files of a model-directory input, in order.
pub const MODEL_DIR_FILES: [&str; 5] = [
    "config.json",
    "tokenizer.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "model.safetensors",
];

/// A fresh directory under the temp dir, removed on drop (unique per call, so tests may run
/// entry points from several threads).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Option<Scratch> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rlx-fuzz-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("1_Pooling")).ok()?;
        Some(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `data` split at [`SEPARATOR`] into at most `n` parts.
pub fn split(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut parts = Vec::with_capacity(n);
    let mut rest = data;
    while parts.len() + 1 < n {
        match rest.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
            Some(i) => {
                parts.push(rest.get(..i).unwrap_or(&[]));
                rest = rest.get(i + SEPARATOR.len()..).unwrap_or(&[]);
            }
            None => break,
        }
    }
    parts.push(rest);
    parts
}

fn cpu() -> Option<Session> {
    Session::new(Device::Cpu).ok()
}

/// A model directory: byte 0 picks the loader (embedder or decoder, and the precision), the
/// rest is the files of [`MODEL_DIR_FILES`] split at [`SEPARATOR`]; an empty optional file is
/// left out. True when the loader accepted the files.
pub fn model_dir(data: &[u8]) -> bool {
    let Some((&mode, rest)) = data.split_first() else { return false };
    let Some(dir) = Scratch::new() else { return false };
    for (name, part) in MODEL_DIR_FILES.iter().zip(split(rest, MODEL_DIR_FILES.len())) {
        let optional = name.contains("sentence_bert") || name.contains("Pooling");
        if !(optional && part.is_empty()) && std::fs::write(dir.0.join(name), part).is_err() {
            return false;
        }
    }
    let precision = Precision::ALL.get(usize::from(mode >> 1) % 3).copied().unwrap_or_default();
    let Some(session) = cpu() else { return false };
    if mode & 1 == 0 {
        let opts = EmbedderOptions { precision, ..EmbedderOptions::default() };
        let loaded = Embedder::with_session(&dir.0, session, opts);
        if let Ok(e) = &loaded {
            let _ = e.tokenizer().batch(&["hello world", ""]);
        }
        // The tokenizer alone, with a truncation length from the input.
        let path = dir.0.join("tokenizer.json");
        if let Ok(t) = SentenceTokenizer::from_file(&path, usize::from(mode >> 3)) {
            let _ = t.batch(&["a b c", "héllo"]);
        }
        loaded.is_ok()
    } else {
        let opts = DecoderOptions { precision, ..DecoderOptions::default() };
        let loaded = Decoder::with_session(&dir.0, session, opts).is_ok();
        let _ = ChatTemplate::from_dir(&dir.0).map(|t| t.render(&[Message::user("hi")], true));
        loaded
    }
}

/// Everything a loader reads from an opened GGUF file.
fn read_gguf(file: &GgufFile) {
    for (key, _) in file.metadata_entries() {
        let _ = file.get_str(key);
        let _ = file.get_usize(key);
        let _ = file.get_f32(key);
        let _ = file.get_str_array(key);
    }
    for info in file.tensors() {
        if let Ok(view) = file.tensor(&info.name) {
            let _ = view.to_f32();
        }
    }
    let _ = gguf_config(file);
    let _ = decoder_config(file);
    if let Ok(t) = gguf_tokenizer(file) {
        let _ = t.encode("hello world", true);
    }
    let _ = ChatTemplate::from_gguf(file).map(|t| t.render(&[Message::user("hi")], true));
}

/// A GGUF file: opened, read (metadata, every tensor, config, tokenizer, chat template) and loaded
/// as a decoder on the CPU. True when the decoder loaded.
pub fn gguf(data: &[u8]) -> bool {
    let Some(dir) = Scratch::new() else { return false };
    let path: PathBuf = dir.0.join("model.gguf");
    if std::fs::write(&path, data).is_err() {
        return false;
    }
    if let Ok(file) = GgufFile::open(&path) {
        read_gguf(&file);
    }
    load_decoder(&path)
}

fn load_decoder(path: &Path) -> bool {
    cpu().is_some_and(|session| Decoder::with_session(path, session, DecoderOptions::default()).is_ok())
}
