#!/usr/bin/env python3
"""Writes a tiny llama GGUF decoder whose linear weights and embedding are block-quantized, for
rlx-models' tests/gguf_quant.rs, with reference logits computed in numpy (float64) from the
weights as gguf-py dequantizes them.

Usage (from the repository root):
    python3 -m venv /tmp/venv-quant && /tmp/venv-quant/bin/pip install gguf numpy
    /tmp/venv-quant/bin/python scripts/make_gguf_quant_fixture.py

Made with gguf 0.19.0 and numpy 2.x; no torch. The output is deterministic (seeded).

Writes, under crates/rlx-models/tests/fixtures/gguf_decoders/:
- llama.quant.gguf: architecture llama, 1 layer, hidden 256 (K-quant blocks are 256 wide),
  4 heads of 64, 2 KV heads, FFN 512, vocab 256, default rope (theta 10000), tied embeddings.
  Every one of rlx's five block formats is used: token_embd Q6_K (also the tied lm_head),
  attn_q Q4_K, attn_k Q5_K, attn_v Q8_0, attn_output Q4_0, ffn_gate Q4_K, ffn_up Q5_K,
  ffn_down Q6_K; norms stay F32. Q8_0 and Q4_0 are gguf-py's quantization of random normal
  weights; the K-quants are random valid blocks (random bytes, finite f16 scales chosen so that
  the weights are a few hundredths). As llama.cpp's converter does, attn_q / attn_k rows are
  permuted (reshape [heads, 2, head_dim/2, …], swap axes 1 and 2); quantized rows are whole
  blocks, so whole rows of bytes move.
- llama.quant.reference.json: the prompt, its logits [len, vocab] and 8 greedy tokens from a
  float64 numpy forward of the Hugging Face llama (RMSNorm, NeoX rope, grouped-query causal
  attention, SiLU MLP) on gguf-py's dequantization of the stored blocks, in Hugging Face row
  order; plus the smallest top-1 / top-2 gap of the greedy steps.
"""
import json
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "crates/rlx-models/tests/fixtures/gguf_decoders"
CFG = dict(hidden=256, ffn=512, heads=4, kv_heads=2, head_dim=64, vocab=256, layers=1,
           theta=10000.0, eps=1e-5, ctx=64)
PROMPT = [1, 17, 200, 45, 3, 99, 128, 7]
TYPES = {
    "token_embd.weight": Q.Q6_K,
    "blk.0.attn_q.weight": Q.Q4_K,
    "blk.0.attn_k.weight": Q.Q5_K,
    "blk.0.attn_v.weight": Q.Q8_0,
    "blk.0.attn_output.weight": Q.Q4_0,
    "blk.0.ffn_gate.weight": Q.Q4_K,
    "blk.0.ffn_up.weight": Q.Q5_K,
    "blk.0.ffn_down.weight": Q.Q6_K,
}
# Byte offsets of the f16 scales in a block, and the scale magnitude that keeps weights small.
K_SCALES = {Q.Q4_K: ([0, 2], 3e-3), Q.Q5_K: ([0, 2], 1.5e-3), Q.Q6_K: ([208], 2e-5)}


def shapes():
    c = CFG
    q, kv = c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"]
    return {
        "token_embd.weight": (c["vocab"], c["hidden"]),
        "blk.0.attn_q.weight": (q, c["hidden"]),
        "blk.0.attn_k.weight": (kv, c["hidden"]),
        "blk.0.attn_v.weight": (kv, c["hidden"]),
        "blk.0.attn_output.weight": (c["hidden"], q),
        "blk.0.ffn_gate.weight": (c["ffn"], c["hidden"]),
        "blk.0.ffn_up.weight": (c["ffn"], c["hidden"]),
        "blk.0.ffn_down.weight": (c["hidden"], c["ffn"]),
    }


