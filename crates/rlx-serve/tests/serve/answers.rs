//! The answers: chat and completions, whole and streamed, equal the model's own greedy (and
//! seeded) generation; embeddings equal the embedder's and are batched across requests.

use crate::fixtures::{bert, client, config, llama, metric, post, sse_data, start, wait_metric};
use rlx_models::{
    causal_tokenizer, load_causal_lm, ChatTemplate, DecoderOptions, Device, Message, SamplingSpec,
};
use serde_json::{json, Value};
use std::path::Path;

/// The text, token count and finish reason of the model's own generation after `prompt`,
/// stopping at `stops` as the server does.
pub fn reference(
    dir: &Path,
    prompt: &[i32],
    max: usize,
    spec: &SamplingSpec,
    seed: u32,
) -> (String, usize, &'static str) {
    let mut model = load_causal_lm(dir, Device::Cpu, DecoderOptions::default()).unwrap();
    let tok = causal_tokenizer(dir).unwrap().unwrap();
    let mut kept = Vec::new();
    let mut reason = "length";
    let all = model
        .generate(prompt, max, spec, seed, &mut |t| {
            if t == 2 {
                reason = "stop";
                false
            } else {
                kept.push(t as u32);
                true
            }
        })
        .unwrap();
    (tok.decode(&kept, true).unwrap(), all.len(), reason)
}

pub fn chat_prompt(dir: &Path) -> Vec<i32> {
    let template = ChatTemplate::for_model(dir).unwrap();
    let text = template.render(&[Message::system("be brief"), Message::user("hello there")], true).unwrap();
    let tok = causal_tokenizer(dir).unwrap().unwrap();
    tok.encode(text, false).unwrap().get_ids().iter().map(|&i| i as i32).collect()
}

