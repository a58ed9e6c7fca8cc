//! The tokens that end a generation: every end-of-sequence id the checkpoint lists. Chat models
//! list their end-of-turn token there too (Qwen's `<|im_end|>`, Llama 3's `<|eot_id|>`).
//!
//! - A Hugging Face directory: `generation_config.json`'s `eos_token_id` (an int or a list)
//!   when it has one, else `config.json`'s, as transformers' `generate` takes them.
//! - A GGUF file: `tokenizer.ggml.eos_token_id`, `eot_token_id` and `eom_token_id`, those that
//!   are present (llama.cpp ends a generation at each).

use crate::common::gguf::is_gguf;
use crate::common::gguf::GgufFile;
use crate::error::{ModelError, Result};
use serde_json::Value as Json;
use std::path::Path;

/// The GGUF keys whose token ends a generation.
pub const GGUF_STOP_KEYS: [&str; 3] =
    ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"];

/// The stop tokens of the model at `model` (a checkpoint directory or a `.gguf` file), each
/// once, in the order listed. Empty when the model lists none.
pub fn stop_tokens(model: &Path) -> Result<Vec<i32>> {
    let mut ids = Vec::new();
    if is_gguf(model) {
        let file = GgufFile::open(model)?;
        for key in GGUF_STOP_KEYS {
            // An id past i32 names no token of a vocabulary rlx runs: it stops nothing.
            if file.metadata(key).is_some() {
                if let Ok(id) = i32::try_from(file.get_u32(key)?) {
                    ids.push(id);
                }
            }
        }
    } else {
        for name in ["generation_config.json", "config.json"] {
            let listed = eos_ids(&model.join(name))?;
            if !listed.is_empty() {
                ids = listed;
                break;
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(*id));
    Ok(ids)
}

/// `eos_token_id` of the JSON file at `path` (an int or a list of ints); empty when the file or
/// the key is absent or null.
fn eos_ids(path: &Path) -> Result<Vec<i32>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ModelError::io(path, e)),
    };
    let json: Json = serde_json::from_str(&text)
        .map_err(|source| ModelError::Json { path: path.to_path_buf(), source })?;
    let bad = |v: &Json| ModelError::Config {
        path: path.to_path_buf(),
        reason: format!("eos_token_id is {v}; expected a token id or a list of token ids"),
    };
    let id = |v: &Json| v.as_u64().and_then(|i| i32::try_from(i).ok()).ok_or_else(|| bad(v));
    match json.get("eos_token_id") {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Array(list)) => list.iter().map(id).collect(),
        Some(v) => Ok(vec![id(v)?]),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn dir_with(test: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rlx-stop-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn generation_config_lists_win_over_config_json() {
        // Llama-3.1-Instruct's lists: end of text, end of message, end of turn.
        let dir = dir_with(
            "list",
            &[
                ("config.json", r#"{"eos_token_id": 128001}"#),
                ("generation_config.json", r#"{"eos_token_id": [128001, 128008, 128009, 128008]}"#),
            ],
        );
        assert_eq!(stop_tokens(&dir).unwrap(), [128001, 128008, 128009]);
        let dir = dir_with(
            "fallback",
            &[("config.json", r#"{"eos_token_id": 151645}"#), ("generation_config.json", r#"{"top_k": 20}"#)],
        );
        assert_eq!(stop_tokens(&dir).unwrap(), [151645]);
        let dir = dir_with("none", &[("config.json", r#"{"eos_token_id": null}"#)]);
        assert!(stop_tokens(&dir).unwrap().is_empty());
        let dir = dir_with("bad", &[("generation_config.json", r#"{"eos_token_id": "</s>"}"#)]);
        let msg = stop_tokens(&dir).unwrap_err().to_string();
        assert!(msg.contains("generation_config.json") && msg.contains("\"</s>\""), "{msg}");
    }
}
