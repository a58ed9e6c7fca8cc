//! Batched decode ([`BatchDecoder`]) on every available device, on the tiny random-init
//! decoders of tests/fixtures/decoders: each sequence's greedy tokens are those of
//! `Decoder::generate_greedy` on its own prompt, and those of itself decoded alone in the
//! batch, whatever joins, leaves or reuses a slot around it; prompts of different lengths go
//! through a chunked prefill. Sampled sequences draw the tokens of `Decoder::sample` with their
//! own seed, beside greedy and other sampled neighbours. Errors (full batch, unknown id, prompt
//! past the capacity, an invalid spec, NaN logits of one sequence) are checked on the CPU.
//!
//! A GPU device that cannot be opened skips loudly, unless RLX_REQUIRE_GPU=1 makes it fail.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use support::device_tests;

use rlx_models::decoder::{decoder_graph, DecoderConfig, DecoderOptions};
use rlx_models::{BatchDecoder, Decoder, Device, KvCache, ModelError, SeqId, SeqParams, WeightData};
use std::collections::BTreeMap;
use std::path::PathBuf;

const FIXTURES: [&str; 5] = ["llama", "qwen2", "qwen3", "mistral", "qwen3_moe"];

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders").join(name)
}

/// The fixture `name` on `device` with a prefill chunk of 3 (prompts span several chunks), or
/// `None` after a loud skip when a GPU device cannot be opened.
fn open(name: &str, device: Device) -> Option<Decoder> {
    open_with(name, device, KvCache::Auto)
}

/// [`open`] with the KV cache in `kv_cache`.
fn open_with(name: &str, device: Device, kv_cache: KvCache) -> Option<Decoder> {
    let opts = DecoderOptions { prefill_chunk: 3, kv_cache, ..Default::default() };
    match Decoder::with_options(&dir(name), device, opts) {
        Ok(d) => Some(d),
        Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
            rlx_test_support::unavailable(device, &format!("batched decoder {name}"), &e);
            None
        }
        Err(e) => panic!("loading {name} on {device}: {e}"),
    }
}

/// The tokens each sequence got, by id, and which ones finished.
#[derive(Default)]
struct Log {
    tokens: BTreeMap<SeqId, Vec<i32>>,
    finished: Vec<SeqId>,
}

impl Log {
    fn add(&mut self, b: &mut BatchDecoder, prompt: &[i32], n: usize) -> SeqId {
        let t = b.add(prompt, SeqParams::greedy(n)).unwrap();
        self.record(t);
        self.tokens.keys().last().copied().unwrap()
    }

    fn record(&mut self, t: rlx_models::SeqToken) {
        self.tokens.entry(t.id).or_default().push(t.token.unwrap());
        if t.finished {
            self.finished.push(t.id);
        }
    }

    fn step(&mut self, b: &mut BatchDecoder) -> usize {
        let events = b.step().unwrap();
        let n = events.len();
        for t in events {
            self.record(t);
        }
        n
    }
}

/// Five prompts of different lengths (1 to 12 tokens; 4 chunks for the longest).
fn prompts() -> [Vec<i32>; 5] {
    [
        vec![1, 17, 200, 45, 3, 99, 128, 7, 64, 250, 33, 5],
        vec![9],
        vec![4, 8, 15, 16, 23],
        vec![100, 101, 102, 103, 104, 105, 106],
        vec![42, 7],
    ]
}

fn check(device: Device) {
    check_fixtures(device, &FIXTURES, KvCache::Auto);
}

