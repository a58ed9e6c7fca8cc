#!/usr/bin/env python3
"""The MiniLM fixture check on a machine without a Rust toolchain (the GPU host).

Usage: python3 scripts/check_minilm_devices.py RLX_BINARY MODEL_DIR DEVICE...

Embeds the fixture's sentences (crates/rlx-models/tests/fixtures/minilm_reference.json) with
sentence-transformers from MODEL_DIR and with `RLX_BINARY embed --device D --model-dir MODEL_DIR`
for each device, both from the same weights file, and checks what the Rust fixture test checks:
cosine >= 0.99999 and max |delta| <= 1e-4 per embedding. Exits 1 on any failure.
"""
import json
import subprocess
import sys
import tempfile

import numpy as np
from sentence_transformers import SentenceTransformer

FIXTURE = "crates/rlx-models/tests/fixtures/minilm_reference.json"


def main():
    rlx, model_dir, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    sentences = json.load(open(FIXTURE))["sentences"]
    model = SentenceTransformer(model_dir, device="cuda").float()
    ref = model.encode(sentences, normalize_embeddings=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(sentences))
        path = f.name
    ok = True
    for device in devices:
        out = subprocess.run(
            [rlx, "embed", "--device", device, "--format", "json", "--model-dir", model_dir, "--file", path],
            capture_output=True, text=True, check=True,
        )
        got = np.array(json.loads(out.stdout), dtype=np.float64)
        cos = (got * ref).sum(axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
        diff = np.abs(got - ref).max(axis=1)
        passed = bool((cos >= 0.99999).all() and (diff <= 1e-4).all())
        ok &= passed
        print(f"minilm {device}: {len(sentences)} sentences, min cosine {cos.min():.8f}, "
              f"max |delta| {diff.max():.2e}: {'pass' if passed else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