def random_blocks(rng, ty, rows, cols):
    """Random valid blocks of a K-quant: [rows, row_bytes] uint8 with finite f16 scales."""
    elems, size = gguf.GGML_QUANT_SIZES[ty]
    nblocks = rows * cols // elems
    b = rng.integers(0, 256, size=(nblocks, size), dtype=np.uint8)
    offsets, scale = K_SCALES[ty]
    for at in offsets:
        d = (rng.uniform(0.5, 1.0, size=nblocks) * scale).astype(np.float16)
        b[:, at:at + 2] = d.view(np.uint8).reshape(nblocks, 2)
    return b.reshape(rows, cols // elems * size)


def quantized(rng, ty, rows, cols):
    """(blocks [rows, row_bytes] uint8, dequantized float32 [rows, cols])."""
    if ty in K_SCALES:
        blocks = random_blocks(rng, ty, rows, cols)
    else:
        w = rng.normal(0.0, 0.05, size=(rows, cols)).astype(np.float32)
        blocks = gguf.quants.quantize(w, ty)
    return blocks, gguf.quants.dequantize(blocks, ty).reshape(rows, cols).astype(np.float64)


def llama_permute(rows: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's LlamaModel.permute on the leading (row) axis of any array."""
    return (rows.reshape(heads, 2, rows.shape[0] // heads // 2, *rows.shape[1:])
            .swapaxes(1, 2).reshape(rows.shape))


def rms(x, g):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + CFG["eps"]) * g


def rope(x, positions):
    d = CFG["head_dim"]
    inv = 1.0 / (CFG["theta"] ** (np.arange(0, d, 2, dtype=np.float64) / d))
    ang = np.outer(positions, inv)
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos[:, None, :] + rot * sin[:, None, :]


def forward(w, ids):
    c = CFG
    s, d = len(ids), c["head_dim"]
    x = w["token_embd.weight"][ids]
    n = rms(x, w["blk.0.attn_norm.weight"])
    q = (n @ w["blk.0.attn_q.weight"].T).reshape(s, c["heads"], d)
    k = (n @ w["blk.0.attn_k.weight"].T).reshape(s, c["kv_heads"], d)
    v = (n @ w["blk.0.attn_v.weight"].T).reshape(s, c["kv_heads"], d)
    pos = np.arange(s, dtype=np.float64)
    q, k = rope(q, pos), rope(k, pos)
    group = c["heads"] // c["kv_heads"]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
    scores = np.where(np.tril(np.ones((s, s), bool))[None], scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    a = np.einsum("hqk,khd->qhd", p, v).reshape(s, -1)
    x = x + a @ w["blk.0.attn_output.weight"].T
    n = rms(x, w["blk.0.ffn_norm.weight"])
    gate = n @ w["blk.0.ffn_gate.weight"].T
    x = x + ((gate / (1 + np.exp(-gate))) * (n @ w["blk.0.ffn_up.weight"].T)) @ w["blk.0.ffn_down.weight"].T
    return rms(x, w["output_norm.weight"]) @ w["token_embd.weight"].T


def main() -> None:
    rng = np.random.default_rng(2026)
    c = CFG
    path = OUT_DIR / "llama.quant.gguf"
    wr = gguf.GGUFWriter(str(path), "llama")
    wr.add_name("tiny-llama-quant")
    wr.add_block_count(c["layers"])
    wr.add_context_length(c["ctx"])
    wr.add_embedding_length(c["hidden"])
    wr.add_feed_forward_length(c["ffn"])
    wr.add_head_count(c["heads"])
    wr.add_head_count_kv(c["kv_heads"])
    wr.add_rope_freq_base(c["theta"])
    wr.add_layer_norm_rms_eps(c["eps"])
    wr.add_vocab_size(c["vocab"])
    wr.add_rope_dimension_count(c["head_dim"])
    wr.add_file_type(15)
    wr.add_token_list([f"t{i}" for i in range(c["vocab"])])
    ref = {}
    tensors = {}
    for name, (rows, cols) in shapes().items():
        ty = TYPES[name]
        blocks, deq = quantized(rng, ty, rows, cols)
        ref[name] = deq
        # The blocks as rlx reads them are in Hugging Face row order; the file holds them
        # permuted for llama's q and k.
        heads = {"blk.0.attn_q.weight": c["heads"], "blk.0.attn_k.weight": c["kv_heads"]}.get(name)
        stored = llama_permute(blocks, heads) if heads else blocks
        tensors[name] = (np.ascontiguousarray(stored), ty)
    for name in ["blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "output_norm.weight"]:
        g = rng.uniform(0.8, 1.2, size=c["hidden"]).astype(np.float32)
        ref[name] = g.astype(np.float64)
        tensors[name] = (g, None)
    for name in sorted(tensors):
        data, ty = tensors[name]
        if ty is None:
            wr.add_tensor(name, data)
        else:
            wr.add_tensor(name, data, raw_dtype=ty)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()

    logits = forward(ref, PROMPT)
    ids, greedy, gap = list(PROMPT), [], np.inf
    for _ in range(8):
        last = np.sort(forward(ref, ids)[-1])
        t = int(np.argmax(forward(ref, ids)[-1]))
        gap = min(gap, float(last[-1] - last[-2]))
        greedy.append(t)
        ids.append(t)
    doc = {"note": "numpy float64 forward of gguf-py's dequantization of llama.quant.gguf",
           "gguf_version": getattr(gguf, "__version__", "unknown"), "numpy_version": np.__version__,
           "prompt": PROMPT, "logits_shape": list(logits.shape),
           "logits": [float(v) for v in logits.flatten()], "greedy": greedy, "min_top2_gap": gap}
    (OUT_DIR / "llama.quant.reference.json").write_text(json.dumps(doc))
    print(f"{path.name}: {path.stat().st_size} bytes; greedy {greedy}, smallest top-2 gap {gap:.3g}, "
          f"logit range {logits.min():.3g}..{logits.max():.3g}")


if __name__ == "__main__":
    main()
