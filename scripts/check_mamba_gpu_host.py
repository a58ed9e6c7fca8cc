#!/usr/bin/env python3
"""Check rlx's Mamba-1 (MambaForCausalLM) logits against transformers on the GPU host.

Usage: python3 scripts/check_mamba_gpu_host.py PATH/TO/rlx [DEVICE ...]

Builds a random-init MambaForCausalLM with transformers (Mamba-130m's width and depth cut down:
hidden 256, 4 layers, state 16, conv 4, vocab 1024, tied lm_head as in every released Mamba;
matrices redrawn with a spread that gives non-flat logits), saves it in float32 safetensors,
runs `rlx logits --model DIR --device D --prompt-ids ...` for each device (default: vulkan gpu
cpu) and compares with transformers' logits computed on cuda in float32 (transformers' torch
path: mamba_ssm is not installed there, so the sequential reference scan runs). Passes when the
relative L2 error ||rlx - torch|| / ||torch|| is at most 1e-4 on every device. Exit status 0
when all pass, 1 otherwise, 2 on bad usage.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from transformers import MambaConfig, MambaForCausalLM

PROMPT = [(i * 37 + 11) % 1024 for i in range(96)]
TOL = 1e-4


def build(out_dir):
    torch.manual_seed(0)
    cfg = MambaConfig(vocab_size=1024, hidden_size=256, state_size=16, num_hidden_layers=4, expand=2,
                      conv_kernel=4, time_step_rank="auto", tie_word_embeddings=True)
    model = MambaForCausalLM(cfg).eval()
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if name.endswith("A_log") or name.endswith("dt_proj.bias"):
                p.add_(0.1 * noise)
            elif name.endswith(".D") or "norm" in name:
                p.copy_(1.0 + 0.1 * noise)
            elif p.dim() >= 2:
                fan_in = p.shape[-1] if p.dim() == 2 else p.shape[-1] * p.shape[-2]
                p.copy_(noise * (1.0 / fan_in) ** 0.5)
            else:
                p.copy_(0.1 * noise)
    model.save_pretrained(out_dir, safe_serialization=True)
    with torch.no_grad():
        return model.cuda()(torch.tensor([PROMPT], device="cuda")).logits[0].float().cpu().numpy()


def rlx_logits(rlx, model_dir, device, out):
    ids = ",".join(str(i) for i in PROMPT)
    cmd = [rlx, "logits", "--model", model_dir, "--device", device, "--prompt-ids", ids, "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} failed: {p.stderr.strip()}")
    return np.fromfile(out, "<f4").reshape(len(PROMPT), -1)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    rlx, devices = sys.argv[1], sys.argv[2:] or ["vulkan", "gpu", "cpu"]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "mamba")
        ref = build(model_dir)
        for device in devices:
            try:
                got = rlx_logits(rlx, model_dir, device, os.path.join(tmp, "logits.f32"))
                err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                ok = err <= TOL
                print(f"{device:<7} logits {list(got.shape)} relative error {err:.2e} {'ok' if ok else 'FAIL'}")
            except RuntimeError as e:
                ok = False
                print(f"{device:<7} FAIL: {e}")
            failed |= not ok
    print("all devices within 1e-4" if not failed else "FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
