//! The byte-level BPE pre-tokenizers that `tokenizer.ggml.pre` names, as llama.cpp splits text
//! for each of them.
//!
//! llama.cpp runs a list of regexes one after the other: each regex cuts every piece left by the
//! previous ones into its matches and the stretches between them (both kept), then every piece
//! is mapped to GPT-2's byte characters and merged on its own. Here each regex is a `Split` with
//! the `Isolated` behaviour, in the same order, followed by a `ByteLevel` step without its own
//! regex: the `tokenizers` crate then cuts text exactly where llama.cpp does. The regexes are
//! llama.cpp's, in the syntax of the `fancy-regex` engine; where llama.cpp replaces non-ASCII
//! whitespace by a stand-in before matching (its `deepseek-llm` character ranges), the classes
//! here leave whitespace out, so that they match what llama.cpp's do.
//!
//! Each entry also carries llama.cpp's per-type defaults that change the ids: `ignore_merges`
//! (a piece that is a whole token is taken as it is, without merging) and whether a BOS token is
//! added when the file does not say (`tokenizer.ggml.add_bos_token`).

use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::SplitDelimiterBehavior;

/// GPT-2's split, also the second step of `default` and `smollm`.
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// Llama 3's split (`llama-bpe`): contractions in any case, digits in runs of at most three.
const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Qwen2's split: as Llama 3's, but each digit alone.
const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// DeepSeek LLM's letters: Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee and other cased
/// scripts, as llama.cpp lists them (written as escapes: some are canonical singletons that an
/// editor could normalize into other code points).
const DEEPSEEK_LETTERS: &str = "\\s?[A-Za-z\u{b5}\u{c0}-\u{d6}\u{d8}-\u{f6}\u{f8}-\u{1ba}\u{1bc}-\u{1bf}\u{1c4}-\u{293}\u{295}-\u{2af}\u{370}-\u{373}\u{376}\u{377}\u{37b}-\u{37d}\u{37f}\u{386}\u{388}-\u{38a}\u{38c}\u{38e}-\u{3a1}\u{3a3}-\u{3f5}\u{3f7}-\u{481}\u{48a}-\u{52f}\u{531}-\u{556}\u{10a0}-\u{10c5}\u{13a0}-\u{13f5}\u{13f8}-\u{13fd}\u{1c90}-\u{1cba}\u{1cbd}-\u{1cbf}\u{1d00}-\u{1d2b}\u{1d6b}-\u{1d77}\u{1d79}-\u{1d9a}\u{1e00}-\u{1f15}\u{1f18}-\u{1f1d}\u{1f20}-\u{1f45}\u{1f48}-\u{1f4d}\u{1f50}-\u{1f57}\u{1f59}\u{1f5b}\u{1f5d}\u{1f5f}-\u{1f7d}\u{1f80}-\u{1fb4}\u{1fb6}-\u{1fbc}\u{1fbe}\u{1fc2}-\u{1fc4}\u{1fc6}-\u{1fcc}\u{1fd0}-\u{1fd3}\u{1fd6}-\u{1fdb}\u{1fe0}-\u{1fec}\u{1ff2}-\u{1ff4}\u{1ff6}-\u{1ffc}\u{2102}\u{2107}\u{210a}-\u{2113}\u{2115}\u{2119}-\u{211d}\u{2124}\u{2126}\u{2128}\u{212a}-\u{212d}\u{212f}-\u{2134}\u{2139}\u{213c}-\u{213f}\u{2145}-\u{2149}\u{214e}\u{2183}\u{2184}\u{2c00}-\u{2c7b}\u{2c7e}-\u{2ce4}\u{2ceb}-\u{2cee}\u{2cf2}\u{2cf3}\u{a640}-\u{a66d}\u{a680}-\u{a69b}\u{a722}-\u{a76f}\u{a771}-\u{a787}\u{a78b}-\u{a78e}\u{ab70}-\u{abbf}\u{fb00}-\u{fb06}\u{fb13}-\u{fb17}\u{ff21}-\u{ff3a}\u{ff41}-\u{ff5a}\u{10400}-\u{1044f}\u{104b0}-\u{104d3}\u{104d8}-\u{104fb}\u{10c80}-\u{10cb2}\u{10cc0}-\u{10cf2}\u{118a0}-\u{118df}\u{1e900}-\u{1e943}]+";

/// DeepSeek LLM's punctuation: ASCII and fullwidth punctuation, curly quotes, CJK full stops.
/// (llama.cpp's range starts at U+3000, the ideographic space, which its matcher never sees as
/// such: it starts here at U+3001.)
const DEEPSEEK_PUNCT: &str =
    "\\s?[!-/:-~\u{ff01}-\u{ff0f}\u{ff1a}-\u{ff5e}\u{2018}-\u{201f}\u{3001}-\u{3002}]+";

