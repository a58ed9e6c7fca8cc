// Broadcasting binary ops on 32-bit words: integer arithmetic (i32, u32) and comparisons
// (f32, i32, u32; bool words compare as u32) giving u32 0/1.
//
// Variant defines: OP (one of the OP_* constants below), T (T_F32, T_I32 or T_U32).
// Driver defines: PARAMS.
// Bindings: 0 = a (read), 1 = b (read), 2 = out (read_write, contiguous). Params: BinaryParams.
//
// Addressing is binary.wgsl's: output element i has coordinates c[d], row-major over
// p.shape[0..rank]; it reads a at Σ c[d]·a_strides[d] and b likewise (stride 0 = broadcast).
//
// Integer semantics are rlx-cpu's: + − × wrap (WGSL integer arithmetic is two's complement
// and wrapping; i32 and u32 share the low bits of +, − and ×); division truncates, x / 0 = 0
// and i32::MIN / −1 = i32::MIN (wrapping); pow is exponentiation by squaring, wrapping, and
// for a negative i32 exponent the truncated reciprocal (1 for base 1, ±1 for base −1, else 0).
// Comparisons: NaN is unequal to everything (so only `ne` is true), −0 equals +0. NaN tests
// look at the bits, because a driver may fold `x != x` to false.

const OP_ADD: u32 = 0u;
const OP_SUB: u32 = 1u;
const OP_MUL: u32 = 2u;
const OP_DIV: u32 = 3u;
const OP_POW: u32 = 4u;
const OP_MAXIMUM: u32 = 5u;
const OP_MINIMUM: u32 = 6u;
const OP_EQ: u32 = 10u;
const OP_NE: u32 = 11u;
const OP_LT: u32 = 12u;
const OP_LE: u32 = 13u;
const OP_GT: u32 = 14u;
const OP_GE: u32 = 15u;

const T_F32: u32 = 0u;
const T_I32: u32 = 1u;
const T_U32: u32 = 2u;

const OP: u32 = {{OP}};
const T: u32 = {{T}};
const WG: u32 = 256u;

struct BinaryParams {
    numel: u32,
    rank: u32,
    _pad0: u32,
    _pad1: u32,
    shape: array<vec4<u32>, 2>,
    a_strides: array<vec4<u32>, 2>,
    b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
{{PARAMS}} p: BinaryParams;

fn is_nan_bits(w: u32) -> bool {
    return (w & 0x7fffffffu) > 0x7f800000u;
}

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
    return int_op(x, y);
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
