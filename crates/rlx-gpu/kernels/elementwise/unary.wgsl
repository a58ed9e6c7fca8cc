// Elementwise one-input ops on contiguous 32-bit words: f32 math, dtype casts, the `x != 0` of
// a cast to bool, and wrapping i32 neg/abs.
//
// Variant defines: OP (one of the OP_* constants below).
// Bindings: 0 = x (read), 1 = out (read_write). Params: UnaryParams.
//
// Every dtype moves as u32 words and is reinterpreted with bitcast where the dtype matters.
// f32 math: the activations and their accuracy are the prelude's; log, sqrt and rsqrt of a
// negative number are NaN, NaN in gives NaN out.
// Casts are rlx-cpu's (Rust `as` through f64):
// - float → int truncates toward zero and saturates; NaN → 0;
// - int → float rounds to nearest, ties to even. Done by hand (the prelude's u32_to_f32),
//   because WGSL leaves the rounding of an inexact integer → float conversion to the
//   implementation;
// - i32 → u32 clamps negatives to 0, u32 → i32 clamps to i32::MAX;
// - → bool is `x != 0`: NaN is nonzero, −0 is zero (a bit test, immune to flushed denormals).
// Bool words are 0/1, so casts from bool use the u32 ops.

// OP_GELU … OP_ABS_I32: generated from Rust (src/catalog/consts_wgsl.rs: unary_ops). The f32
// math is include/ew_math.wgsl's `unary_f32`, which the fused kernel shares.

const OP: u32 = {{OP}};
const WG: u32 = 256u;

// p: UnaryParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

fn apply(w: u32) -> u32 {
    if (OP < OP_CAST_F32_I32) {
        return bitcast<u32>(unary_f32(OP, bitcast<f32>(w)));
    } else if (OP == OP_CAST_F32_I32) {
        return f32_to_i32(w);
    } else if (OP == OP_CAST_F32_U32) {
        return f32_to_u32(w);
    } else if (OP == OP_CAST_I32_F32) {
        return bitcast<u32>(i32_to_f32(w));
    } else if (OP == OP_CAST_I32_U32) {
        return select(w, 0u, (w & 0x80000000u) != 0u);
    } else if (OP == OP_CAST_U32_F32) {
        return bitcast<u32>(u32_to_f32(w));
    } else if (OP == OP_CAST_U32_I32) {
        return min(w, 0x7fffffffu);
    } else if (OP == OP_NONZERO_F32) {
        return select(0u, 1u, (w & 0x7fffffffu) != 0u);
    } else if (OP == OP_NONZERO_WORD) {
        return select(0u, 1u, w != 0u);
    } else if (OP == OP_NEG_I32) {
        return 0u - w;
    } else {
        return select(w, 0u - w, (w & 0x80000000u) != 0u);
    }
}

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    out[i] = apply(x[i]);
}
