//! How `rlx generate` picks each token: the sampling flags over the checkpoint's
//! `generation_config.json`, resolved as transformers' `generate` does.
//!
//! - `do_sample` (default false) decides between greedy decoding and sampling; when false the
//!   file's temperature, top_k and top_p are not used, whatever they say.
//! - When sampling: `temperature` (default 1), `top_k` (default 50; 0 turns top-k off, so
//!   every token of the vocabulary is a candidate) and `top_p` (default 1).
//! - `repetition_penalty` (default 1) applies in both modes, as transformers' logits processor
//!   does.
//! - A flag overrides the file's value: `--temperature 0` is greedy, `--temperature T > 0`
//!   samples. A GGUF file has no generation config: greedy unless the flags sample.
//! - `--top-k`/`--top-p` when the result is greedy would be ignored: an error saying how to
//!   turn sampling on.
//!
//! [`Sampling::describe`] is the stderr line saying what is in effect and where each value
//! came from.

use serde_json::Value as Json;
use std::path::{Path, PathBuf};

/// The generation config file of a checkpoint directory.
pub const GENERATION_CONFIG: &str = "generation_config.json";

/// transformers' `GenerationConfig` default for `top_k`.
const DEFAULT_TOP_K: usize = 50;

/// The sampling flags as given (`None` = not on the command line).
#[derive(Clone, Copy, Debug, Default)]
pub struct Flags {
    pub temperature: Option<f32>,
    pub top_k: Option<usize>,
    pub top_p: Option<f32>,
    pub repetition_penalty: Option<f32>,
}

/// The sampling values of a `generation_config.json` (`None` = absent or null).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileDefaults {
    pub do_sample: Option<bool>,
    pub temperature: Option<f32>,
    pub top_k: Option<usize>,
    pub top_p: Option<f32>,
    pub repetition_penalty: Option<f32>,
}

/// Where the defaults come from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// A checkpoint directory's generation_config.json.
    File(PathBuf),
    /// A checkpoint directory without one.
    NoFile,
    /// A GGUF file (llama.cpp's format has no generation config).
    Gguf,
}

/// One resolved value and where it came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// Where a resolved value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Flag,
    File,
    Default,
}

/// The candidates a sampler draws among.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopK {
    K(usize),
    /// generation_config.json's `top_k: 0`: top-k off, the whole vocabulary.
    All,
}

/// The resolved sampling: greedy (`temperature` is `None`) or sampled.
#[derive(Clone, Debug)]
pub struct Sampling {
    pub origin: Origin,
    /// Why the mode is what it is ("--temperature 0", "do_sample false in …").
    pub mode_reason: String,
    pub temperature: Option<Sourced<f32>>,
    pub top_k: Sourced<TopK>,
    pub top_p: Sourced<f32>,
    pub repetition_penalty: Sourced<f32>,
}

/// Reads `dir/generation_config.json`'s sampling keys; `Ok(None)` when the file is absent. A
/// key of the wrong type is an error naming the file, the key and its value.
pub fn read_defaults(dir: &Path) -> Result<Option<FileDefaults>, String> {
    let path = dir.join(GENERATION_CONFIG);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading {}: {e}", path.display())),
    };
    let json: Json =
        serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", path.display()))?;
    let bad = |key: &str, v: &Json, want: &str| format!("{}: {key} is {v}; expected {want}", path.display());
    let get = |key: &str| json.get(key).filter(|v| !v.is_null());
    let float = |key: &str| -> Result<Option<f32>, String> {
        get(key).map(|v| v.as_f64().map(|x| x as f32).ok_or_else(|| bad(key, v, "a number"))).transpose()
    };
    let do_sample = get("do_sample").map(|v| v.as_bool().ok_or_else(|| bad("do_sample", v, "true or false")));
    let top_k = get("top_k").map(|v| {
        v.as_u64().and_then(|k| usize::try_from(k).ok()).ok_or_else(|| bad("top_k", v, "a whole number ≥ 0"))
    });
    Ok(Some(FileDefaults {
        do_sample: do_sample.transpose()?,
        temperature: float("temperature")?,
        top_k: top_k.transpose()?,
        top_p: float("top_p")?,
        repetition_penalty: float("repetition_penalty")?,
    }))
}

/// The defaults of the model at `model`: a GGUF file has none; a directory its
/// generation_config.json, when it has one.
pub fn defaults_of(model: &Path) -> Result<(Origin, FileDefaults), String> {
    if rlx_models::is_gguf(model) {
        return Ok((Origin::Gguf, FileDefaults::default()));
    }
    Ok(match read_defaults(model)? {
        Some(d) => (Origin::File(model.join(GENERATION_CONFIG)), d),
        None => (Origin::NoFile, FileDefaults::default()),
    })
}

