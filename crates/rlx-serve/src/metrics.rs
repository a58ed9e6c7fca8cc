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

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

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
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(prompt_tokens.clone()))?;
        registry.register(Box::new(completion_tokens.clone()))?;
        registry.register(Box::new(embedding_inputs.clone()))?;
        registry.register(Box::new(queue_depth.clone()))?;
        registry.register(Box::new(cancelled.clone()))?;
        registry.register(Box::new(ttft.clone()))?;
        registry.register(Box::new(per_token.clone()))?;
        registry.register(Box::new(embed_batch.clone()))?;
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
        })
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Result<String, prometheus::Error> {
        let mut out = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}
