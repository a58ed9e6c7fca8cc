//! rlx for Python: the native module `rlx._rlx`, which python/rlx/__init__.py re-exports as
//! `rlx`.
//!
//! - `devices`: the backend registry as a list of dicts.
//! - `embedder::Embedder`: sentence embeddings as a float32 numpy array.
//! - `decoder::Decoder`: text generation (whole or streamed) and chat templates.
//! - `graph`: `Graph`, `Session`, `Executable` for custom graphs, numpy in and out.
//! - `errors`: the exception classes, all under `rlx.RlxError`.
//!
//! Contract: no panic crosses into Python (every rlx error is an exception naming the cause);
//! compute, compile, load and generate run with the GIL released, and each object guards its
//! Rust state with a mutex, so calls from several Python threads are safe (one model serves
//! them one after the other).

mod convert;
mod decoder;
mod embedder;
mod errors;
mod generation;
mod graph;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};

/// Every concrete device ("cpu", "gpu", "vulkan") with whether it can be used here and why not.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let all = py.detach(rlx_runtime::devices);
    let mut out = Vec::with_capacity(all.len());
    for s in all {
        let d = PyDict::new(py);
        d.set_item("device", s.device.name())?;
        d.set_item("backend", s.backend)?;
        d.set_item("available", s.available)?;
        d.set_item("reason", s.reason)?;
        d.set_item("software", s.software)?;
        let details = PyDict::new(py);
        for (k, v) in s.details {
            details.set_item(k, v)?;
        }
        d.set_item("details", details)?;
        out.push(d);
    }
    Ok(out)
}

/// The local path of `model`, as the `rlx` CLI resolves `--model`: an existing file or folder as
/// given, the built-in `all-minilm-l6-v2` (fetched into rlx's cache on first use), or a Hugging
/// Face hub name (`owner/name`, `owner/name-GGUF:Q4_K_M`) fetched into the hub cache
/// (`rlx_models::resolve_model`: HF_HOME, HF_ENDPOINT and HF_TOKEN apply).
pub(crate) fn resolve_model(
    model: &str,
    files: rlx_models::ModelFiles,
) -> Result<PathBuf, rlx_models::ModelError> {
    let path = Path::new(model);
    if path.exists() {
        return Ok(path.to_path_buf());
    }
    match rlx_models::fetch::known_model(model) {
        Ok(_) => Ok(rlx_models::fetch(model, &mut |_, _| {})?.dir().to_path_buf()),
        Err(_) => rlx_models::resolve_model(model, None, files, &mut |_, _, _| {}),
    }
}

/// Downloads the known model `name` into the cache (nothing when it is there) and returns its
/// folder.
#[pyfunction]
fn fetch(py: Python<'_>, name: &str) -> PyResult<String> {
    let fetched = py.detach(|| rlx_models::fetch(name, &mut |_, _| {})).map_err(errors::from_model)?;
    Ok(fetched.dir().display().to_string())
}

#[pymodule]
fn _rlx(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(fetch, m)?)?;
    m.add_class::<embedder::Embedder>()?;
    m.add_class::<decoder::Decoder>()?;
    m.add_class::<generation::TextStream>()?;
    graph::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
