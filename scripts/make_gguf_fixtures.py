#!/usr/bin/env python3
"""Fixtures for rlx's GGUF reader and quantized-block decoders, with gguf-py as the oracle.

Usage (from the repository root):
    python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf numpy
    /tmp/gguf-venv/bin/python scripts/make_gguf_fixtures.py

Made with gguf 0.19.0 and numpy 2.4.6. The output is deterministic (fixed seeds); rerunning it
rewrites the same bytes unless gguf-py changes.

Writes:
- crates/rlx-cpu/tests/fixtures/quant/{q8_0,q4_0,q4_k,q5_k,q6_k}.blocks: whole blocks, back to
  back, and .f32 beside each: gguf.quants.dequantize of those blocks as little-endian f32.
  The blocks are random bytes with sane f16 scales written over the scale fields (gguf-py cannot
  quantize the K-types), led by a few blocks with special scales: 0, -0, the largest f16, the
  smallest subnormal f16, NaN, +inf and -inf.
- crates/rlx-models/tests/fixtures/gguf/tiny_llama.gguf: a llama-style file (default alignment,
  32) with metadata of every scalar kind, string / int / float / bool arrays, a nested array,
  the tokenizer.ggml.* keys, and one tensor of each type F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K
  and Q6_K; tiny_qwen3.gguf: a qwen3-style file with general.alignment = 64, a key_length that
  is not hidden / heads, and two tensors. Beside each, NAME.expected.json lists its tensors
  (name, ggml type, shape in rlx's row-major order, offset in f32 values into
  NAME.expected.f32) and NAME.expected.f32 holds their values, dequantized by gguf-py.
"""
import json
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

ROOT = Path(__file__).resolve().parent.parent
QUANT_DIR = ROOT / "crates/rlx-cpu/tests/fixtures/quant"
GGUF_DIR = ROOT / "crates/rlx-models/tests/fixtures/gguf"

# Byte offsets of the f16 scale fields inside one block, per type.
SCALE_FIELDS = {
    T.Q8_0: [0],
    T.Q4_0: [0],
    T.Q4_K: [0, 2],  # d, dmin
    T.Q5_K: [0, 2],
    T.Q6_K: [208],  # d comes last
}
SPECIAL_SCALES = [0.0, -0.0, 65504.0, np.float16(2.0**-24), np.nan, np.inf, -np.inf]


def random_blocks(rng: np.random.Generator, qtype: T, n_random: int, special: bool) -> np.ndarray:
    """`n_random` blocks (plus the special ones when asked) as a (blocks, block_bytes) u8 array."""
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    specials = SPECIAL_SCALES if special else []
    n = len(specials) + n_random
    blocks = rng.integers(0, 256, size=(n, type_size), dtype=np.uint8)
    for i in range(n):
        for k, at in enumerate(SCALE_FIELDS[qtype]):
            if i < len(specials) and k == 0:
                value = specials[i]
            else:
                value = rng.uniform(0.001, 1.0) * rng.choice([-1.0, 1.0])
            blocks[i, at:at + 2] = np.frombuffer(np.float16(value).tobytes(), dtype=np.uint8)
    return blocks


def write_quant_fixtures(rng: np.random.Generator) -> None:
    QUANT_DIR.mkdir(parents=True, exist_ok=True)
    for qtype, n_random in [(T.Q8_0, 57), (T.Q4_0, 57), (T.Q4_K, 17), (T.Q5_K, 17), (T.Q6_K, 17)]:
        blocks = random_blocks(rng, qtype, n_random, special=True)
        values = gguf.quants.dequantize(blocks, qtype).astype("<f4").ravel()
        stem = QUANT_DIR / qtype.name.lower()
        stem.with_suffix(".blocks").write_bytes(blocks.tobytes())
        stem.with_suffix(".f32").write_bytes(values.tobytes())


