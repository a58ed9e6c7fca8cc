#!/usr/bin/env python3
"""Writes the tiny random-init decoder models that rlx-models' decoder fixture test checks.

Usage: python3 scripts/make_decoder_fixtures.py [OUT_DIR [NAME ...]]

With NAMEs, only those fixtures are rewritten (each keeps its seed, so the others stay as they are).

OUT_DIR defaults to crates/rlx-models/tests/fixtures/decoders. Needs torch, transformers and
safetensors (CPU is enough):

    pip install torch --index-url https://download.pytorch.org/whl/cpu   # or plain `pip install torch`
    pip install transformers safetensors

One folder per architecture, each written by `save_pretrained` in float32 safetensors:

- llama:   LlamaForCausalLM, llama3 rope scaling whose three frequency bands all occur at
           head_dim 16 (original_max_position_embeddings 32), untied lm_head
- qwen2:   Qwen2ForCausalLM (q/k/v bias), tied embeddings, saved in several shards
           (model.safetensors.index.json)
- qwen3:   Qwen3ForCausalLM (q_norm/k_norm), head_dim 32 != hidden / heads = 16, tied embeddings
- mistral: MistralForCausalLM with sliding_window 4, smaller than the 12-token prompt
- qwen3_moe: Qwen3MoeForCausalLM, 3 layers: 0 and 2 with 8 experts (moe_intermediate_size 32,
           top-2, norm_topk_prob true), 1 a dense MLP (mlp_only_layers); tied embeddings.
           transformers 5 holds the experts fused (mlp.experts.gate_up_proj [E, 2I, H],
           mlp.experts.down_proj [E, H, I]) but save_pretrained writes them per expert
           (mlp.experts.{j}.{gate,up,down}_proj.weight), as transformers 4 did

and a reference.json beside them: the prompt's token ids, the logits of one forward pass over it
(float32, every position, row-major [seq, vocab]) and 8 greedy tokens, each the argmax of a full
forward pass over the prompt plus the tokens so far (no KV cache, no end-of-sequence stop).

Every weight is redrawn from a seeded generator with a larger spread than transformers' default
init (std 0.02 gives nearly flat logits, so greedy picks would hinge on rounding). Eager
attention on one CPU thread; rerunning the script rewrites identical files.
"""
import json
import os
import shutil
import sys

import torch
import transformers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
)

PROMPT = [1, 17, 200, 45, 3, 99, 128, 7, 64, 250, 33, 5]
NEW_TOKENS = 8

COMMON = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    rms_norm_eps=1e-5,
    hidden_act="silu",
    bos_token_id=1,
    eos_token_id=2,
)

FIXTURES = {
    "llama": (
        LlamaConfig,
        LlamaForCausalLM,
        dict(
            rope_theta=10000.0,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            },
            tie_word_embeddings=False,
        ),
        None,
    ),
    "qwen2": (
        Qwen2Config,
        Qwen2ForCausalLM,
        dict(rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False),
        "100KB",
    ),
    "qwen3": (
        Qwen3Config,
        Qwen3ForCausalLM,
        dict(rope_theta=1000000.0, head_dim=32, tie_word_embeddings=True, use_sliding_window=False),
        None,
    ),
    "mistral": (
        MistralConfig,
        MistralForCausalLM,
        dict(rope_theta=10000.0, sliding_window=4, tie_word_embeddings=False),
        None,
    ),
    "qwen3_moe": (
        Qwen3MoeConfig,
        Qwen3MoeForCausalLM,
        dict(
            rope_theta=1000000.0,
            num_hidden_layers=3,
            num_experts=8,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=[1],
            tie_word_embeddings=True,
            use_sliding_window=False,
        ),
        None,
    ),
}


def redraw(model: torch.nn.Module, seed: int) -> None:
    """Norm weights near 1, biases small, every other weight normal with std 0.15."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if "norm" in name:
                p.copy_(1.0 + 0.1 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.1 * noise)
            else:
                p.copy_(0.15 * noise)


def logits_of(model: torch.nn.Module, ids: list) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids], dtype=torch.long)).logits[0].float()


def make(out_dir: str, name: str, seed: int) -> None:
    config_cls, model_cls, extra, shard = FIXTURES[name]
    config = config_cls(**{**COMMON, **extra})
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_cls(config).to(torch.float32).eval()
    redraw(model, seed)
    if config.tie_word_embeddings:
        model.tie_weights()

    logits = logits_of(model, PROMPT)
    ids = list(PROMPT)
    generated = []
    for _ in range(NEW_TOKENS):
        token = int(torch.argmax(logits_of(model, ids)[-1]))
        generated.append(token)
        ids.append(token)

    target = os.path.join(out_dir, name)
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    if shard is None:
        model.save_pretrained(target)
    else:
        model.save_pretrained(target, max_shard_size=shard)
    reference = {
        "architecture": model_cls.__name__,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "prompt": PROMPT,
        "logits_shape": list(logits.shape),
        "logits": [float(v) for v in logits.flatten().tolist()],
        "greedy": generated,
    }
    with open(os.path.join(target, "reference.json"), "w") as f:
        json.dump(reference, f)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(target, f)) for f in os.listdir(target))
    print(f"{name}: {sorted(os.listdir(target))}, {size / 1e6:.2f} MB, greedy {generated}")


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.join(here, "..", "crates", "rlx-models", "tests", "fixtures", "decoders")
    out_dir = sys.argv[1] if len(sys.argv) > 1 else default
    only = sys.argv[2:]
    unknown = [n for n in only if n not in FIXTURES]
    if unknown:
        sys.exit(f"unknown fixture(s) {unknown}; known: {list(FIXTURES)}")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    for i, name in enumerate(FIXTURES):
        if not only or name in only:
            make(out_dir, name, 1234 + i)


if __name__ == "__main__":
    main()
