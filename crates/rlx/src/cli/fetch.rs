//! `rlx fetch MODEL`: download a known model into the cache (a no-op when it is there), with a
//! progress bar on stderr. Also the model-directory resolution `rlx embed` and
//! `rlx similarity` share.

use rlx_models::fetch::known_model;
use rlx_models::{missing_files, Fetched, ModelError};
use std::path::PathBuf;

/// Fetches `model` into the cache with a progress bar, saying what happened on stderr.
pub fn fetch_with_progress(model: &str) -> Result<PathBuf, ModelError> {
    let bar = super::progress::bytes(&format!("downloading {model}"));
    let result = rlx_models::fetch(model, &mut |done, total| super::progress::set_bytes(&bar, done, total));
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

/// `rlx fetch MODEL`.
pub fn run(model: &str) -> Result<(), Box<dyn std::error::Error>> {
    let dir = fetch_with_progress(model)?;
    println!("{}", dir.display());
    Ok(())
}

/// The model folder to load: `--model-dir` as given (it must hold the model files), else the
/// default model's cache folder, fetched first when it is not there.
pub fn resolve_model_dir(model_dir: Option<PathBuf>) -> Result<PathBuf, ModelError> {
    if let Some(dir) = model_dir {
        return match missing_files(&dir) {
            None => Ok(dir),
            Some(missing) => Err(ModelError::NoModel { dir, missing }),
        };
    }
    let model = known_model(rlx_models::DEFAULT_MODEL)?;
    let dir = rlx_models::fetch::model_dir(&model)?;
    // Complete means sealed by a finished fetch, not only that the files are there.
    if rlx_models::fetch::is_complete(&dir) {
        return Ok(dir);
    }
    eprintln!("{} is not in the cache yet; fetching it", model.name);
    fetch_with_progress(model.name)
}