/// [`check`] on `names`, with the KV cache in `kv_cache`.
fn check_fixtures(device: Device, names: &[&str], kv_cache: KvCache) {
    for name in names {
        let Some(mut dec) = open_with(name, device, kv_cache) else { return };
        let p = prompts();
        let budgets = [9, 12, 5, 10, 7];
        let want: Vec<Vec<i32>> =
            p.iter().zip(budgets).map(|(p, n)| dec.generate_greedy(p, n).unwrap()).collect();
        let mut b = BatchDecoder::new(&dec, 3, 32).unwrap();

        // Each prompt alone in the batch gives the single-sequence tokens.
        for (i, prompt) in p.iter().enumerate() {
            let mut log = Log::default();
            let id = log.add(&mut b, prompt, budgets[i]);
            while b.active() > 0 {
                assert_eq!(log.step(&mut b), 1);
            }
            assert_eq!(log.tokens[&id], want[i], "{device} {name}: prompt {i} alone in the batch");
            assert_eq!(log.finished, [id]);
        }

        // Joining and leaving mid-run, a slot reused, a sequence removed before its end.
        let mut log = Log::default();
        let a = log.add(&mut b, &p[0], budgets[0]);
        let c = log.add(&mut b, &p[2], budgets[2]);
        log.step(&mut b);
        log.step(&mut b);
        let d = log.add(&mut b, &p[1], budgets[1]); // joins mid-run: 3 of 3 slots
        assert_eq!(b.active(), 3);
        let full = b.add(&p[4], SeqParams::greedy(2)).unwrap_err().to_string();
        assert!(full.contains("all 3 streams are busy"), "{full}");
        while !log.finished.contains(&c) {
            log.step(&mut b);
        }
        // c (5 tokens) has left: its slot serves e, whose cache replaces c's stale one.
        let e = log.add(&mut b, &p[3], budgets[3]);
        log.step(&mut b);
        log.step(&mut b);
        // a leaves before its budget: its tokens so far are a prefix of its whole run.
        b.remove(a).unwrap();
        let f = log.add(&mut b, &p[4], budgets[4]);
        while b.active() > 0 {
            log.step(&mut b);
        }
        let got_a = &log.tokens[&a];
        assert!(got_a.len() < budgets[0], "{device} {name}: a was removed early");
        assert_eq!(got_a[..], want[0][..got_a.len()], "{device} {name}: a before it left");
        for (id, i) in [(c, 2), (d, 1), (e, 3), (f, 4)] {
            assert_eq!(log.tokens[&id], want[i], "{device} {name}: {id} (prompt {i}) in a changing batch");
        }
        assert!(!log.finished.contains(&a));
        assert_eq!(b.step().unwrap().len(), 0, "an empty batch steps to nothing");
        eprintln!("{device} {name}: 5 prompts alone and in a changing batch of 3 match generate_greedy");
    }
}

device_tests!(check => batch_matches_single_sequences_on_cpu, batch_matches_single_sequences_on_vulkan, batch_matches_single_sequences_on_wgpu);

/// The same with the KV cache held in f16 (grouped heads, q/k norms and biases: qwen3): the
/// batch still gives each sequence its single-sequence tokens, now both over f16 caches.
fn check_half_cache(device: Device) {
    check_fixtures(device, &["qwen3"], KvCache::F16);
}

device_tests!(check_half_cache => half_cache_batch_matches_single_sequences_on_cpu, half_cache_batch_matches_single_sequences_on_vulkan, half_cache_batch_matches_single_sequences_on_wgpu);

/// With a prefill chunk of 16 the batch also compiles a short prefill of 2 rows: prompts of 1
/// and 2 tokens take it alone, one of 18 tokens takes a full chunk and then the short one, one
/// of 17 a full chunk and a 1-token short part; every sequence still gets the single-sequence
/// tokens (whose prefill is 16 rows throughout).
fn short_prefill(device: Device) {
    for name in ["llama", "qwen2"] {
        let opts = DecoderOptions { prefill_chunk: 16, ..Default::default() };
        let mut dec = match Decoder::with_options(&dir(name), device, opts) {
            Ok(d) => d,
            Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
                rlx_test_support::unavailable(device, &format!("batched decoder {name}"), &e);
                return;
            }
            Err(e) => panic!("loading {name} on {device}: {e}"),
        };
        let long: Vec<i32> = (0..18).map(|i| (i * 37 + 5) % 250).collect();
        let p: [Vec<i32>; 5] = [vec![9], vec![42, 7], long.clone(), long[..17].to_vec(), long[..5].to_vec()];
        let want: Vec<Vec<i32>> = p.iter().map(|p| dec.generate_greedy(p, 6).unwrap()).collect();
        let mut b = BatchDecoder::new(&dec, 5, 40).unwrap();
        let mut log = Log::default();
        let ids: Vec<SeqId> = p.iter().map(|prompt| log.add(&mut b, prompt, 6)).collect();
        while b.active() > 0 {
            log.step(&mut b);
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(log.tokens[id], want[i], "{device} {name}: prompt {i} ({} tokens)", p[i].len());
        }
    }
}