/// DeepSeek LLM's CJK runs (llama.cpp's ranges, less the whitespace inside them).
const DEEPSEEK_CJK: &str = "[[\u{4e00}-\u{9fa5}\u{800}-\u{4e00}\u{ac00}-\u{d7ff}]&&[^\\s]]+";

/// What llama.cpp does for one `tokenizer.ggml.pre` value.
pub struct PreTokenizer {
    /// The `tokenizer.ggml.pre` value.
    pub name: &'static str,
    /// The regexes, applied in order.
    regexes: &'static [&'static str],
    /// A piece that is a whole token is taken as that token, without merges.
    pub ignore_merges: bool,
    /// Whether a BOS token is added when `tokenizer.ggml.add_bos_token` is absent.
    pub add_bos: bool,
}

/// The `tokenizer.ggml.pre` values rlx builds, in llama.cpp's terms.
pub const PRE_TOKENIZERS: [PreTokenizer; 6] = [
    PreTokenizer {
        name: "default",
        regexes: &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
        ignore_merges: false,
        add_bos: false,
    },
    PreTokenizer { name: "gpt-2", regexes: &[GPT2], ignore_merges: false, add_bos: false },
    PreTokenizer { name: "llama-bpe", regexes: &[LLAMA3], ignore_merges: true, add_bos: true },
    PreTokenizer { name: "qwen2", regexes: &[QWEN2], ignore_merges: false, add_bos: false },
    PreTokenizer { name: "smollm", regexes: &[r"\p{N}", GPT2], ignore_merges: false, add_bos: false },
    PreTokenizer {
        name: "deepseek-llm",
        regexes: &["[\r\n]", DEEPSEEK_LETTERS, DEEPSEEK_PUNCT, r"\s+$", DEEPSEEK_CJK, r"\p{N}+"],
        ignore_merges: false,
        add_bos: false,
    },
];

/// The entry for `name`, if rlx knows it.
pub fn find(name: &str) -> Option<&'static PreTokenizer> {
    PRE_TOKENIZERS.iter().find(|p| p.name == name)
}

/// The accepted names, comma-separated (for error messages).
pub fn names() -> String {
    PRE_TOKENIZERS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

impl PreTokenizer {
    /// The `tokenizers` pre-tokenizer: one isolating split per regex, then the byte mapping.
    /// Errs with the regex engine's message if a regex does not compile.
    pub fn build(&self) -> std::result::Result<PreTokenizerWrapper, String> {
        let mut steps: Vec<PreTokenizerWrapper> = Vec::with_capacity(self.regexes.len() + 1);
        for regex in self.regexes {
            let split =
                Split::new(SplitPattern::Regex(regex.to_string()), SplitDelimiterBehavior::Isolated, false)
                    .map_err(|e| format!("the {} pre-tokenizer's regex {regex:?}: {e}", self.name))?;
            steps.push(split.into());
        }
        steps.push(ByteLevel::default().add_prefix_space(false).use_regex(false).into());
        Ok(Sequence::new(steps).into())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use tokenizers::{OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer as _};

    fn pieces(pre: &str, text: &str) -> Vec<String> {
        let p = find(pre).unwrap().build().unwrap();
        let mut s = PreTokenizedString::from(text);
        p.pre_tokenize(&mut s).unwrap();
        s.get_splits(OffsetReferential::Original, OffsetType::Byte)
            .into_iter()
            .map(|(_, (a, b), _)| text[a..b].to_string())
            .collect()
    }

    #[test]
    fn every_regex_compiles() {
        for p in &PRE_TOKENIZERS {
            p.build().unwrap();
        }
    }

    #[test]
    fn default_splits_digits_and_punctuation_first() {
        assert_eq!(pieces("default", "0123 hello world"), ["012", "3", " hello", " world"]);
        assert_eq!(pieces("default", "a, b!"), ["a", ",", " b", "!"]);
        assert_eq!(pieces("gpt-2", "0123 hello world"), ["0123", " hello", " world"]);
        assert_eq!(pieces("llama-bpe", "12345"), ["123", "45"]);
        assert_eq!(pieces("qwen2", "123"), ["1", "2", "3"]);
    }

    #[test]
    fn deepseek_cuts_at_newlines_and_scripts() {
        assert_eq!(pieces("deepseek-llm", "ab\ncd 日本12"), ["ab", "\n", "cd", " ", "日本", "12"]);
    }
}
