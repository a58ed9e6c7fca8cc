#!/usr/bin/env python3
"""Writes llama.cpp `qwen3moe` GGUF files for rlx-models' tests/gguf_moe.rs.

Usage (from the repository root; llama.cpp's tools from ../shared/llama):
    eval "$(bash /work/shared/llama/setup.sh /tmp/llama)"
    python3 scripts/make_gguf_moe_fixtures.py [--llama-dir /tmp/llama]

Made with gguf 0.19.0 and numpy 2.x (no torch), llama.cpp 3f545bec. Deterministic.

Writes under crates/rlx-models/tests/fixtures/gguf_moe/:

- qwen3moe.f32.gguf: the Hugging Face fixture tests/fixtures/decoders/qwen3_moe (3 layers, 8
  experts, top 2, layer 1 dense through mlp_only_layers, tied embeddings) under llama.cpp's
  names and keys as its converter writes them: qwen3moe.expert_count / expert_used_count /
  expert_feed_forward_length, blk.N.ffn_gate_inp [E, H] and the 3-D stacks ffn_gate_exps /
  ffn_up_exps [E, I, H] and ffn_down_exps [E, H, I]; the dense layer as ffn_gate / ffn_up /
  ffn_down. Its reference is the HF fixture's reference.json (transformers). llama.cpp itself
  wants experts in every layer, so llama-simple does not run this file.
- sparse.MIX.gguf for MIX in Q8_0 and Q4_K_M: a random-init model of the same shape with experts
  in every layer, quantized by `llama-quantize` (rows of 64 and 32 are not multiples of 256, so
  Q4_K_M falls back to Q5_0 / Q8_0 rows as llama.cpp does), and sparse.tokens.json: for each
  file the greedy tokens of `llama-simple -n 16 -ngl 0` on its f32 twin (gguf-py's
  dequantization), checked step by step against a float64 numpy forward, and the smallest
  top-1 / top-2 logit margin (at least 0.05).

The tokenizer is make_gguf_mix_fixtures.py's: one CJK character per id, so printed text gives
back the ids.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_gguf_mix_fixtures as mix  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "crates/rlx-models/tests/fixtures/decoders/qwen3_moe"
OUT_DIR = ROOT / "crates/rlx-models/tests/fixtures/gguf_moe"
MIXES = ["Q8_0", "Q4_K_M"]
MIN_MARGIN = 0.05
CANDIDATES = 40
PROMPTS = 3


def load_safetensors(path: Path) -> dict:
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(t["shape"])
    return out


def config() -> dict:
    c = json.loads((HF / "config.json").read_text())
    return dict(hidden=c["hidden_size"], ffn=c["intermediate_size"], expert_ffn=c["moe_intermediate_size"],
                experts=c["num_local_experts"], used=c["num_experts_per_tok"], layers=c["num_hidden_layers"],
                heads=c["num_attention_heads"], kv_heads=c["num_key_value_heads"],
                head_dim=c["hidden_size"] // c["num_attention_heads"], eps=c["rms_norm_eps"],
                theta=c["rope_parameters"]["rope_theta"], ctx=c["max_position_embeddings"],
                vocab=c["vocab_size"], dense=set(c["mlp_only_layers"]))


def gguf_tensors(c: dict, hf: dict) -> dict:
    w = {"token_embd.weight": hf["model.embed_tokens.weight"], "output_norm.weight": hf["model.norm.weight"]}
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down", "mlp.gate": "ffn_gate_inp"}
    for i in range(c["layers"]):
        for hf_part, part in names.items():
            key = f"model.layers.{i}.{hf_part}.weight"
            if key in hf:
                w[f"blk.{i}.{part}.weight"] = hf[key]
        if i not in c["dense"]:
            for proj, part in [("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"), ("down_proj", "ffn_down_exps")]:
                w[f"blk.{i}.{part}.weight"] = np.stack(
                    [hf[f"model.layers.{i}.mlp.experts.{j}.{proj}.weight"] for j in range(c["experts"])])
    return w


def write(path: Path, c: dict, w: dict) -> None:
    wr = gguf.GGUFWriter(str(path), "qwen3moe")
    wr.add_name("tiny-qwen3moe")
    wr.add_block_count(c["layers"])
    wr.add_context_length(c["ctx"])
    wr.add_embedding_length(c["hidden"])
    wr.add_feed_forward_length(c["ffn"])
    wr.add_expert_feed_forward_length(c["expert_ffn"])
    wr.add_expert_count(c["experts"])
    wr.add_expert_used_count(c["used"])
    wr.add_head_count(c["heads"])
    wr.add_head_count_kv(c["kv_heads"])
    wr.add_key_length(c["head_dim"])
    wr.add_value_length(c["head_dim"])
    wr.add_rope_freq_base(c["theta"])
    wr.add_layer_norm_rms_eps(c["eps"])
    wr.add_vocab_size(c["vocab"])
    wr.add_file_type(0)
    toks, types = mix.tokens()
    wr.add_tokenizer_model("llama")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(toks)
    wr.add_token_scores([0.0] * len(toks))
    wr.add_token_types(types)
    wr.add_unk_token_id(0)
    wr.add_bos_token_id(1)
    wr.add_eos_token_id(2)
    wr.add_add_bos_token(False)
    wr.add_add_eos_token(False)
    wr.add_add_space_prefix(False)
    for name in sorted(w):
        wr.add_tensor(name, np.ascontiguousarray(w[name], dtype=np.float32))
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def random_sparse(c: dict) -> dict:
    rng = np.random.default_rng(31)
    h, d, e, f = c["hidden"], c["head_dim"], c["experts"], c["expert_ffn"]

    def mat(*shape, gain=1.0):
        return rng.normal(0.0, gain / np.sqrt(shape[-1]), size=shape).astype(np.float32)

    # Tied: the table is also the output projection, logits of a few units.
    w = {"token_embd.weight": mat(c["vocab"], h, gain=4.0),
         "output_norm.weight": rng.uniform(0.8, 1.2, size=h).astype(np.float32)}
    for i in range(c["layers"]):
        p = f"blk.{i}."
        for n in ["attn_norm", "ffn_norm"]:
            w[p + n + ".weight"] = rng.uniform(0.8, 1.2, size=h).astype(np.float32)
        for n in ["attn_q_norm", "attn_k_norm"]:
            w[p + n + ".weight"] = rng.uniform(0.8, 1.2, size=d).astype(np.float32)
        w[p + "attn_q.weight"] = mat(c["heads"] * d, h, gain=2.0)
        w[p + "attn_k.weight"] = mat(c["kv_heads"] * d, h, gain=2.0)
        w[p + "attn_v.weight"] = mat(c["kv_heads"] * d, h)
        w[p + "attn_output.weight"] = mat(h, c["heads"] * d)
        w[p + "ffn_gate_inp.weight"] = mat(e, h, gain=3.0)
        w[p + "ffn_gate_exps.weight"] = mat(e, f, h)
        w[p + "ffn_up_exps.weight"] = mat(e, f, h)
        w[p + "ffn_down_exps.weight"] = mat(e, h, f)
    return w


def forward(c: dict, w: dict, ids) -> np.ndarray:
    """float64 logits [len(ids), vocab]: Qwen3-MoE (NeoX rope, q/k RMSNorm, softmax top-k
    routing renormalized), weights by GGUF name, experts in every layer that has a router."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    s, d, eps = len(ids), c["head_dim"], c["eps"]

    def rms(x, g):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g

    def rope(x):
        inv = 1.0 / (c["theta"] ** (np.arange(0, d, 2, dtype=np.float64) / d))
        ang = np.outer(np.arange(s), inv)
        cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
        rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
        return x * cos[:, None, :] + rot * sin[:, None, :]

    def swiglu(x, gate, up, down):
        g = x @ gate.T
        return ((g / (1 + np.exp(-g))) * (x @ up.T)) @ down.T

    x = w["token_embd.weight"][ids]
    for i in range(c["layers"]):
        p = f"blk.{i}."
        n = rms(x, w[p + "attn_norm.weight"])
        q = rope(rms((n @ w[p + "attn_q.weight"].T).reshape(s, c["heads"], d), w[p + "attn_q_norm.weight"]))
        k = rope(rms((n @ w[p + "attn_k.weight"].T).reshape(s, c["kv_heads"], d), w[p + "attn_k_norm.weight"]))
        v = (n @ w[p + "attn_v.weight"].T).reshape(s, c["kv_heads"], d)
        group = c["heads"] // c["kv_heads"]
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        sc = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
        sc = np.where(np.tril(np.ones((s, s), bool))[None], sc, -np.inf)
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        x = x + np.einsum("hqk,khd->qhd", pr, v).reshape(s, -1) @ w[p + "attn_output.weight"].T
        n = rms(x, w[p + "ffn_norm.weight"])
        if p + "ffn_gate_inp.weight" not in w:
            x = x + swiglu(n, w[p + "ffn_gate.weight"], w[p + "ffn_up.weight"], w[p + "ffn_down.weight"])
            continue
        logits = n @ w[p + "ffn_gate_inp.weight"].T
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        out = np.zeros_like(x)
        for t in range(s):
            top = np.argsort(-probs[t], kind="stable")[:c["used"]]
            wt = probs[t, top] / probs[t, top].sum()
            for j, e in enumerate(top):
                out[t] += wt[j] * swiglu(n[t], w[p + "ffn_gate_exps.weight"][e], w[p + "ffn_up_exps.weight"][e],
                                         w[p + "ffn_down_exps.weight"][e])
        x = x + out
    return rms(x, w["output_norm.weight"]) @ w.get("output.weight", w["token_embd.weight"]).T


