//! Tokenization with the `tokenizers` crate from tokenizer.json: special tokens added,
//! truncation at max_seq_length, padding (on the right) to the longest sentence of a batch.

use crate::error::{ModelError, Result};
use serde_json::{Map, Value};
use std::path::Path;
use std::str::FromStr;
use tokenizers::normalizers::precompiled::Precompiled;
use tokenizers::{PostProcessor, Tokenizer, TruncationParams};

/// A batch of token sequences padded to one length, row-major [batch, seq].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBatch {
    pub batch: usize,
    pub seq: usize,
    pub input_ids: Vec<i32>,
    pub token_type_ids: Vec<i32>,
    /// 1 for a real token, 0 for padding.
    pub attention_mask: Vec<i32>,
}

/// A tokenizer set up the way sentence-transformers uses it.
pub struct SentenceTokenizer {
    inner: Tokenizer,
    max_len: usize,
}

impl std::fmt::Debug for SentenceTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceTokenizer").field("max_len", &self.max_len).finish()
    }
}

fn tok_err(path: &Path, e: impl std::fmt::Display) -> ModelError {
    ModelError::Tokenizer { path: path.to_path_buf(), reason: e.to_string() }
}

/// Reads tokenizer.json and parses it ([`parse_tokenizer`]).
fn read_tokenizer(path: &Path) -> Result<Tokenizer> {
    let text = std::fs::read_to_string(path).map_err(|e| ModelError::io(path, e))?;
    parse_tokenizer(path, &text)
}

