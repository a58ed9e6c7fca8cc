#!/usr/bin/env python3
"""Compare rlx op outputs with torch, or time torch on the same data, on the GPU host.

rlx side (built elsewhere, no Rust needed here):
    parity vulkan --dump DIR [--filter TEXT]              # parity cases
    parity vulkan --bench-cases --dump DIR [--filter T]   # the benchmark workloads

This side:
    python3 scripts/check_ops_gpu_host.py check DIR        # torch reference vs rlx's outputs
    python3 scripts/check_ops_gpu_host.py bench DIR        # torch time per case (CUDA events)

Every module `scripts/torch_ref/*.py` defines `REFS = {case_name: fn}`: `fn(t)` gets a dict
name -> torch tensor (the case's inputs and params, on the device, in their stored dtype; f16
and bf16 as those dtypes, u32 widened to int64) and returns the expected outputs as a list, in
the case's output order. A module may define `TOL = {case_name: tol}` (relative L2 error,
default 1e-4): ||rlx - torch|| / ||torch|| over the finite elements, with non-finite positions
required to match. Cases without a reference are counted and listed, never passed silently.
Exit status: 0 when every referenced case passed, 1 otherwise, 2 on bad usage.
"""
import argparse
import importlib.util
import json
import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
NP = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i32": np.int32, "u32": np.uint32,
      "u8": np.uint8, "bool": np.uint8}


def load_refs():
    refs, tols = {}, {}
    for path in sorted((HERE / "torch_ref").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"torch_ref_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in getattr(mod, "REFS", {}):
            if name in refs:
                sys.exit(f"{path.name}: case {name} has a reference in two modules")
        refs.update(getattr(mod, "REFS", {}))
        tols.update(getattr(mod, "TOL", {}))
    return refs, tols


def load_value(folder, entry, device):
    raw = np.fromfile(folder / entry["file"], dtype=NP[entry["dtype"]]).reshape(entry["shape"])
    if entry["dtype"] == "bf16":
        return torch.from_numpy(raw.astype(np.int16)).view(torch.bfloat16).to(device)
    if entry["dtype"] == "bool":
        return torch.from_numpy(raw != 0).to(device)
    if entry["dtype"] == "u32":
        return torch.from_numpy(raw.astype(np.int64)).to(device)
    return torch.from_numpy(raw.copy()).to(device)


def load_case(folder, device):
    meta = json.loads((folder / "meta.json").read_text())
    feeds = {e["name"]: load_value(folder, e, device) for e in meta["inputs"] + meta["params"]}
    outs = [load_value(folder, e, device) for e in meta["outputs"]]
    return meta, feeds, outs


def rel_err(got, want):
    if not (want.is_floating_point() or want.is_complex()):
        same = got.shape == want.shape and torch.equal(got.cpu().long(), want.cpu().long())
        return (0.0, "") if same else (float("inf"), "integer outputs differ")
    got = got.detach().double().cpu().reshape(-1)
    want = want.detach().double().cpu().reshape(-1)
    if got.shape != want.shape:
        return float("inf"), f"shape {tuple(got.shape)} vs {tuple(want.shape)}"
    fin = torch.isfinite(want)
    if not torch.equal(fin, torch.isfinite(got)):
        return float("inf"), "non-finite positions differ"
    if not torch.equal(torch.isnan(want), torch.isnan(got)):
        return float("inf"), "NaN positions differ"
    g, w = got[fin], want[fin]
    num, den = torch.linalg.norm(g - w).item(), torch.linalg.norm(w).item()
    return (num / den if den > 0 else num), ""


def cases_in(root):
    return sorted(p for p in pathlib.Path(root).iterdir() if (p / "meta.json").exists())


def check(root, device):
    refs, tols = load_refs()
    rows, missing, failed = [], [], 0
    for folder in cases_in(root):
        name = folder.name
        if name not in refs:
            missing.append(name)
            continue
        meta, feeds, outs = load_case(folder, device)
        try:
            with torch.no_grad():
                want = refs[name](feeds)
            errs = [rel_err(o, w) for o, w in zip(outs, want)]
            if len(want) != len(outs):
                errs.append((float("inf"), f"{len(want)} torch outputs, {len(outs)} from rlx"))
        except Exception as e:  # a broken reference is a failed row, not a crash of the run
            errs = [(float("inf"), f"torch reference raised {type(e).__name__}: {e}")]
        worst = max(e for e, _ in errs)
        note = "; ".join(n for _, n in errs if n)
        tol = tols.get(name, 1e-4)
        ok = worst <= tol
        failed += not ok
        rows.append((name, worst, tol, ok, note))
    width = max([len(r[0]) for r in rows] + [4])
    print(f"{'case':<{width}}  {'rel err':>10}  {'tol':>8}  pass  note")
    for name, worst, tol, ok, note in rows:
        print(f"{name:<{width}}  {worst:>10.3e}  {tol:>8.1e}  {'ok' if ok else 'FAIL':<4}  {note}")
    if missing:
        print(f"no torch reference for {len(missing)} case(s): {', '.join(missing)}")
    print(f"torch check on {torch.cuda.get_device_name() if device == 'cuda' else device}: "
          f"{len(rows) - failed} passed, {failed} failed, {len(missing)} without a reference")
    return 0 if failed == 0 and rows else 1


def bench(root, device, iters, warmup, out_json):
    refs, _ = load_refs()
    results = []
    for folder in cases_in(root):
        name = folder.name
        if name not in refs:
            print(f"{name}: no torch reference, not timed")
            continue
        _, feeds, _ = load_case(folder, device)
        fn = refs[name]
        with torch.no_grad():
            for _ in range(warmup):
                fn(feeds)
            torch.cuda.synchronize()
            times = []
            for _ in range(iters):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn(feeds)
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
        times.sort()
        results.append({"case": name, "torch_ms": times[len(times) // 2], "iters": iters})
        print(f"{name:<40}  torch {times[len(times) // 2]:9.3f} ms (median of {iters})")
    if out_json:
        pathlib.Path(out_json).write_text(json.dumps({"device": torch.cuda.get_device_name(),
                                                      "torch": torch.__version__,
                                                      "rows": results}, indent=1))
    return 0 if results else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["check", "bench"])
    ap.add_argument("dir")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if a.mode == "check":
        return check(a.dir, a.device)
    if a.device != "cuda":
        sys.exit("bench needs a CUDA device")
    return bench(a.dir, a.device, a.iters, a.warmup, a.json)


if __name__ == "__main__":
    sys.exit(main())
