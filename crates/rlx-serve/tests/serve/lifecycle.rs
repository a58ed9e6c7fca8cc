//! The lifecycle: health before and after loading, the metrics page, a client that goes away
//! mid-stream, and graceful shutdown with a request in flight.

use crate::fixtures::{client, config, gate, llama, metric, post, sse_data, start, wait_metric};
use futures_util::StreamExt as _;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_503_for_a_model_that_failed_to_load_and_metrics_are_prometheus_text() {
    // A model that cannot load: the server answers, /health says why with 503.
    let broken = std::env::temp_dir().join(format!("rlx-serve-broken-{}", std::process::id()));
    std::fs::create_dir_all(&broken).unwrap();
    let mut cfg = config(None, Some(broken.clone()));
    cfg.device = rlx_models::Device::Cpu;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut running = rlx_serve::start(cfg, listener).await.unwrap();
    let base = format!("http://{}", running.local_addr());
    let loaded = tokio::time::timeout(Duration::from_secs(60), running.wait_loaded()).await.unwrap();
    assert!(loaded.unwrap_err().to_string().contains("config.json"));
    let r = client().get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "error");
    let r = post(&format!("{base}/v1/embeddings"), json!({"input": "a"})).await;
    assert_eq!(r.status(), 503);
    assert!(running.shutdown().await);

    let server = start(config(Some(llama("health")), None)).await;
    let r = client().get(format!("{}/health", server.url)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = post(
        &format!("{}/v1/completions", server.url),
        json!({"prompt": "hi", "max_tokens": 3, "temperature": 0}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let r = client().get(format!("{}/metrics", server.url)).send().await.unwrap();
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = r.text().await.unwrap();
    for name in [
        "# TYPE rlx_requests_total counter",
        "# TYPE rlx_time_to_first_token_seconds histogram",
        "# TYPE rlx_time_per_output_token_seconds histogram",
        "rlx_queue_depth{queue=\"generate\"} 0",
        "rlx_requests_total{endpoint=\"completions\",status=\"200\"} 1",
        "rlx_completion_tokens_total 3",
    ] {
        assert!(text.contains(name), "missing {name} in:\n{text}");
    }
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_stream_frees_the_worker_at_the_next_token() {
    disconnect_mid_stream(1).await;
}

/// The same with continuous batching: the request leaves the batch and frees its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_stream_leaves_the_batch_at_the_next_token() {
    disconnect_mid_stream(3).await;
}

async fn disconnect_mid_stream(max_streams: usize) {
    let mut cfg = config(Some(llama(&format!("disconnect-{max_streams}"))), None);
    cfg.max_streams = max_streams;
    // At the first token, wait (bounded) until the server sees the client gone.
    let first = Arc::new(AtomicBool::new(true));
    let saw_gone = Arc::new(AtomicBool::new(false));
    let (f, s) = (first.clone(), saw_gone.clone());
    cfg.token_hook = Some(Arc::new(move |gone: &dyn Fn() -> bool| {
        if f.swap(false, Ordering::SeqCst) {
            for _ in 0..600 {
                if gone() {
                    s.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }));
    let server = start(cfg).await;
    let chat = format!("{}/v1/chat/completions", server.url);
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 40, "temperature": 0, "stream": true});
    let r = post(&chat, body).await;
    let mut stream = r.bytes_stream();
    let first_chunk = stream.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first_chunk).contains("assistant"));
    // The role chunk goes out before any token: wait until the worker has the first token (and
    // is held in the hook), so the client leaves mid-generation, not while queued.
    wait_metric(&server.url, "rlx_time_to_first_token_seconds_count", 1.0).await;
    drop(stream);
    wait_metric(&server.url, "rlx_requests_cancelled_total", 1.0).await;
    assert!(saw_gone.load(Ordering::SeqCst), "the worker never saw the client go");
    // One token and no more: the generation stopped at the next token.
    assert_eq!(metric(&server.url, "rlx_completion_tokens_total").await, 1.0);
    // The worker is free: the next request is answered.
    let r = post(
        &chat,
        json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "temperature": 0}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_accepting_and_drains_the_request_in_flight() {
    let mut cfg = config(Some(llama("shutdown")), None);
    let (gate, hook) = gate();
    cfg.token_hook = Some(hook);
    let server = start(cfg).await;
    let body = json!({"prompt": "hello", "max_tokens": 5, "temperature": 0, "stream": true});
    let r = post(&format!("{}/v1/completions", server.url), body).await;
    assert_eq!(r.status(), 200);
    wait_metric(&server.url, "rlx_time_to_first_token_seconds_count", 1.0).await;
    let addr = server.running.local_addr();
    let shutdown = tokio::spawn(server.running.shutdown());
    // New connections are refused once the listener is closed.
    let mut refused = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(refused, "the server still accepts connections after shutdown");
    gate.open();
    let data = sse_data(&r.text().await.unwrap());
    assert_eq!(data.last().unwrap(), "[DONE]", "the request in flight finished");
    assert!(
        tokio::time::timeout(Duration::from_secs(30), shutdown).await.unwrap().unwrap(),
        "drained in time"
    );
}
