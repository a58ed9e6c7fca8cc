// Broadcasting elementwise binary ops on 32-bit words: f32 arithmetic, integer arithmetic (i32,
// u32) and comparisons (f32, i32, u32; bool words compare as u32) giving u32 0/1.
//
// Variant defines: OP (one of the OP_* constants below), T (T_F32, T_I32 or T_U32).
// Bindings: 0 = a (read), 1 = b (read), 2 = out (read_write, contiguous). Params: BinaryParams.
//
// One thread per output element. Output element i has coordinates c[d], row-major over
// p.shape[0..rank]; it reads a at Σ c[d]·a_strides[d] and b likewise. A broadcast dim has
// stride 0, so broadcasting costs no copy. Dims are packed four to a vec4 so the struct has the
// same layout as push constants and as a uniform buffer. Every dtype moves as u32 words and is
// reinterpreted with bitcast where the dtype matters.
//
// f32: include/ew_math.wgsl's `binary_f32` (shared with the fused kernel): maximum/minimum
// return NaN when either operand is NaN (PyTorch semantics); pow has the C semantics.
// Integer semantics are rlx-cpu's: + − × wrap (WGSL integer arithmetic is two's complement
// and wrapping; i32 and u32 share the low bits of +, − and ×); division truncates, x / 0 = 0
// and i32::MIN / −1 = i32::MIN (wrapping); pow is exponentiation by squaring, wrapping, and
// for a negative i32 exponent the truncated reciprocal (1 for base 1, ±1 for base −1, else 0).
// Comparisons: NaN is unequal to everything (so only `ne` is true), −0 equals +0.

// OP_ADD … OP_GE: generated from Rust (src/catalog/consts_wgsl.rs: binary_ops).

const OP: u32 = {{OP}};
const T: u32 = {{T}};
const WG: u32 = 256u;

// p: BinaryParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// base^e, wrapping, by squaring (at most 32 rounds).
fn pow_wrap(base: u32, e: u32) -> u32 {
    var r = 1u;
    var q = base;
    var k = e;
    loop {
        if (k == 0u) {
            break;
        }
        if ((k & 1u) == 1u) {
            r = r * q;
        }
        q = q * q;
        k = k >> 1u;
    }
    return r;
}

fn int_op(x: u32, y: u32) -> u32 {
    let sx = bitcast<i32>(x);
    let sy = bitcast<i32>(y);
    if (OP == OP_ADD) {
        return x + y;
    } else if (OP == OP_SUB) {
        return x - y;
    } else if (OP == OP_MUL) {
        return x * y;
    } else if (OP == OP_DIV) {
        if (y == 0u) {
            return 0u;
        }
        if (T == T_I32) {
            if (x == 0x80000000u && y == 0xffffffffu) {
                return x;
            }
            return bitcast<u32>(sx / sy);
        }
        return x / y;
    } else if (OP == OP_POW) {
        if (T == T_I32 && sy < 0) {
            if (sx == 1) {
                return 1u;
            }
            if (sx == -1) {
                return select(0xffffffffu, 1u, (y & 1u) == 0u);
            }
            return 0u;
        }
        return pow_wrap(x, y);
    } else if (OP == OP_MAXIMUM) {
        if (T == T_I32) {
            return bitcast<u32>(max(sx, sy));
        }
        return max(x, y);
    } else {
        if (T == T_I32) {
            return bitcast<u32>(min(sx, sy));
        }
        return min(x, y);
    }
}

fn compare(x: u32, y: u32) -> bool {
    var lt = false;
    var eq = false;
    if (T == T_F32) {
        if (is_nan_bits(x) || is_nan_bits(y)) {
            return OP == OP_NE;
        }
        lt = bitcast<f32>(x) < bitcast<f32>(y);
        eq = bitcast<f32>(x) == bitcast<f32>(y);
    } else if (T == T_I32) {
        lt = bitcast<i32>(x) < bitcast<i32>(y);
        eq = x == y;
    } else {
        lt = x < y;
        eq = x == y;
    }
    if (OP == OP_EQ) {
        return eq;
    } else if (OP == OP_NE) {
        return !eq;
    } else if (OP == OP_LT) {
        return lt;
    } else if (OP == OP_LE) {
        return lt || eq;
    } else if (OP == OP_GT) {
        return !(lt || eq);
    } else {
        return !lt;
    }
}

fn apply(x: u32, y: u32) -> u32 {
    if (OP >= OP_EQ) {
        return select(0u, 1u, compare(x, y));
    }
    if (T == T_F32) {
        return bitcast<u32>(binary_f32(OP, bitcast<f32>(x), bitcast<f32>(y)));
    }
    return int_op(x, y);
}

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    var rem = i;
    var ia = 0u;
    var ib = 0u;
    for (var d = p.rank; d > 0u; d--) {
        let k = d - 1u;
        let n = p.shape[k >> 2u][k & 3u];
        let c = rem % n;
        rem = rem / n;
        ia += c * p.a_strides[k >> 2u][k & 3u];
        ib += c * p.b_strides[k >> 2u][k & 3u];
    }
    out[i] = apply(a[ia], b[ib]);
}
