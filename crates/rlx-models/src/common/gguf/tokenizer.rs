//! A `tokenizers::Tokenizer` built from a GGUF file's own `tokenizer.ggml.*` metadata, the way
//! transformers builds a fast tokenizer for the same vocabulary.
//!
//! Contract:
//! - `tokenizer.ggml.model` = `gpt2`: byte-level BPE from `tokenizer.ggml.tokens` (id = index)
//!   and `tokenizer.ggml.merges` ("left right", best first). The pre-tokenizer follows
//!   `tokenizer.ggml.pre` (absent: `default`) and splits text as llama.cpp does for that value
//!   (see [`super::pretokenize`]), with llama.cpp's `ignore_merges` and BOS defaults for it. Any
//!   other value is refused, naming it and the accepted ones; decoding maps bytes back
//!   (ByteLevel).
//! - `tokenizer.ggml.model` = `llama`: SentencePiece BPE. Merges are every split of a normal
//!   token into two normal tokens, ranked by the merged token's `tokenizer.ggml.scores` (best
//!   first; ties by the merged token's id, then the parts' ids), as transformers'
//!   SentencePieceExtractor derives them. Spaces become `▁`, with one `▁` prepended unless
//!   `tokenizer.ggml.add_space_prefix` is false; characters missing from the vocabulary fall
//!   back to `<0xNN>` byte tokens, else to the unknown token (`tokenizer.ggml.unknown_token_id`,
//!   else the first token of type unknown). Decoding undoes all of it.
//! - Other tokenizer models are refused, naming the value.
//! - Tokens of type control (3) or unknown (2) are special added tokens (matched whole, skipped
//!   when decoding with `skip_special_tokens`); user-defined ones (4) are added tokens.
//!   `tokenizer.ggml.add_bos_token` (default: true for `llama` and for `gpt2` with `llama-bpe`,
//!   else false, as in llama.cpp) prepends
//!   `tokenizer.ggml.bos_token_id` when encoding with special tokens.

use super::error::GgufError;
use super::pretokenize;
use super::GgufFile;
use crate::error::{ModelError, Result};
use std::collections::HashMap;
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, Tokenizer};

/// GGUF token types (`tokenizer.ggml.token_type`).
const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// The tokenizer that `file`'s metadata describes (see the module doc).
pub fn gguf_tokenizer(file: &GgufFile) -> Result<Tokenizer> {
    let model = file.get_str("tokenizer.ggml.model")?;
    let tokens = file.get_str_array("tokenizer.ggml.tokens")?;
    let types: Vec<i32> = match file.metadata("tokenizer.ggml.token_type") {
        Some(_) => file.get_i32_array("tokenizer.ggml.token_type")?.to_vec(),
        None => vec![NORMAL; tokens.len()],
    };
    if types.len() != tokens.len() {
        return Err(bad(
            file,
            "tokenizer.ggml.token_type",
            format!("has {} entries for {} tokens", types.len(), tokens.len()),
        ));
    }
    let mut vocab = Vocab::default();
    for (i, t) in tokens.iter().enumerate() {
        let id =
            u32::try_from(i).map_err(|_| bad(file, "tokenizer.ggml.tokens", "too many tokens".into()))?;
        vocab.entry(t.clone()).or_insert(id);
    }
    let (mut tok, default_bos) = match model {
        "gpt2" => byte_level_bpe(file, vocab)?,
        "llama" => (sentencepiece_bpe(file, tokens, &types, vocab)?, true),
        other => {
            let reason = format!("tokenizer model '{other}' is not supported (gpt2, llama)");
            return Err(bad(file, "tokenizer.ggml.model", reason));
        }
    };
    let mut special = Vec::new();
    let mut added = Vec::new();
    for (t, &ty) in tokens.iter().zip(&types) {
        match ty {
            CONTROL | UNKNOWN => special.push(AddedToken::from(t.clone(), true).normalized(false)),
            USER_DEFINED => added.push(AddedToken::from(t.clone(), false).normalized(false)),
            _ => {}
        }
    }
    tok.add_special_tokens(&special);
    tok.add_tokens(&added);
    let add_bos = match file.metadata("tokenizer.ggml.add_bos_token") {
        Some(_) => file.get_bool("tokenizer.ggml.add_bos_token")?,
        None => default_bos,
    };
    if add_bos {
        let id = file.get_u32("tokenizer.ggml.bos_token_id")?;
        let bos = tokens.get(id as usize).ok_or_else(|| {
            bad(file, "tokenizer.ggml.bos_token_id", format!("is not below the {} tokens", tokens.len()))
        })?;
        let template = TemplateProcessing::builder()
            .try_single(format!("{bos} $A"))
            .map_err(|e| tokenizer_error(file, format!("the bos template for '{bos}': {e}")))?
            .special_tokens(vec![(bos.clone(), id)])
            .build()
            .map_err(|e| tokenizer_error(file, format!("the bos template for '{bos}': {e}")))?;
        tok.with_post_processor(Some(template));
    }
    Ok(tok)
}

fn bad(file: &GgufFile, key: &str, reason: String) -> ModelError {
    let value = file.metadata(key).map(|v| v.describe()).unwrap_or_default();
    file.error(GgufError::BadValue { key: key.to_string(), value, reason })
}

fn tokenizer_error(file: &GgufFile, reason: String) -> ModelError {
    ModelError::Tokenizer { path: file.path().to_path_buf(), reason }
}

