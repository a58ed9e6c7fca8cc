//! Continuous batching (`max_streams` > 1): concurrent requests are decoded in the same steps,
//! and each answer still equals the model's own generation of that request alone; a batch the
//! device cannot hold is refused at start, naming how many streams fit.

use crate::answers::{chat_prompt, messages, reference};
use crate::fixtures::{config, gate, llama, metric, post, sse_data, start, wait_metric};
use rlx_models::{causal_tokenizer, SamplingSpec};
use serde_json::{json, Value};
use std::time::Duration;

/// What one request asks, and what the model alone answers to it.
struct Case {
    body: Value,
    chat: bool,
    want: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_share_decode_steps_and_each_equals_its_run_alone() {
    let dir = llama("batched");
    let mut cfg = config(Some(dir.clone()), None);
    cfg.max_streams = 4;
    // Hold the worker at the first token of the first request until every other one is
    // queued: the next steps then carry four requests (and admit the last two as slots free).
    let (gate, hook) = gate();
    cfg.token_hook = Some(hook);
    let server = start(cfg).await;
    let url = server.url.clone();

    let tok = causal_tokenizer(&dir).unwrap().unwrap();
    let ids =
        |s: &str| -> Vec<i32> { tok.encode(s, true).unwrap().get_ids().iter().map(|&i| i as i32).collect() };
    let greedy = SamplingSpec::greedy();
    let sampled = SamplingSpec { temperature: 0.9, top_k: None, top_p: 0.95, repetition_penalty: 1.0 };
    let mut cases = vec![Case {
        body: json!({"messages": messages(), "temperature": 0, "max_tokens": 12}),
        chat: true,
        want: reference(&dir, &chat_prompt(&dir), 12, &greedy, 0).0,
    }];
    for (prompt, max) in [("hello world", 10), ("once upon a time", 7), ("good morning", 14)] {
        cases.push(Case {
            body: json!({"prompt": prompt, "temperature": 0, "max_tokens": max, "stream": max == 7}),
            chat: false,
            want: reference(&dir, &ids(prompt), max, &greedy, 0).0,
        });
    }
    for seed in [7u32, 8] {
        cases.push(Case {
            body: json!({"prompt": "hello world", "temperature": 0.9, "top_p": 0.95, "seed": seed, "max_tokens": 9}),
            chat: false,
            want: reference(&dir, &ids("hello world"), 9, &sampled, seed).0,
        });
    }
    // The two seeds must draw differently, or the check below could not tell their rows apart.
    assert_ne!(cases[4].want, cases[5].want, "seeds 7 and 8 drew the same text");

    let mut tasks = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let path = if case.chat { "chat/completions" } else { "completions" };
        let (target, body) = (format!("{url}/v1/{path}"), case.body.clone());
        tasks.push(tokio::spawn(async move { (post(&target, body).await, i) }));
        if i == 0 {
            // The first one is admitted and held at its first token before the rest arrive.
            wait_metric(&url, "rlx_time_to_first_token_seconds_count", 1.0).await;
        }
    }
    wait_metric(&url, "rlx_queue_depth{queue=\"generate\"}", (cases.len() - 1) as f64).await;
    gate.open();
    for task in tasks {
        let (r, i) = tokio::time::timeout(Duration::from_secs(120), task).await.unwrap().unwrap();
        assert_eq!(r.status(), 200, "request {i}");
        let case = &cases[i];
        let text = match case.body["stream"].as_bool() == Some(true) {
            true => {
                let data = sse_data(&r.text().await.unwrap());
                assert_eq!(data.last().unwrap(), "[DONE]");
                data[..data.len() - 1]
                    .iter()
                    .map(|d| {
                        serde_json::from_str::<Value>(d).unwrap()["choices"][0]["text"]
                            .as_str()
                            .unwrap()
                            .to_string()
                    })
                    .collect()
            }
            false => {
                let v: Value = r.json().await.unwrap();
                let field =
                    if case.chat { &v["choices"][0]["message"]["content"] } else { &v["choices"][0]["text"] };
                field.as_str().unwrap().to_string()
            }
        };
        assert_eq!(text, case.want, "request {i}: {}", case.body);
    }
    // Some steps carried more than one request.
    let steps = metric(&url, "rlx_decode_step_streams_count").await;
    let lone = metric(&url, "rlx_decode_step_streams_bucket{le=\"1\"}").await;
    let up_to_four = metric(&url, "rlx_decode_step_streams_bucket{le=\"4\"}").await;
    assert!(steps > 0.0 && lone < steps, "no step carried two requests: {lone} of {steps} steps had one");
    assert_eq!(up_to_four, steps, "a step carried more than --max-streams 4");
    assert_eq!(metric(&url, "rlx_requests_cancelled_total").await, 0.0);
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_the_device_cannot_hold_is_refused_at_start_naming_what_fits() {
    let mut cfg = config(Some(llama("batch-too-big")), None);
    cfg.max_streams = 1 << 40;
    cfg.queue = 1;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut running = rlx_serve::start(cfg, listener).await.unwrap();
    let loaded = tokio::time::timeout(Duration::from_secs(60), running.wait_loaded()).await.unwrap();
    let e = loaded.unwrap_err().to_string();
    assert!(e.contains("streams") && e.contains("at most"), "{e}");
    assert!(running.shutdown().await);
}
