#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the shapes of `rlx bench attention`, for the same
device call as rlx's numbers.

Usage: python3 scripts/bench_torch_attention.py BxHxSxD[:causal] ...

For each shape, f16 and f32 inputs in [B, H, S, D] (CUDA), the median of 50 timed calls after
warm-up, and TFLOP/s counted as `rlx bench` counts them: 4·B·H·S²·D, halved when causal.
"""
import sys

import torch
import torch.nn.functional as F

# The same timing as the other torch references (this folder is on sys.path when run as a file).
from bench_torch import median_ms


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    for arg in sys.argv[1:]:
        spec, _, flag = arg.partition(":")
        b, h, s, d = (int(x) for x in spec.split("x"))
        causal = flag == "causal"
        flops = 4.0 * b * h * s * s * d / (2.0 if causal else 1.0)
        for dtype in (torch.float16, torch.float32):
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), 50, warmup=5)
            name = str(dtype).replace("torch.", "")
            print(f"sdpa {arg} {name}: {ms:.4f} ms, {flops / ms / 1e9:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