fn pick<T: Copy>(flag: Option<T>, file: Option<T>, default: T) -> Sourced<T> {
    match (flag, file) {
        (Some(value), _) => Sourced { value, source: Source::Flag },
        (None, Some(value)) => Sourced { value, source: Source::File },
        (None, None) => Sourced { value: default, source: Source::Default },
    }
}

/// Resolves the flags over the file's defaults (see the module doc). Errors: sampling flags
/// when the result is greedy, and a file that samples at temperature ≤ 0.
pub fn resolve(flags: &Flags, origin: Origin, file: &FileDefaults) -> Result<Sampling, String> {
    let where_ = match &origin {
        Origin::File(p) => p.display().to_string(),
        Origin::NoFile => format!("no {GENERATION_CONFIG}"),
        Origin::Gguf => format!("a GGUF file has no {GENERATION_CONFIG}"),
    };
    let (temperature, mode_reason) = match flags.temperature {
        Some(0.0) => (None, "--temperature 0".to_string()),
        Some(t) => (Some(Sourced { value: t, source: Source::Flag }), format!("--temperature {t}")),
        None if file.do_sample == Some(true) => {
            let t = pick(None, file.temperature, 1.0);
            if t.value.is_nan() || t.value <= 0.0 {
                return Err(format!(
                    "{where_} samples (do_sample true) at temperature {}, which must be > 0: give \
                     --temperature 0 for greedy decoding or --temperature T to sample",
                    t.value
                ));
            }
            (Some(t), format!("do_sample true in {where_}"))
        }
        None => {
            let reason = match (&origin, file.do_sample) {
                (Origin::File(_), Some(false)) => format!("do_sample false in {where_}"),
                (Origin::File(_), _) => format!("no do_sample in {where_}"),
                _ => where_.clone(),
            };
            (None, reason)
        }
    };
    if temperature.is_none() {
        let given: Vec<&str> = [("--top-k", flags.top_k.is_some()), ("--top-p", flags.top_p.is_some())]
            .into_iter()
            .filter_map(|(flag, on)| on.then_some(flag))
            .collect();
        if !given.is_empty() {
            return Err(format!(
                "{} only apply when sampling, and sampling is off ({mode_reason}: greedy, the likeliest \
                 token): turn it on with --temperature T, e.g. --temperature 0.7",
                given.join(" and ")
            ));
        }
    }
    let file_top_k = file.top_k.map(|k| if k == 0 { TopK::All } else { TopK::K(k) });
    Ok(Sampling {
        origin,
        mode_reason,
        temperature,
        top_k: pick(flags.top_k.map(TopK::K), file_top_k, TopK::K(DEFAULT_TOP_K)),
        top_p: pick(flags.top_p, file.top_p, 1.0),
        repetition_penalty: pick(flags.repetition_penalty, file.repetition_penalty, 1.0),
    })
}

impl Sampling {
    /// The spec for a model of `vocab` tokens.
    pub fn spec(&self, vocab: usize) -> rlx::prelude::SamplingSpec {
        match self.temperature {
            None => rlx::prelude::SamplingSpec {
                repetition_penalty: self.repetition_penalty.value,
                ..rlx::prelude::SamplingSpec::greedy()
            },
            Some(t) => rlx::prelude::SamplingSpec {
                temperature: t.value,
                top_k: Some(match self.top_k.value {
                    TopK::K(k) => k,
                    TopK::All => vocab,
                }),
                top_p: self.top_p.value,
                repetition_penalty: self.repetition_penalty.value,
            },
        }
    }

    /// Whether tokens are drawn (not the argmax).
    pub fn samples(&self) -> bool {
        self.temperature.is_some()
    }

