"""Torch references of rlx-parity's state-space cases (crates/rlx-parity/src/cases/ssm.rs).

Loaded by scripts/check_ops_gpu_host.py: REFS maps a case name to fn(t) -> [expected outputs],
t being the case's inputs and params by name (torch tensors on cuda). mamba_ssm and fla are not
installed on the GPU host, so:

- selective_scan_*: a plain torch loop over L of mamba_ssm's selective_scan_ref recurrence
  (h = exp(delta A) h + delta B u, y = C h, then + D u, * silu(z)), in float64;
- gated_delta_*: a torch loop of fla's naive_recurrent_gated_delta_rule (S = exp(g) S;
  S += k (beta (v - S^T k))^T; o = S^T (q / sqrt(K))), in float64, q and k L2-normalised first
  (transformers' l2norm, eps 1e-6) in the l2norm cases;
- ssd_* and mamba2_block_*: transformers' Mamba2 torch path (mamba2_chunk_scan, Mamba2Mixer).
"""
import math

import torch
import torch.nn.functional as F


def selective_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, softplus=False):
    """u, delta [b, d, l]; A [d, n]; B, C [b, n, l] or [b, g, n, l]. Returns (y, last state)."""
    u, delta, A, B, C = (x.double() for x in (u, delta, A, B, C))
    if delta_bias is not None:
        delta = delta + delta_bias.double()[:, None]
    if softplus:
        delta = F.softplus(delta)
    b, d, l = u.shape
    if B.dim() == 3:
        B, C = B[:, None], C[:, None]
    per = d // B.shape[1]
    B = B.repeat_interleave(per, dim=1)  # [b, d, n, l]
    C = C.repeat_interleave(per, dim=1)
    h = torch.zeros(b, d, A.shape[1], dtype=torch.float64, device=u.device)
    ys = []
    for t in range(l):
        h = torch.exp(delta[:, :, t, None] * A) * h + (delta[:, :, t] * u[:, :, t])[:, :, None] * B[:, :, :, t]
        ys.append((h * C[:, :, :, t]).sum(-1))
    y = torch.stack(ys, dim=2) if ys else torch.zeros_like(u)
    if D is not None:
        y = y + u * D.double()[:, None]
    if z is not None:
        y = y * F.silu(z.double())
    return y.float(), h.float()


def gated_delta(q, k, v, g, beta, l2norm=False, scale=None):
    """q, k [b, l, h, K]; v [b, l, h, V]; g, beta [b, l, h]. Returns (o [b, l, h, V], S [b, h, K, V])."""
    q, k, v, g, beta = (x.double() for x in (q, k, v, g, beta))
    if l2norm:
        q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    b, l, h, kd = q.shape
    scale = 1.0 / math.sqrt(kd) if scale is None else scale
    s = torch.zeros(b, h, kd, v.shape[-1], dtype=torch.float64, device=q.device)
    outs = []
    for t in range(l):
        s = s * torch.exp(g[:, t])[..., None, None]
        mem = (s * k[:, t, :, :, None]).sum(-2)
        err = beta[:, t, :, None] * (v[:, t] - mem)
        s = s + k[:, t, :, :, None] * err[:, :, None, :]
        outs.append((s * (scale * q[:, t])[..., None]).sum(-2))
    return torch.stack(outs, dim=1).float(), s.float()


def _scan_case(softplus, state=False):
    def run(t):
        y, last = selective_scan(
            t["u"], t["delta"], t["A"], t["B"], t["C"], t.get("D"), t.get("z"), t.get("delta_bias"), softplus
        )
        return [y, last] if state else [y]

    return run


def _gated_case(l2norm, state=False):
    def run(t):
        o, s = gated_delta(t["q"], t["k"], t["v"], t["g"], t["beta"], l2norm)
        return [o, s] if state else [o]

    return run


def _scan_last_state_l0(t):
    b, d, _ = t["u"].shape
    return [torch.zeros(b, d, t["A"].shape[1], device=t["u"].device)]


def _ssd_case(chunk, full):
    def run(t):
        from transformers.models.mamba2.modeling_mamba2 import mamba2_chunk_scan

        y = mamba2_chunk_scan(
            t["x"], t["dt"], t["A"], t["B"], t["C"], chunk_size=chunk,
            D=t.get("D") if full else None, dt_bias=t.get("dt_bias") if full else None, dt_softplus=full,
        )
        return [y.float()]

    return run


