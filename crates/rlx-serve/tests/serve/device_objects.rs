//! The live-object gauges of `/metrics` (`rlx_device_live_objects`, `rlx_device_buffer_bytes`):
//! absent on the CPU, which counts nothing; on Vulkan (lavapipe in CI) present for both workers
//! and flat over repeated requests once warm. Vulkan that cannot be opened fails under
//! `RLX_REQUIRE_GPU=1` and is skipped loudly otherwise.

use crate::fixtures::{bert, client, config, llama, post, start};
use rlx_models::Device;
use serde_json::json;
use std::collections::BTreeMap;

/// Every `rlx_device_*` sample of the metrics page, by its name with labels.
async fn device_gauges(base: &str) -> BTreeMap<String, i64> {
    let text = client().get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|l| l.starts_with("rlx_device_"))
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap();
            (name.to_string(), value.parse().unwrap())
        })
        .collect()
}

/// A few completions and embeddings, each checked for 200.
async fn round(base: &str) {
    for (i, prompt) in ["hello", "hello world", "a b c"].iter().enumerate() {
        let r = post(
            &format!("{base}/v1/completions"),
            json!({"prompt": prompt, "max_tokens": 1 + i, "temperature": 0}),
        )
        .await;
        assert_eq!(r.status(), 200);
        let inputs = &["a b", "c d e"][..=i.min(1)];
        let r = post(&format!("{base}/v1/embeddings"), json!({ "input": inputs })).await;
        assert_eq!(r.status(), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cpu_shows_no_live_objects() {
    let server = start(config(Some(llama("live-cpu")), Some(bert("live-cpu", false)))).await;
    round(&server.url).await;
    let gauges = device_gauges(&server.url).await;
    assert!(gauges.is_empty(), "the CPU counts nothing, yet /metrics shows {gauges:?}");
    assert!(server.running.shutdown().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vulkan_live_objects_show_per_worker_and_stay_flat_over_requests() {
    if rlx_test_support::open(Device::Vulkan, "serve live objects").is_none() {
        return;
    }
    let mut cfg = config(Some(llama("live-vk")), Some(bert("live-vk", false)));
    cfg.device = Device::Vulkan;
    let server = start(cfg).await;
    // Loaded: both workers show their device's counters (the weights go up with the first
    // compiled graph, so they may still be at 0).
    let loaded = device_gauges(&server.url).await;
    assert_eq!(loaded.len(), 12, "5 kinds and the bytes for each worker: {loaded:?}");
    // Warm (every graph these requests need compiled, the weights on the device), then the same
    // requests again and again: nothing more is held.
    round(&server.url).await;
    round(&server.url).await;
    let warm = device_gauges(&server.url).await;
    for worker in ["generate", "embed"] {
        let buffers = format!("rlx_device_live_objects{{kind=\"buffers\",worker=\"{worker}\"}}");
        let bytes = format!("rlx_device_buffer_bytes{{worker=\"{worker}\"}}");
        assert!(warm[&buffers] > 0 && warm[&bytes] > 0, "{worker} holds nothing after requests: {warm:?}");
    }
    for _ in 0..5 {
        round(&server.url).await;
    }
    let after = device_gauges(&server.url).await;
    assert_eq!(after, warm, "the live objects changed over 15 more requests of each kind");
    assert!(server.running.shutdown().await);
}
