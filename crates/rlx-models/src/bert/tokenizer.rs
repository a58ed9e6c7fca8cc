//! Tokenization with the `tokenizers` crate from tokenizer.json: special tokens added,
//! truncation at max_seq_length, padding (on the right) to the longest sentence of a batch.

use crate::common::tokenizer::{parse_tokenizer, read_tokenizer, tok_err};
use crate::error::{ModelError, Result};
use std::path::Path;
use tokenizers::{PostProcessor, Tokenizer, TruncationParams};

/// A batch of token sequences padded to one length, row-major [batch, seq].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBatch {
    /// Sentences in the batch.
    pub batch: usize,
    /// Tokens per sentence after padding.
    pub seq: usize,
    /// Token ids, row-major [batch, seq].
    pub input_ids: Vec<i32>,
    /// Token type ids, row-major [batch, seq].
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

    /// The longest token sequence kept; longer inputs are truncated.
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