def _group_the_gated_norm(norm, groups):
    """Mamba-2 normalises the gated output per group of inner / G (mamba_ssm's RMSNormGated with
    group_size, and transformers >= 5.24's torch path). transformers 5.17's torch path normalises
    over all of inner, which differs once G > 1; on such a version, patch in the grouped form."""
    if groups == 1 or hasattr(norm, "group_size"):
        return

    def forward(hidden_states, gate=None):
        h = hidden_states.float()
        if gate is not None:
            h = h * F.silu(gate.float())
        *prefix, last = h.shape
        g = h.view(*prefix, groups, last // groups)
        g = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
        return norm.weight * g.view(*prefix, last).to(hidden_states.dtype)

    norm.forward = forward


def _mamba2_block(heads, head_dim, groups, state, kernel, chunk):
    def run(t):
        from transformers import Mamba2Config
        from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer

        x = t["hidden_states"]
        hidden = x.shape[-1]
        assert (heads * head_dim) % hidden == 0, "Mamba2Config needs an integer expand"
        cfg = Mamba2Config(
            hidden_size=hidden, num_heads=heads, head_dim=head_dim, n_groups=groups, state_size=state,
            expand=(heads * head_dim) // hidden, conv_kernel=kernel, chunk_size=chunk, use_bias=False,
            use_conv_bias=True, layer_norm_epsilon=1e-5, num_hidden_layers=1, vocab_size=16,
        )
        mixer = Mamba2Mixer(cfg, layer_idx=0).to(x.device).float().eval()
        names = [n for n, _ in mixer.named_parameters()]
        mixer.load_state_dict({n: t[n] for n in names}, strict=True)
        _group_the_gated_norm(mixer.norm, groups)
        with torch.no_grad():
            return [mixer(x).float()]

    return run


REFS = {
    "selective_scan_full_b2_d8_n4_l150": _scan_case(True),
    "selective_scan_full_l1": _scan_case(True),
    "selective_scan_full_l64": _scan_case(True),
    "selective_scan_plain_b1_d5_n3_l40": _scan_case(False),
    "selective_scan_groups2_n20_l37": _scan_case(True),
    "selective_scan_groups3_n16_l33_no_z": _scan_case(True),
    "selective_scan_softplus_only_l300": _scan_case(True),
    "selective_scan_state_l70": _scan_case(True, state=True),
    "selective_scan_state_n20_l1": _scan_case(True, state=True),
    "selective_scan_nan_in_nan_out": _scan_case(True),
    "selective_scan_l0_last_state_is_zeros": _scan_last_state_l0,
    "bench_selective_scan_b8_d1536_n16_l2048": _scan_case(True),
    "bench_selective_scan_b1_d1536_n16_l2048": _scan_case(True),
    "ssd_b2_l37_h4_p8_g2_n16_chunk8": _ssd_case(8, True),
    "ssd_b1_l32_h2_p4_g1_n8_chunk8_plain": _ssd_case(8, False),
    "ssd_b1_l5_h3_p6_g3_n4_chunk16": _ssd_case(16, True),
    "ssd_b2_l1_h2_p5_g1_n6_chunk4": _ssd_case(4, True),
    "ssd_b1_l50_h4_p16_g1_n32_chunk16": _ssd_case(16, True),
    "ssd_b1_l9_h2_p3_g2_n5_chunk1": _ssd_case(1, True),
    "mamba2_block_b2_l21_h4_p8_g2_n8_chunk8": _mamba2_block(4, 8, 2, 8, 4, 8),
    "mamba2_block_b1_l1_h4_p8_g1_n16_chunk8": _mamba2_block(4, 8, 1, 16, 4, 8),
    "mamba2_block_b1_l40_h2_p16_g1_n8_chunk16": _mamba2_block(2, 16, 1, 8, 4, 16),
    "gated_delta_b2_l9_h3_k8_v12": _gated_case(False),
    "gated_delta_l2norm_b1_l17_h2_k16_v40": _gated_case(True),
    "gated_delta_l1_k5_v3": _gated_case(True),
    "gated_delta_state_b2_l11_h2_k32_v33": _gated_case(False, state=True),
    "gated_delta_nan_in_nan_out": _gated_case(False),
    "bench_gated_delta_b1_l2048_h32_k128_v128": _gated_case(True),
}