def greedy(c, w, prompt):
    ids, gap = list(prompt), np.inf
    for _ in range(mix.N_PREDICT):
        last = forward(c, w, ids)[-1]
        top = np.sort(last)
        gap = min(gap, float(top[-1] - top[-2]))
        ids.append(int(np.argmax(last)))
        if ids[-1] == 2:
            break
    return ids[len(prompt):], gap


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-dir", default="/tmp/llama", type=Path)
    tools = ap.parse_args().llama_dir
    env = dict(os.environ, LD_LIBRARY_PATH=str(tools))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    c = config()
    hf = load_safetensors(HF / "model.safetensors")
    ref = json.loads((HF / "reference.json").read_text())
    w = gguf_tensors(c, hf)
    write(OUT_DIR / "qwen3moe.f32.gguf", c, w)
    got = forward(c, w, ref["prompt"]).flatten()
    err = np.abs(got - np.array(ref["logits"])).max() / np.abs(np.array(ref["logits"])).max()
    print(f"qwen3moe.f32.gguf: numpy forward vs transformers reference: max rel err {err:.2e}")
    assert err < 1e-4, "the numpy forward does not reproduce the HF fixture"

    sparse_cfg = dict(c, dense=set())
    doc = {"note": "greedy tokens of llama-simple -n 16 -ngl 0 on each file's f32 twin (gguf-py dequantize); "
                   "min_margin: smallest top-1/top-2 logit gap of a float64 numpy forward of the twin",
           "llama_cpp": "3f545beccee69d9975f466ec7e45fd9aacd8ba90", "files": []}
    rng = np.random.default_rng(131)
    pool = [rng.integers(3, c["vocab"], size=int(rng.integers(4, 9))).tolist() for _ in range(CANDIDATES)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        f32 = tmp / "sparse.f32.gguf"
        write(f32, sparse_cfg, random_sparse(c))
        for m in MIXES:
            out = OUT_DIR / f"sparse.{m.lower()}.gguf"
            subprocess.run([str(tools / "llama-quantize"), str(f32), str(out), m], capture_output=True, env=env,
                           check=True)
            tw, types = mix.read_dequantized(out)
            twin = tmp / f"sparse.{m}.twin.gguf"
            write(twin, sparse_cfg, tw)
            entry = {"file": out.name, "mix": m, "types": types, "prompts": []}
            for p in pool:
                want, gap = greedy(sparse_cfg, tw, p)
                if gap < MIN_MARGIN:
                    continue
                toks = mix.llama_simple(tools, twin, p)
                if toks != want:
                    raise SystemExit(f"{out.name}: llama-simple {toks} != numpy {want} (margin {gap:.3g})")
                entry["prompts"].append({"prompt": p, "tokens": toks, "min_margin": gap})
                if len(entry["prompts"]) == PROMPTS:
                    break
            if len(entry["prompts"]) < PROMPTS:
                raise SystemExit(f"{out.name}: only {len(entry['prompts'])} prompts with margin {MIN_MARGIN}")
            print(f"{out.name}: {out.stat().st_size} bytes, {sorted(set(types.values()))}, "
                  f"margins {[round(q['min_margin'], 3) for q in entry['prompts']]}")
            doc["files"].append(entry)
    (OUT_DIR / "sparse.tokens.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
