#!/usr/bin/env python3
# Usage: python3 scripts/bench_st_sequences.py MODEL_DIR
# The sentence-transformers side of `rlx bench embed`: sentences/s at batch 1 and 64 and tokens/s
# for one 128- and one 512-token sequence, in f32 and f16 on CUDA (run on the GPU host).
import os, sys, time, statistics, torch
from sentence_transformers import SentenceTransformer
d = sys.argv[1]
S = ["A man is eating food.", "A man is riding a white horse on an enclosed ground.",
     "The new movie is awesome, everybody in the theatre loved it and wants to see it again.",
     "Two dogs are running through a field of tall green grass on a sunny afternoon.",
     "How do I compile a neural network graph once and run it many times?",
     "Sentence embeddings map text to vectors whose cosine similarity reflects meaning.",
     "It is raining.", "The quarterly report shows revenue grew by twelve percent while costs stayed flat."]
def med(f, n=30):
    for _ in range(5): f()
    ts = []
    for _ in range(n):
        torch.cuda.synchronize(); t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)
for half in (False, True):
    m = SentenceTransformer(d, device="cuda")
    if half: m = m.half()
    m.max_seq_length = 512
    tag = "f16" if half else "f32"
    for b in (1, 64):
        batch = (S * 8)[:b]
        t = med(lambda: m.encode(batch, batch_size=b, normalize_embeddings=True))
        print(f"ST {tag} batch {b}: {t*1e3:.3f} ms {b/t:.0f} sentences/s")
    tok = m.tokenizer
    body = tok(" ".join(S * 10), add_special_tokens=False)["input_ids"]
    for n in (128, 512):
        text = tok.decode(body[: n - 2])
        got = len(tok(text)["input_ids"])
        t = med(lambda: m.encode([text], batch_size=1, normalize_embeddings=True))
        print(f"ST {tag} one sequence of {got} tokens: {t*1e3:.3f} ms {got/t:.0f} tokens/s")