    /// One line for stderr: the mode, why, and each value in effect with its source.
    pub fn describe(&self) -> String {
        let file = match &self.origin {
            Origin::File(_) => GENERATION_CONFIG,
            _ => "default",
        };
        let from = |s: Source, flag: &str| match s {
            Source::Flag => flag.to_string(),
            Source::File => file.to_string(),
            Source::Default => "default".to_string(),
        };
        let penalty = &self.repetition_penalty;
        let penalty = match penalty.value == 1.0 && penalty.source == Source::Default {
            true => String::new(),
            false => {
                format!(
                    ", repetition_penalty {} ({})",
                    penalty.value,
                    from(penalty.source, "--repetition-penalty")
                )
            }
        };
        match &self.temperature {
            None => format!("greedy ({}){penalty}", self.mode_reason),
            Some(t) => {
                let k = match self.top_k.value {
                    TopK::K(k) => k.to_string(),
                    TopK::All => "off".to_string(),
                };
                format!(
                    "sampling ({}): temperature {} ({}), top_k {k} ({}), top_p {} ({}){penalty}",
                    self.mode_reason,
                    t.value,
                    from(t.source, "--temperature"),
                    from(self.top_k.source, "--top-k"),
                    self.top_p.value,
                    from(self.top_p.source, "--top-p"),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    // Test helpers unwrap and panic: a failure is the point.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn file(json: &str) -> (Origin, FileDefaults) {
        let v: Json = serde_json::from_str(json).unwrap();
        let f = |k: &str| v.get(k).and_then(|x| x.as_f64()).map(|x| x as f32);
        let d = FileDefaults {
            do_sample: v.get("do_sample").and_then(|x| x.as_bool()),
            temperature: f("temperature"),
            top_k: v.get("top_k").and_then(|x| x.as_u64()).map(|k| k as usize),
            top_p: f("top_p"),
            repetition_penalty: f("repetition_penalty"),
        };
        (Origin::File(PathBuf::from("m/generation_config.json")), d)
    }

    fn run(flags: Flags, json: &str) -> Result<Sampling, String> {
        let (o, d) = file(json);
        resolve(&flags, o, &d)
    }

    /// do_sample false: greedy whatever temperature says; the penalty still applies.
    #[test]
    fn do_sample_false_is_greedy_whatever_the_temperature() {
        let s =
            run(Flags::default(), r#"{"do_sample": false, "temperature": 0.6, "repetition_penalty": 1.1}"#)
                .unwrap();
        assert!(!s.samples());
        let spec = s.spec(100);
        assert_eq!((spec.temperature, spec.repetition_penalty), (0.0, 1.1));
        assert_eq!(s.describe(), "greedy (do_sample false in m/generation_config.json), repetition_penalty 1.1 (generation_config.json)");
    }

    /// do_sample true: the file's values, transformers' defaults for the absent ones.
    #[test]
    fn do_sample_true_takes_the_files_values_and_transformers_defaults() {
        let s = run(Flags::default(), r#"{"do_sample": true, "temperature": 0.7}"#).unwrap();
        let spec = s.spec(1000);
        assert_eq!((spec.temperature, spec.top_k, spec.top_p), (0.7, Some(50), 1.0));
        assert!(s.describe().contains("top_k 50 (default)"), "{}", s.describe());
        // top_k 0 in the file: every token is a candidate.
        let s = run(Flags::default(), r#"{"do_sample": true, "top_k": 0, "top_p": 0.9}"#).unwrap();
        let spec = s.spec(1000);
        assert_eq!((spec.temperature, spec.top_k, spec.top_p), (1.0, Some(1000), 0.9));
    }

    /// A flag wins over the file, and --top-k alone is fine when the file samples.
    #[test]
    fn flags_override_the_file() {
        let sampling = r#"{"do_sample": true, "temperature": 0.7, "top_k": 20}"#;
        let s = run(Flags { top_k: Some(5), ..Flags::default() }, sampling).unwrap();
        let spec = s.spec(100);
        assert_eq!((spec.temperature, spec.top_k), (0.7, Some(5)));
        assert!(s.describe().contains("top_k 5 (--top-k)"), "{}", s.describe());
        let s = run(Flags { temperature: Some(0.0), ..Flags::default() }, sampling).unwrap();
        assert!(!s.samples());
        let s = run(Flags { temperature: Some(1.5), ..Flags::default() }, r#"{"do_sample": false}"#).unwrap();
        assert_eq!(s.spec(100).temperature, 1.5);
    }

    /// Sampling flags on a greedy result are refused, naming why it is greedy.
    #[test]
    fn sampling_flags_on_a_greedy_result_are_refused() {
        let e = run(Flags { top_p: Some(0.9), ..Flags::default() }, r#"{"do_sample": false}"#).unwrap_err();
        assert!(
            e.contains("--top-p") && e.contains("do_sample false") && e.contains("--temperature T"),
            "{e}"
        );
        let e =
            resolve(&Flags { top_k: Some(3), ..Flags::default() }, Origin::Gguf, &FileDefaults::default())
                .unwrap_err();
        assert!(e.contains("GGUF"), "{e}");
        let e = run(Flags::default(), r#"{"do_sample": true, "temperature": 0.0}"#).unwrap_err();
        assert!(e.contains("must be > 0") && e.contains("--temperature 0"), "{e}");
    }

    /// The file reader: absent file, absent keys, wrong types.
    #[test]
    fn reads_the_file_and_names_a_bad_key() {
        let dir = std::env::temp_dir().join(format!("rlx-sampling-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(GENERATION_CONFIG);
        let _ = std::fs::remove_file(&path);
        assert_eq!(read_defaults(&dir).unwrap(), None);
        std::fs::write(&path, r#"{"do_sample": true, "top_k": 20, "top_p": null, "eos_token_id": 2}"#)
            .unwrap();
        let d = read_defaults(&dir).unwrap().unwrap();
        assert_eq!(d, FileDefaults { do_sample: Some(true), top_k: Some(20), ..FileDefaults::default() });
        std::fs::write(&path, r#"{"top_k": -1}"#).unwrap();
        let e = read_defaults(&dir).unwrap_err();
        assert!(e.contains("top_k is -1") && e.contains(GENERATION_CONFIG), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
