//! `rlx fetch MODEL`: download a known model into the cache (a no-op when it is there), with a
//! progress bar on stderr. Also the model-directory resolution `rlx embed` and
//! `rlx similarity` share.

use rlx_models::fetch::known_model;
use rlx_models::{missing_files, Fetched, ModelError};
use std::io::Write as _;
use std::path::PathBuf;

/// A progress bar on stderr, redrawn when the shown percentage (or MB count) changes.
pub struct ProgressBar {
    label: String,
    last: Option<u64>,
}

impl ProgressBar {
    pub fn new(label: impl Into<String>) -> Self {
        ProgressBar { label: label.into(), last: None }
    }

    pub fn update(&mut self, done: u64, total: Option<u64>) {
        const WIDTH: u64 = 30;
        let mb = |b: u64| b as f64 / 1e6;
        let (key, line) = match total.filter(|&t| t > 0) {
            Some(t) => {
                let pct = done.min(t) * 100 / t;
                let filled = (done.min(t) * WIDTH / t) as usize;
                let bar = format!("{}{}", "#".repeat(filled), ".".repeat(WIDTH as usize - filled));
                (pct, format!("{} [{bar}] {pct:3}% {:.1}/{:.1} MB", self.label, mb(done), mb(t)))
            }
            None => (done / 1_000_000, format!("{} {:.1} MB", self.label, mb(done))),
        };
        if self.last == Some(key) {
            return;
        }
        self.last = Some(key);
        let mut err = std::io::stderr().lock();
        // Progress is best effort: a closed stderr must not fail the download.
        let _ = write!(err, "\r{line}");
        let _ = err.flush();
    }

    pub fn finish(&mut self) {
        if self.last.is_some() {
            eprintln!();
        }
    }
}

/// Fetches `model` into the cache with a progress bar, saying what happened on stderr.
pub fn fetch_with_progress(model: &str) -> Result<PathBuf, ModelError> {
    let mut bar = ProgressBar::new(format!("downloading {model}"));
    let result = rlx_models::fetch(model, &mut |done, total| bar.update(done, total));
    bar.finish();
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
    if missing_files(&dir).is_none() {
        return Ok(dir);
    }
    eprintln!("{} is not in the cache yet; fetching it", model.name);
    fetch_with_progress(model.name)
}
