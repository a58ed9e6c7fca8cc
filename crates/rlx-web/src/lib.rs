//! rlx-web: rlx in the browser. A wasm32 build (wasm-bindgen) exporting `Embedder` to
//! JavaScript: `await Embedder.load(baseUrl)` fetches config.json, model.safetensors and
//! tokenizer.json (and, when served, sentence_bert_config.json and 1_Pooling/config.json) from
//! `baseUrl`, opens WebGPU (the CPU backend, on the page's one thread, when the browser has no
//! WebGPU adapter or `device: "cpu"` is asked for), and `await embedder.embed([...])` returns
//! one `Float32Array` per sentence, L2-normalised as sentence-transformers makes them.
//!
//! Contract:
//! - Everything runs through rlx's async API (`Session::open`, `compile_async`,
//!   `run_async`): a page's thread cannot block, and the GPU answers on its event loop.
//! - `embedder.device` says which device runs ("webgpu" or "cpu"), `embedder.adapter` the
//!   adapter's name; a caller sees when the CPU fallback was taken.
//! - f16 precision needs f16 storage (WebGPU: `shader-f16`); a device without it (SwiftShader) is
//!   refused at load with an error saying so, and f32 (the default) runs everywhere.
//! - Every failure is a JavaScript `Error` with rlx's message; nothing panics on input.
//!
//! The parsing of the JavaScript-side options ([`options`]) is plain Rust, tested natively;
//! the JavaScript boundary (`js`) exists only in the wasm32 build.

pub mod options;

#[cfg(target_arch = "wasm32")]
mod js;
#[cfg(target_arch = "wasm32")]
pub use js::Embedder;
