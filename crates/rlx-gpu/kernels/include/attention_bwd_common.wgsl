// What flash attention's two backward kernels (attention_bwd.wgsl on f32,
// attention_bwd_coop.wgsl on cooperative matrices) share, appended to each after
// attention_common.wgsl: the part codes, the part's two extra operands, element accessors,
// the query range of a key block and the weight of one (query, key) pair.
//
// Bindings 6 (x) and 7 (y) are the part's two extra operands: (o, dy) for the statistics,
// (dy, stats) for the gradients. dy and o are addressed with the output strides; the
// statistics are F32 [B, Hq, Sq, 2] of (lse, δ = Σ dy·o) per query row, contiguous. There are
// no kv lengths (len = sk).

const PART: u32 = {{PART}};
const PART_STATS: u32 = 0u;
const PART_Q: u32 = 1u;
const PART_K: u32 = 2u;
const PART_V: u32 = 3u;

@group(0) @binding(6) var<storage, read> x: array<f32>;
@group(0) @binding(7) var<storage, read> y: array<f32>;

fn q_at(b: u32, h: u32, i: u32, d: u32) -> f32 {
    return q[b * p.q_sb + i * p.q_ss + h * p.q_sh + d];
}

fn k_at(b: u32, kh: u32, j: u32, d: u32) -> f32 {
    return k[b * p.k_sb + j * p.k_ss + kh * p.k_sh + d];
}

fn v_at(b: u32, kh: u32, j: u32, d: u32) -> f32 {
    return v[b * p.v_sb + j * p.v_ss + kh * p.v_sh + d];
}

// dy (x of the gradients, y of the statistics), per output strides.
fn dy_at(b: u32, h: u32, i: u32, d: u32) -> f32 {
    let at = b * p.o_sb + i * p.o_ss + h * p.o_sh + d;
    if (PART == PART_STATS) {
        return y[at];
    }
    return x[at];
}

// Query rows [x, y) that some key of the block k0 .. k0 + bk may be seen by (the transpose of
// key_range, with len = sk).
fn query_range(k0: u32, bk: u32) -> vec2<u32> {
    var lo = 0u;
    var hi = p.sq;
    if (p.mask_kind == MASK_CAUSAL || p.mask_kind == MASK_SLIDING) {
        // Row i sits at position i + sk − sq and sees key j when j ≤ that position: the first
        // row that sees key k0 is k0 + sq − sk.
        let first = k0 + p.sq;
        lo = select(0u, first - p.sk, first > p.sk);
        if (p.mask_kind == MASK_SLIDING && p.window < p.sq + p.sk) {
            // ... and while position − j < window: the last row that sees key k0 + bk − 1 is
            // below k0 + bk − 1 + window + sq − sk.
            let end = k0 + bk - 1u + p.window + p.sq;
            hi = select(0u, min(p.sq, end - p.sk), end > p.sk);
        }
    }
    return vec2<u32>(min(lo, hi), hi);
}

// The weight of query row i and key j of head h (batch b) from their score s = q·k and
// dp = dy·v: p = exp(s' − lse) for dv, ds = p·(dp − δ)·(1 − t²)·scale for dq and dk (s' the
// score as the softmax saw it, t = s' / cap under a soft-cap). 0 for a hidden pair, a pair
// past the ends, or a row that sees no key (lse = −∞).
fn grad_weight(b: u32, h: u32, i: u32, j: u32, s: f32, dp: f32) -> f32 {
    if (i >= p.sq || j >= p.sk || !visible(b, i, j)) {
        return 0.0;
    }
    let sc = scored(s, b, h, i, j, true);
    let at = ((b * p.hq + h) * p.sq + i) * 2u;
    let lse = y[at];
    if (is_neg_inf(lse)) {
        return 0.0;
    }
    let pr = exp(sc - lse);
    if (PART == PART_V) {
        return pr;
    }
    var dcap = 1.0;
    if (p.softcap > 0.0) {
        let tc = sc / p.softcap;
        dcap = 1.0 - tc * tc;
    }
    return pr * (dp - y[at + 1u]) * dcap * p.scale;
}
