#!/usr/bin/env python3
"""Writes the tiny random-init Mamba-1 model that rlx-models' Mamba fixture test checks.

Usage: python3 scripts/make_mamba_fixture.py [OUT_DIR]

OUT_DIR defaults to crates/rlx-models/tests/fixtures/mamba. Needs torch, transformers and
safetensors (CPU is enough): `pip install torch transformers safetensors`.

The model: MambaForCausalLM, vocab 256, hidden 32, intermediate 64 (expand 2), state 16, conv
kernel 4, time_step_rank "auto" (2), 2 layers, conv bias on, in/out_proj bias off, untied lm_head
(the tied case, transformers' default, is what scripts/check_mamba_gpu_host.py runs), saved by
`save_pretrained` in float32 safetensors; and reference.json beside it: the prompt's token ids and
the logits of one forward pass over it (float32, every position, row-major [seq, vocab]).

Matrices are redrawn from a seeded generator with a larger spread than transformers' default init
(which gives nearly flat logits); A_log, D and dt_proj.bias keep their Mamba initialisation plus
a little noise, so the scan sees realistic decays and step sizes. The forward runs transformers'
sequential torch path (no mamba_ssm kernels) on one CPU thread; rerunning it rewrites identical
files.
"""
import json
import os
import shutil
import sys

import torch
import transformers
from transformers import MambaConfig, MambaForCausalLM

PROMPT = [1, 17, 200, 45, 3, 99, 128, 7, 64, 250, 33, 5, 9, 140, 77, 2, 180, 61, 30, 222]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "crates/rlx-models/tests/fixtures/mamba")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = MambaConfig(
        vocab_size=256,
        hidden_size=32,
        state_size=16,
        num_hidden_layers=2,
        expand=2,
        conv_kernel=4,
        time_step_rank="auto",
        use_bias=False,
        use_conv_bias=True,
        tie_word_embeddings=False,
        layer_norm_epsilon=1e-5,
    )
    model = MambaForCausalLM(config).eval()
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if name.endswith("A_log") or name.endswith("dt_proj.bias"):
                p.add_(0.1 * noise)
            elif name.endswith(".D"):
                p.copy_(1.0 + 0.3 * noise)
            elif "norm" in name:
                p.copy_(1.0 + 0.1 * noise)
            elif p.dim() >= 2:
                fan_in = p.shape[-1] if p.dim() == 2 else p.shape[-1] * p.shape[-2]
                p.copy_(noise * (1.0 / fan_in) ** 0.5)
            else:
                p.copy_(0.1 * noise)
        logits = model(torch.tensor([PROMPT])).logits[0].float()
    if os.path.isdir(out):
        shutil.rmtree(out)
    model.save_pretrained(out, safe_serialization=True)
    ref = {
        "architecture": "MambaForCausalLM",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "prompt": PROMPT,
        "logits_shape": list(logits.shape),
        "logits": [float(x) for x in logits.reshape(-1)],
    }
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f)
    print(f"wrote {out}: logits {list(logits.shape)}, std {logits.std():.3f}")


if __name__ == "__main__":
    main()