device_tests!(short_prefill => short_prefill_parts_match_on_cpu, short_prefill_parts_match_on_vulkan, short_prefill_parts_match_on_wgpu);

/// What cannot be served is an error naming why, and nothing is admitted; a stop token ends a
/// sequence and frees its slot.
#[test]
fn errors_and_stop_tokens() {
    let dec = open("qwen2", Device::Cpu).unwrap();
    let mut b = BatchDecoder::new(&dec, 2, 16).unwrap();
    let err = |r: Result<rlx_models::SeqToken, ModelError>| r.unwrap_err().to_string();
    let e = err(b.add(&[1; 16], SeqParams::greedy(2)));
    assert!(e.contains("needs 17 positions") && e.contains("capacity 16"), "{e}");
    assert!(err(b.add(&[], SeqParams::greedy(2))).contains("empty"));
    assert!(err(b.add(&[1, 100_000], SeqParams::greedy(2))).contains("token id 100000"));
    assert!(err(b.add(&[1], SeqParams::greedy(0))).contains("max_new is 0"));
    let mut sampled = SeqParams::greedy(4);
    sampled.sampling.temperature = 0.7;
    sampled.sampling.top_p = 0.0;
    let e = err(b.add(&[1], sampled));
    assert!(e.contains("top_p"), "{e}");
    assert_eq!(b.active(), 0, "nothing was admitted");
    let e = b.remove(SeqId(7)).unwrap_err().to_string();
    assert!(e.contains("sequence 7 is not in the batch"), "{e}");
    let e = BatchDecoder::new(&dec, 2, 1 << 20).unwrap_err().to_string();
    assert!(e.contains("max_position_embeddings"), "{e}");
    let e = BatchDecoder::new(&dec, 0, 16).unwrap_err().to_string();
    assert!(e.contains("at least one stream"), "{e}");

    // A stop token: the third greedy token of this prompt.
    let mut single = open("qwen2", Device::Cpu).unwrap();
    let want = single.generate_greedy(&[5, 6, 7], 6).unwrap();
    let stop = want[2];
    let first = want.iter().position(|&t| t == stop).unwrap();
    let params = SeqParams { stop: vec![stop], ..SeqParams::greedy(6) };
    let t = b.add(&[5, 6, 7], params).unwrap();
    let mut got = vec![t.token.unwrap()];
    let mut finished = t.finished;
    while !finished {
        let ev = b.step().unwrap();
        assert_eq!(ev.len(), 1);
        got.push(*ev[0].token.as_ref().unwrap());
        finished = ev[0].finished;
    }
    assert_eq!(got, want[..=first], "stopped at the first stop token, which is returned");
    assert_eq!(b.active(), 0);
    // A budget of one ends in add: the sequence never takes a slot.
    let t = b.add(&[5, 6, 7], SeqParams::greedy(1)).unwrap();
    assert!(t.finished);
    assert_eq!((t.token.unwrap(), b.active()), (want[0], 0));
}

