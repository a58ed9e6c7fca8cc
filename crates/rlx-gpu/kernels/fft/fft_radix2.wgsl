// Fourier transforms of complex rows: x [rows, N] (vec2 = (real, imag)) → out [rows, N],
// X[k] = Σₙ x[n]·e^{∓2πi·nk/N}, forward unscaled, inverse (+) × 1/N. N a power of two ≤ NMAX.
//
// One workgroup holds PER = NMAX / N whole rows in shared memory (one row when N = NMAX) and
// transforms them in place: the load writes each element to its bit-reversed slot, then log₂N
// passes of radix-2 butterflies (decimation in time), a barrier after each, then the store
// (× 1/N when inverse, exact for a power of two). Every thread of the workgroup runs every pass
// (uniform control flow); threads take butterflies i, i + 256, …
//
// Twiddles e^{∓2πi·k/L} are computed here, not with the built-in sin/cos (whose accuracy Vulkan
// leaves loose): k/L is reduced to a quadrant with integers (exact), the remaining angle
// θ ∈ [0, π/2) goes through Taylor polynomials of degree 13 (sin) and 14 (cos), whose truncation
// error is below 1e-9, far under f32's half ulp, and the quadrant rotates the result.
//
// Grid: linear over ⌈rows / PER⌉ workgroups (linear_group in the prelude).

// p: FftParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

const NMAX: u32 = 2048u;
const WG: u32 = 256u;
const HALF_PI: f32 = 1.5707963267948966;

@group(0) @binding(0) var<storage, read> x: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec2<f32>>;

var<workgroup> s: array<vec2<f32>, NMAX>;

// (cos, sin) of 2π·k/l for 0 ≤ k < l, l a power of two.
fn unit_root(k: u32, l: u32) -> vec2<f32> {
    let k4 = 4u * k;
    let q = k4 / l;
    let t = f32(k4 - q * l) / f32(l) * HALF_PI;
    let t2 = t * t;
    let sn = t * (1.0 + t2 * (-1.0 / 6.0 + t2 * (1.0 / 120.0 + t2 * (-1.0 / 5040.0 + t2 * (1.0 / 362880.0
        + t2 * (-1.0 / 39916800.0 + t2 * (1.0 / 6227020800.0)))))));
    let cs = 1.0 + t2 * (-0.5 + t2 * (1.0 / 24.0 + t2 * (-1.0 / 720.0 + t2 * (1.0 / 40320.0
        + t2 * (-1.0 / 3628800.0 + t2 * (1.0 / 479001600.0 + t2 * (-1.0 / 87178291200.0)))))));
    switch q {
        case 0u: { return vec2<f32>(cs, sn); }
        case 1u: { return vec2<f32>(-sn, cs); }
        case 2u: { return vec2<f32>(-cs, -sn); }
        default: { return vec2<f32>(sn, -cs); }
    }
}

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let first = linear_group(wid, nwg) * p.per_group;
    // Uniform per workgroup: a whole workgroup past the last row leaves before any barrier.
    if (first >= p.rows) {
        return;
    }
    let n = p.n;
    let bits = p.log2n;
    let total = min(p.per_group, p.rows - first) * n;
    let base = first * n;
    for (var i = lid; i < total; i += WG) {
        let j = i & (n - 1u);
        let rev = select(reverseBits(j) >> (32u - bits), 0u, bits == 0u);
        s[(i - j) + rev] = x[base + i];
    }
    workgroupBarrier();
    let sign = select(-1.0, 1.0, p.inverse != 0u);
    for (var st = 0u; st < bits; st++) {
        let half = 1u << st;
        for (var b = lid; b < total / 2u; b += WG) {
            // Row r of the group, butterfly bb of its N / 2.
            let r = b >> (bits - 1u);
            let bb = b & ((n >> 1u) - 1u);
            let j = bb & (half - 1u);
            let i0 = r * n + ((bb >> st) << (st + 1u)) + j;
            let i1 = i0 + half;
            let w = unit_root(j, half << 1u);
            let t = cmul(vec2<f32>(w.x, sign * w.y), s[i1]);
            let a = s[i0];
            s[i0] = a + t;
            s[i1] = a - t;
        }
        workgroupBarrier();
    }
    let scale = select(1.0, 1.0 / f32(n), p.inverse != 0u);
    for (var i = lid; i < total; i += WG) {
        out[base + i] = s[i] * scale;
    }
}
