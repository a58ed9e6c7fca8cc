// The prelude: helpers every kernel may use. rlx-gpu appends this file to every variant's WGSL
// (after the kernel, so that the kernel's own line numbers stay those of its file; WGSL
// declarations may come in any order). A kernel must not declare any name defined here.
// Nothing here depends on a kernel's defines or bindings.

// ---- Word types ---------------------------------------------------------------------------
// Values of the `T` define of kernels that move 32-bit words and bitcast them by dtype.

// T_F32 … T_U32: generated from Rust (src/catalog/consts_wgsl.rs: word_types).

// ---- NaN ----------------------------------------------------------------------------------
// NaN tests look at the bits, because a driver may fold `x != x` to false.

fn is_nan_bits(w: u32) -> bool {
    return (w & 0x7fffffffu) > 0x7f800000u;
}

fn is_nan(v: f32) -> bool {
    return is_nan_bits(bitcast<u32>(v));
}

// A quiet NaN made at run time (a NaN literal is a shader-creation error in WGSL).
fn nan_from(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) | 0x7fc00000u);
}

// The f32 with bits `w`, at run time. `bitcast<f32>(0x7f800000u)` of a literal or a `const` is
// a const expression, and WGSL makes a const expression that comes out infinite or NaN a
// shader-creation error (Chrome's Tint enforces it; naga does not); a parameter is not const.
fn f32_bits(w: u32) -> f32 {
    return bitcast<f32>(w);
}

// max that propagates NaN (WGSL's max may return either operand): PyTorch's maximum.
fn max_nan(u: f32, v: f32) -> f32 {
    if (is_nan(u) || is_nan(v)) {
        return u + v;
    }
    return max(u, v);
}

// min that propagates NaN: PyTorch's minimum.
fn min_nan(u: f32, v: f32) -> f32 {
    if (is_nan(u) || is_nan(v)) {
        return u + v;
    }
    return min(u, v);
}

// ---- Conversions --------------------------------------------------------------------------
// rlx-cpu's cast rules (Rust `as` through f64), shared by the unary and cast kernels. Words in,
// words out, so nothing depends on how a device treats denormals or rounds a conversion.
// - integer → float rounds to nearest, ties to even, by hand: WGSL leaves the rounding of an
//   inexact integer → float conversion to the implementation;
// - float → integer truncates toward zero and saturates; NaN → 0.

// u rounded to nearest even at `bits` significant bits (at most 24), as an f32 (exact: it has
// at most `bits` significant bits). Below 2^bits nothing is dropped; above, the low bits that do
// not fit are rounded off by hand and the result scaled back by a power of two (exact).
fn u32_round_to_f32(u: u32, bits: u32) -> f32 {
    if (u < (1u << bits)) {
        return f32(u);
    }
    // Bits to drop: the value has 32 - clz significant bits, of which `bits` are kept.
    let shift = 32u - countLeadingZeros(u) - bits;
    let m = u >> shift;
    let rem = u & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    var r = m;
    if (rem > half || (rem == half && (m & 1u) == 1u)) {
        r = m + 1u;
    }
    // r ≤ 2^bits is exact in f32, and so is the product by 2^shift.
    return f32(r) * f32(1u << shift);
}

