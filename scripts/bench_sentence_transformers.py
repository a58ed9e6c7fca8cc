#!/usr/bin/env python3
"""sentence-transformers on the same model files rlx uses: throughput and reference embeddings.

Usage: python3 scripts/bench_sentence_transformers.py MODEL_DIR OUT.json [rlx-embed.json]

Times `encode` at batch 1 and 64 (median of timed runs after warm-up, CUDA when present, f32)
on the same everyday sentences `rlx bench embed` uses, and, given the JSON that
`rlx embed --format json` printed for those sentences, reports the cosine of every rlx embedding
against sentence-transformers' embedding computed from the same file.
"""
import json
import statistics
import sys
import time

import torch
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "A man is eating food.",
    "A man is riding a white horse on an enclosed ground.",
    "The new movie is awesome, everybody in the theatre loved it and wants to see it again.",
    "Two dogs are running through a field of tall green grass on a sunny afternoon.",
    "How do I compile a neural network graph once and run it many times?",
    "Sentence embeddings map text to vectors whose cosine similarity reflects meaning.",
    "It is raining.",
    "The quarterly report shows revenue grew by twelve percent while costs stayed flat.",
]


def main():
    model_dir, out_path = sys.argv[1], sys.argv[2]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = SentenceTransformer(model_dir, device=device)
    model = model.float()
    result = {"device": device, "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None}
    for batch in (1, 64):
        sents = [SENTENCES[i % len(SENTENCES)] for i in range(batch)]
        for _ in range(5):
            model.encode(sents, batch_size=batch, normalize_embeddings=True)
        times = []
        for _ in range(30):
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            model.encode(sents, batch_size=batch, normalize_embeddings=True)
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        result[f"batch{batch}_ms"] = med * 1e3
        result[f"batch{batch}_sent_per_s"] = batch / med
    ref = model.encode(SENTENCES, normalize_embeddings=True)
    if len(sys.argv) > 3:
        rlx = json.load(open(sys.argv[3]))
        cos = [float((ref[i] * torch.tensor(rlx[i]).numpy()).sum()) for i in range(len(SENTENCES))]
        result["rlx_cosine_min"] = min(cos)
        result["rlx_max_abs_diff"] = max(
            float(abs(ref[i] - torch.tensor(rlx[i]).numpy()).max()) for i in range(len(SENTENCES))
        )
    json.dump(result, open(out_path, "w"), indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