/// A sequence whose logits turn NaN gets `NonFinite` and leaves; its neighbour goes on with its
/// own tokens. The NaN comes from the embedding row of the token the sequence generates first,
/// which its next step feeds back.
#[test]
fn nan_logits_end_only_their_sequence() {
    let cfg = DecoderConfig::from_file(&dir("llama").join("config.json")).unwrap();
    let opts = DecoderOptions::default();
    let graph = decoder_graph(&cfg, 1, 1).unwrap();
    let weights = |nan_row: Option<usize>| -> Vec<(String, WeightData)> {
        graph
            .params()
            .iter()
            .enumerate()
            .map(|(i, (name, _, ty))| {
                let mut v = rlx_models::random::param_value(name, ty, 11 + i as u64);
                if let (Some(r), true) = (nan_row, *name == "model.embed_tokens.weight") {
                    v[r * cfg.hidden_size..(r + 1) * cfg.hidden_size].fill(f32::NAN);
                }
                (name.to_string(), WeightData::F32(v))
            })
            .collect()
    };
    let session = || rlx_runtime::Session::new(Device::Cpu).unwrap();
    let mut clean = Decoder::from_weights(session(), cfg.clone(), weights(None), opts).unwrap();
    let bad_prompt = [1, 2, 3];
    let t = clean.generate_greedy(&bad_prompt, 1).unwrap()[0];
    assert!(!bad_prompt.contains(&t), "pick another prompt: {t} is in it");
    // A neighbour that neither holds nor generates t in its first tokens.
    let good = (10..60)
        .map(|s| vec![s, s + 1])
        .find(|p| !p.contains(&t) && !clean.generate_greedy(p, 4).unwrap().contains(&t))
        .unwrap();
    let good_want = clean.generate_greedy(&good, 4).unwrap();

    let dec = Decoder::from_weights(session(), cfg.clone(), weights(Some(t as usize)), opts).unwrap();
    let mut b = BatchDecoder::new(&dec, 2, 16).unwrap();
    let g = b.add(&good, SeqParams::greedy(4)).unwrap();
    let bad = b.add(&bad_prompt, SeqParams::greedy(4)).unwrap();
    assert_eq!(*bad.token.as_ref().unwrap(), t);
    let mut good_got = vec![g.token.unwrap()];
    let ev = b.step().unwrap();
    assert_eq!(ev.len(), 2);
    let bad_ev = ev.iter().find(|e| e.id == bad.id).unwrap();
    assert!(matches!(bad_ev.token, Err(ModelError::NonFinite { position: 3 })), "{:?}", bad_ev.token);
    assert!(bad_ev.finished);
    for e in ev.into_iter().filter(|e| e.id == g.id) {
        good_got.push(e.token.unwrap());
    }
    assert_eq!(b.ids(), [g.id], "the NaN sequence left, its neighbour stayed");
    while b.active() > 0 {
        good_got.extend(b.step().unwrap().into_iter().map(|e| e.token.unwrap()));
    }
    assert_eq!(good_got, good_want);
}

/// A slot's logits are bit for bit the same whatever its neighbours hold: the batched step on
/// random weights, slot 1 at position 3 alone (the other slots free), then with neighbours at
/// other positions and tokens, one of them on the cache's last row.
fn rows_are_independent(device: Device) {
    use rlx_models::decoder::{batched_decode_graph, BatchOutput, QuantizedWeights};
    let cfg = DecoderConfig::from_file(&dir("qwen3").join("config.json")).unwrap();
    let capacity = 8;
    let q = QuantizedWeights::new();
    let (p, kv) = (rlx_models::Precision::F32, rlx_ir::DType::F32);
    let g = batched_decode_graph(&cfg, 4, capacity, p, kv, BatchOutput::TokensAndLogits, &q).unwrap();
    let session = match rlx_runtime::Session::new(device) {
        Ok(s) => s,
        Err(e) => {
            rlx_test_support::unavailable(device, "batched step rows", &e);
            return;
        }
    };
    let mut exe = session.compile(&g).unwrap();
    for (i, (name, _, ty)) in g.params().iter().enumerate() {
        let v = rlx_models::random::param_value(name, ty, 5 + i as u64);
        exe.set_param(name, &v).unwrap();
    }
    let vocab = cfg.vocab_size;
    let mut run = |ids: [i32; 4], pos: [i32; 4]| {
        exe.reset_states().unwrap();
        let out = exe.run(&[("input_ids", &ids), ("positions", &pos), ("offsets", &pos)]).unwrap();
        let logits = out[1].to_f32_vec();
        (out[0].to_f64_vec()[1] as i32, logits[vocab..2 * vocab].to_vec())
    };
    let (alone_token, alone) = run([0, 42, 0, 0], [0, 3, 0, 0]);
    let (token, with_neighbours) = run([17, 42, 200, 3], [5, 3, 7, 1]);
    assert_eq!(token, alone_token, "{device}");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&with_neighbours), bits(&alone), "{device}: slot 1's logits changed with its neighbours");
    let (_, other) = run([17, 43, 200, 3], [5, 3, 7, 1]);
    assert_ne!(bits(&other), bits(&alone), "{device}: another token gives other logits");
}

