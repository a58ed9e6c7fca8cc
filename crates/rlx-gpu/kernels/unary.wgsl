// Elementwise unary op on f32 over a contiguous tensor.
//
// Variant defines: OP (one of the OP_* constants below). Driver defines: PARAMS.
// Bindings: 0 = x (read), 1 = out (read_write). Params: UnaryParams.
//
// Accuracy: the CPU reference rounds the exact value once, so every function here is written
// to stay within a few ulp over the whole f32 range rather than only near zero:
// - tanh: a Taylor polynomial below |x| = 0.5 (where 1 - 2/(e^2x + 1) cancels), that formula
//   above it (where it does not, and where it saturates to ±1 instead of overflowing to NaN).
// - sigmoid: exp of a non-positive number only, so it never overflows.
// - gelu (erf form): x/2 · erfc(-x/√2), with a Chebyshev-fitted erfc whose *relative* error is
//   below 1.2e-7 (Numerical Recipes §6.2), so the negative tail stays accurate where 1 + erf
//   would cancel.
// - gelu_tanh: x · sigmoid(2u), an exact rewrite of x/2 · (1 + tanh u) without the cancellation.
// NaN in gives NaN out; NaN tests look at the bits, because a driver may fold `x != x` away.

const OP_GELU: u32 = 0u;
const OP_GELU_TANH: u32 = 1u;
const OP_SILU: u32 = 2u;
const OP_RELU: u32 = 3u;
const OP_SIGMOID: u32 = 4u;
const OP_TANH: u32 = 5u;
const OP_EXP: u32 = 6u;
const OP_LOG: u32 = 7u;
const OP_SQRT: u32 = 8u;
const OP_RSQRT: u32 = 9u;
const OP_NEG: u32 = 10u;
const OP_ABS: u32 = 11u;
const OP_SIN: u32 = 12u;
const OP_COS: u32 = 13u;
const OP_RECIP: u32 = 14u;
const OP_SQUARE: u32 = 15u;

const OP: u32 = {{OP}};
const WG: u32 = 256u;

struct UnaryParams {
    numel: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
{{PARAMS}} p: UnaryParams;

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// A quiet NaN made at run time (a NaN literal is a shader-creation error in WGSL).
fn nan_from(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) | 0x7fc00000u);
}

fn sigmoid(v: f32) -> f32 {
    if (v >= 0.0) {
        return 1.0 / (1.0 + exp(-v));
    }
    let e = exp(v);
    return e / (1.0 + e);
}

fn tanh_acc(v: f32) -> f32 {
    let a = abs(v);
    if (a < 0.5) {
        // tanh v = v (1 + Σ c_n v^2n), Taylor coefficients up to v^15; truncation < 1e-8.
        let s = v * v;
        var r = -0.0014558343870513183;
        r = r * s + 0.003592128036572481;
        r = r * s - 0.008863235529902197;
        r = r * s + 0.021869488536155203;
        r = r * s - 0.05396825396825397;
        r = r * s + 0.13333333333333333;
        r = r * s - 0.3333333333333333;
        return v + v * (r * s);
    }
    // exp overflows to +inf past |v| ≈ 44, where 2/inf = 0 gives exactly ±1.
    let t = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return select(t, -t, v < 0.0);
}

// erfc with relative error below 1.2e-7 over all of f32 (Chebyshev fit, Numerical Recipes).
fn erfc_acc(v: f32) -> f32 {
    let z = abs(v);
    let t = 1.0 / (1.0 + 0.5 * z);
    var q = 0.17087277;
    q = q * t - 0.82215223;
    q = q * t + 1.48851587;
    q = q * t - 1.13520398;
    q = q * t + 0.27886807;
    q = q * t - 0.18628806;
    q = q * t + 0.09678418;
    q = q * t + 0.37409196;
    q = q * t + 1.00002368;
    q = q * t - 1.26551223;
    let r = t * exp(q - z * z);
    return select(r, 2.0 - r, v < 0.0);
}

fn apply(v: f32) -> f32 {
    if (OP == OP_GELU) {
        return 0.5 * v * erfc_acc(-v * 0.7071067811865476);
    } else if (OP == OP_GELU_TANH) {
        let u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
        return v * sigmoid(2.0 * u);
    } else if (OP == OP_SILU) {
        return v * sigmoid(v);
    } else if (OP == OP_RELU) {
        return select(0.0, v, v > 0.0 || is_nan(v));
    } else if (OP == OP_SIGMOID) {
        return sigmoid(v);
    } else if (OP == OP_TANH) {
        return tanh_acc(v);
    } else if (OP == OP_EXP) {
        return exp(v);
    } else if (OP == OP_LOG) {
        if (v < 0.0) {
            return nan_from(v);
        }
        if (v == 0.0) {
            return -1.0 / abs(v);
        }
        return log(v);
    } else if (OP == OP_SQRT) {
        if (v < 0.0) {
            return nan_from(v);
        }
        return sqrt(v);
    } else if (OP == OP_RSQRT) {
        if (v < 0.0) {
            return nan_from(v);
        }
        if (v == 0.0) {
            // 1/sqrt(±0) = ±inf, as the reference computes it.
            return 1.0 / v;
        }
        return inverseSqrt(v);
    } else if (OP == OP_NEG) {
        return -v;
    } else if (OP == OP_ABS) {
        return abs(v);
    } else if (OP == OP_SIN) {
        return sin(v);
    } else if (OP == OP_COS) {
        return cos(v);
    } else if (OP == OP_RECIP) {
        return 1.0 / v;
    } else {
        return v * v;
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
