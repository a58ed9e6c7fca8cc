"""torch references for the convolution variants (crates/rlx-parity/src/cases/conv_variants.rs):
conv3d, conv_transpose1d, conv_transpose2d, interpolate (bilinear / nearest), and their
benchmark workloads. The attributes of each case are restated here from the tables there."""
import torch.nn.functional as F

REFS = {}
TOL = {}

# conv3d_<tag>: (stride, padding, dilation, groups)
CONV3D = {
    "k3_pad1": (1, 1, 1, 1),
    "stride2_groups2": ((2, 2, 1), (0, 1, 1), 1, 2),
    "dilation_rect_no_bias": ((1, 2, 1), (1, 0, 2), (2, 1, 2), 1),
    "depthwise_kd1": (1, (0, 1, 1), 1, 4),
    "stem_k3x7x7_s1x2x2": ((1, 2, 2), (1, 3, 3), 1, 1),
}
for tag, (s, p, d, g) in CONV3D.items():
    REFS[f"conv3d_{tag}"] = lambda t, s=s, p=p, d=d, g=g: [
        F.conv3d(t["x"], t["w"], t.get("b"), stride=s, padding=p, dilation=d, groups=g)]

# conv_transpose1d_<tag>: (stride, padding, output_padding, dilation, groups)
TCONV1D = {
    "k3_s2_p1_op1": (2, 1, 1, 1, 1),
    "groups2_s3_d2_op2": (3, 2, 2, 2, 2),
    "s1_p2_no_bias": (1, 2, 0, 1, 1),
    "k1_s3_op2_bias_phases": (3, 0, 2, 1, 1),
    "k5_s4_p3": (4, 3, 0, 1, 1),
}
for tag, (s, p, op, d, g) in TCONV1D.items():
    REFS[f"conv_transpose1d_{tag}"] = lambda t, s=s, p=p, op=op, d=d, g=g: [
        F.conv_transpose1d(t["x"], t["w"], t.get("b"), stride=s, padding=p, output_padding=op,
                           groups=g, dilation=d)]

# conv_transpose2d_<tag>: (stride, padding, output_padding, dilation, groups)
TCONV2D = {
    "k4_s2_p1_decoder": (2, 1, 0, 1, 1),
    "k3_s2_p1_op1": (2, 1, 1, 1, 1),
    "groups3_rect_op": ((2, 3), (1, 0), (1, 2), 1, 3),
    "s2_d2_bias_phases": (2, (2, 1), 1, 2, 1),
    "s2_d2_zero_phases_no_bias": (2, 0, 1, 2, 1),
    "s3_d2_coprime": (3, 1, (2, 1), 2, 1),
    "depthwise_op1": (2, 1, 1, 1, 4),
    "s1_no_pad_no_bias": (1, 0, 0, 1, 1),
    "k2_s2_pad_crop": (2, (2, 0), 0, 1, 1),
}
for tag, (s, p, op, d, g) in TCONV2D.items():
    REFS[f"conv_transpose2d_{tag}"] = lambda t, s=s, p=p, op=op, d=d, g=g: [
        F.conv_transpose2d(t["x"], t["w"], t.get("b"), stride=s, padding=p, output_padding=op,
                           groups=g, dilation=d)]

# resize_<tag>: (size, scale_factor, mode, align_corners)
RESIZE = {
    "bilinear_up_5x7_to_9x12": ((9, 12), None, "bilinear", False),
    "bilinear_align_corners_8x13": ((8, 13), None, "bilinear", True),
    "bilinear_down_11x9_to_4x5": ((4, 5), None, "bilinear", False),
    "bilinear_scale_1p5_2p3": (None, (1.5, 2.3), "bilinear", False),
    "bilinear_align_corners_to_1x4": ((1, 4), None, "bilinear", True),
    "bilinear_align_corners_scale_0p6": (None, (0.6, 0.75), "bilinear", True),
    "nearest_up_4x5_to_7x11": ((7, 11), None, "nearest", None),
    "nearest_down_9x10_to_4x3": ((4, 3), None, "nearest", None),
    "nearest_scale_1p7_0p6": (None, (1.7, 0.6), "nearest", None),
    "bilinear_nan_stays_local": ((11, 10), None, "bilinear", False),
}
for tag, (size, scale, mode, ac) in RESIZE.items():
    REFS[f"resize_{tag}"] = lambda t, size=size, scale=scale, mode=mode, ac=ac: [
        F.interpolate(t["x"], size=size, scale_factor=scale, mode=mode, align_corners=ac)]

REFS["bench_conv3d_r3d_stem_b8"] = lambda t: [
    F.conv3d(t["x"], t["w"], None, stride=(1, 2, 2), padding=(1, 3, 3))]
REFS["bench_conv_transpose2d_decoder_b8"] = lambda t: [
    F.conv_transpose2d(t["x"], t["w"], t["b"], stride=2, padding=1)]
REFS["bench_resize_bilinear_x4_b8"] = lambda t: [
    F.interpolate(t["x"], size=(256, 256), mode="bilinear", align_corners=False)]
