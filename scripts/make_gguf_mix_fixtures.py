#!/usr/bin/env python3
"""Writes tiny random-init llama GGUF files quantized by llama.cpp's own `llama-quantize` for
each of its standard mixes, with the greedy tokens `llama-simple` gives on each file's f32
twin, for rlx-models' tests/gguf_mixes.rs.

Usage (from the repository root; llama.cpp's tools from ../shared/llama):
    eval "$(bash /work/shared/llama/setup.sh /tmp/llama)"
    python3 scripts/make_gguf_mix_fixtures.py [--llama-dir /tmp/llama]

Made with gguf 0.19.0 and numpy 2.x (no torch), llama.cpp 3f545bec. Deterministic (seeded;
llama-quantize is deterministic, with the uniform imatrix too).

Two models, architecture llama, 2 layers, untied `output.weight` in one and tied in the other,
a 256-token SentencePiece vocabulary of single characters (ids 0-2 `<unk>` `<s>` `</s>`, then
one CJK character per id, no space prefix, no BOS) so that every generated token prints as
exactly one character and the printed text gives back the ids:

- `h256`: hidden 256 (a multiple of the K-quants' 256), 4 heads of 64, 2 KV heads, FFN 256,
  default rope (theta 10000), untied output.
- `h192`: hidden 192 (not a multiple of 256: llama-quantize falls back to Q5_0 / Q5_1 / Q8_0 /
  IQ4_NL rows), 3 heads of 64, 1 KV head, FFN 384, tied embeddings, and a Llama 3 rope:
  `rope_freqs.weight` with the factors llama.cpp's converter writes for rope_type llama3
  (factor 8, low 1, high 4, original context 64, so most frequencies are scaled).

The f32 model is written as llama.cpp's converter would (q/k rows permuted for ggml's rope),
then `llama-quantize F32 OUT MIX` for MIX in MIXES (`--imatrix` with a uniform importance
matrix for the IQ1/IQ2/IQ3 mixes, which llama-quantize refuses without one). Each quantized
file is dequantized by the gguf package into an F32 twin (the same weights), and `llama-simple -m TWIN -n 16 -ngl 0
PROMPT` runs each prompt on it. A numpy float64 forward on the twin checks llama-simple's
tokens (same argmax at every step) and gives the top-1 / top-2 logit margin of every step;
the smallest margin is recorded.

Writes crates/rlx-models/tests/fixtures/gguf_mixes/MODEL.MIX.gguf and tokens.json:
{"files": [{"file", "model", "mix", "types": {tensor: ggml type}, "prompts": [{"prompt": ids,
"tokens": ids, "min_margin": f}]}], ...}.
"""
import argparse
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import gguf
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "crates/rlx-models/tests/fixtures/gguf_mixes"
MIXES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K",
         "IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M"]
# llama-quantize refuses these without an importance matrix (IQ3_XXS for its IQ2_S rows); they
# get a uniform one (imatrix()).
NEEDS_IMATRIX = {"IQ3_XXS", "IQ3_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M"}
MODELS = {
    "h256": dict(hidden=256, heads=2, kv_heads=1, head_dim=32, ffn=64, tied=True, llama3=False,
                 seed=11),
    "h96": dict(hidden=96, heads=3, kv_heads=1, head_dim=32, ffn=192, tied=False, llama3=True,
                seed=12),
}
VOCAB, LAYERS, THETA, EPS, CTX = 256, 2, 10000.0, 1e-5, 256
N_PREDICT = 16
PROMPTS = 3
CANDIDATES = 60
# Smallest top-1 / top-2 logit margin (of logits about ±10) a recorded prompt may have.
MIN_MARGIN = 0.05
LLAMA3 = dict(factor=8.0, low=1.0, high=4.0, original=64)


def char(i: int) -> str:
    return chr(0x4E00 + i)


