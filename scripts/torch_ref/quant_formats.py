"""torch references for crates/rlx-parity/src/cases/quant_formats.rs: rlx's block formats
(dq_*), LoRA (lora_*), dot_general (dot_general_*) and einsum (einsum_*), and their benchmark
workloads (bench_dq_*, bench_lora_*). Layouts: docs/ops-quant.md and rlx_ir::QuantType.

Each packed weight w (uint8 [N, row_bytes]) is decoded here with torch ops, independently of
rlx's decoders: fp8 codes are viewed as torch.float8_e4m3fn / torch.float8_e5m2 and cast;
nvfp4's e2m1 codes go through the table below (torch has torch.float4_e2m1fn_x2, but as of
torch 2.15 it has no cast kernel: "copy_kernel not implemented"), its e4m3 scales through
torch.float8_e4m3fn; int formats unpack their bytes with shifts and masks and view their f16
scales as torch.float16. Then y = F.linear(x, W). In bench mode torch times decode + matmul,
which is what a torch user without a fused kernel for these formats runs.
"""
import torch
import torch.nn.functional as F

REFS = {}
TOL = {}

# e2m1 code (sign bit 3, exponent bits 2..1, mantissa bit 0) -> value.
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]

# name -> (block elements, block bytes)
GEOMETRY = {"q8_0": (32, 34), "q4_0": (32, 18), "q4_1": (32, 20), "q8_asym": (32, 36),
            "fp8_e4m3": (32, 36), "fp8_e5m2": (32, 36), "nvfp4": (64, 36)}


def f16(b):
    """uint8 [..., 2] -> float32 [..., 1] (little-endian f16), to broadcast over a block."""
    return b.contiguous().view(torch.float16).float()


def nibbles_halves(qs):
    """16 bytes -> 32 values: low nibbles are elements 0..16, high nibbles 16..32."""
    return torch.cat([qs & 0xF, qs >> 4], dim=-1).float()


def dequant(fmt, w):
    """uint8 [N, row_bytes] of `fmt` blocks -> float32 [N, K]."""
    elems, size = GEOMETRY[fmt]
    n = w.shape[0]
    b = w.reshape(n, -1, size)
    if fmt == "q8_0":
        x = b[..., 2:].contiguous().view(torch.int8).float() * f16(b[..., 0:2])
    elif fmt == "q4_0":
        x = (nibbles_halves(b[..., 2:]) - 8.0) * f16(b[..., 0:2])
    elif fmt == "q4_1":
        x = nibbles_halves(b[..., 4:]) * f16(b[..., 0:2]) + f16(b[..., 2:4])
    elif fmt == "q8_asym":
        x = b[..., 4:].float() * f16(b[..., 0:2]) + f16(b[..., 2:4])
    elif fmt in ("fp8_e4m3", "fp8_e5m2"):
        dt = torch.float8_e4m3fn if fmt == "fp8_e4m3" else torch.float8_e5m2
        s = b[..., 0:4].contiguous().view(torch.float32)
        x = s * b[..., 4:].contiguous().view(dt).float()
    elif fmt == "nvfp4":
        scales = b[..., 0:4].contiguous().view(torch.float8_e4m3fn).float()
        codes = torch.stack([b[..., 4:] & 0xF, b[..., 4:] >> 4], dim=-1).reshape(n, -1, 64)
        table = torch.tensor(E2M1, dtype=torch.float32, device=w.device)
        x = table[codes.long()] * scales.repeat_interleave(16, dim=-1)
    else:
        raise ValueError(fmt)
    return x.reshape(n, -1)


def gather(fmt, table, ids):
    rows = dequant(fmt, table)
    ids = ids.long()
    ok = (ids >= 0) & (ids < rows.shape[0])
    picked = rows[ids.clamp(0, rows.shape[0] - 1)]
    return torch.where(ok.unsqueeze(-1), picked, torch.zeros_like(picked))


def nvfp4_global():
    # quantize_nvfp4 on values whose largest magnitude is exactly 1: g = 1 / (448 · 6) in f32.
    return torch.tensor(1.0, dtype=torch.float32) / torch.tensor(448.0 * 6.0, dtype=torch.float32)


for fmt in ["q4_1", "q8_asym", "fp8_e4m3", "fp8_e5m2", "nvfp4"]:
    for tag in ["m1", "batch_2x3", "m37", "m3_tiled", "m37_coop"]:
        REFS[f"dq_{fmt}_{tag}"] = lambda t, fmt=fmt: [F.linear(t["x"], dequant(fmt, t["w"]))]
    # cooperative matrices round x and the decoded weight to f16 (rlx's F16_OPERANDS_TOL)
    TOL[f"dq_{fmt}_m37_coop"] = 2e-3
    REFS[f"dq_{fmt}_gather"] = lambda t, fmt=fmt: [gather(fmt, t["table"], t["ids"])]
    for tag in ["quantized", "nan_row"]:
        if fmt == "nvfp4":
            REFS[f"dq_{fmt}_{tag}"] = lambda t: [
                F.linear(t["x"], dequant("nvfp4", t["w"])) * nvfp4_global().to(t["x"].device)]
        else:
            REFS[f"dq_{fmt}_{tag}"] = lambda t, fmt=fmt: [F.linear(t["x"], dequant(fmt, t["w"]))]

for fmt in ["q8_0", "q4_0", "q4_1", "q8_asym", "fp8_e4m3", "fp8_e5m2", "nvfp4"]:
    for m in [1, 512]:
        REFS[f"bench_dq_{fmt}_4096_m{m}"] = lambda t, fmt=fmt: [F.linear(t["x"], dequant(fmt, t["w"]))]


def lora(t, scale):
    x = t["x"]
    return [F.linear(x, t["w"]) + scale * F.linear(F.linear(x, t["lora_a"]), t["lora_b"])]


LORA = {"lora_m1": 2.0, "lora_m37": 0.5, "lora_batch_2x5_scale1": 1.0, "lora_m1_unfused": 2.0,
        "bench_lora_r16_4096_m1": 2.0, "bench_lora_r16_4096_m512": 2.0}
for name, scale in LORA.items():
    REFS[name] = lambda t, scale=scale: lora(t, scale)

# dot_general_<tag>: the same contraction as an einsum spec (lhs, rhs -> batch, lhs free, rhs free)
DOT_GENERAL = {"ij_jk": "ij,jk->ik", "ij_kj": "ij,kj->ik", "ji_jk": "ji,jk->ik",
               "bij_bjk": "bij,bjk->bik", "two_contracted": "mac,acn->mn",
               "permuted_batch": "kmb,bnk->bmn", "outer": "i,j->ij"}
for tag, spec in DOT_GENERAL.items():
    REFS[f"dot_general_{tag}"] = lambda t, spec=spec: [torch.einsum(spec, t["lhs"], t["rhs"])]

EINSUM = {"bij_bjk": "bij,bjk->bik", "attention_scores": "bhqd,bhkd->bhqk", "ij_jk_to_ki": "ij,jk->ki",
          "sum_out": "ij,jk->k", "implicit": "ij,jk", "batch_last": "ijb,jkb->bik"}
for tag, spec in EINSUM.items():
    REFS[f"einsum_{tag}"] = lambda t, spec=spec: [torch.einsum(spec, t["a"], t["b"])]
