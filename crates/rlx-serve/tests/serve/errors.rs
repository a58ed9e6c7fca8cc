//! The error table: each bad input or overload gets its status and an OpenAI-shaped body, and
//! the server answers the next request as usual.

use crate::fixtures::{bert, client, config, gate, llama, metric, post, start, wait_metric};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Checks the status and the body's shape; returns the `error` object.
async fn refused(r: reqwest::Response, status: u16) -> Value {
    assert_eq!(r.status(), status);
    let v: Value = r.json().await.unwrap();
    let e = v["error"].clone();
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    assert!(e["type"].is_string(), "{v}");
    assert!(
        e.as_object().unwrap().contains_key("param") && e.as_object().unwrap().contains_key("code"),
        "{v}"
    );
    e
}

fn user(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_out_of_context_requests_are_400s() {
    let server = start(config(Some(llama("errors")), Some(bert("errors", false)))).await;
    let chat = format!("{}/v1/chat/completions", server.url);
    let raw = client()
        .post(&chat)
        .header("content-type", "application/json")
        .body("{\"messages\": [")
        .send()
        .await
        .unwrap();
    let e = refused(raw, 400).await;
    assert_eq!(e["type"], "invalid_request_error");

    let e = refused(post(&chat, json!({"messages": user("hi"), "frobnicate": 1})).await, 400).await;
    assert!(e["message"].as_str().unwrap().contains("frobnicate"), "{e}");
    let e = refused(post(&chat, json!({"messages": user("hi"), "temperature": "hot"})).await, 400).await;
    assert_eq!(e["param"], "temperature", "{e}");
    let e = refused(post(&chat, json!({"messages": user("hi"), "n": 2})).await, 400).await;
    assert_eq!(e["param"], "n");
    let e = refused(post(&chat, json!({"messages": user("hi"), "temperature": 3.5})).await, 400).await;
    assert_eq!(e["param"], "temperature");

    // The fixture's context is 64 tokens: a longer prompt, or max_tokens past what is left.
    let long = vec!["hello"; 80].join(" ");
    let e = refused(post(&chat, json!({"messages": user(&long)})).await, 400).await;
    assert_eq!(e["code"], "context_length_exceeded");
    assert!(e["message"].as_str().unwrap().contains("holds 64"), "{e}");
    let e = refused(post(&chat, json!({"messages": user("hi"), "max_tokens": 64})).await, 400).await;
    assert_eq!(e["param"], "max_tokens");
    assert!(e["message"].as_str().unwrap().contains("64 tokens"), "{e}");
    let e =
        refused(post(&format!("{}/v1/completions", server.url), json!({"prompt": long})).await, 400).await;
    assert_eq!(e["param"], "prompt");

    let e = refused(post(&format!("{}/v1/embeddings", server.url), json!({"input": []})).await, 400).await;
    assert_eq!(e["param"], "input");
    let e =
        refused(post(&format!("{}/v1/embeddings", server.url), json!({"input": [1, 2]})).await, 400).await;
    assert_eq!(e["param"], "input");
    refused(client().get(format!("{}/v1/nothing", server.url)).send().await.unwrap(), 404).await;

    // Still serving.
    let r = post(&chat, json!({"messages": user("hi"), "max_tokens": 2, "temperature": 0})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(metric(&server.url, "rlx_requests_total{endpoint=\"chat\",status=\"400\"}").await, 7.0);
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_wrong_api_key_is_401() {
    let mut cfg = config(None, Some(bert("key", false)));
    cfg.api_key = Some("sekrit".into());
    let server = start(cfg).await;
    let url = format!("{}/v1/embeddings", server.url);
    let body = json!({"input": "a b"});
    let e = refused(client().post(&url).json(&body).send().await.unwrap(), 401).await;
    assert_eq!(e["code"], "invalid_api_key");
    assert!(e["message"].as_str().unwrap().contains("Authorization: Bearer"), "{e}");
    refused(client().post(&url).bearer_auth("guess").json(&body).send().await.unwrap(), 401).await;
    refused(client().get(format!("{}/v1/models", server.url)).send().await.unwrap(), 401).await;
    let r = client().post(&url).bearer_auth("sekrit").json(&body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    // Health and metrics stay open for load balancers and scrapers.
    assert_eq!(client().get(format!("{}/health", server.url)).send().await.unwrap().status(), 200);
    assert_eq!(client().get(format!("{}/metrics", server.url)).send().await.unwrap().status(), 200);
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_past_the_limit_is_413_and_slow_clients_time_out() {
    let mut cfg = config(None, Some(bert("limits", false)));
    cfg.body_limit = 4096;
    cfg.header_timeout = Duration::from_millis(500);
    cfg.body_timeout = Duration::from_millis(500);
    let server = start(cfg).await;
    let url = format!("{}/v1/embeddings", server.url);
    let big = vec!["a"; 4000].join(" ");
    let e = refused(post(&url, json!({"input": big})).await, 413).await;
    assert!(e["message"].as_str().unwrap().contains("4096"), "{e}");

    let addr = server.running.local_addr();
    // Headers that never finish: the server closes the connection.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the server kept a connection whose headers never came");
    let text = String::from_utf8_lossy(&buf);
    assert!(buf.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");

    // A body that never finishes: 408 with an error body.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"input\"")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf)).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"error\""), "{text}");

    assert_eq!(post(&url, json!({"input": "a b"})).await.status(), 200, "still serving");
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_429_with_retry_after() {
    let mut cfg = config(Some(llama("queue")), None);
    cfg.max_streams = 1;
    cfg.queue = 1;
    let (gate, hook) = gate();
    cfg.token_hook = Some(hook);
    let server = start(cfg).await;
    let chat = format!("{}/v1/chat/completions", server.url);
    let body = json!({"messages": user("hi"), "max_tokens": 4, "temperature": 0});
    // The first request runs and is held at its first token; the second waits in the queue.
    let first = tokio::spawn({
        let (chat, body) = (chat.clone(), body.clone());
        async move { post(&chat, body).await.status() }
    });
    wait_metric(&server.url, "rlx_time_to_first_token_seconds_count", 1.0).await;
    let second = tokio::spawn({
        let (chat, body) = (chat.clone(), body.clone());
        async move { post(&chat, body).await.status() }
    });
    wait_metric(&server.url, "rlx_queue_depth{queue=\"generate\"}", 1.0).await;
    let r = post(&chat, body.clone()).await;
    assert_eq!(r.headers()["retry-after"], "1");
    let e = refused(r, 429).await;
    assert_eq!(e["code"], "queue_full");
    assert_eq!(e["type"], "rate_limit_error");
    gate.open();
    assert_eq!(first.await.unwrap(), 200);
    assert_eq!(second.await.unwrap(), 200);
    assert_eq!(post(&chat, body).await.status(), 200, "slots come back");
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nan_from_the_model_is_500_and_the_server_stays_up() {
    let server = start(config(None, Some(bert("nan", true)))).await;
    let url = format!("{}/v1/embeddings", server.url);
    for _ in 0..2 {
        let e = refused(post(&url, json!({"input": ["a b", "c"]})).await, 500).await;
        assert_eq!(e["type"], "server_error");
        assert!(e["message"].as_str().unwrap().contains("NaN"), "{e}");
        assert_eq!(client().get(format!("{}/health", server.url)).send().await.unwrap().status(), 200);
    }
    assert!(server.running.shutdown().await);
}

/// A language model whose weights are all NaN: chat and completions (whole and streamed) are a
/// 500 naming the NaN, never tokens picked from NaN logits, and the server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nan_logits_are_500_and_the_server_stays_up() {
    nan_logits(1).await;
}

/// The same with continuous batching: the NaN is found in the prefill (the first token) and
/// the batch serves the next requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nan_logits_are_500_with_batching_too() {
    nan_logits(2).await;
}

async fn nan_logits(max_streams: usize) {
    let dir = llama(&format!("nan-logits-{max_streams}"));
    let weights = dir.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let header = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    bytes[8 + header..].fill(0xff);
    std::fs::write(&weights, bytes).unwrap();
    let mut cfg = config(Some(dir), None);
    cfg.max_streams = max_streams;
    let server = start(cfg).await;
    let chat = format!("{}/v1/chat/completions", server.url);
    let completions = format!("{}/v1/completions", server.url);
    for _ in 0..2 {
        let e = refused(post(&chat, json!({"messages": user("hello"), "max_tokens": 4})).await, 500).await;
        assert!(e["message"].as_str().unwrap().contains("NaN"), "{e}");
        let e = refused(post(&completions, json!({"prompt": "hello", "max_tokens": 4})).await, 500).await;
        assert!(e["message"].as_str().unwrap().contains("NaN"), "{e}");
        // Streamed: the error comes before any token, so it is still a plain 500.
        let r = post(&chat, json!({"messages": user("hello"), "max_tokens": 4, "stream": true})).await;
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert!(body.contains("NaN"), "{status}: {body}");
        assert!(!body.contains("[DONE]") || status == 500, "{status}: {body}");
        assert_eq!(client().get(format!("{}/health", server.url)).send().await.unwrap().status(), 200);
    }
    assert!(server.running.shutdown().await);
}