device_tests!(rows_are_independent => slot_rows_are_independent_on_cpu, slot_rows_are_independent_on_vulkan, slot_rows_are_independent_on_wgpu);

/// Sampled sequences (two specs, one with a repetition penalty, two seeds) beside a greedy one
/// and each other: each gets the tokens `Decoder::sample` draws for its prompt, spec and seed,
/// the same as alone in the batch; the greedy one still gets `generate_greedy`'s.
fn sampled_beside_neighbours(device: Device) {
    use rlx_nn::SamplingSpec;
    let Some(mut dec) = open("qwen2", device) else { return };
    let warm = SamplingSpec { temperature: 0.8, top_k: Some(20), top_p: 0.9, repetition_penalty: 1.0 };
    let penal = SamplingSpec { temperature: 1.1, top_k: None, top_p: 1.0, repetition_penalty: 1.3 };
    let p = prompts();
    let cases = [(&p[0], warm, 42u32, 10usize), (&p[2], penal, 7, 9), (&p[3], warm, 43, 8)];
    let want: Vec<Vec<i32>> =
        cases.iter().map(|(pr, spec, seed, n)| dec.sample(pr, *n, spec, *seed, |_| true).unwrap()).collect();
    assert_ne!(want[0], dec.sample(&p[0], 10, &warm, 43, |_| true).unwrap(), "{device}: seeds 42, 43");
    let greedy_want = dec.generate_greedy(&p[1], 10).unwrap();
    let mut b = BatchDecoder::new(&dec, 4, 32).unwrap();
    let params = |(_, spec, seed, n): &(&Vec<i32>, SamplingSpec, u32, usize)| SeqParams {
        sampling: *spec,
        seed: *seed,
        ..SeqParams::greedy(*n)
    };
    // Alone.
    for (i, c) in cases.iter().enumerate() {
        let mut log = Log::default();
        let t = b.add(c.0, params(c)).unwrap();
        let id = t.id;
        log.record(t);
        while b.active() > 0 {
            log.step(&mut b);
        }
        assert_eq!(log.tokens[&id], want[i], "{device}: sampled sequence {i} alone");
    }
    // Together, with a greedy neighbour joining after two steps.
    let mut log = Log::default();
    let mut ids = Vec::new();
    for c in &cases {
        let t = b.add(c.0, params(c)).unwrap();
        ids.push(t.id);
        log.record(t);
    }
    log.step(&mut b);
    log.step(&mut b);
    let g = log.add(&mut b, &p[1], 10);
    while b.active() > 0 {
        log.step(&mut b);
    }
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(log.tokens[id], want[i], "{device}: sampled sequence {i} in the batch");
    }
    assert_eq!(log.tokens[&g], greedy_want, "{device}: greedy beside sampled neighbours");
}

device_tests!(sampled_beside_neighbours => sampling_is_per_sequence_on_cpu, sampling_is_per_sequence_on_vulkan, sampling_is_per_sequence_on_wgpu);