pub fn messages() -> Value {
    json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_and_completions_equal_the_models_generation() {
    let dir = llama("answers");
    let server = start(config(Some(dir.clone()), None)).await;
    let url = &server.url;

    // Chat, whole.
    let prompt = chat_prompt(&dir);
    let (want, count, reason) = reference(&dir, &prompt, 12, &SamplingSpec::greedy(), 0);
    let r = post(
        &format!("{url}/v1/chat/completions"),
        json!({"messages": messages(), "temperature": 0, "max_tokens": 12}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["message"]["content"], want.as_str(), "{v}");
    assert_eq!(v["choices"][0]["finish_reason"], reason);
    assert_eq!(v["usage"]["prompt_tokens"], prompt.len());
    assert_eq!(v["usage"]["completion_tokens"], count);
    assert_eq!(v["usage"]["total_tokens"], prompt.len() + count);

    // Chat, streamed: the deltas join to the same text; role first, finish, usage, [DONE].
    let body = json!({"messages": messages(), "temperature": 0, "max_tokens": 12, "stream": true,
        "stream_options": {"include_usage": true}});
    let r = post(&format!("{url}/v1/chat/completions"), body).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let data = sse_data(&r.text().await.unwrap());
    assert_eq!(data.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> =
        data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(text, want);
    let finish: Vec<&Value> = chunks.iter().filter(|c| !c["choices"][0]["finish_reason"].is_null()).collect();
    assert_eq!(finish.len(), 1);
    assert_eq!(finish[0]["choices"][0]["finish_reason"], reason);
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"].as_array().unwrap().len(), 0);
    assert_eq!(usage["usage"]["completion_tokens"], count);

    // Completions, whole and streamed.
    let tok = causal_tokenizer(&dir).unwrap().unwrap();
    let ids: Vec<i32> =
        tok.encode("hello world", true).unwrap().get_ids().iter().map(|&i| i as i32).collect();
    let (want, count, _) = reference(&dir, &ids, 10, &SamplingSpec::greedy(), 0);
    let r = post(
        &format!("{url}/v1/completions"),
        json!({"prompt": "hello world", "temperature": 0, "max_tokens": 10}),
    )
    .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["choices"][0]["text"], want.as_str(), "{v}");
    assert_eq!(v["usage"]["completion_tokens"], count);
    let r = post(
        &format!("{url}/v1/completions"),
        json!({"prompt": ["hello world"], "temperature": 0, "max_tokens": 10, "stream": true}),
    )
    .await;
    let data = sse_data(&r.text().await.unwrap());
    assert_eq!(data.last().unwrap(), "[DONE]");
    let text: String = data[..data.len() - 1]
        .iter()
        .map(|d| {
            serde_json::from_str::<Value>(d).unwrap()["choices"][0]["text"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(text, want);

    // Sampling with a seed is the model's draw with that seed, and repeatable.
    let spec = SamplingSpec { temperature: 0.9, top_k: None, top_p: 0.95, repetition_penalty: 1.0 };
    let (want, _, _) = reference(&dir, &ids, 10, &spec, 7);
    for _ in 0..2 {
        let body =
            json!({"prompt": "hello world", "temperature": 0.9, "top_p": 0.95, "seed": 7, "max_tokens": 10});
        let v: Value = post(&format!("{url}/v1/completions"), body).await.json().await.unwrap();
        assert_eq!(v["choices"][0]["text"], want.as_str());
    }

    // A stop string cuts the text before it and ends the generation.
    let (full, _, _) = reference(&dir, &ids, 10, &SamplingSpec::greedy(), 0);
    if let Some(cut) = full.char_indices().nth(3).map(|(i, _)| i).filter(|&i| i > 0) {
        let stop = &full[cut..full.len().min(cut + 2)];
        let expected = &full[..full.find(stop).unwrap()];
        let body = json!({"prompt": "hello world", "temperature": 0, "max_tokens": 10, "stop": [stop]});
        let v: Value = post(&format!("{url}/v1/completions"), body).await.json().await.unwrap();
        assert_eq!(v["choices"][0]["text"], expected, "stop {stop:?} in {full:?}");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
    }

    let v: Value = client().get(format!("{url}/v1/models")).send().await.unwrap().json().await.unwrap();
    assert_eq!(v["data"][0]["id"], dir.file_name().unwrap().to_str().unwrap());
    assert!(metric(url, "rlx_completion_tokens_total").await > 0.0);
    assert!(metric(url, "rlx_time_to_first_token_seconds_count").await >= 6.0);
    assert!(metric(url, "rlx_time_per_output_token_seconds_count").await > 0.0);
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_equal_the_embedders_and_are_batched_across_requests() {
    let dir = bert("answers", false);
    let mut cfg = config(None, Some(dir.clone()));
    // Hold the worker on its first batch so that the next requests queue behind it.
    let entered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let in_hook = entered.clone();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    let first = std::sync::atomic::AtomicBool::new(true);
    cfg.batch_hook = Some(std::sync::Arc::new(move || {
        if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            in_hook.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = rx.lock().unwrap().recv_timeout(std::time::Duration::from_secs(30));
        }
    }));
    let server = start(cfg).await;
    let url = server.url.clone();

    let inputs = [json!("a b c"), json!(["d e", "f g h i"]), json!(["a", "i h g f e d c b a"])];
    let mut tasks = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let (url, input) = (url.clone(), input.clone());
        tasks.push(tokio::spawn(async move {
            let r = post(&format!("{url}/v1/embeddings"), json!({"input": input, "model": "x"})).await;
            assert_eq!(r.status(), 200);
            r.json::<Value>().await.unwrap()
        }));
        if i == 0 {
            // The first is taken by the worker (and held); the others wait in the queue.
            for _ in 0..200 {
                if entered.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            assert!(
                entered.load(std::sync::atomic::Ordering::SeqCst),
                "the worker never took the first request"
            );
        }
    }
    wait_metric(&url, "rlx_queue_depth{queue=\"embed\"}", 2.0).await;
    tx.send(()).unwrap();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    assert_eq!(
        metric(&url, "rlx_embedding_batch_requests_count").await,
        1.0,
        "one encode call for all three"
    );
    assert_eq!(metric(&url, "rlx_embedding_batch_requests_sum").await, 3.0);

    let mut emb = rlx_models::Embedder::load(&dir, Device::Cpu, Default::default()).unwrap();
    let texts = ["a b c", "d e", "f g h i", "a", "i h g f e d c b a"];
    let want = emb.embed(&texts).unwrap();
    let got: Vec<Vec<f32>> = answers
        .iter()
        .flat_map(|a| a["data"].as_array().unwrap().clone())
        .map(|d| d["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect())
        .collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.len(), w.len());
        for (a, b) in g.iter().zip(w) {
            assert!((a - b).abs() <= 1e-5, "{g:?} vs {w:?}");
        }
    }
    assert_eq!(answers[1]["data"][1]["index"], 1);
    assert_eq!(answers[0]["usage"]["prompt_tokens"], 5, "[CLS] a b c [SEP]");

    // base64: the same floats as little-endian bytes (what the openai Python client asks for).
    use base64::Engine as _;
    let v: Value =
        post(&format!("{url}/v1/embeddings"), json!({"input": "a b c", "encoding_format": "base64"}))
            .await
            .json()
            .await
            .unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let floats: Vec<f32> = bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    // (Alone, not batched with the others: equal within the same tolerance.)
    assert_eq!(floats.len(), got[0].len());
    assert!(floats.iter().zip(&got[0]).all(|(a, b)| (a - b).abs() <= 1e-5), "{floats:?} vs {:?}", got[0]);
    assert!(server.running.shutdown().await);
}

/// A completion prompt given as token ids (OpenAI's array-of-tokens form) is the same request
/// as its text; an id outside the vocabulary or two prompts are 400s naming the problem.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_of_token_ids_equals_its_text() {
    let dir = llama("token-ids");
    let server = start(config(Some(dir.clone()), None)).await;
    let url = format!("{}/v1/completions", server.url);
    let tok = causal_tokenizer(&dir).unwrap().unwrap();
    let ids: Vec<u32> = tok.encode("hello world", true).unwrap().get_ids().to_vec();
    let (want, count, _) =
        reference(&dir, &ids.iter().map(|&i| i as i32).collect::<Vec<_>>(), 8, &SamplingSpec::greedy(), 0);
    for prompt in [json!(ids), json!([ids])] {
        let v: Value = post(&url, json!({"prompt": prompt, "temperature": 0, "max_tokens": 8}))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(v["choices"][0]["text"], want.as_str(), "{v}");
        assert_eq!(v["usage"]["prompt_tokens"], ids.len());
        assert_eq!(v["usage"]["completion_tokens"], count);
    }
    let vocab = 256; // the tiny fixture's
    for (prompt, needle) in [
        (json!([1, vocab, 3]), format!("token id {vocab} at position 1")),
        (json!([1, -2]), "token id -2".to_string()),
        (json!([[1, 2], [3]]), "2 prompts".to_string()),
        (json!([]), "empty".to_string()),
    ] {
        let r = post(&url, json!({"prompt": prompt, "max_tokens": 2})).await;
        assert_eq!(r.status(), 400, "{prompt}");
        let v: Value = r.json().await.unwrap();
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&needle), "{prompt}: {msg}");
    }
    assert!(server.running.shutdown().await);
}
