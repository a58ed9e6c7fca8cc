#!/usr/bin/env python3
"""PyTorch references for `rlx bench`, measured in the same device call as rlx's numbers.

Usage: python3 scripts/bench_torch.py [OUT.json]

Workloads (CUDA, f32 unless named otherwise), each the median of timed runs after warm-up:
- tiny: x[4] + 1 with the host copy in and out (a `run` round trip);
- matmul n³ for n = 1024 and 4096: compute (operands resident) and end to end (a from the host,
  c back to the host; b resident, as rlx's param);
- BERT-base encoder (12 layers, hidden 768, 12 heads, FFN 3072, GELU, no mask) on x of shape
  [batch, 128, 768] for batch 1, 8, 32: compute, f32 and f16 (eager, random init).
"""
import json
import statistics
import sys
import time

import torch


def median_ms(fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    dev = torch.device("cuda")
    rows = []
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    x_host = torch.tensor([1.0, 2.0, 3.0, 4.0])
    rows.append(("tiny x[4]+1", "e2e", median_ms(lambda: (x_host.to(dev) + 1).cpu(), 1000)))

    for n in (1024, 4096):
        a_host = torch.rand(n, n)
        a, b = a_host.to(dev), torch.rand(n, n, device=dev)
        rows.append((f"matmul {n}³ f32", "compute", median_ms(lambda: a @ b, 20)))
        rows.append((f"matmul {n}³ f32", "e2e", median_ms(lambda: (a_host.to(dev) @ b).cpu(), 20)))
        a16, b16 = a.half(), b.half()
        rows.append((f"matmul {n}³ f16", "compute", median_ms(lambda: a16 @ b16, 20)))

    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertEncoder

    cfg = BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                     hidden_act="gelu", attn_implementation="eager")
    enc = BertEncoder(cfg).to(dev).eval()
    for batch in (1, 8, 32):
        x = torch.rand(batch, 128, 768, device=dev)
        with torch.no_grad():
            rows.append((f"bert 12L b{batch}×s128 f32", "compute", median_ms(lambda: enc(x), 20)))
            x_host = x.cpu()
            rows.append((f"bert 12L b{batch}×s128 f32", "e2e",
                         median_ms(lambda: enc(x_host.to(dev))[0].cpu(), 20)))
    enc16 = enc.half()
    for batch in (1, 8, 32):
        x = torch.rand(batch, 128, 768, device=dev, dtype=torch.float16)
        with torch.no_grad():
            rows.append((f"bert 12L b{batch}×s128 f16", "compute", median_ms(lambda: enc16(x), 20)))

    name = torch.cuda.get_device_name(0)
    print(f"PyTorch {torch.__version__} on {name}")
    print(f"{'workload':<28} {'kind':<8} {'ms':>10}")
    for w, k, ms in rows:
        print(f"{w:<28} {k:<8} {ms:>10.4f}")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"device": name, "torch": torch.__version__,
                       "rows": [{"workload": w, "kind": k, "ms": ms} for w, k, ms in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
