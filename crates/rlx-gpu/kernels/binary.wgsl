// Elementwise binary op on f32 with numpy broadcasting.
//
// Variant defines: OP (one of the OP_* constants below). Driver defines: PARAMS.
// Bindings: 0 = a (read), 1 = b (read), 2 = out (read_write, contiguous). Params: BinaryParams.
//
// One thread per output element. Output element i has coordinates c[d], row-major over
// p.shape[0..rank]; it reads a at sum(c[d] * a_strides[d]) and b likewise. A broadcast dim has
// stride 0, so broadcasting costs no copy. Dims are packed four to a vec4 so the struct has the
// same layout as push constants and as a uniform buffer.
//
// NaN: maximum/minimum return NaN when either operand is NaN (PyTorch semantics). The NaN test
// looks at the bits, because a driver may fold `x != x` to false.

const OP_ADD: u32 = 0u;
const OP_SUB: u32 = 1u;
const OP_MUL: u32 = 2u;
const OP_DIV: u32 = 3u;
const OP_POW: u32 = 4u;
const OP_MAXIMUM: u32 = 5u;
const OP_MINIMUM: u32 = 6u;

const OP: u32 = {{OP}};
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

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
{{PARAMS}} p: BinaryParams;

fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn is_odd_integer(y: f32) -> bool {
    // |y| >= 2^24 is always even in f32.
    return abs(y) < 16777216.0 && floor(y) == y && (i32(y) & 1) != 0;
}

// pow with the C/Rust semantics that WGSL's pow (exp2(y * log2(x))) lacks: pow(x, 0) = 1 and
// pow(1, y) = 1 even for NaN, a negative base with an integer exponent keeps its sign, a
// negative base with a non-integer exponent is NaN.
fn pow_c(x: f32, y: f32) -> f32 {
    if (y == 0.0 || x == 1.0) {
        return 1.0;
    }
    if (is_nan(x) || is_nan(y)) {
        return x + y;
    }
    let ax = abs(x);
    let inf = bitcast<f32>(0x7f800000u);
    if (abs(y) == inf) {
        // (±1)^±inf = 1; otherwise 0 or inf by whether |x| and y pull the same way.
        if (ax == 1.0) {
            return 1.0;
        }
        return select(0.0, inf, (ax > 1.0) == (y > 0.0));
    }
    if (x == -inf) {
        // (-inf)^y: the magnitude is inf or 0; an odd integer exponent keeps the sign.
        let mag = select(0.0, inf, y > 0.0);
        return select(mag, -mag, is_odd_integer(y));
    }
    let m = pow(ax, y);
    if (x < 0.0) {
        if (floor(y) != y) {
            // (x - x) / (x - x) is 0/0 at run time: a NaN without a NaN literal.
            return (x - x) / (x - x);
        }
        return select(m, -m, is_odd_integer(y));
    }
    if (x == 0.0) {
        // The sign of a zero base survives only an odd integer exponent: pow(-0, -1) = -inf.
        let odd = is_odd_integer(y);
        if (y < 0.0) {
            return select(1.0 / abs(x), 1.0 / x, odd);
        }
        return select(0.0, x, odd);
    }
    return m;
}

fn apply(x: f32, y: f32) -> f32 {
    if (OP == OP_ADD) {
        return x + y;
    } else if (OP == OP_SUB) {
        return x - y;
    } else if (OP == OP_MUL) {
        return x * y;
    } else if (OP == OP_DIV) {
        return x / y;
    } else if (OP == OP_POW) {
        return pow_c(x, y);
    } else if (OP == OP_MAXIMUM) {
        if (is_nan(x) || is_nan(y)) {
            return x + y;
        }
        return max(x, y);
    } else {
        if (is_nan(x) || is_nan(y)) {
            return x + y;
        }
        return min(x, y);
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