/// The byte-level BPE tokenizer and whether its pre-tokenizer adds a BOS by default.
fn byte_level_bpe(file: &GgufFile, vocab: Vocab) -> Result<(Tokenizer, bool)> {
    let merges = file
        .get_str_array("tokenizer.ggml.merges")?
        .iter()
        .enumerate()
        .map(|(i, m)| match m.split_once(' ') {
            Some((a, b)) => Ok((a.to_string(), b.to_string())),
            None => Err(bad(file, "tokenizer.ggml.merges", format!("entry {i} '{m}' is not two tokens"))),
        })
        .collect::<Result<Vec<_>>>()?;
    let name = match file.metadata("tokenizer.ggml.pre") {
        Some(_) => file.get_str("tokenizer.ggml.pre")?,
        None => "default",
    };
    let Some(pre) = pretokenize::find(name) else {
        let reason = format!(
            "pre-tokenizer '{name}' is not supported ({}); its splitting rules are not known to rlx",
            pretokenize::names()
        );
        return Err(bad(file, "tokenizer.ggml.pre", reason));
    };
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .ignore_merges(pre.ignore_merges)
        .build()
        .map_err(|e| tokenizer_error(file, format!("byte-level BPE: {e}")))?;
    let pre_tokenizer = pre.build().map_err(|e| tokenizer_error(file, e))?;
    let mut tok = Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(pre_tokenizer));
    tok.with_decoder(Some(ByteLevel::default()));
    Ok((tok, pre.add_bos))
}

fn sentencepiece_bpe(file: &GgufFile, tokens: &[String], types: &[i32], vocab: Vocab) -> Result<Tokenizer> {
    let scores = file.get_f32_array("tokenizer.ggml.scores")?;
    if scores.len() != tokens.len() {
        let reason = format!("has {} entries for {} tokens", scores.len(), tokens.len());
        return Err(bad(file, "tokenizer.ggml.scores", reason));
    }
    let merges = spm_merges(tokens, scores, types);
    let unk_id = match file.metadata("tokenizer.ggml.unknown_token_id") {
        Some(_) => Some(file.get_usize("tokenizer.ggml.unknown_token_id")?),
        None => types.iter().position(|&t| t == UNKNOWN),
    };
    let mut builder = BPE::builder().vocab_and_merges(vocab, merges).byte_fallback(true).fuse_unk(true);
    if let Some(unk) = unk_id {
        let t = tokens.get(unk).ok_or_else(|| {
            bad(file, "tokenizer.ggml.unknown_token_id", format!("is not below the {} tokens", tokens.len()))
        })?;
        builder = builder.unk_token(t.clone());
    }
    let bpe = builder.build().map_err(|e| tokenizer_error(file, format!("SentencePiece BPE: {e}")))?;
    let space_prefix = match file.metadata("tokenizer.ggml.add_space_prefix") {
        Some(_) => file.get_bool("tokenizer.ggml.add_space_prefix")?,
        None => true,
    };
    let replace = |from: &str, to: &str| {
        Replace::new(from, to).map_err(|e| tokenizer_error(file, format!("replacing '{from}': {e}")))
    };
    let mut normalizers: Vec<NormalizerWrapper> = Vec::new();
    if space_prefix {
        normalizers.push(Prepend::new("▁".to_string()).into());
    }
    normalizers.push(replace(" ", "▁")?.into());
    let mut decoders: Vec<DecoderWrapper> =
        vec![replace("▁", " ")?.into(), ByteFallback::new().into(), Fuse::new().into()];
    if space_prefix {
        decoders.push(Strip::new(' ', 1, 0).into());
    }
    let mut tok = Tokenizer::new(bpe);
    tok.with_normalizer(Some(NormalizerSequence::new(normalizers)));
    tok.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok(tok)
}

/// SentencePiece merges from the vocabulary and scores (see the module doc).
pub fn spm_merges(tokens: &[String], scores: &[f32], types: &[i32]) -> Vec<(String, String)> {
    let normal: HashMap<&str, usize> = tokens
        .iter()
        .enumerate()
        .filter(|(i, _)| types.get(*i) == Some(&NORMAL))
        .map(|(i, t)| (t.as_str(), i))
        .rev() // the first of duplicate tokens wins
        .collect();
    let mut ranked: Vec<(f32, usize, usize, usize)> = Vec::new();
    for (i, piece) in tokens.iter().enumerate() {
        if types.get(i) != Some(&NORMAL) || normal.get(piece.as_str()) != Some(&i) {
            continue;
        }
        for (cut, _) in piece.char_indices().skip(1) {
            let (left, right) = piece.split_at(cut);
            if let (Some(&l), Some(&r)) = (normal.get(left), normal.get(right)) {
                ranked.push((scores.get(i).copied().unwrap_or(0.0), i, l, r));
            }
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2, a.3).cmp(&(b.1, b.2, b.3))));
    ranked
        .into_iter()
        .filter_map(|(_, _, l, r)| Some((tokens.get(l)?.clone(), tokens.get(r)?.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_rank_by_the_merged_score() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let tokens = t(&["<unk>", "a", "b", "c", "ab", "bc", "abc", "<s>b"]);
        let scores = [0.0, -1.0, -2.0, -3.0, -5.0, -4.0, -6.0, -0.5];
        let types = [UNKNOWN, NORMAL, NORMAL, NORMAL, NORMAL, NORMAL, NORMAL, NORMAL];
        let merges = spm_merges(&tokens, &scores, &types);
        let pairs: Vec<(&str, &str)> = merges.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(pairs, [("b", "c"), ("a", "b"), ("a", "bc"), ("ab", "c")]);
    }
}
