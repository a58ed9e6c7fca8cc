//! The JavaScript boundary (wasm32 only): `Embedder` through wasm-bindgen, the model files
//! through the page's `fetch`.

use crate::options::{self, MODEL_FILES};
use js_sys::{Array, Float32Array, Uint8Array};
use rlx_models::bert::config::model_config_from_json;
use rlx_models::{EmbedderOptions, SafetensorsFile, SentenceTokenizer};
use rlx_runtime::{Device, Session};
use std::path::Path;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// A sentence embedder (all-MiniLM-L6-v2 and other BERT-family sentence-transformers) running
/// in the browser on WebGPU, or on the CPU as the fallback.
#[wasm_bindgen]
pub struct Embedder {
    inner: rlx_models::Embedder,
    device: &'static str,
    adapter: String,
}

#[wasm_bindgen]
impl Embedder {
    /// `await Embedder.load(baseUrl, device?, precision?)`: fetches the model files from
    /// `baseUrl` and opens `device` ("auto": WebGPU, else the CPU; "webgpu"; "cpu") at
    /// `precision` ("f32" by default; "f16" needs WebGPU's shader-f16).
    pub async fn load(
        base_url: String,
        device: Option<String>,
        precision: Option<String>,
    ) -> Result<Embedder, JsError> {
        let device = options::parse_device(device.as_deref()).map_err(|e| JsError::new(&e))?;
        let precision = options::parse_precision(precision.as_deref()).map_err(|e| JsError::new(&e))?;
        // Every file first: a missing one fails before a device is opened.
        let mut files = Vec::with_capacity(MODEL_FILES.len());
        for (name, required) in MODEL_FILES {
            let url = options::file_url(&base_url, name);
            let bytes = fetch_bytes(&url).await?;
            if bytes.is_none() && required {
                return Err(JsError::new(&format!("{url}: not found (404); is the model served there?")));
            }
            files.push((url, bytes));
        }
        let mut take = |i: usize| files.get_mut(i).map(|(url, b)| (url.clone(), b.take()));
        let text = |(url, bytes): (String, Option<Vec<u8>>)| -> Result<Option<String>, JsError> {
            bytes
                .map(|b| String::from_utf8(b).map_err(|_| JsError::new(&format!("{url}: not UTF-8 text"))))
                .transpose()
        };
        let lost = || JsError::new("a model file went missing while loading");
        let config = text(take(0).ok_or_else(lost)?)?.ok_or_else(lost)?;
        let (tok_url, tok) = take(1).ok_or_else(lost)?;
        let tokenizer_json = text((tok_url.clone(), tok))?.ok_or_else(lost)?;
        let (weights_url, weights) = take(2).ok_or_else(lost)?;
        let sbert = text(take(3).ok_or_else(lost)?)?;
        let pooling = text(take(4).ok_or_else(lost)?)?;

        let config =
            model_config_from_json(Path::new(&base_url), &config, sbert.as_deref(), pooling.as_deref())
                .map_err(js)?;
        let tokenizer =
            SentenceTokenizer::from_json(&tok_url, &tokenizer_json, config.max_seq_length).map_err(js)?;
        let file = SafetensorsFile::from_bytes(&weights_url, weights.ok_or_else(lost)?).map_err(js)?;

        let session = Session::open(device).await.map_err(js)?;
        let caps = session.capabilities();
        let adapter = caps.device_name.clone();
        let dtypes: Vec<_> = caps.dtypes.iter().copied().collect();
        options::check_precision(precision, &dtypes, &adapter).map_err(|e| JsError::new(&e))?;
        let label = options::device_label(session.device());
        let opts = EmbedderOptions { precision, ..EmbedderOptions::default() };
        let inner = rlx_models::Embedder::from_parts(session, config, tokenizer, &file, opts).map_err(js)?;
        Ok(Embedder { inner, device: label, adapter })
    }

    /// `await embedder.embed(["…", "…"])`: one L2-normalised `Float32Array` per sentence, in
    /// order.
    pub async fn embed(&mut self, sentences: Vec<String>) -> Result<Array, JsError> {
        let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
        let out = self.inner.embed_async(&refs).await.map_err(js)?;
        Ok(out.iter().map(|e| Float32Array::from(e.as_slice())).collect())
    }

    /// The device that runs the model: "webgpu" or "cpu" (the fallback).
    #[wasm_bindgen(getter)]
    pub fn device(&self) -> String {
        self.device.to_string()
    }

    /// The adapter's name (WebGPU's adapter, or the CPU backend's device name).
    #[wasm_bindgen(getter)]
    pub fn adapter(&self) -> String {
        self.adapter.clone()
    }

    /// The length of each embedding.
    #[wasm_bindgen(getter)]
    pub fn dim(&self) -> usize {
        self.inner.dim()
    }

    /// Whether the model runs on the GPU (WebGPU).
    #[wasm_bindgen(getter, js_name = onGpu)]
    pub fn on_gpu(&self) -> bool {
        self.inner.device() == Device::Gpu
    }
}

fn js(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// The body of `url` by the page's (or worker's) `fetch`; `None` for a 404.
async fn fetch_bytes(url: &str) -> Result<Option<Vec<u8>>, JsError> {
    let global = js_sys::global();
    let promise = if let Some(window) = global.dyn_ref::<web_sys::Window>() {
        window.fetch_with_str(url)
    } else if let Some(worker) = global.dyn_ref::<web_sys::WorkerGlobalScope>() {
        worker.fetch_with_str(url)
    } else {
        return Err(JsError::new("no fetch here: load rlx-web in a page or a worker"));
    };
    let failed = |e: JsValue| JsError::new(&format!("fetching {url}: {e:?}"));
    let response: web_sys::Response =
        JsFuture::from(promise).await.map_err(failed)?.dyn_into().map_err(failed)?;
    if response.status() == 404 {
        return Ok(None);
    }
    if !response.ok() {
        return Err(JsError::new(&format!("fetching {url}: HTTP {}", response.status())));
    }
    let buffer = JsFuture::from(response.array_buffer().map_err(failed)?).await.map_err(failed)?;
    Ok(Some(Uint8Array::new(&buffer).to_vec()))
}
