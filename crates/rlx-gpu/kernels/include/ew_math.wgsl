// The f32 math of the elementwise kernels, one function per family taking the op code:
// unary.wgsl and binary.wgsl call them with their constant OP, and the kernels generated for
// fused programs (src/lower/fused.rs) with each step's constant op code; the compiler folds
// the choice. The codes are the OP_* constants of the unary and binary tables
// (src/catalog/consts_wgsl.rs), which every kernel including this file gets.
//
// Unary: the activations and their accuracy are the prelude's; log, sqrt and rsqrt of a
// negative number are NaN, NaN in gives NaN out.
// Binary: maximum/minimum return NaN when either operand is NaN (PyTorch semantics); pow has
// the C semantics (pow_c).

fn unary_f32(op: u32, v: f32) -> f32 {
    if (op == OP_GELU) {
        return gelu_erf(v);
    } else if (op == OP_GELU_TANH) {
        return gelu_tanh(v);
    } else if (op == OP_SILU) {
        return silu(v);
    } else if (op == OP_RELU) {
        return relu(v);
    } else if (op == OP_SIGMOID) {
        return sigmoid(v);
    } else if (op == OP_TANH) {
        return tanh_acc(v);
    } else if (op == OP_EXP) {
        return exp(v);
    } else if (op == OP_LOG) {
        if (v < 0.0) {
            return nan_from(v);
        }
        if (v == 0.0) {
            return -1.0 / abs(v);
        }
        return log(v);
    } else if (op == OP_SQRT) {
        if (v < 0.0) {
            return nan_from(v);
        }
        return sqrt(v);
    } else if (op == OP_RSQRT) {
        if (v < 0.0) {
            return nan_from(v);
        }
        if (v == 0.0) {
            // 1/sqrt(±0) = ±inf, as the reference computes it.
            return 1.0 / v;
        }
        return inverseSqrt(v);
    } else if (op == OP_NEG) {
        return -v;
    } else if (op == OP_ABS) {
        return abs(v);
    } else if (op == OP_SIN) {
        return sin(v);
    } else if (op == OP_COS) {
        return cos(v);
    } else if (op == OP_RECIP) {
        return 1.0 / v;
    } else {
        return v * v;
    }
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
    let inf = f32_bits(0x7f800000u);
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

fn binary_f32(op: u32, x: f32, y: f32) -> f32 {
    if (op == OP_ADD) {
        return x + y;
    } else if (op == OP_SUB) {
        return x - y;
    } else if (op == OP_MUL) {
        return x * y;
    } else if (op == OP_DIV) {
        return x / y;
    } else if (op == OP_POW) {
        return pow_c(x, y);
    } else if (op == OP_MAXIMUM) {
        return max_nan(x, y);
    } else {
        return min_nan(x, y);
    }
}
