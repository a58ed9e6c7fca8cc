//! `rlx.Embedder`: a sentence-embedding model (a BERT-family folder: config.json,
//! model.safetensors, tokenizer.json) on one device, with sentence-transformers' `encode`.

use crate::convert;
use crate::errors::{self, InvalidInput};
use pyo3::prelude::*;
use pyo3::types::PyString;
use rlx_models::EmbedderOptions;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The lock of `m`, also after a thread panicked while holding it (the state is still valid:
/// rlx's methods leave it consistent on error).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A sentence-embedding model on one device.
#[pyclass(module = "rlx", name = "Embedder")]
pub struct Embedder {
    inner: Mutex<Option<rlx_models::Embedder>>,
    dim: usize,
    max_seq_length: usize,
    device: String,
    model: String,
}

#[pymethods]
impl Embedder {
    /// Loads `model` (a model folder, or a known model name such as "all-minilm-l6-v2") onto
    /// `device` ("auto", "cpu", "gpu", "vulkan") at `precision` ("f32", "mixed", "f16").
    #[new]
    #[pyo3(signature = (model, device = "auto", precision = "f32"))]
    fn new(py: Python<'_>, model: &str, device: &str, precision: &str) -> PyResult<Self> {
        let device = convert::device(device)?;
        let precision = convert::precision(precision)?;
        let opts = EmbedderOptions { precision, ..EmbedderOptions::default() };
        let emb = py
            .detach(|| {
                let dir = crate::resolve_model(model, rlx_models::ModelFiles::Embedder)?;
                rlx_models::Embedder::load(&dir, device, opts)
            })
            .map_err(errors::from_model)?;
        Ok(Embedder {
            dim: emb.dim(),
            max_seq_length: emb.config().max_seq_length,
            device: emb.device().to_string(),
            model: model.to_string(),
            inner: Mutex::new(Some(emb)),
        })
    }

    /// Embeds `sentences` (a list of str, or one str): a float32 array [len(sentences), dim]
    /// (or [dim] for one str), row i the embedding of sentence i: L2-normalised, or with
    /// `normalize=False` the pooled vector before the normalisation. Sentences run longest
    /// first in batches of `batch_size`; Ctrl-C stops between batches.
    #[pyo3(signature = (sentences, batch_size = 32, normalize = true))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        sentences: &Bound<'py, PyAny>,
        batch_size: usize,
        normalize: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let single = sentences.is_instance_of::<PyString>();
        let list: Vec<String> = if single {
            vec![sentences.extract::<String>()?]
        } else {
            sentences.extract::<Vec<String>>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "sentences must be a str or a list of str, got {}",
                    sentences.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
                ))
            })?
        };
        if batch_size == 0 {
            return Err(InvalidInput::new_err("batch_size must be at least 1"));
        }
        let rows = py.detach(|| -> PyResult<Vec<Vec<f32>>> {
            let mut guard = lock(&self.inner);
            let emb = guard.as_mut().ok_or_else(|| errors::closed("Embedder"))?;
            embed_in_batches(emb, &list, batch_size, normalize)
        })?;
        let out = convert::rows_to_numpy(py, rows, self.dim)?;
        if single {
            return out.call_method1("reshape", (self.dim,));
        }
        Ok(out)
    }

    /// Length of each embedding.
    #[getter]
    fn dim(&self) -> usize {
        self.dim
    }

    /// Inputs are truncated to this many tokens.
    #[getter]
    fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// The device the model runs on ("cpu", "gpu", "vulkan").
    #[getter]
    fn device(&self) -> String {
        self.device.clone()
    }

    /// Frees the model and its device memory; later calls raise rlx.ClosedError.
    fn close(&self, py: Python<'_>) {
        py.detach(|| lock(&self.inner).take());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        format!("rlx.Embedder({:?}, device={:?}, dim={})", self.model, self.device, self.dim)
    }
}

/// Embeds `sentences` longest first in chunks of `batch_size` (similar lengths share a batch,
/// so little padding) and returns them in the order given. Python signals (Ctrl-C) are checked
/// between batches.
fn embed_in_batches(
    emb: &mut rlx_models::Embedder,
    sentences: &[String],
    batch_size: usize,
    normalize: bool,
) -> PyResult<Vec<Vec<f32>>> {
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let lengths = emb.tokenizer().lengths(&refs).map_err(errors::from_model)?;
    let mut order: Vec<usize> = (0..refs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lengths.get(i).copied().unwrap_or(0)));
    let mut out = vec![Vec::new(); refs.len()];
    for chunk in order.chunks(batch_size) {
        Python::attach(|py| py.check_signals())?;
        let batch: Vec<&str> = chunk.iter().filter_map(|&i| refs.get(i).copied()).collect();
        let rows = emb.embed_batch_with(&batch, normalize).map_err(errors::from_model)?;
        for (&i, row) in chunk.iter().zip(rows) {
            if let Some(slot) = out.get_mut(i) {
                *slot = row;
            }
        }
    }
    Ok(out)
}
