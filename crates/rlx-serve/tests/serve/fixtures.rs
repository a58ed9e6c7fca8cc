//! The fixture models (a tiny Llama with a chat template, a tiny BERT embedder, a BERT whose
//! weights are NaN), a server started on them, and small HTTP helpers.

use rlx_serve::{Running, ServeConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A chat template in the style of Llama 2's over the fixture's vocabulary (`<s>` 1, `</s>` 2).
pub const CHAT_TEMPLATE: &str = "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures")
}

fn temp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-serve-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The tiny Llama checkpoint with a tokenizer.json and a chat template (context 64).
pub fn llama(tag: &str) -> PathBuf {
    let src = fixtures().join("decoders/llama");
    let dir = temp(&format!("llama-{tag}"));
    for name in ["config.json", "generation_config.json", "model.safetensors"] {
        std::fs::copy(src.join(name), dir.join(name)).unwrap();
    }
    std::fs::copy(fixtures().join("gguf_decoders/llama.tokenizer.json"), dir.join("tokenizer.json")).unwrap();
    let config = serde_json::json!({
        "chat_template": CHAT_TEMPLATE,
        "bos_token": {"__type": "AddedToken", "content": "<s>", "special": true},
        "eos_token": "</s>",
    });
    std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
    dir
}

const WORDS: [&str; 12] = ["[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "d", "e", "f", "g", "h", "i"];
const H: usize = 8;
const FFN: usize = 16;

/// A tiny BERT embedder (word-level vocabulary `a`..`i`, hidden 8, two layers); with `nan`,
/// its embedding LayerNorm weight is NaN so every embedding is.
pub fn bert(tag: &str, nan: bool) -> PathBuf {
    let dir = temp(&format!("bert-{tag}"));
    let config = serde_json::json!({
        "vocab_size": WORDS.len(), "hidden_size": H, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": FFN, "max_position_embeddings": 16, "type_vocab_size": 2,
        "layer_norm_eps": 1e-12, "hidden_act": "relu"
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    std::fs::write(dir.join("sentence_bert_config.json"), r#"{"max_seq_length": 8}"#).unwrap();
    let vocab: serde_json::Map<String, serde_json::Value> =
        WORDS.iter().enumerate().map(|(i, w)| (w.to_string(), serde_json::json!(i))).collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [2], "tokens": ["[SEP]"]}}},
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    write_weights(&dir.join("model.safetensors"), nan);
    dir
}

/// The BERT weights, each a deterministic pattern of multiples of 1/64, written as an F32
/// safetensors file (u64 header length, JSON header, little-endian data).
fn write_weights(path: &Path, nan: bool) {
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        ("embeddings.word_embeddings.weight".into(), vec![WORDS.len(), H]),
        ("embeddings.position_embeddings.weight".into(), vec![16, H]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, H]),
        ("embeddings.LayerNorm.weight".into(), vec![H]),
        ("embeddings.LayerNorm.bias".into(), vec![H]),
    ];
    for l in 0..2 {
        for (n, o, i) in [
            ("attention.self.query", H, H),
            ("attention.self.key", H, H),
            ("attention.self.value", H, H),
            ("attention.output.dense", H, H),
            ("intermediate.dense", FFN, H),
            ("output.dense", H, FFN),
        ] {
            shapes.push((format!("encoder.layer.{l}.{n}.weight"), vec![o, i]));
            shapes.push((format!("encoder.layer.{l}.{n}.bias"), vec![o]));
        }
        for n in ["attention.output.LayerNorm", "output.LayerNorm"] {
            shapes.push((format!("encoder.layer.{l}.{n}.weight"), vec![H]));
            shapes.push((format!("encoder.layer.{l}.{n}.bias"), vec![H]));
        }
    }
    let tensors: BTreeMap<String, Vec<usize>> = shapes.into_iter().collect();
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (t, (name, dims)) in tensors.iter().enumerate() {
        let start = data.len();
        let n: usize = dims.iter().product();
        for i in 0..n {
            let v = if nan && name == "embeddings.LayerNorm.weight" {
                f32::NAN
            } else {
                ((i * 37 + t * 11) % 128) as f32 / 64.0 - 1.0
            };
            data.extend_from_slice(&v.to_le_bytes());
        }
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": "F32", "shape": dims, "data_offsets": [start, data.len()]}),
        );
    }
    let h = serde_json::to_vec(&header).unwrap();
    let mut bytes = (h.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&h);
    bytes.extend_from_slice(&data);
    std::fs::write(path, bytes).unwrap();
}

/// A config on the CPU for the given models.
pub fn config(model: Option<PathBuf>, embedding_model: Option<PathBuf>) -> ServeConfig {
    let mut c = ServeConfig::new(model, embedding_model);
    c.device = rlx_models::Device::Cpu;
    c
}

/// A started, loaded server and its base URL.
pub struct Server {
    pub running: Running,
    pub url: String,
}

pub async fn start(config: ServeConfig) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut running = rlx_serve::start(config, listener).await.unwrap();
    tokio::time::timeout(Duration::from_secs(120), running.wait_loaded()).await.unwrap().unwrap();
    let url = format!("http://{}", running.local_addr());
    Server { running, url }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap()
}

pub async fn post(url: &str, body: serde_json::Value) -> reqwest::Response {
    client().post(url).json(&body).send().await.unwrap()
}

/// The value of a metric line `name` (with its labels) in the Prometheus text.
pub async fn metric(base: &str, name: &str) -> f64 {
    let text = client().get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no metric {name} in:\n{text}"))
}

/// Polls the metric until it reaches `want` (at most 10 s): for requests that must be queued.
pub async fn wait_metric(base: &str, name: &str, want: f64) {
    for _ in 0..200 {
        if metric(base, name).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} never reached {want}");
}

/// The `data:` payloads of an SSE body.
pub fn sse_data(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        .map(String::from)
        .collect()
}

/// Holds the generation worker at its next token until released (bounded: 30 s).
#[derive(Clone)]
pub struct Gate {
    pub release: std::sync::Arc<std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>>,
}

pub fn gate() -> (Gate, rlx_serve::TokenHook) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    let armed = std::sync::atomic::AtomicBool::new(true);
    let hook: rlx_serve::TokenHook = std::sync::Arc::new(move |_gone: &dyn Fn() -> bool| {
        if armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            let _ = rx.lock().unwrap().recv_timeout(Duration::from_secs(30));
        }
    });
    (Gate { release: std::sync::Arc::new(std::sync::Mutex::new(Some(tx))) }, hook)
}

impl Gate {
    pub fn open(&self) {
        if let Some(tx) = self.release.lock().unwrap().take() {
            let _ = tx.send(());
        }
    }
}
