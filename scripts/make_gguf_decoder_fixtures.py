#!/usr/bin/env python3
"""Converts the tiny Hugging Face decoder fixtures into GGUF files as llama.cpp's converter
(convert_hf_to_gguf.py) would, for rlx-models' tests/gguf_decoder.rs.

Usage (from the repository root):
    python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf numpy safetensors tokenizers
    /tmp/gguf-venv/bin/python scripts/make_gguf_decoder_fixtures.py

Made with gguf 0.19.0, numpy 2.4.6, safetensors 0.8.0 and tokenizers 0.23.3; no torch. The
output is deterministic.

Reads crates/rlx-models/tests/fixtures/decoders/{llama,qwen2,qwen3}/ and writes, under
crates/rlx-models/tests/fixtures/gguf_decoders/:

- NAME.f32.gguf and NAME.f16.gguf for NAME in llama, qwen2, qwen3: the same weights under
  llama.cpp's tensor names (token_embd, blk.N.attn_q, …, output_norm, output when untied), with
  the metadata keys its converter writes ({arch}.block_count, .context_length,
  .embedding_length, .feed_forward_length, .attention.head_count(_kv), .attention.key_length /
  value_length, .attention.layer_norm_rms_epsilon, .rope.freq_base, .rope.dimension_count,
  general.file_type). F16 files keep 1-D tensors (norms, biases) in F32, as llama.cpp does.
  For llama the q and k projection rows are permuted as llama.cpp's LlamaModel.permute does
  (reshape [heads, 2, head_dim/2, …], swap axes 1 and 2); qwen2 and qwen3 are stored as they are.
- The llama files have *default* rope: the HF llama fixture uses llama3 rope scaling, which
  llama.cpp writes as a rope_freqs.weight tensor (see llama_rope_freqs.gguf). Their reference,
  llama.reference.json, was computed by transformers 5.17.0 (torch 2.11.0) on the same weights
  with rope_parameters {rope_type: default, rope_theta: 10000} (run `--llama-reference OUT`
  where torch and transformers are installed); its first check reproduced the HF fixture's own
  reference exactly. qwen2 and qwen3 use the HF fixtures' reference.json as they are.
- llama_rope_freqs.gguf: llama.f32.gguf plus the rope_freqs.weight tensor llama.cpp's
  converter writes for the HF fixture's llama3 rope scaling (one factor per frequency,
  computed as LlamaModel.generate_extra_tensors does): it must give the HF fixture's own
  reference.json (transformers with llama3 rope).
- A 256-token vocabulary in each file (the fixtures' vocab_size), with an HF tokenizer.json
  beside it built by the `tokenizers` package from the same vocabulary, for comparing ids:
  qwen2: tokenizer.ggml.model gpt2 (byte-level BPE with merges), pre "qwen2";
  qwen3: gpt2, pre "llama-bpe";
  llama: tokenizer.ggml.model llama (SentencePiece BPE with scores, byte fallback <0xNN>
  tokens, '▁' for spaces); merges in its tokenizer.json are derived from the vocabulary and
  scores the way transformers' SentencePieceExtractor does.
  Special tokens <pad> <s> </s> are ids 0, 1, 2 (<unk> <s> </s> for llama); bos 1, eos 2,
  add_bos_token true for llama, false for the gpt2 ones.
"""
import json
import sys
from pathlib import Path

import gguf
import numpy as np
from safetensors.numpy import load_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers.trainers import BpeTrainer

ROOT = Path(__file__).resolve().parent.parent
HF_DIR = ROOT / "crates/rlx-models/tests/fixtures/decoders"
OUT_DIR = ROOT / "crates/rlx-models/tests/fixtures/gguf_decoders"
VOCAB = 256

# The pre-tokenizer regexes of llama.cpp's `tokenizer.ggml.pre` values (as in the models'
# own tokenizer.json files).
PRE_REGEX = {
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "llama-bpe": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}

CORPUS_WORDS = (
    "the quick brown fox jumps over the lazy dog while eleven zebras quietly wander past "
    "a small village where people speak of rivers mountains forests and the sea "
    "numbers like 12345 and 2026 appear 7 times it's don't we'll they're I'm you've "
    "café naïve über résumé 日本語 テキスト emoji-free text, with punctuation: yes! no? (maybe) "
    "tokenizers learn merges from frequent pairs; rlx reads GGUF files written by llama.cpp"
).split(" ")


