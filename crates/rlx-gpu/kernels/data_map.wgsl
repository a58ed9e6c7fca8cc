// One-input elementwise maps on contiguous 32-bit words: dtype casts, the `x != 0` of a cast to
// bool, and wrapping i32 neg/abs.
//
// Variant defines: FN (one of the FN_* constants below). Driver defines: PARAMS.
// Bindings: 0 = x (read), 1 = out (read_write). Params: UnaryParams.
//
// Semantics are rlx-cpu's casts (Rust `as` through f64):
// - float → int truncates toward zero and saturates; NaN → 0;
// - int → float rounds to nearest, ties to even. Done by hand, because WGSL leaves the rounding
//   of an inexact integer → float conversion to the implementation;
// - i32 → u32 clamps negatives to 0, u32 → i32 clamps to i32::MAX;
// - → bool is `x != 0`: NaN is nonzero, −0 is zero (a bit test, immune to flushed denormals).
// Bool words are 0/1, so casts from bool use the u32 functions.

const FN_CAST_F32_I32: u32 = 0u;
const FN_CAST_F32_U32: u32 = 1u;
const FN_CAST_I32_F32: u32 = 2u;
const FN_CAST_I32_U32: u32 = 3u;
const FN_CAST_U32_F32: u32 = 4u;
const FN_CAST_U32_I32: u32 = 5u;
const FN_NONZERO_F32: u32 = 6u;
const FN_NONZERO_WORD: u32 = 7u;
const FN_NEG_I32: u32 = 8u;
const FN_ABS_I32: u32 = 9u;

const FN: u32 = {{FN}};
const WG: u32 = 256u;

struct UnaryParams {
    numel: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
{{PARAMS}} p: UnaryParams;

fn is_nan_bits(w: u32) -> bool {
    return (w & 0x7fffffffu) > 0x7f800000u;
}

// u32 → f32 rounded to nearest even. Below 2^24 the conversion is exact; above, the low bits
// that do not fit the 24-bit significand are rounded off by hand and the result scaled back by
// a power of two (exact).
fn u32_to_f32(u: u32) -> f32 {
    if (u < 0x1000000u) {
        return f32(u);
    }
    // Bits to drop: the value has 32 - clz significant bits, the significand keeps 24.
    let shift = 8u - countLeadingZeros(u);
    let m = u >> shift;
    let rem = u & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    var r = m;
    if (rem > half || (rem == half && (m & 1u) == 1u)) {
        r = m + 1u;
    }
    // r ≤ 2^24 is exact in f32, and so is the product by 2^shift.
    return f32(r) * f32(1u << shift);
}

fn i32_to_f32(w: u32) -> f32 {
    let negative = (w & 0x80000000u) != 0u;
    // |i32::MIN| = 2^31 is a valid u32.
    let mag = select(w, 0u - w, negative);
    let f = u32_to_f32(mag);
    return select(f, -f, negative);
}

fn f32_to_i32(w: u32) -> u32 {
    let v = bitcast<f32>(w);
    if (is_nan_bits(w)) {
        return 0u;
    }
    if (v >= 2147483648.0) {
        return 0x7fffffffu;
    }
    if (v <= -2147483648.0) {
        return 0x80000000u;
    }
    return bitcast<u32>(i32(v));
}

fn f32_to_u32(w: u32) -> u32 {
    let v = bitcast<f32>(w);
    if (is_nan_bits(w) || v <= 0.0) {
        return 0u;
    }
    if (v >= 4294967296.0) {
        return 0xffffffffu;
    }
    return u32(v);
}

fn apply(w: u32) -> u32 {
    if (FN == FN_CAST_F32_I32) {
        return f32_to_i32(w);
    } else if (FN == FN_CAST_F32_U32) {
        return f32_to_u32(w);
    } else if (FN == FN_CAST_I32_F32) {
        return bitcast<u32>(i32_to_f32(w));
    } else if (FN == FN_CAST_I32_U32) {
        return select(w, 0u, (w & 0x80000000u) != 0u);
    } else if (FN == FN_CAST_U32_F32) {
        return bitcast<u32>(u32_to_f32(w));
    } else if (FN == FN_CAST_U32_I32) {
        return min(w, 0x7fffffffu);
    } else if (FN == FN_NONZERO_F32) {
        return select(0u, 1u, (w & 0x7fffffffu) != 0u);
    } else if (FN == FN_NONZERO_WORD) {
        return select(0u, 1u, w != 0u);
    } else if (FN == FN_NEG_I32) {
        return 0u - w;
    } else {
        return select(w, 0u - w, (w & 0x80000000u) != 0u);
    }
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // The grid is 2-D when there are more than 65535 workgroups (see rlx_gpu::grid).
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i >= p.numel) {
        return;
    }
    out[i] = apply(x[i]);
}
