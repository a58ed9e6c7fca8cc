// Counter-based random numbers (rlx_ir::Op::Random): Philox4x32-10, then uniform or normal.
//
// Variant defines: DIST (DIST_UNIFORM or DIST_NORMAL).
// Bindings: 0 = key (read, 2 words: seed, offset), 1 = out (read_write, f32). Params:
// RandomParams.
//
// Thread t computes Philox block t: the four words of philox4x32_10(counter = [t, 0, offset,
// 0], key = [seed, 0]) and writes out[4t .. 4t + 4) (fewer in the last block). Element i thus
// depends only on (seed, offset, i), exactly as rlx-cpu computes it. Blocks past 2^32 would
// need the counter's second word; the lowering keeps every tensor far below (2^31 elements).
// Philox (Salmon et al., SC 2011): per round, the 64-bit products M0·c0 and M1·c2 split into
// high and low words and mix with c1, c3 and the key; the key gains W0, W1 between rounds.
// WGSL has no 64-bit integers, so the high word of a product comes from 16-bit halves.
// - uniform: (w >> 8) · 2^-24, exact in f32 (bit-identical to the CPU);
// - normal: Box–Muller on the word pairs (0, 1) and (2, 3): u1 = ((a >> 8) + 1) · 2^-24,
//   u2 = (c >> 8) · 2^-24, r = sqrt(-2 ln u1), θ = 2π u2, r cos θ then r sin θ (within the
//   device's log/cos/sin precision of the CPU).

// DIST_UNIFORM … DIST_NORMAL: generated from Rust (src/catalog/consts_wgsl.rs: random_dists).

const DIST: u32 = {{DIST}};
const WG: u32 = 256u;

const M0: u32 = 0xD2511F53u;
const M1: u32 = 0xCD9E8D57u;
const W0: u32 = 0x9E3779B9u;
const W1: u32 = 0xBB67AE85u;
const STEP: f32 = 5.9604644775390625e-8; // 2^-24
const TWO_PI: f32 = 6.283185307179586;

// p: RandomParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> key: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// (high, low) words of the 64-bit product a · b.
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let ll = al * bl;
    let lh = al * bh;
    let hl = ah * bl;
    let hh = ah * bh;
    // Carries into the high word: each term is below 2^16, so the sum cannot wrap.
    let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    let hi = hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
    return vec2<u32>(hi, a * b);
}

fn philox(counter: vec4<u32>, k0: u32, k1: u32) -> vec4<u32> {
    var c = counter;
    var k = vec2<u32>(k0, k1);
    for (var r = 0u; r < 10u; r++) {
        if (r > 0u) {
            k = k + vec2<u32>(W0, W1);
        }
        let p0 = mulhilo(M0, c.x);
        let p1 = mulhilo(M1, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
    }
    return c;
}

fn to_uniform(w: u32) -> f32 {
    return f32(w >> 8u) * STEP;
}

fn normal_pair(a: u32, c: u32) -> vec2<f32> {
    let u1 = f32((a >> 8u) + 1u) * STEP;
    let u2 = f32(c >> 8u) * STEP;
    let r = sqrt(-2.0 * log(u1));
    let theta = TWO_PI * u2;
    return vec2<f32>(r * cos(theta), r * sin(theta));
}

// One invocation per item; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.blocks;
}

fn element(t: u32) {
    let w = philox(vec4<u32>(t, 0u, key[1], 0u), key[0], 0u);
    var v: vec4<f32>;
    if (DIST == DIST_UNIFORM) {
        v = vec4<f32>(to_uniform(w.x), to_uniform(w.y), to_uniform(w.z), to_uniform(w.w));
    } else {
        let a = normal_pair(w.x, w.y);
        let b = normal_pair(w.z, w.w);
        v = vec4<f32>(a.x, a.y, b.x, b.y);
    }
    let first = t * 4u;
    for (var l = 0u; l < 4u; l++) {
        if (first + l < p.numel) {
            out[first + l] = v[l];
        }
    }
}