def corpus(lines: int) -> list:
    rng = np.random.default_rng(7)
    words = CORPUS_WORDS
    return [" ".join(words[i] for i in rng.integers(0, len(words), size=12)) for _ in range(lines)]


def gpt2_tokenizer(pre: str):
    """A byte-level BPE of exactly VOCAB tokens: (tokens, merges, tokenizer.json text)."""
    specials = ["<pad>", "<s>", "</s>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRE_REGEX[pre]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = BpeTrainer(vocab_size=VOCAB, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(corpus(400), trainer)
    model = json.loads(tok.to_str())["model"]
    vocab = model["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    assert len(tokens) == VOCAB and [vocab[t] for t in tokens] == list(range(VOCAB)), len(tokens)
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    hf = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges]))
    hf.pre_tokenizer = tok.pre_tokenizer
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tokens, merges, hf.to_str(pretty=True)


# Bytes of characters kept out of the SentencePiece vocabulary's pieces, reached by byte
# fallback: '\n', and the UTF-8 of 'Ω' (CE A9) and '€' (E2 82 AC).
FALLBACK_BYTES = [0x0A, 0xCE, 0xA9, 0xE2, 0x82, 0xAC]


def spm_tokenizer():
    """A SentencePiece-style BPE of exactly VOCAB tokens: (tokens, scores, types, tokenizer.json)."""
    specials = ["<unk>", "<s>", "</s>"]
    byte_tokens = [f"<0x{b:02X}>" for b in FALLBACK_BYTES]
    trained_size = VOCAB - len(specials) - len(byte_tokens)
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    trainer = BpeTrainer(vocab_size=trained_size, show_progress=False)
    tok.train_from_iterator(corpus(400), trainer)
    trained = json.loads(tok.to_str())["model"]["vocab"]
    pieces = [t for t, _ in sorted(trained.items(), key=lambda kv: kv[1])]
    assert len(pieces) == trained_size, len(pieces)
    tokens = specials + byte_tokens + pieces
    # SentencePiece scores: specials and bytes 0, pieces ranked by when BPE made them.
    scores = [0.0] * (len(specials) + len(byte_tokens)) + [-float(i) for i in range(len(pieces))]
    types = [2, 3, 3] + [6] * len(byte_tokens) + [1] * len(pieces)
    vocab = {t: i for i, t in enumerate(tokens)}
    hf = Tokenizer(models.BPE(vocab=vocab, merges=spm_merges(tokens, scores, types), unk_token="<unk>",
                              byte_fallback=True, fuse_unk=True))
    hf.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    hf.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                    decoders.Strip(" ", 1, 0)])
    hf.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    hf.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tokens, scores, types, hf.to_str(pretty=True)


def spm_merges(tokens, scores, types):
    """Every split of a normal piece into two normal pieces, best merged score first (ties by the
    merged piece's id, then the parts' ids), as transformers' SentencePieceExtractor orders them."""
    normal = {t: i for i, t in enumerate(tokens) if types[i] == 1}
    merges = []
    for piece, i in normal.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in normal and right in normal:
                merges.append((-scores[i], i, normal[left], normal[right], left, right))
    merges.sort()
    return [(m[4], m[5]) for m in merges]


def llama_permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's LlamaModel.permute of q/k projection rows (weights or biases)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