/// Enqueued sequences ([`BatchDecoder::enqueue`]): their prompts go into the cache a chunk (3
/// rows here) per step, in the same runs as the others' decode, and each still gets
/// `generate_greedy`'s tokens: alone (no token until the step that takes the prompt's last
/// chunk), joining a decoding batch, several at once, one whose prompt and budget fill the
/// capacity exactly (its last chunks reach into the spare rows), a slot reused after another
/// sequence left it, a sampled one with its own seed, and one removed with half its prompt in.
fn enqueued(device: Device) {
    use rlx_nn::SamplingSpec;
    for name in ["llama", "qwen3", "mistral"] {
        let Some(mut dec) = open(name, device) else { return };
        let p = prompts();
        let budgets = [9, 12, 5, 10, 7];
        let want: Vec<Vec<i32>> =
            p.iter().zip(budgets).map(|(p, n)| dec.generate_greedy(p, n).unwrap()).collect();
        // 24 prompt tokens and 9 new ones: 32 positions, the batch's capacity.
        let full: Vec<i32> = (0..24).map(|i| (i * 53 + 3) % 250).collect();
        let full_want = dec.generate_greedy(&full, 9).unwrap();
        let warm = SamplingSpec { temperature: 0.8, top_k: Some(20), top_p: 0.9, repetition_penalty: 1.0 };
        let sampled_want = dec.sample(&p[2], 8, &warm, 42, |_| true).unwrap();
        let mut b = BatchDecoder::new(&dec, 4, 32).unwrap();

        // Alone: 12 prompt tokens take four steps, the last of which gives the first token.
        let mut log = Log::default();
        let id = b.enqueue(&p[0], SeqParams::greedy(budgets[0])).unwrap();
        assert_eq!((b.active(), b.pending_tokens()), (1, 12));
        for left in [9, 6, 3] {
            assert_eq!(log.step(&mut b), 0, "{device} {name}: no token before the prompt is in");
            assert_eq!(b.pending_tokens(), left);
        }
        assert_eq!(log.step(&mut b), 1, "{device} {name}: the first token with the last chunk");
        while b.active() > 0 {
            log.step(&mut b);
        }
        assert_eq!(log.tokens[&id], want[0], "{device} {name}: enqueued alone");

        // Joining a decoding batch: three at once, one sampled, one filling the capacity.
        let mut log = Log::default();
        let a = log.add(&mut b, &p[3], budgets[3]);
        log.step(&mut b);
        let c = b.enqueue(&p[0], SeqParams::greedy(budgets[0])).unwrap();
        let d = b.enqueue(&full, SeqParams::greedy(9)).unwrap();
        let s = b.enqueue(&p[2], SeqParams { sampling: warm, seed: 42, ..SeqParams::greedy(8) }).unwrap();
        let full_batch = b.enqueue(&p[1], SeqParams::greedy(2)).unwrap_err().to_string();
        assert!(full_batch.contains("all 4 streams are busy"), "{full_batch}");
        while !log.finished.contains(&a) {
            log.step(&mut b);
        }
        // a's slot, whose cache holds a's rows, serves a new enqueued sequence.
        let e = b.enqueue(&p[4], SeqParams::greedy(budgets[4])).unwrap();
        while b.active() > 0 {
            log.step(&mut b);
        }
        assert_eq!(log.tokens[&a], want[3], "{device} {name}: decoding beside enqueued prompts");
        assert_eq!(log.tokens[&c], want[0], "{device} {name}: enqueued into a decoding batch");
        assert_eq!(log.tokens[&d], full_want, "{device} {name}: enqueued to the capacity");
        assert_eq!(log.tokens[&s], sampled_want, "{device} {name}: sampled, enqueued");
        assert_eq!(log.tokens[&e], want[4], "{device} {name}: enqueued into a reused slot");

        // Removed with half its prompt in the cache: the slot frees at once and the next
        // sequence in it is unaffected by the rows left behind.
        let gone = b.enqueue(&p[0], SeqParams::greedy(budgets[0])).unwrap();
        assert_eq!(b.step().unwrap().len(), 0);
        assert_eq!(b.pending_tokens(), 9);
        b.remove(gone).unwrap();
        assert_eq!((b.active(), b.pending_tokens()), (0, 0));
        assert!(b.remove(gone).is_err(), "{device} {name}: removed twice");
        let mut log = Log::default();
        let f = b.enqueue(&p[2], SeqParams::greedy(budgets[2])).unwrap();
        while b.active() > 0 {
            log.step(&mut b);
        }
        assert_eq!(log.tokens[&f], want[2], "{device} {name}: after a removed, half-prefilled one");
        eprintln!("{device} {name}: enqueued prompts mixed into decode steps match single sequences");
    }
}

device_tests!(enqueued => enqueued_prompts_mix_into_steps_on_cpu, enqueued_prompts_mix_into_steps_on_vulkan, enqueued_prompts_mix_into_steps_on_wgpu);
