"""torch references for the vision family (crates/rlx-parity/src/cases/vision.rs): conv2d, pool2d,
nearest x2 upsampling, conv1d, 1-D pooling, layer_norm2d, and the vision benchmark workloads.
The attributes of each case are restated here from its name's table in vision.rs."""
import torch
import torch.nn.functional as F

REFS = {}
TOL = {}

# conv2d_<tag>: (stride, padding, dilation, groups)
CONV2D = {
    "3x3_pad1": (1, 1, 1, 1), "no_bias": (1, 1, 1, 1), "stride2": (2, 1, 1, 1),
    "dilation2": (1, 2, 2, 1), "groups2": (1, 1, 1, 2), "depthwise": (1, 1, 1, 5),
    "pointwise_1x1": (1, 0, 1, 1), "rect_kernel_stride_pad": ((2, 3), (1, 2), 1, 1),
    "output_1x1": (1, 0, 1, 1),
}
for tag, (s, p, d, g) in CONV2D.items():
    REFS[f"conv2d_{tag}"] = lambda t, s=s, p=p, d=d, g=g: [
        F.conv2d(t["x"], t["w"], t.get("b"), stride=s, padding=p, dilation=d, groups=g)]

# pool2d_<tag>: (max?, kernel, stride, padding); rlx's average counts padded positions
POOL2D = {
    "max_2x2_s2": (True, 2, 2, 0), "max_3x3_s2_pad1": (True, 3, 2, 1),
    "max_rect_2x3_s1x2": (True, (2, 3), (1, 2), (0, 1)), "avg_2x2_s2": (False, 2, 2, 0),
    "avg_3x3_s1_pad1": (False, 3, 1, 1), "avg_global_5x5": (False, 5, 1, 0),
}
for tag, (mx, k, s, p) in POOL2D.items():
    if mx:
        REFS[f"pool2d_{tag}"] = lambda t, k=k, s=s, p=p: [F.max_pool2d(t["x"], k, s, p)]
    else:
        REFS[f"pool2d_{tag}"] = lambda t, k=k, s=s, p=p: [
            F.avg_pool2d(t["x"], k, s, p, count_include_pad=True)]

for tag in ["1x3x4x5", "2x1x1x1"]:
    REFS[f"upsample2x_{tag}"] = lambda t: [F.interpolate(t["x"], scale_factor=2, mode="nearest")]

# conv1d_<tag>: (stride, padding, dilation, groups)
CONV1D = {"k3_pad1": (1, 1, 1, 1), "stride2_whisper": (2, 1, 1, 1), "dilation3_no_bias": (1, 6, 3, 1),
          "groups2": (3, 0, 1, 2), "depthwise": (1, 3, 1, 5)}
for tag, (s, p, d, g) in CONV1D.items():
    REFS[f"conv1d_{tag}"] = lambda t, s=s, p=p, d=d, g=g: [
        F.conv1d(t["x"], t["w"], t.get("b"), stride=s, padding=p, dilation=d, groups=g)]

REFS["pool1d_max_k3_s2_p1"] = lambda t: [F.max_pool1d(t["x"], 3, 2, 1)]
REFS["pool1d_avg_k4_s4"] = lambda t: [F.avg_pool1d(t["x"], 4, 4, 0, count_include_pad=True)]
REFS["pool1d_avg_k3_s1_p1"] = lambda t: [F.avg_pool1d(t["x"], 3, 1, 1, count_include_pad=True)]


def layer_norm2d(x, g, b, eps):
    # channel-wise: LayerNorm over C of an NCHW tensor, as torch applies it to NHWC
    y = F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), g, b, eps)
    return y.permute(0, 3, 1, 2)


for tag in ["c6_affine", "c32_plain"]:
    REFS[f"layer_norm2d_{tag}"] = lambda t: [layer_norm2d(t["x"], t.get("g"), t.get("b"), 1e-6)]


def whisper_stem(t):
    h = F.gelu(F.conv1d(t["x"], t["w1"], t["b1"], padding=1))
    return [F.gelu(F.conv1d(h, t["w2"], t["b2"], stride=2, padding=1))]


REFS["bench_conv1d_whisper_stem_b8"] = whisper_stem
REFS["bench_layer_norm2d_sam_b8"] = lambda t: [layer_norm2d(t["x"], t["g"], t["b"], 1e-6)]