/// Parses tokenizer.json's text, refusing what tokenizers 0.22 panics on instead of rejecting:
/// text that is not JSON (its decoder deserializer `expect`s success), a `Precompiled`
/// normalizer whose charsmap does not load (so does its normalizer deserializer), and a
/// `TemplateProcessing` template naming a special token its `special_tokens` lacks (encoding
/// indexes the map). `path` names the file in errors (a URL on the web).
fn parse_tokenizer(path: &Path, text: &str) -> Result<Tokenizer> {
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

impl SentenceTokenizer {
    /// Loads tokenizer.json; truncation at `max_len` tokens (special tokens included) replaces
    /// whatever the file says (all-MiniLM-L6-v2's file says 128, sentence-transformers uses
    /// 256), and the file's fixed padding is turned off: batches are padded here instead.
    /// `max_len` must leave room for the special tokens the file's post-processor adds (the
    /// tokenizers crate subtracts them unchecked).
    pub fn from_file(path: &Path, max_len: usize) -> Result<SentenceTokenizer> {
        let inner = read_tokenizer(path)?;
        Self::configure(path, inner, max_len)
    }

    /// [`SentenceTokenizer::from_file`] from the text of tokenizer.json (fetched by the
    /// caller: the web has no file system). `name` (a file name or URL) is what errors call it.
    pub fn from_json(name: &str, json: &str, max_len: usize) -> Result<SentenceTokenizer> {
        let path = Path::new(name);
        let inner = parse_tokenizer(path, json)?;
        Self::configure(path, inner, max_len)
    }

    fn configure(path: &Path, mut inner: Tokenizer, max_len: usize) -> Result<SentenceTokenizer> {
        let special = inner.get_post_processor().map_or(0, |p| p.added_tokens(false));
        if max_len < special {
            return Err(tok_err(
                path,
                format!(
                    "max length {max_len} is shorter than the {special} special tokens the post-processor \
                     adds to every sentence; raise max_seq_length"
                ),
            ));
        }
        let trunc = TruncationParams { max_length: max_len, ..TruncationParams::default() };
        inner.with_truncation(Some(trunc)).map_err(|e| tok_err(path, e))?;
        inner.with_padding(None);
        Ok(SentenceTokenizer { inner, max_len })
    }

    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Number of tokens of each sentence after truncation (special tokens included).
    pub fn lengths(&self, sentences: &[&str]) -> Result<Vec<usize>> {
        let enc = self.encode(sentences)?;
        Ok(enc.iter().map(|e| e.get_ids().len()).collect())
    }

    fn encode(&self, sentences: &[&str]) -> Result<Vec<tokenizers::Encoding>> {
        self.inner
            .encode_batch(sentences.to_vec(), true)
            .map_err(|e| ModelError::Tokenize { reason: e.to_string() })
    }

    /// Tokenizes `sentences` and pads them to the longest one.
    pub fn batch(&self, sentences: &[&str]) -> Result<TokenBatch> {
        let enc = self.encode(sentences)?;
        let seq = enc.iter().map(|e| e.get_ids().len()).max().unwrap_or(0).max(1);
        let batch = enc.len();
        let mut input_ids = vec![0i32; batch * seq];
        let mut token_type_ids = vec![0i32; batch * seq];
        let mut attention_mask = vec![0i32; batch * seq];
        for (row, e) in enc.iter().enumerate() {
            let base = row * seq;
            let (ids, types) = (e.get_ids(), e.get_type_ids());
            for (j, (&id, &ty)) in ids.iter().zip(types).enumerate().take(seq) {
                // Ids come from the vocabulary (≤ 2³¹); a wrap would be caught by the gather.
                input_ids[base + j] = id as i32;
                token_type_ids[base + j] = ty as i32;
                attention_mask[base + j] = 1;
            }
        }
        Ok(TokenBatch { batch, seq, input_ids, token_type_ids, attention_mask })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A word-level tokenizer.json whose post-processor wraps a sentence in `special` tokens.
    fn tokenizer_json(special: usize) -> String {
        let single: Vec<String> = (0..special)
            .map(|_| r#"{"SpecialToken":{"id":"[CLS]","type_id":0}}"#.to_string())
            .chain([r#"{"Sequence":{"id":"A","type_id":0}}"#.to_string()])
            .collect();
        format!(
            r#"{{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,
            "pre_tokenizer":{{"type":"Whitespace"}},"decoder":null,
            "post_processor":{{"type":"TemplateProcessing","single":[{}],"pair":[{{"Sequence":{{"id":"A","type_id":0}}}}],
            "special_tokens":{{"[CLS]":{{"id":"[CLS]","ids":[1],"tokens":["[CLS]"]}}}}}},
            "model":{{"type":"WordLevel","vocab":{{"[UNK]":0,"[CLS]":1,"a":2}},"unk_token":"[UNK]"}}}}"#,
            single.join(",")
        )
    }

    /// Found by fuzzing (fuzz/regressions/model_dir): a max length below the number of special
    /// tokens made the tokenizers crate subtract with overflow (a panic in debug builds, a
    /// wrapped length in release) instead of an error.
    #[test]
    fn max_len_below_special_tokens_is_an_error() {
        let dir = std::env::temp_dir().join(format!("rlx-tokenize-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer.json");
        std::fs::write(&path, tokenizer_json(3)).unwrap();
        let err = SentenceTokenizer::from_file(&path, 2).unwrap_err().to_string();
        assert!(err.contains("3 special tokens"), "{err}");
        let t = SentenceTokenizer::from_file(&path, 4).unwrap();
        assert_eq!(t.lengths(&["a a a"]).unwrap(), vec![4]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Found by fuzzing (fuzz/regressions/model_dir): tokenizers 0.22 panics ("Helper",
    /// "Precompiled") on a malformed decoder or a Precompiled normalizer that does not load;
    /// both are errors naming the file.
    #[test]
    fn malformed_tokenizer_files_are_errors() {
        let dir = std::env::temp_dir().join(format!("rlx-tokenize-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer.json");
        let good = tokenizer_json(1);
        let cut = good.replace(r#""decoder":null"#, r#""decoder":{"type":"#);
        let precompiled = good.replace(
            r#""normalizer":null"#,
            r#""normalizer":{"type":"Precompiled","precompiled_charsmap":"AAAA"}"#,
        );
        // Found by fuzzing (fuzz/regressions/model_dir/tokenizer-template-undefined-special):
        // encoding panicked ("no entry found for key") on a template token left undefined.
        let undefined = good.replace(r#""[CLS]":{"id""#, r#""_CLS]":{"id""#);
        assert_ne!(undefined, good, "the fixture defines [CLS]");
        let untyped = undefined.replace("TemplateProcessing", "TemplatcreoePssing");
        for text in [cut, precompiled, undefined, untyped] {
            std::fs::write(&path, text).unwrap();
            let err = SentenceTokenizer::from_file(&path, 8).unwrap_err().to_string();
            assert!(err.contains("tokenizer.json"), "{err}");
        }
        std::fs::write(&path, good).unwrap();
        SentenceTokenizer::from_file(&path, 8).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
