#!/usr/bin/env python3
"""The Python package's `Embedder.encode` beside sentence-transformers, for docs/perf.md.

Usage: python3 scripts/bench_python_embed.py MODEL_DIR [DEVICE:PRECISION ...]

Times `rlx.Embedder(MODEL_DIR, device, precision).encode(sentences, batch_size=b)` (default
vulkan:mixed and gpu:mixed) and `SentenceTransformer(MODEL_DIR).encode` (CUDA, f32 and f16) at
batch 1 and 64 on the eight everyday sentences `rlx bench embed` cycles through, as the median
of 30 timed calls after 5 warm-up calls, and prints sentences/s. Run `rlx bench --device vulkan
--device gpu --precision mixed embed` in the same call for the Rust API's own figure (same
sentences, same batches): the binding's overhead is the difference.
"""
import statistics
import sys
import time

def median_s(fn, sync=lambda: None, iters=30, warmup=5):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    model_dir = sys.argv[1]
    targets = sys.argv[2:] or ["vulkan:mixed", "gpu:mixed"]
    import numpy as np
    import rlx

    # The sentences `rlx bench embed` and the sentence-transformers reference share.
    from bench_sentence_transformers import SENTENCES

    print(f"rlx {rlx.__version__}, devices {rlx.devices()}")
    rows = []
    first = None
    for target in targets:
        device, _, precision = target.partition(":")
        emb = rlx.Embedder(model_dir, device=device, precision=precision or "f32")
        for batch in (1, 64):
            sents = [SENTENCES[i % len(SENTENCES)] for i in range(batch)]
            s = median_s(lambda: emb.encode(sents, batch_size=batch))
            rows.append((f"rlx.Embedder {device} {precision}", batch, batch / s))
        out = emb.encode(SENTENCES)
        if not np.isfinite(out).all():
            sys.exit(f"rlx.Embedder on {device} gave non-finite embeddings")
        first = out if first is None else first
        cos = float((first * out).sum(axis=1).min())
        print(f"{target}: lowest cosine against {targets[0]}: {cos:.7f}")
        emb.close()

    import torch
    from sentence_transformers import SentenceTransformer

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    for name, convert in (("f32", lambda m: m.float()), ("f16", lambda m: m.half())):
        model = convert(SentenceTransformer(model_dir, device=dev))
        for batch in (1, 64):
            sents = [SENTENCES[i % len(SENTENCES)] for i in range(batch)]
            s = median_s(lambda: model.encode(sents, batch_size=batch, normalize_embeddings=True), sync)
            rows.append((f"sentence-transformers {dev} {name}", batch, batch / s))
        st = model.float().encode(SENTENCES, normalize_embeddings=True)
        print(f"sentence-transformers {name}: lowest cosine against rlx {targets[0]}: "
              f"{float((first * st).sum(axis=1).min()):.7f}")
    for who, batch, rate in rows:
        print(f"{who:40s} batch {batch:3d}: {rate:10.0f} sentences/s")


if __name__ == "__main__":
    main()
