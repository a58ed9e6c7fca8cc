//! Tokenization with the `tokenizers` crate from tokenizer.json: special tokens added,
//! truncation at max_seq_length, padding (on the right) to the longest sentence of a batch.

use crate::error::{ModelError, Result};
use std::path::Path;
use tokenizers::{Tokenizer, TruncationParams};

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

impl SentenceTokenizer {
    /// Loads tokenizer.json; truncation at `max_len` tokens (special tokens included) replaces
    /// whatever the file says (all-MiniLM-L6-v2's file says 128, sentence-transformers uses
    /// 256), and the file's fixed padding is turned off: batches are padded here instead.
    pub fn from_file(path: &Path, max_len: usize) -> Result<SentenceTokenizer> {
        let inner = Tokenizer::from_file(path).map_err(|e| tok_err(path, e))?;
        Self::configure(path, inner, max_len)
    }

    /// [`SentenceTokenizer::from_file`] from the text of tokenizer.json (fetched by the
    /// caller: the web has no file system). `name` (a file name or URL) is what errors call it.
    pub fn from_json(name: &str, json: &str, max_len: usize) -> Result<SentenceTokenizer> {
        let path = Path::new(name);
        let inner: Tokenizer = json.parse().map_err(|e| tok_err(path, e))?;
        Self::configure(path, inner, max_len)
    }

    fn configure(path: &Path, mut inner: Tokenizer, max_len: usize) -> Result<SentenceTokenizer> {
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
