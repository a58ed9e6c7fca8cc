#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/ (run from anywhere; deterministic).

The graph seeds are builder-call scripts in the byte format crates/rlx-fuzz/src/graph_gen.rs
decodes; the model seeds come from the fixtures under crates/rlx-models/tests/fixtures, cut down
to a few KB. Regenerate after changing a decoder; tests/corpora.rs checks the seeds still reach
deep (graphs verify, lower, load).
"""
import json
import os
import struct

ROOT = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(ROOT, "..", "crates", "rlx-models", "tests", "fixtures")
SEP = b"\n#rlx-fuzz-file#\n"

# Builder call numbers (graph_gen.rs `call`) and enum orders.
INPUT, PARAM, CONST, UNARY, BINARY, COMPARE, WHERE, CAST, REDUCE, ARG, CUMSUM, TOPK = range(12)
RESHAPE, PERMUTE, SLICE, CONCAT, EXPAND, GATHER, PAD, REVERSE, MATMUL, NORM, SOFTMAX = range(12, 23)
ATTN, ROPE, CONV2D, POOL2D, QUANT, GROUPED, RANDOM, STATE, LINEAR, NORM2, CONV1D, MOE, SAMPLE = range(23, 36)
RAW = 36
F32, F16, BF16, I32, U32, U8, BOOL = range(7)


def axis(a):
    return a + 5


def leaf(call, dims, dtype):
    return bytes([call, 1, len(dims), *dims, dtype])


def graphs():
    g = {}
    # 0 x[2,4] 1 w[4,3] 2 matmul 3 gelu 4 layer_norm 5 softmax
    g["mlp"] = (leaf(INPUT, [2, 4], F32) + leaf(PARAM, [4, 3], F32) + bytes([MATMUL, 0, 1, 0, 0])
                + bytes([UNARY, 2, 0]) + bytes([NORM, 3, 0, 0, axis(-1), 4, 1]) + bytes([SOFTMAX, 4, axis(-1), 1]))
    # q, k, v [1,4,2,8] bshd, causal attention, then rope tables and rms_norm
    g["attention"] = (leaf(INPUT, [1, 4, 2, 8], F32) + leaf(PARAM, [1, 4, 2, 8], F32) + leaf(PARAM, [1, 4, 2, 8], F32)
                      + bytes([ATTN, 0, 1, 2, 0, 1, 1, 0, 0, 0, 0])
                      + leaf(INPUT, [4, 4], F32) + leaf(INPUT, [4, 4], F32)
                      + bytes([ROPE, 0, 4, 5, 1, 1, 8]) + bytes([NORM, 6, 0, 0, axis(-1), 5, 0]))
    g["conv"] = (leaf(INPUT, [1, 3, 8, 8], F32) + leaf(PARAM, [4, 3, 3, 3], F32)
                 + bytes([CONV2D, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1])
                 + bytes([POOL2D, 2, 2, 2, 2, 2, 0, 0, 0]) + bytes([NORM2, 3, 0, 0, 0, 4, 1]))
    # x [2,32] f32, w u8 [4,34] q8_0; table u8 [5,34], ids i32 [3]
    g["quant"] = (leaf(INPUT, [2, 32], F32) + leaf(PARAM, [4, 34], U8) + bytes([QUANT, 0, 1, 1, 0])
                  + leaf(PARAM, [5, 34], U8) + leaf(INPUT, [3], I32) + bytes([QUANT, 3, 4, 0, 0]))
    # shape ops on x[4,6]: reshape, transpose, slice, concat, gather, reduce, topk, cumsum, pad, compare, where, cast
    g["shapes"] = (leaf(INPUT, [4, 6], F32) + bytes([RESHAPE, 0, 1, 2])
                   + bytes([PERMUTE, 1, 0, 0, axis(0), axis(1)])
                   + bytes([SLICE, 2, axis(0), 1, 5, 2, 1]) + bytes([CONCAT, 2, 0, 3, axis(1)])
                   + leaf(INPUT, [3], I32) + bytes([GATHER, 0, 5, 0, axis(0)])
                   + bytes([REDUCE, 6, 0, 1, axis(-1), 1]) + bytes([TOPK, 0, 2, axis(-1), 1])
                   + bytes([CUMSUM, 0, axis(1)]) + bytes([PAD, 0, 2, 1, 0, 0, 1, 1])
                   + bytes([COMPARE, 0, 0, 3]) + bytes([WHERE, 12, 0, 10]) + bytes([CAST, 13, F16])
                   + bytes([EXPAND, 7, 2, 4, 1]) + bytes([REVERSE, 14, 1, axis(0)]))
    # rng key, uniform draw; a state [1,8,4] written with rows [1,2,4] at an offset; sampling
    g["state"] = (bytes([RANDOM, 1, 1, 1, 2, 4, 8])
                  + leaf(INPUT, [1, 2, 4], F32) + leaf(INPUT, [1], I32)
                  + bytes([STATE, 1, 3, 1, 8, 4, F32, 2, 3, axis(1)])
                  + leaf(INPUT, [2, 16], F32) + bytes([SAMPLE, 5, 0, 0, 0, 1, 0, 1]))
    # moe: x [3,8], router [4,8], gate_up [4,32,8], down [4,8,16]
    g["moe"] = (leaf(INPUT, [3, 8], F32) + leaf(PARAM, [4, 8], F32) + leaf(PARAM, [4, 32, 8], F32)
                + leaf(PARAM, [4, 8, 16], F32) + bytes([MOE, 0, 1, 2, 3, 2, 1]))
    # raw pushes: fused matmul with bias and gelu, add-norm, a fused elementwise program
    g["fused"] = (leaf(INPUT, [2, 4], F32) + leaf(PARAM, [4, 4], F32) + leaf(PARAM, [4], F32)
                  + bytes([RAW, 7, 0, 0, 1, 1, 0, 3, 0, 1, 2])
                  + bytes([RAW, 8, 0, 4, 3, 3, 0, 2, 2])
                  + bytes([RAW, 9, 3, 0, 0, 0, 1, 2, 2, 3, 0, 0, 1, 2, 0, 1]))
    g["conv1d"] = (leaf(INPUT, [1, 4, 16], F32) + leaf(PARAM, [4, 1, 3], F32) + leaf(PARAM, [4], F32)
                   + bytes([CONV1D, 0, 1, 1, 2, 1, 1, 1, 4, 0]) + bytes([NORM2, 3, 0, 0, 0, 2, 4]))
    return g


def write(target, name, data):
    d = os.path.join(ROOT, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors(tensors):
    header, data = {}, b""
    for name, dims in tensors:
        n = 1
        for x in dims:
            n *= x
        start = len(data)
        data += struct.pack("<%df" % n, *[((i * 7) % 13 - 6) / 8 for i in range(n)])
        header[name] = {"dtype": "F32", "shape": dims, "data_offsets": [start, len(data)]}
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def bert_files():
    h, v, f, p = 4, 6, 8, 4
    cfg = {"vocab_size": v, "hidden_size": h, "num_hidden_layers": 1, "num_attention_heads": 2,
           "intermediate_size": f, "max_position_embeddings": p, "type_vocab_size": 1,
           "layer_norm_eps": 1e-12, "hidden_act": "gelu"}
    t = [("embeddings.word_embeddings.weight", [v, h]), ("embeddings.position_embeddings.weight", [p, h]),
         ("embeddings.token_type_embeddings.weight", [1, h]), ("embeddings.LayerNorm.weight", [h]),
         ("embeddings.LayerNorm.bias", [h])]
    for n, o, i in [("attention.self.query", h, h), ("attention.self.key", h, h), ("attention.self.value", h, h),
                    ("attention.output.dense", h, h), ("intermediate.dense", f, h), ("output.dense", h, f)]:
        t += [(f"encoder.layer.0.{n}.weight", [o, i]), (f"encoder.layer.0.{n}.bias", [o])]
    for n in ["attention.output.LayerNorm", "output.LayerNorm"]:
        t += [(f"encoder.layer.0.{n}.weight", [h]), (f"encoder.layer.0.{n}.bias", [h])]
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4, "world": 5}
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
           "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                          "strip_accents": None, "lowercase": True},
           "pre_tokenizer": {"type": "BertPreTokenizer"},
           "post_processor": {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                         {"Sequence": {"id": "A", "type_id": 0}},
                                         {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                              "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
                              "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                                 "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
           "decoder": None,
           "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}}
    j = lambda x: json.dumps(x, separators=(",", ":")).encode()
    return j(cfg), j(tok), safetensors(t)


def decoder_files():
    path = os.path.join(FIXTURES, "decoders", "llama", "config.json")
    with open(path) as f:
        cfg = json.load(f)
    # The fixture's shapes cut to the smallest the config allows, so the weights stay tiny.
    cfg.update({"hidden_size": 4, "intermediate_size": 4, "num_attention_heads": 2, "num_key_value_heads": 1,
                "num_hidden_layers": 1, "vocab_size": 4, "head_dim": 2})
    h, kv, f, v = 4, 2, 4, 4
    t = [("model.embed_tokens.weight", [v, h]), ("model.norm.weight", [h]), ("lm_head.weight", [v, h])]
    p = "model.layers.0."
    t += [(p + "input_layernorm.weight", [h]), (p + "post_attention_layernorm.weight", [h]),
          (p + "self_attn.q_proj.weight", [h, h]), (p + "self_attn.k_proj.weight", [kv, h]),
          (p + "self_attn.v_proj.weight", [kv, h]), (p + "self_attn.o_proj.weight", [h, h]),
          (p + "mlp.gate_proj.weight", [f, h]), (p + "mlp.up_proj.weight", [f, h]),
          (p + "mlp.down_proj.weight", [h, f])]
    return json.dumps(cfg, separators=(",", ":")).encode(), safetensors(t)


def main():
    for name, g in graphs().items():
        write("graph_build", name, g)
    for i, (name, g) in enumerate(graphs().items()):
        # passes (fold + fuse, alignments), device, kernel options
        write("optimize_plan", name, bytes([3 | (i << 2), i % 3, i % 12]) + g)
    for i, name in enumerate(["mlp", "attention", "quant", "shapes"]):
        write("schedule", name, bytes([i % 3, 0]) + graphs()[name])
    # edits: resize operand 0 of step 0, push a forward wait, zero a workgroup count
    edits = bytes([4, 0, 0, 1, 0]).ljust(24, b"\0") + bytes([7, 0, 63]).ljust(24, b"\0") \
        + bytes([6, 0, 1, 0]).ljust(24, b"\0")
    write("schedule", "mlp_edited", bytes([0, 3]) + edits + graphs()["mlp"])
    write("schedule", "scratch", bytes([1, 2]) + bytes([0, 5]).ljust(24, b"\0") + bytes([1, 0, 64]).ljust(24, b"\0"))

    cfg, tok, st = bert_files()
    write("model_dir", "bert", bytes([0]) + cfg + SEP + tok + SEP + SEP + SEP + st)
    sbert = json.dumps({"max_seq_length": 4}).encode()
    pool = json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}).encode()
    write("model_dir", "bert_cls_f16", bytes([4]) + cfg + SEP + tok + SEP + sbert + SEP + pool + SEP + st)
    dcfg, dst = decoder_files()
    write("model_dir", "llama", bytes([1]) + dcfg + SEP + SEP + SEP + SEP + dst)

    for name in ["tiny_llama.gguf", "tiny_qwen3.gguf"]:
        with open(os.path.join(FIXTURES, "gguf", name), "rb") as f:
            write("gguf", name, f.read())
    with open(os.path.join(FIXTURES, "gguf_decoders", "llama_rope_freqs.gguf"), "rb") as f:
        write("gguf", "llama_rope_freqs.gguf", f.read())


if __name__ == "__main__":
    main()