HF_TO_GGUF = {
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def gguf_name(name: str) -> str:
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if name in fixed:
        return fixed[name]
    layer, rest = name.removeprefix("model.layers.").split(".", 1)
    module, suffix = rest.rsplit(".", 1)
    return f"blk.{layer}.{HF_TO_GGUF[module]}.{suffix}"


def hf_weights(name: str) -> dict:
    d = HF_DIR / name
    weights = {}
    for f in sorted(d.glob("*.safetensors")):
        weights.update(load_file(str(f)))
    return weights


def write_metadata(w, arch: str, cfg: dict, file_type: int) -> None:
    heads, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    head_dim = cfg.get("head_dim") or hidden // heads
    w.add_name(f"tiny-{arch}")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(cfg["num_key_value_heads"])
    if head_dim != hidden // heads:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_rope_freq_base(float(cfg["rope_parameters"]["rope_theta"]))
    w.add_layer_norm_rms_eps(float(cfg["rms_norm_eps"]))
    if arch == "llama":
        w.add_vocab_size(cfg["vocab_size"])
        w.add_rope_dimension_count(head_dim)
    w.add_file_type(file_type)


def write_tokenizer(w, arch: str) -> str:
    if arch == "llama":
        tokens, scores, types, hf = spm_tokenizer()
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_unk_token_id(0)
        w.add_add_bos_token(True)
    else:
        tokens, merges, hf = gpt2_tokenizer("qwen2" if arch == "qwen2" else "llama-bpe")
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("qwen2" if arch == "qwen2" else "llama-bpe")
        w.add_token_list(tokens)
        w.add_token_types([3 if t in ("<pad>", "<s>", "</s>") else 1 for t in tokens])
        w.add_token_merges(merges)
        w.add_add_bos_token(False)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    return hf


def convert(arch: str, f16: bool, rope_freqs: bool = False) -> None:
    cfg = json.loads((HF_DIR / arch / "config.json").read_text())
    weights = hf_weights(arch)
    name = "llama_rope_freqs" if rope_freqs else f"{arch}.{'f16' if f16 else 'f32'}"
    path = OUT_DIR / f"{name}.gguf"
    w = gguf.GGUFWriter(str(path), arch)
    write_metadata(w, arch, cfg, 1 if f16 else 0)
    hf_tokenizer = write_tokenizer(w, arch)
    if rope_freqs:
        # llama.cpp's converter writes this tensor first.
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(cfg))
    heads, kv_heads = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    for name in sorted(weights):
        data = weights[name].astype(np.float32)
        if arch == "llama" and ".self_attn.q_proj." in name:
            data = llama_permute(data, heads)
        if arch == "llama" and ".self_attn.k_proj." in name:
            data = llama_permute(data, kv_heads)
        if f16 and data.ndim == 2:
            data = data.astype(np.float16)
        w.add_tensor(gguf_name(name), np.ascontiguousarray(data))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    (OUT_DIR / f"{arch}.tokenizer.json").write_text(hf_tokenizer + "\n")
    print(f"{path.name}: {path.stat().st_size} bytes")


def llama3_rope_factors(cfg: dict) -> np.ndarray:
    """llama.cpp's rope_freqs.weight for llama3 rope scaling: one factor per frequency."""
    rp = cfg["rope_parameters"]
    head_dim = cfg["head_dim"]
    freqs = 1.0 / (rp["rope_theta"] ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    low_wavelen = rp["original_max_position_embeddings"] / rp["low_freq_factor"]
    high_wavelen = rp["original_max_position_embeddings"] / rp["high_freq_factor"]
    factors = []
    for f in freqs:
        wavelen = 2 * np.pi / f
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(rp["factor"])
        else:
            smooth = (rp["original_max_position_embeddings"] / wavelen - rp["low_freq_factor"]) / (
                rp["high_freq_factor"] - rp["low_freq_factor"])
            factors.append(1 / ((1 - smooth) / rp["factor"] + smooth))
    return np.array(factors, dtype=np.float32)


def llama_reference(out: str) -> None:
    """llama.reference.json: transformers on the llama fixture's weights with default rope."""
    import torch
    import transformers
    from safetensors.torch import load_file as load_torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.set_num_threads(1)
    d = HF_DIR / "llama"
    cfg = json.loads((d / "config.json").read_text())
    cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    config = LlamaConfig(**cfg)
    config._attn_implementation = "eager"
    model = LlamaForCausalLM(config).float().eval()
    model.load_state_dict(load_torch(str(d / "model.safetensors")), strict=True)
    prompt = json.loads((d / "reference.json").read_text())["prompt"]
    with torch.no_grad():
        run = lambda ids: model(input_ids=torch.tensor([ids])).logits[0].float()
        logits, ids, greedy = run(prompt), list(prompt), []
        for _ in range(8):
            t = int(torch.argmax(run(ids)[-1]))
            greedy.append(t)
            ids.append(t)
    ref = {"architecture": "LlamaForCausalLM",
           "note": "decoders/llama weights with default rope (no llama3 scaling)",
           "transformers_version": transformers.__version__, "torch_version": torch.__version__,
           "prompt": prompt, "logits_shape": list(logits.shape),
           "logits": [float(v) for v in logits.flatten().tolist()], "greedy": greedy}
    Path(out).write_text(json.dumps(ref))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--llama-reference":
        llama_reference(sys.argv[2])
        return
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for arch in ["llama", "qwen2", "qwen3"]:
        for f16 in [False, True]:
            convert(arch, f16)
    convert("llama", False, rope_freqs=True)


if __name__ == "__main__":
    main()
