//! [`Metrics`]: the server's Prometheus metrics, in a registry of its own, rendered as the text
//! exposition format by `GET /metrics`.
//!
//! - `rlx_requests_total{endpoint, status}`: answered requests.
//! - `rlx_prompt_tokens_total`, `rlx_completion_tokens_total`, `rlx_embedding_inputs_total`.
//! - `rlx_queue_depth{queue="generate"|"embed"}`: requests admitted and not yet started.
//! - `rlx_requests_cancelled_total`: generations stopped early because the client went away.
//! - `rlx_time_to_first_token_seconds`: from admission to the first token (queue wait included).
//! - `rlx_time_per_output_token_seconds`: between consecutive tokens of a generation.
//! - `rlx_embedding_batch_requests`: requests per encode call of the embedding worker.
//! - `rlx_decode_step_streams`: requests advanced by each batched decode step (continuous
//!   batching; nothing when generation runs one request at a time).
//! - `rlx_device_live_objects{worker="generate"|"embed", kind}` and
//!   `rlx_device_buffer_bytes{worker}`: the device objects each worker's model holds (what
//!   `rlx bench soak` reads: `Session::live_objects`, counted by the drivers; `kind` is
//!   `buffers`, `pipelines`, `bind_groups`, `command_buffers` or `other`). Each worker sets them
//!   after loading and after every request (generation) or batch (embeddings), so they read
//!   what stays held between requests. Absent for a model on the CPU, which counts nothing.

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};
use rlx_models::LiveObjects;

/// See the module doc.
pub struct Metrics {
    registry: Registry,
    pub requests: IntCounterVec,
    pub prompt_tokens: IntCounter,
    pub completion_tokens: IntCounter,
    pub embedding_inputs: IntCounter,
    pub queue_depth: IntGaugeVec,
    pub cancelled: IntCounter,
    pub ttft: Histogram,
    pub per_token: Histogram,
    pub embed_batch: Histogram,
    pub step_streams: Histogram,
    pub live_objects: IntGaugeVec,
    pub buffer_bytes: IntGaugeVec,
}

/// Latency buckets from 1 ms to about 30 s.
fn latency_buckets() -> Vec<f64> {
    vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]
}

impl Metrics {
    /// Builds and registers every metric.
    pub fn new() -> Result<Metrics, prometheus::Error> {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new("rlx_requests_total", "Requests answered, by endpoint and HTTP status"),
            &["endpoint", "status"],
        )?;
        let prompt_tokens = IntCounter::new("rlx_prompt_tokens_total", "Prompt tokens of generations")?;
        let completion_tokens = IntCounter::new("rlx_completion_tokens_total", "Tokens generated")?;
        let embedding_inputs = IntCounter::new("rlx_embedding_inputs_total", "Texts embedded")?;
        let queue_depth = IntGaugeVec::new(
            Opts::new("rlx_queue_depth", "Requests admitted and waiting for their worker"),
            &["queue"],
        )?;
        let cancelled = IntCounter::new(
            "rlx_requests_cancelled_total",
            "Generations stopped early because the client disconnected",
        )?;
        let ttft = Histogram::with_opts(
            HistogramOpts::new(
                "rlx_time_to_first_token_seconds",
                "From admission to the first generated token, queue wait included",
            )
            .buckets(latency_buckets()),
        )?;
        let per_token = Histogram::with_opts(
            HistogramOpts::new(
                "rlx_time_per_output_token_seconds",
                "Time between consecutive generated tokens",
            )
            .buckets(latency_buckets()),
        )?;
        let embed_batch = Histogram::with_opts(
            HistogramOpts::new(
                "rlx_embedding_batch_requests",
                "Requests per encode call of the embedding worker",
            )
            .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]),
        )?;
        let step_streams = Histogram::with_opts(
            HistogramOpts::new(
                "rlx_decode_step_streams",
                "Requests advanced by one batched decode step (continuous batching)",
            )
            .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]),
        )?;
        let live_objects = IntGaugeVec::new(
            Opts::new(
                "rlx_device_live_objects",
                "Device objects a worker's model holds between requests, by kind (absent on the CPU)",
            ),
            &["worker", "kind"],
        )?;
        let buffer_bytes = IntGaugeVec::new(
            Opts::new(
                "rlx_device_buffer_bytes",
                "Bytes of device memory bound to a worker's live buffers (absent on the CPU)",
            ),
            &["worker"],
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(prompt_tokens.clone()))?;
        registry.register(Box::new(completion_tokens.clone()))?;
        registry.register(Box::new(embedding_inputs.clone()))?;
        registry.register(Box::new(queue_depth.clone()))?;
        registry.register(Box::new(cancelled.clone()))?;
        registry.register(Box::new(ttft.clone()))?;
        registry.register(Box::new(per_token.clone()))?;
        registry.register(Box::new(embed_batch.clone()))?;
        registry.register(Box::new(step_streams.clone()))?;
        registry.register(Box::new(live_objects.clone()))?;
        registry.register(Box::new(buffer_bytes.clone()))?;
        // Both queues show from the start, at 0.
        queue_depth.with_label_values(&["generate"]).set(0);
        queue_depth.with_label_values(&["embed"]).set(0);
        Ok(Metrics {
            registry,
            requests,
            prompt_tokens,
            completion_tokens,
            embedding_inputs,
            queue_depth,
            cancelled,
            ttft,
            per_token,
            embed_batch,
            step_streams,
            live_objects,
            buffer_bytes,
        })
    }

    /// Sets the live-object gauges of `worker` (`generate` or `embed`) from its model's
    /// session; `None` (the CPU) sets nothing.
    pub fn record_live(&self, worker: &str, live: Option<LiveObjects>) {
        let Some(l) = live else { return };
        for (kind, n) in [
            ("buffers", l.buffers),
            ("pipelines", l.pipelines),
            ("bind_groups", l.bind_groups),
            ("command_buffers", l.command_buffers),
            ("other", l.other),
        ] {
            self.live_objects.with_label_values(&[worker, kind]).set(n);
        }
        self.buffer_bytes.with_label_values(&[worker]).set(l.buffer_bytes);
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Result<String, prometheus::Error> {
        let mut out = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_objects_show_per_worker_and_kind_and_the_cpu_shows_none() {
        let m = Metrics::new().unwrap();
        m.record_live("embed", None);
        assert!(!m.render().unwrap().contains("rlx_device_live_objects{"));
        let live = LiveObjects {
            buffers: 3,
            buffer_bytes: 4096,
            pipelines: 2,
            bind_groups: 5,
            command_buffers: 1,
            other: 7,
        };
        m.record_live("generate", Some(live));
        let text = m.render().unwrap();
        for line in [
            "rlx_device_live_objects{kind=\"buffers\",worker=\"generate\"} 3",
            "rlx_device_live_objects{kind=\"pipelines\",worker=\"generate\"} 2",
            "rlx_device_live_objects{kind=\"bind_groups\",worker=\"generate\"} 5",
            "rlx_device_live_objects{kind=\"command_buffers\",worker=\"generate\"} 1",
            "rlx_device_live_objects{kind=\"other\",worker=\"generate\"} 7",
            "rlx_device_buffer_bytes{worker=\"generate\"} 4096",
        ] {
            assert!(text.contains(line), "missing {line} in:\n{text}");
        }
        m.record_live("generate", Some(LiveObjects { buffers: 1, ..live }));
        assert!(m
            .render()
            .unwrap()
            .contains("rlx_device_live_objects{kind=\"buffers\",worker=\"generate\"} 1"));
    }
}
