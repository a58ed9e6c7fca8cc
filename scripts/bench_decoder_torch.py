#!/usr/bin/env python3
"""The transformers side of `rlx bench prefill` (run on the GPU host, in the same device call).

Usage: python3 scripts/bench_decoder_torch.py [TOKENS]

Builds random-init models with the configs of Qwen2.5-0.5B and Llama-3.2-1B (the same values as
crates/rlx-cli/src/cli/bench_decoder.rs), eager attention, on CUDA in f32 and bf16, and prints the
median time of one forward over a prompt of TOKENS (default 512) with logits for the last
position only, and of one decode step (one token against a KV cache of TOKENS positions).
"""
import statistics
import sys

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

TOKENS = int(sys.argv[1]) if len(sys.argv) > 1 else 512
SHAPES = {
    "qwen2.5-0.5b": Qwen2Config(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                                num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                                max_position_embeddings=32768, rms_norm_eps=1e-6, rope_theta=1e6,
                                tie_word_embeddings=True, use_sliding_window=False),
    "llama-3.2-1b": LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                                vocab_size=128256, max_position_embeddings=131072,
                                rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=True,
                                rope_scaling={"factor": 32.0, "high_freq_factor": 4.0,
                                              "low_freq_factor": 1.0,
                                              "original_max_position_embeddings": 8192,
                                              "rope_type": "llama3"}),
}


def median_ms(fn, iters=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


for name, cfg in SHAPES.items():
    cfg._attn_implementation = "eager"
    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype).cuda().eval()
        ids = torch.randint(0, cfg.vocab_size, (1, TOKENS), device="cuda")
        with torch.no_grad():
            prefill = median_ms(lambda: model(ids, logits_to_keep=1))
            out = model(ids, use_cache=True, logits_to_keep=1)
            cache = out.past_key_values
            nxt = ids[:, -1:]

            def step():
                # One new token against the prompt's cache (the cache is cropped back after).
                model(nxt, past_key_values=cache, use_cache=True, logits_to_keep=1)
                cache.crop(TOKENS)

            decode = median_ms(step)
        tag = str(dtype).replace("torch.", "")
        print(f"transformers {name} {tag}: prefill {TOKENS} tok {prefill:.2f} ms "
              f"({TOKENS / prefill * 1e3:.0f} tok/s); decode step {decode:.2f} ms "
              f"({1e3 / decode:.0f} tok/s)")
        del model
        torch.cuda.empty_cache()
