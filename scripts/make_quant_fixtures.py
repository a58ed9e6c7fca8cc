#!/usr/bin/env python3
"""Block fixtures for the ggml formats that llama.cpp's standard mixes add beside the five of
make_gguf_fixtures.py, with gguf-py's `quants.dequantize` as the oracle.

Usage (from the repository root):
    python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf numpy
    /tmp/gguf-venv/bin/python scripts/make_quant_fixtures.py

Made with gguf 0.19.0 and numpy 2.4.6. The output is deterministic (a fixed seed); rerunning it
rewrites the same bytes unless gguf-py changes.

Writes crates/rlx-cpu/tests/fixtures/quant/{q4_1,q5_0,q5_1,q2_k,q3_k,iq4_nl,iq4_xs,iq2_xxs,
iq2_xs,iq2_s,iq3_xxs,iq3_s,iq1_s,iq1_m}.blocks
(whole blocks, back to back) and .f32 beside each (gguf.quants.dequantize of those blocks, as
little-endian f32). Each file leads with blocks whose first f16 scale is special (0, -0, the
largest f16, the smallest subnormal, NaN, +inf, -inf; IQ1_M, whose scale is split over four
words, has random bytes only), then random bytes with sane f16 scales
written over the scale fields, then (for the formats gguf-py can quantize: Q4_1, Q5_0, Q5_1)
blocks that gguf.quants.quantize made from normal values, so the fixtures hold the blocks real
files do as well as every bit pattern of the value fields.

Also writes crates/rlx-models/tests/fixtures/gguf/tiny_mixes.gguf: a GGUF file (through
gguf-py's GGUFWriter) with one tensor of each of these formats, and beside it
tiny_mixes.expected.json / .f32 as make_gguf_fixtures.py writes them for its files.
"""
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

import make_gguf_fixtures as base

ROOT = Path(__file__).resolve().parent.parent
QUANT_DIR = ROOT / "crates/rlx-cpu/tests/fixtures/quant"

# Byte offsets of the f16 scale fields inside one block (ggml's block_* structs).
SCALE_FIELDS = {
    T.Q4_1: [0, 2],  # d, m
    T.Q5_0: [0],  # d, then qh (u32) and the low nibbles
    T.Q5_1: [0, 2],  # d, m, then qh and the low nibbles
    T.Q2_K: [80, 82],  # scales, qs, then d and dmin
    T.Q3_K: [108],  # hmask, qs, scales, then d
    T.IQ4_NL: [0],
    T.IQ4_XS: [0],  # d, then scales_h (u16), scales_l, qs
    T.IQ2_XXS: [0],
    T.IQ2_XS: [0],
    T.IQ2_S: [0],
    T.IQ3_XXS: [0],
    T.IQ3_S: [0],
    T.IQ1_S: [0],
    T.IQ1_M: [],  # its f16 d is the top nibbles of the four scale words (iq1_m_scales)
}
# (format, random blocks, quantized blocks).
COUNTS = [
    (T.Q4_1, 24, 8),
    (T.Q5_0, 24, 8),
    (T.Q5_1, 24, 8),
    (T.Q2_K, 9, 0),
    (T.Q3_K, 9, 0),
    (T.IQ4_NL, 25, 0),
    (T.IQ4_XS, 9, 0),
    (T.IQ2_XXS, 9, 0),
    (T.IQ2_XS, 9, 0),
    (T.IQ2_S, 9, 0),
    (T.IQ3_XXS, 9, 0),
    (T.IQ3_S, 9, 0),
    (T.IQ1_S, 9, 0),
    (T.IQ1_M, 16, 0),
]
def iq1_m_scales(blocks: np.ndarray) -> None:
    """IQ1_M keeps its f16 d in the top nibbles of its four u16 scale words (bytes 48..56):
    write the special scales into the leading blocks and sane ones into the rest."""
    rng = np.random.default_rng(291)
    for i in range(blocks.shape[0]):
        if i < len(base.SPECIAL_SCALES):
            value = base.SPECIAL_SCALES[i]
        else:
            value = rng.uniform(0.001, 1.0) * rng.choice([-1.0, 1.0])
        bits = int(np.frombuffer(np.float16(value).tobytes(), dtype=np.uint16)[0])
        words = blocks[i, 48:56].copy().view(np.uint16)
        for k in range(4):
            nibble = (bits >> (4 * k)) & 0xF
            words[k] = (int(words[k]) & 0x0FFF) | (nibble << 12)
        blocks[i, 48:56] = words.view(np.uint8)


def quantized_blocks(rng: np.random.Generator, qtype: T, n: int) -> np.ndarray:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    values = rng.standard_normal((n, block_size)).astype(np.float32)
    return gguf.quants.quantize(values, qtype).reshape(n, type_size)


def tiny_mixes(rng: np.random.Generator) -> None:
    """One tensor per format (rlx's row-major shapes), random blocks with sane scales."""
    path = base.GGUF_DIR / "tiny_mixes.gguf"
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tiny-mixes-fixture")
    tensors = []
    shapes = [
        (T.Q4_1, [3, 64]),
        (T.Q5_0, [2, 96]),
        (T.Q5_1, [3, 32]),
        (T.Q2_K, [2, 256]),
        (T.Q3_K, [1, 512]),
        (T.IQ4_NL, [2, 64]),
        (T.IQ4_XS, [2, 256]),
        (T.IQ2_XXS, [1, 256]),
        (T.IQ2_XS, [1, 256]),
        (T.IQ2_S, [1, 256]),
        (T.IQ3_XXS, [1, 256]),
        (T.IQ3_S, [1, 256]),
        (T.IQ1_S, [1, 256]),
        (T.IQ1_M, [1, 256]),
    ]
    for qtype, shape in shapes:
        base.add_quant_tensor(w, rng, f"test.{qtype.name.lower()}", qtype, shape, tensors)
    base.write_gguf(path, w, tensors)


def main() -> None:
    np.seterr(invalid="ignore", over="ignore")  # the special scales make inf · 0 on purpose
    base.SCALE_FIELDS.update(SCALE_FIELDS)  # base.random_blocks writes the scales it lists
    rng = np.random.default_rng(20261127)
    QUANT_DIR.mkdir(parents=True, exist_ok=True)
    total = 0
    for qtype, n_random, n_quantized in COUNTS:
        parts = [base.random_blocks(rng, qtype, n_random, special=True)]
        if qtype == T.IQ1_M:
            iq1_m_scales(parts[0])
        if n_quantized:
            parts.append(quantized_blocks(rng, qtype, n_quantized))
        blocks = np.concatenate(parts)
        values = gguf.quants.dequantize(blocks, qtype).astype("<f4").ravel()
        stem = QUANT_DIR / qtype.name.lower()
        stem.with_suffix(".blocks").write_bytes(blocks.tobytes())
        stem.with_suffix(".f32").write_bytes(values.tobytes())
        total += blocks.nbytes + values.nbytes
    print(f"wrote {len(COUNTS)} formats to {QUANT_DIR}: {total} bytes")
    tiny_mixes(np.random.default_rng(20261128))


if __name__ == "__main__":
    main()
