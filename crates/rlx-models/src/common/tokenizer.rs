//! Loading tokenizer.json safely, and the tokenizer of a causal language model.
//!
//! `parse_tokenizer` refuses what the `tokenizers` crate would panic on; every model's
//! tokenizer.json goes through it (the BERT [`crate::SentenceTokenizer`] and
//! [`causal_tokenizer`]). A GGUF file carries its own tokenizer ([`crate::gguf_tokenizer`]).

use crate::common::gguf::{gguf_tokenizer, is_gguf, GgufFile};
use crate::error::{ModelError, Result};
use serde_json::{Map, Value};
use std::path::Path;
use std::str::FromStr;
use tokenizers::normalizers::precompiled::Precompiled;
use tokenizers::Tokenizer;

/// The file a Hugging Face checkpoint directory keeps its tokenizer in.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// The tokenizer of the causal LM at `model`: a GGUF file's own (`tokenizer.ggml.*`), else the
/// checkpoint directory's tokenizer.json; `None` when the directory has no tokenizer.json
/// (the prompt must then be given as token ids).
pub fn causal_tokenizer(model: &Path) -> Result<Option<Tokenizer>> {
    if is_gguf(model) {
        return gguf_tokenizer(&GgufFile::open(model)?).map(Some);
    }
    let path = model.join(TOKENIZER_FILE);
    if !path.exists() {
        return Ok(None);
    }
    read_tokenizer(&path).map(Some)
}

pub(crate) fn tok_err(path: &Path, e: impl std::fmt::Display) -> ModelError {
    ModelError::Tokenizer { path: path.to_path_buf(), reason: e.to_string() }
}

/// Reads tokenizer.json and parses it ([`parse_tokenizer`]).
pub(crate) fn read_tokenizer(path: &Path) -> Result<Tokenizer> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))?;
    parse_tokenizer(path, &text)
}

/// Parses tokenizer.json's text, refusing what tokenizers 0.22 panics on instead of rejecting:
/// text that is not JSON (its decoder deserializer `expect`s success), a `Precompiled`
/// normalizer whose charsmap does not load (so does its normalizer deserializer), and a
/// `TemplateProcessing` template naming a special token its `special_tokens` lacks (encoding
/// indexes the map). `path` names the file in errors (a URL on the web).
pub(crate) fn parse_tokenizer(path: &Path, text: &str) -> Result<Tokenizer> {
    let value: Value = serde_json::from_str(text).map_err(|e| tok_err(path, e))?;
    each_object(&value, &check_precompiled).map_err(|e| tok_err(path, e))?;
    each_object(&value, &check_templates).map_err(|e| tok_err(path, e))?;
    Tokenizer::from_str(text).map_err(|e| tok_err(path, e))
}

/// Calls `check` on every JSON object in `v`, outermost first (serde_json bounds the depth).
fn each_object(
    v: &Value,
    check: &impl Fn(&Map<String, Value>) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    match v {
        Value::Object(map) => {
            check(map)?;
            map.values().try_for_each(|child| each_object(child, check))
        }
        Value::Array(items) => items.iter().try_for_each(|child| each_object(child, check)),
        _ => Ok(()),
    }
}

/// An object of `"type": "Precompiled"` must load as one.
fn check_precompiled(map: &Map<String, Value>) -> std::result::Result<(), String> {
    if map.get("type").and_then(Value::as_str) == Some("Precompiled") {
        serde_json::from_value::<Precompiled>(Value::Object(map.clone()))
            .map_err(|e| format!("its Precompiled normalizer does not load: {e}"))?;
    }
    Ok(())
}

/// An object with `single` or `pair` templates (a `TemplateProcessing`, whatever its `type`
/// says) defines each special token they use.
fn check_templates(map: &Map<String, Value>) -> std::result::Result<(), String> {
    // Not keyed on "type": tokenizers reads post-processors untagged, so a misspelled type
    // still loads as a template (found by fuzzing too).
    if !(map.contains_key("single") || map.contains_key("pair")) {
        return Ok(());
    }
    let defined = map.get("special_tokens").and_then(Value::as_object);
    for template in ["single", "pair"] {
        let pieces = map.get(template).and_then(Value::as_array).into_iter().flatten();
        for id in pieces.filter_map(|p| p.get("SpecialToken")?.get("id")?.as_str()) {
            if !defined.is_some_and(|d| d.contains_key(id)) {
                return Err(format!(
                    "its post-processor's {template} template uses the special token '{id}', \
                     which its special_tokens do not define"
                ));
            }
        }
    }
    Ok(())
}