// u32 → f32, rounded to nearest even.
fn u32_to_f32(u: u32) -> f32 {
    return u32_round_to_f32(u, 24u);
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

// f32 → u8 (in the low byte of a word): truncated toward zero, saturated to 0..=255, NaN → 0.
fn f32_to_u8(w: u32) -> u32 {
    let v = bitcast<f32>(w);
    if (is_nan_bits(w) || v <= 0.0) {
        return 0u;
    }
    if (v >= 255.0) {
        return 255u;
    }
    return u32(v);
}

// ---- Activations --------------------------------------------------------------------------
// The CPU reference rounds the exact value once, so every function here stays within a few
// ulp over the whole f32 range rather than only near zero; NaN in gives NaN out.
// - tanh: a Taylor polynomial below |x| = 0.5 (where 1 - 2/(e^2x + 1) cancels), that formula
//   above it (where it does not, and where it saturates to ±1 instead of overflowing to NaN).
// - sigmoid: exp of a non-positive number only, so it never overflows.
// - gelu (erf form): x/2 · erfc(-x/√2), with a Chebyshev-fitted erfc whose *relative* error is
//   below 1.2e-7 (Numerical Recipes §6.2), so the negative tail stays accurate where 1 + erf
//   would cancel.
// - gelu (tanh form): x · sigmoid(2u), an exact rewrite of x/2 · (1 + tanh u) without the
//   cancellation.

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

fn gelu_erf(v: f32) -> f32 {
    return 0.5 * v * erfc_acc(-v * 0.7071067811865476);
}

fn gelu_tanh(v: f32) -> f32 {
    let u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
    return v * sigmoid(2.0 * u);
}

fn silu(v: f32) -> f32 {
    return v * sigmoid(v);
}

// max(v, 0) that keeps NaN.
fn relu(v: f32) -> f32 {
    return select(0.0, v, v > 0.0 || is_nan(v));
}

// ---- Grid ---------------------------------------------------------------------------------
// A grid is 2-D when it has more than 65535 workgroups (see rlx_gpu::grid): workgroup
// (x, y) of a grid nwg.x wide is number y · nwg.x + x.

fn linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.y * nwg.x + wid.x;
}

// Global index of item `local` of a workgroup that holds `per_group` items: with
// per_group = the workgroup size and local = local_invocation_index, the thread's index.
fn linear_id(wid: vec3<u32>, nwg: vec3<u32>, per_group: u32, local: u32) -> u32 {
    return linear_group(wid, nwg) * per_group + local;
}

// ---- Workgroup reductions over 256 threads ------------------------------------------------
// Tree reductions in shared memory: pairwise, so an f32 sum stays within a few ulp · log n.
// Every thread of a 256-thread workgroup must call them, in uniform control flow; every thread
// gets the result. They end with a barrier, so they may be called back to back.

var<workgroup> prelude_tree: array<vec2<f32>, 256>;

fn workgroup_sum2(lid: u32, v: vec2<f32>) -> vec2<f32> {
    prelude_tree[lid] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) {
            prelude_tree[lid] += prelude_tree[lid + s];
        }
        workgroupBarrier();
    }
    let total = prelude_tree[0];
    // Nobody may overwrite the slots (the next reduction) before everyone has read slot 0.
    workgroupBarrier();
    return total;
}

fn workgroup_sum(lid: u32, v: f32) -> f32 {
    return workgroup_sum2(lid, vec2<f32>(v, 0.0)).x;
}

// The maximum, NaN if any thread's value is NaN.
fn workgroup_max_nan(lid: u32, v: f32) -> f32 {
    prelude_tree[lid].x = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) {
            prelude_tree[lid].x = max_nan(prelude_tree[lid].x, prelude_tree[lid + s].x);
        }
        workgroupBarrier();
    }
    let m = prelude_tree[0].x;
    workgroupBarrier();
    return m;
}

// The f32 bits of the f16 in the low 16 bits of h, exactly (NaN stays NaN, quieted; subnormals
// widen to normal f32). Integer arithmetic: no shader-f16 support needed.
fn f16_to_f32_bits(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        if (m == 0u) {
            return sign | 0x7f800000u;
        }
        return sign | 0x7fc00000u | (m << 13u);
    }
    if (e == 0u) {
        if (m == 0u) {
            return sign;
        }
        // Subnormal m · 2^-24: its top bit (position t) becomes the implicit one.
        let t = 31u - countLeadingZeros(m);
        return sign | ((t + 103u) << 23u) | ((m << (23u - t)) & 0x7fffffu);
    }
    return sign | ((e + 112u) << 23u) | (m << 13u);
}
