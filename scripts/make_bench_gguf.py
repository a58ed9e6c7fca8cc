#!/usr/bin/env python3
"""Writes a random-init GGUF of a real decoder's shape, for llama.cpp's benches beside `rlx bench
generate --decoder …` (the same shapes; rlx draws its own random weights, which does not change
a step's cost).

Usage:
    python3 scripts/make_bench_gguf.py OUT.gguf [--decoder llama-3.2-1b|qwen2.5-0.5b] [--f32]

Needs numpy and the `gguf` package (gguf-py; on a host without it, put its folder on
PYTHONPATH). Writes F16 weights (F32 with --f32; norms always F32) in llama.cpp's layout, with a
SentencePiece-style vocabulary of placeholder pieces of the model's size (`<unk>`, `<s>`, `</s>`,
then `t3`, `t4`, …), so `llama-bench`, `llama-batched-bench` and `llama-quantize` load it. The
weights are normal(0, 0.02), seeded; what the model says is noise.
"""
import argparse
from pathlib import Path

import gguf
import numpy as np

SHAPES = {
    # The shapes of rlx-cli's bench_decoder.rs (their Hugging Face config.json values).
    "llama-3.2-1b": dict(arch="llama", layers=16, hidden=2048, ffn=8192, heads=32, kv_heads=8,
                         head_dim=64, vocab=128256, theta=500000.0, eps=1e-5, tied=True, bias=False),
    "qwen2.5-0.5b": dict(arch="qwen2", layers=24, hidden=896, ffn=4864, heads=14, kv_heads=2,
                         head_dim=64, vocab=151936, theta=1000000.0, eps=1e-6, tied=True, bias=True),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--decoder", default="llama-3.2-1b", choices=sorted(SHAPES))
    ap.add_argument("--f32", action="store_true")
    args = ap.parse_args()
    m = SHAPES[args.decoder]
    dtype = np.float32 if args.f32 else np.float16
    rng = np.random.default_rng(7)

    def weight(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(dtype)

    w = gguf.GGUFWriter(str(args.out), m["arch"])
    w.add_name(f"rlx-bench-{args.decoder}")
    w.add_block_count(m["layers"])
    w.add_context_length(32768)
    w.add_embedding_length(m["hidden"])
    w.add_feed_forward_length(m["ffn"])
    w.add_head_count(m["heads"])
    w.add_head_count_kv(m["kv_heads"])
    w.add_key_length(m["head_dim"])
    w.add_value_length(m["head_dim"])
    w.add_rope_dimension_count(m["head_dim"])
    w.add_rope_freq_base(m["theta"])
    w.add_layer_norm_rms_eps(m["eps"])
    w.add_vocab_size(m["vocab"])
    w.add_file_type(0 if args.f32 else 1)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    pieces = ["<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(3, m["vocab"])]
    w.add_token_list(pieces)
    w.add_token_scores([0.0] * m["vocab"])
    w.add_token_types([2, 3, 3] + [1] * (m["vocab"] - 3))
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    q_dim, kv_dim = m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"]
    h, f = m["hidden"], m["ffn"]
    w.add_tensor("token_embd.weight", weight(m["vocab"], h))
    w.add_tensor("output_norm.weight", np.ones(h, dtype=np.float32))
    for i in range(m["layers"]):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", np.ones(h, dtype=np.float32))
        w.add_tensor(b + "attn_q.weight", weight(q_dim, h))
        w.add_tensor(b + "attn_k.weight", weight(kv_dim, h))
        w.add_tensor(b + "attn_v.weight", weight(kv_dim, h))
        if m["bias"]:
            for name, n in (("attn_q", q_dim), ("attn_k", kv_dim), ("attn_v", kv_dim)):
                w.add_tensor(b + name + ".bias", np.zeros(n, dtype=np.float32))
        w.add_tensor(b + "attn_output.weight", weight(h, q_dim))
        w.add_tensor(b + "ffn_norm.weight", np.ones(h, dtype=np.float32))
        w.add_tensor(b + "ffn_gate.weight", weight(f, h))
        w.add_tensor(b + "ffn_up.weight", weight(f, h))
        w.add_tensor(b + "ffn_down.weight", weight(h, f))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {args.out}: {args.out.stat().st_size / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