def tokens():
    toks = ["<unk>", "<s>", "</s>"] + [char(i) for i in range(3, VOCAB)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + \
        [gguf.TokenType.NORMAL] * (VOCAB - 3)
    return toks, types


def rope_factors(head_dim: int) -> np.ndarray:
    """llama.cpp's converter's rope_freqs for rope_type llama3 (LlamaModel.generate_extra_tensors)."""
    c = LLAMA3
    freqs = 1.0 / (THETA ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    low_wl, high_wl = c["original"] / c["low"], c["original"] / c["high"]
    out = []
    for f in freqs:
        wl = 2 * np.pi / f
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(c["factor"])
        else:
            smooth = (c["original"] / wl - c["low"]) / (c["high"] - c["low"])
            out.append(1.0 / ((1 - smooth) / c["factor"] + smooth))
    return np.array(out, dtype=np.float32)


def llama_permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's LlamaModel.permute on the rows of w."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def random_model(m: dict) -> dict:
    """Hugging Face-ordered weights, then permuted as the converter stores them."""
    rng = np.random.default_rng(m["seed"])
    h, q, kv, f = m["hidden"], m["heads"] * m["head_dim"], m["kv_heads"] * m["head_dim"], m["ffn"]

    def mat(rows, cols, gain=1.0):
        return (rng.normal(0.0, gain / np.sqrt(cols), size=(rows, cols))).astype(np.float32)

    # Tied, the table is also the output projection: logits of a few units either way.
    embd_std = 4.0 / np.sqrt(h) if m["tied"] else 1.0
    w = {"token_embd.weight": rng.normal(0.0, embd_std, size=(VOCAB, h)).astype(np.float32)}
    for i in range(LAYERS):
        p = f"blk.{i}."
        w[p + "attn_norm.weight"] = rng.uniform(0.8, 1.2, size=h).astype(np.float32)
        w[p + "attn_q.weight"] = llama_permute(mat(q, h, 2.0), m["heads"])
        w[p + "attn_k.weight"] = llama_permute(mat(kv, h, 2.0), m["kv_heads"])
        w[p + "attn_v.weight"] = mat(kv, h)
        w[p + "attn_output.weight"] = mat(h, q)
        w[p + "ffn_norm.weight"] = rng.uniform(0.8, 1.2, size=h).astype(np.float32)
        w[p + "ffn_gate.weight"] = mat(f, h)
        w[p + "ffn_up.weight"] = mat(f, h)
        w[p + "ffn_down.weight"] = mat(h, f)
    w["output_norm.weight"] = rng.uniform(0.8, 1.2, size=h).astype(np.float32)
    if not m["tied"]:
        w["output.weight"] = mat(VOCAB, h, 4.0)
    if m["llama3"]:
        w["rope_freqs.weight"] = rope_factors(m["head_dim"])
    return w


def write_f32(path: Path, m: dict, weights: dict) -> None:
    wr = gguf.GGUFWriter(str(path), "llama")
    wr.add_name("tiny-llama-mix")
    wr.add_block_count(LAYERS)
    wr.add_context_length(CTX)
    wr.add_embedding_length(m["hidden"])
    wr.add_feed_forward_length(m["ffn"])
    wr.add_head_count(m["heads"])
    wr.add_head_count_kv(m["kv_heads"])
    wr.add_key_length(m["head_dim"])
    wr.add_value_length(m["head_dim"])
    wr.add_rope_dimension_count(m["head_dim"])
    wr.add_rope_freq_base(THETA)
    wr.add_layer_norm_rms_eps(EPS)
    wr.add_vocab_size(VOCAB)
    wr.add_file_type(0)
    toks, types = tokens()
    wr.add_tokenizer_model("llama")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(toks)
    wr.add_token_scores([0.0] * VOCAB)
    wr.add_token_types(types)
    wr.add_unk_token_id(0)
    wr.add_bos_token_id(1)
    wr.add_eos_token_id(2)
    wr.add_add_bos_token(False)
    wr.add_add_eos_token(False)
    wr.add_add_space_prefix(False)
    for name in sorted(weights):
        wr.add_tensor(name, np.ascontiguousarray(weights[name], dtype=np.float32))
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


def read_dequantized(path: Path):
    """(weights as float32 in numpy [rows, cols] order, {name: ggml type name})."""
    r = gguf.GGUFReader(str(path))
    out, types = {}, {}
    for t in r.tensors:
        shape = [int(d) for d in reversed(t.shape.tolist())]
        types[t.name] = t.tensor_type.name
        out[t.name] = gguf.quants.dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
    return out, types


def rope_ggml(x, positions, factors):
    """ggml's normal rope (adjacent pairs), x [s, heads, d], frequency i divided by factors[i]."""
    d = x.shape[-1]
    inv = 1.0 / (THETA ** (np.arange(0, d, 2, dtype=np.float64) / d)) / factors
    ang = np.outer(positions, inv)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * np.cos(ang) - b * np.sin(ang)
    out[..., 1::2] = a * np.sin(ang) + b * np.cos(ang)
    return out


def forward(m: dict, w: dict, ids) -> np.ndarray:
    """float64 logits [len(ids), vocab] of the file-ordered weights w."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    s, d = len(ids), m["head_dim"]
    factors = w.get("rope_freqs.weight", np.ones(d // 2))

    def rms(x, g):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * g

    x = w["token_embd.weight"][ids]
    pos = np.arange(s, dtype=np.float64)
    for i in range(LAYERS):
        p = f"blk.{i}."
        n = rms(x, w[p + "attn_norm.weight"])
        q = rope_ggml((n @ w[p + "attn_q.weight"].T).reshape(s, m["heads"], d), pos, factors)
        k = rope_ggml((n @ w[p + "attn_k.weight"].T).reshape(s, m["kv_heads"], d), pos, factors)
        v = (n @ w[p + "attn_v.weight"].T).reshape(s, m["kv_heads"], d)
        group = m["heads"] // m["kv_heads"]
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
        scores = np.where(np.tril(np.ones((s, s), bool))[None], scores, -np.inf)
        pr = np.exp(scores - scores.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        a = np.einsum("hqk,khd->qhd", pr, v).reshape(s, -1)
        x = x + a @ w[p + "attn_output.weight"].T
        n = rms(x, w[p + "ffn_norm.weight"])
        gate = n @ w[p + "ffn_gate.weight"].T
        x = x + ((gate / (1 + np.exp(-gate))) * (n @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
    out = w.get("output.weight", w["token_embd.weight"])
    return rms(x, w["output_norm.weight"]) @ out.T


def llama_simple(tools: Path, model: Path, prompt_ids):
    """llama-simple's greedy ids for a prompt, or None when its text does not give them back
    (fewer tokens without an end of sequence: a token it printed as nothing); such a prompt is
    not used."""
    text = "".join(char(i) for i in prompt_ids)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tools))
    run = subprocess.run([str(tools / "llama-simple"), "-m", str(model), "-n", str(N_PREDICT), "-ngl", "0", text],
                         capture_output=True, env=env, check=True)
    out = run.stdout.decode("utf-8")
    if not out.startswith(text):
        raise SystemExit(f"llama-simple did not echo the prompt: {out!r}")
    gen = out[len(text):].rstrip("\n")
    special = {"<unk>": 0, "<s>": 1, "</s>": 2}
    ids = [special[piece] if piece in special else ord(piece) - 0x4E00 for piece in re.findall(r"<unk>|<s>|</s>|.", gen)]
    # llama-simple stops early only at the end-of-sequence token.
    if not (len(ids) == N_PREDICT or (ids and ids[-1] == 2)) or not all(0 <= i < VOCAB for i in ids):
        print(f"{model.name}: llama-simple gave {gen!r}, not {N_PREDICT} tokens; prompt skipped")
        return None
    return ids


def check_tokenize(tools: Path, model: Path, prompt_ids) -> None:
    text = "".join(char(i) for i in prompt_ids)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tools))
    run = subprocess.run([str(tools / "llama-tokenize"), "-m", str(model), "-p", text, "--ids", "--log-disable"],
                         capture_output=True, env=env, check=True)
    got = json.loads(run.stdout.decode().strip().splitlines()[-1])
    if got != list(prompt_ids):
        raise SystemExit(f"llama-tokenize gave {got} for {prompt_ids}")


def candidates(m):
    """CANDIDATES random prompts of a model (seeded)."""
    rng = np.random.default_rng(m["seed"] + 100)
    return [rng.integers(3, VOCAB, size=int(rng.integers(4, 9))).tolist() for _ in range(CANDIDATES)]


def greedy(m, w, prompt):
    """(N_PREDICT greedy tokens of the numpy forward, stopping after </s>; their smallest
    top-1 / top-2 logit margin)."""
    ids, gap = list(prompt), np.inf
    for _ in range(N_PREDICT):
        last = forward(m, w, ids)[-1]
        top = np.sort(last)
        gap = min(gap, float(top[-1] - top[-2]))
        ids.append(int(np.argmax(last)))
        if ids[-1] == 2:
            break
    return ids[len(prompt):], gap


def imatrix(f32: Path, out: Path) -> None:
    """A uniform importance matrix (every column weighted 1) for every 2-D weight of `f32`, in
    llama.cpp's legacy imatrix layout: i32 entry count, then per entry the i32 name length, the
    name, i32 call count (1), i32 value count (the weight's columns) and that many f32; then the
    i32 last call and the i32 length of the dataset name (empty)."""
    reader = gguf.GGUFReader(f32)
    entries = [(t.name, int(t.shape[0])) for t in reader.tensors
               if len(t.shape) == 2 and t.name not in ("token_embd.weight",)]
    parts = [np.int32(len(entries)).tobytes()]
    for name, cols in entries:
        raw = name.encode()
        parts += [np.int32(len(raw)).tobytes(), raw, np.int32(1).tobytes(), np.int32(cols).tobytes(),
                  np.ones(cols, dtype="<f4").tobytes()]
    parts += [np.int32(1).tobytes(), np.int32(0).tobytes()]
    out.write_bytes(b"".join(parts))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-dir", default="/tmp/llama", type=Path)
    args = ap.parse_args()
    tools = args.llama_dir
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    doc = {"note": "greedy tokens of llama-simple -n 16 -ngl 0 on each file's f32 twin (gguf-py dequantize); "
                   "min_margin: smallest top-1/top-2 logit gap of a float64 numpy forward of the twin",
           "llama_cpp": "3f545beccee69d9975f466ec7e45fd9aacd8ba90", "gguf": "0.19.0",
           "numpy": np.__version__, "files": []}
    env = dict(os.environ, LD_LIBRARY_PATH=str(tools))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, m in MODELS.items():
            f32 = tmp / f"{name}.f32.gguf"
            write_f32(f32, m, random_model(m))
            pool = candidates(m)
            imat = tmp / f"{name}.imatrix.dat"
            imatrix(f32, imat)
            for mix in MIXES:
                out = OUT_DIR / f"{name}.{mix.lower()}.gguf"
                extra = ["--imatrix", str(imat)] if mix in NEEDS_IMATRIX else []
                run = subprocess.run([str(tools / "llama-quantize"), *extra, str(f32), str(out), mix],
                                     capture_output=True, env=env)
                if run.returncode != 0:
                    raise SystemExit(f"llama-quantize {mix}: {run.stderr.decode()[-2000:]}")
                w, types = read_dequantized(out)
                twin = tmp / f"{name}.{mix}.twin.gguf"
                write_f32(twin, m, w)
                check_tokenize(tools, twin, pool[0])
                entry = {"file": out.name, "model": name, "mix": mix, "types": types, "prompts": []}
                for p in pool:
                    want, gap = greedy(m, w, p)
                    if gap < MIN_MARGIN:
                        continue
                    toks = llama_simple(tools, twin, p)
                    if toks is None:
                        continue
                    if toks != want:
                        raise SystemExit(f"{out.name}: llama-simple {toks} != numpy {want} (margin {gap:.3g})")
                    entry["prompts"].append({"prompt": p, "tokens": toks, "min_margin": gap})
                    if len(entry["prompts"]) == PROMPTS:
                        break
                if len(entry["prompts"]) < PROMPTS:
                    raise SystemExit(f"{out.name}: only {len(entry['prompts'])} prompts with margin {MIN_MARGIN}")
                gaps = [q["min_margin"] for q in entry["prompts"]]
                kinds = sorted(set(types.values()))
                print(f"{out.name}: {out.stat().st_size} bytes, {kinds}, min margin {min(gaps):.3g}")
                doc["files"].append(entry)
    (OUT_DIR / "tokens.json").write_text(json.dumps(doc, indent=1) + "\n")
    total = sum(p.stat().st_size for p in OUT_DIR.iterdir())
    print(f"total {total} bytes")


if __name__ == "__main__":
    main()