def add_quant_tensor(w, rng, name, qtype, shape, tensors):
    """A tensor of random blocks; shape is rlx's (row-major, last dim fastest)."""
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    rows = int(np.prod(shape[:-1]))
    blocks = random_blocks(rng, qtype, rows * shape[-1] // block_size, special=False)
    data = blocks.reshape(*shape[:-1], shape[-1] // block_size * type_size)
    w.add_tensor(name, data, raw_dtype=qtype)
    tensors.append((name, qtype, list(shape), gguf.quants.dequantize(data, qtype)))


def write_gguf(path: Path, w, tensors) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    manifest, values, offset = [], [], 0
    for name, qtype, shape, expected in tensors:
        expected = np.asarray(expected, dtype="<f4").reshape(shape)
        manifest.append({"name": name, "type": qtype.name, "shape": shape, "offset": offset})
        values.append(expected.ravel())
        offset += expected.size
    path.with_suffix(".expected.json").write_text(json.dumps({"tensors": manifest}, indent=1) + "\n")
    path.with_suffix(".expected.f32").write_bytes(np.concatenate(values).tobytes())
    check_with_reader(path, tensors)


def check_with_reader(path: Path, tensors) -> None:
    """gguf-py's own reader must see what was meant to be written."""
    r = gguf.GGUFReader(path)
    by_name = {t.name: t for t in r.tensors}
    for name, qtype, shape, expected in tensors:
        t = by_name[name]
        assert t.tensor_type == qtype, name
        assert list(reversed([int(d) for d in t.shape])) == shape, (name, t.shape, shape)
        got = gguf.quants.dequantize(t.data, qtype).ravel()
        assert np.array_equal(got, np.asarray(expected).ravel(), equal_nan=True), name


def tiny_llama(rng: np.random.Generator) -> None:
    path = GGUF_DIR / "tiny_llama.gguf"
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tiny-llama-fixture")
    w.add_quantization_version(2)
    w.add_uint32("llama.context_length", 128)
    w.add_uint32("llama.embedding_length", 64)
    w.add_uint32("llama.block_count", 2)
    w.add_uint32("llama.feed_forward_length", 176)
    w.add_uint32("llama.attention.head_count", 4)
    w.add_uint32("llama.attention.head_count_kv", 2)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_float32("llama.rope.freq_base", 500000.0)
    w.add_uint32("llama.rope.dimension_count", 16)
    tokens = ["<unk>", "<s>", "</s>", "Ġthe", "Ġa", "é", "日本", "<0x0A>"] + [f"tok{i}" for i in range(24)]
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.scores", [float(-i) / 4 for i in range(len(tokens))])
    w.add_array("tokenizer.ggml.token_type", [2, 3, 3] + [1] * (len(tokens) - 3))
    w.add_array("tokenizer.ggml.merges", ["Ġ t", "Ġt he", "日 本"])
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    # One key per remaining scalar kind, and arrays the tokenizer keys do not cover.
    w.add_uint8("rlx.test.u8", 200)
    w.add_int8("rlx.test.i8", -100)
    w.add_uint16("rlx.test.u16", 60000)
    w.add_int16("rlx.test.i16", -30000)
    w.add_int32("rlx.test.i32", -2000000000)
    w.add_uint64("rlx.test.u64", 2**40 + 7)
    w.add_int64("rlx.test.i64", -(2**40) - 7)
    w.add_float64("rlx.test.f64", 0.1)
    w.add_bool("rlx.test.false", False)
    w.add_array("rlx.test.bools", [True, False, True])
    w.add_array("rlx.test.nested", [[1, 2, 3], [4], [5, 6]])

    tensors = []
    f32 = rng.standard_normal((3, 5, 7)).astype(np.float32)
    w.add_tensor("test.f32", f32)
    tensors.append(("test.f32", T.F32, [3, 5, 7], f32))
    f16 = rng.standard_normal((4, 10)).astype(np.float16)
    w.add_tensor("test.f16", f16)
    tensors.append(("test.f16", T.F16, [4, 10], f16.astype(np.float32)))
    bf16 = gguf.quants.quantize(rng.standard_normal((6,)).astype(np.float32), T.BF16)
    w.add_tensor("test.bf16", bf16, raw_dtype=T.BF16)
    tensors.append(("test.bf16", T.BF16, [6], gguf.quants.dequantize(bf16, T.BF16)))
    q8 = gguf.quants.quantize(rng.standard_normal((3, 64)).astype(np.float32), T.Q8_0)
    w.add_tensor("test.q8_0", q8, raw_dtype=T.Q8_0)
    tensors.append(("test.q8_0", T.Q8_0, [3, 64], gguf.quants.dequantize(q8, T.Q8_0)))
    add_quant_tensor(w, rng, "test.q4_0", T.Q4_0, [2, 96], tensors)
    add_quant_tensor(w, rng, "test.q4_k", T.Q4_K, [2, 256], tensors)
    add_quant_tensor(w, rng, "test.q5_k", T.Q5_K, [3, 256], tensors)
    add_quant_tensor(w, rng, "test.q6_k", T.Q6_K, [2, 512], tensors)
    write_gguf(path, w, tensors)


def tiny_qwen3(rng: np.random.Generator) -> None:
    path = GGUF_DIR / "tiny_qwen3.gguf"
    w = gguf.GGUFWriter(path, "qwen3")
    w.add_custom_alignment(64)
    w.add_uint32("qwen3.context_length", 256)
    w.add_uint32("qwen3.embedding_length", 64)
    w.add_uint32("qwen3.block_count", 1)
    w.add_uint32("qwen3.feed_forward_length", 128)
    w.add_uint32("qwen3.attention.head_count", 4)
    w.add_uint32("qwen3.attention.head_count_kv", 1)
    w.add_uint32("qwen3.attention.key_length", 32)
    w.add_uint32("qwen3.attention.value_length", 32)
    w.add_float32("qwen3.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_float32("qwen3.rope.freq_base", 1000000.0)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(10)])
    tensors = []
    norm = rng.standard_normal((5,)).astype(np.float32)
    w.add_tensor("output_norm.weight", norm)
    tensors.append(("output_norm.weight", T.F32, [5], norm))
    add_quant_tensor(w, rng, "output.weight", T.Q6_K, [3, 256], tensors)
    write_gguf(path, w, tensors)


def main() -> None:
    np.seterr(invalid="ignore", over="ignore")  # the special scales make inf · 0 on purpose
    rng = np.random.default_rng(20251126)
    write_quant_fixtures(rng)
    GGUF_DIR.mkdir(parents=True, exist_ok=True)
    tiny_llama(rng)
    tiny_qwen3(rng)
    total = sum(p.stat().st_size for d in (QUANT_DIR, GGUF_DIR) for p in d.iterdir())
    print(f"wrote {QUANT_DIR} and {GGUF_DIR}: {total} bytes")


if __name__ == "__main__":
    main()
