// Flash attention's backward on f32, one part of the gradient per variant (the PART define:
// 0 the row statistics, 1 dq, 2 dk, 3 dv), never holding the [B, H, Sq, Sk] matrix. rlx-ir's
// `Op::AttentionGrad` has the formulas; rlx-cpu's `ops/attention_grad.rs` is the reference.
//
// Variant defines: DMAX (64, 128 or 256: the output columns one workgroup owns), PART. The
// bindings 0–5, params (AttentionParams, no kv lengths) and the visibility rule are
// attention_common.wgsl's; bindings 6 and 7, the operand accessors and the weight of a pair
// are attention_bwd_common.wgsl's (both appended).
//
// Workgroup (x: block of BR = 16 rows, y: a (batch, head) pair, z: block of DMAX output
// columns), 256 threads; thread t works on block row r = t / 16 and tile column c = t % 16.
// The statistics and dq take blocks of query rows (y: b·Hq + h) and walk tiles of 16 keys;
// dk and dv take blocks of key rows (y: b·Hkv + kv head) and walk tiles of 16 query rows of
// every query head of their group. Per tile:
// 1. the score of (row r, column c), through shared-memory chunks of DC head dims (any head
//    dim works), and for dq and dk the same for dp = dy·v;
// 2. the weight: p = exp(s − lse) (dv), or ds = p·(dp − δ)·(1 − t²)·scale (dq, dk; t the
//    soft-capped score over the cap), 0 for a hidden pair or a row that sees no key;
// 3. the tile of the operand the weights multiply (k for dq, q for dk, dy for dv) staged
//    [16][DMAX], and thread (r, c) accumulates columns c, c + 16, … in registers.
// The statistics instead keep a running max and sum of exp per row (as the forward does) and
// finish with δ, summed over the row by its 16 threads.
// Loop bounds and barriers depend only on the workgroup id and params (uniform control flow).

const BR: u32 = 16u;
const BC: u32 = 16u;
const DC: u32 = 64u;
// Row pitch of the column side's chunk: 65, so that 16 lanes reading column c, dim d hit 16
// banks.
const PITCH: u32 = 65u;
const DMAX: u32 = {{DMAX}};
const PER: u32 = DMAX / 16u;
// The products of step 1.
const SCORES: u32 = 0u;
const DP: u32 = 1u;

var<workgroup> a_s: array<f32, 1024>; // the block rows' chunk [BR][DC]
var<workgroup> b_s: array<f32, 1040>; // the tile columns' chunk [BC][PITCH]
var<workgroup> w_s: array<f32, 256>; // weights (scores for the statistics) [BR][BC]
var<workgroup> vis_s: array<u32, 256>; // the statistics' visibility flags [BR][BC]
var<workgroup> t_s: array<f32, BC * DMAX>; // the multiplied operand's tile [BC][DMAX]

// Whether the block's rows are query rows (else key rows).
fn rows_are_queries() -> bool {
    return PART == PART_STATS || PART == PART_Q;
}

// Element d of query row i (0 past the ends) of product `prod`'s query side: q or dy.
fn query_side(prod: u32, b: u32, h: u32, i: u32, d: u32) -> f32 {
    if (i >= p.sq) {
        return 0.0;
    }
    if (prod == SCORES) {
        return q_at(b, h, i, d);
    }
    return dy_at(b, h, i, d);
}

// Element d of key row j (0 past the ends) of product `prod`'s key side: k or v.
fn key_side(prod: u32, b: u32, kh: u32, j: u32, d: u32) -> f32 {
    if (j >= p.sk) {
        return 0.0;
    }
    if (prod == SCORES) {
        return k_at(b, kh, j, d);
    }
    return v_at(b, kh, j, d);
}

// Product `prod` (the scores q·k, or dp = dy·v) of block row r (from row0) and tile column c
// (from col0), for thread t. Every thread of the workgroup calls it.
fn tile_dot(prod: u32, b: u32, h: u32, kh: u32, row0: u32, col0: u32, t: u32) -> f32 {
    let r = t / BC;
    let c = t % BC;
    let n = select(p.dv, p.d, prod == SCORES);
    var s = 0.0;
    for (var d0 = 0u; d0 < n; d0 += DC) {
        for (var e = t; e < BR * DC; e += 256u) {
            let rr = e / DC;
            let dd = e % DC;
            let gd = d0 + dd;
            var ra = 0.0;
            var cb = 0.0;
            if (gd < n) {
                if (rows_are_queries()) {
                    ra = query_side(prod, b, h, row0 + rr, gd);
                    cb = key_side(prod, b, kh, col0 + rr, gd);
                } else {
                    ra = key_side(prod, b, kh, row0 + rr, gd);
                    cb = query_side(prod, b, h, col0 + rr, gd);
                }
            }
            a_s[e] = ra;
            b_s[rr * PITCH + dd] = cb;
        }
        workgroupBarrier();
        let dn = min(DC, n - d0);
        for (var dd = 0u; dd < dn; dd++) {
            s = fma(a_s[r * DC + dd], b_s[c * PITCH + dd], s);
        }
        workgroupBarrier();
    }
    return s;
}

// The value the weights of the tile multiply: row `row` (0 past the ends), column col.
fn operand_at(b: u32, h: u32, kh: u32, row: u32, col: u32) -> f32 {
    if (PART == PART_Q) {
        if (row >= p.sk || col >= p.d) {
            return 0.0;
        }
        return k_at(b, kh, row, col);
    }
    if (row >= p.sq) {
        return 0.0;
    }
    if (PART == PART_K) {
        if (col >= p.d) {
            return 0.0;
        }
        return q_at(b, h, row, col);
    }
    if (col >= p.dv) {
        return 0.0;
    }
    return dy_at(b, h, row, col);
}

// One tile of the gradients: weights of (block row r, tile column c), then the accumulators.
fn grad_tile(b: u32, h: u32, kh: u32, row0: u32, col0: u32, col_base: u32, t: u32, acc: ptr<function, array<f32, PER>>) {
    let r = t / BC;
    let c = t % BC;
    let s = tile_dot(SCORES, b, h, kh, row0, col0, t);
    var dp = 0.0;
    if (PART != PART_V) {
        dp = tile_dot(DP, b, h, kh, row0, col0, t);
    }
    var i = col0 + c;
    var j = row0 + r;
    if (rows_are_queries()) {
        i = row0 + r;
        j = col0 + c;
    }
    let w = grad_weight(b, h, i, j, s, dp);
    w_s[t] = w;
    for (var e = t; e < BC * DMAX; e += 256u) {
        let kk = e / DMAX;
        t_s[e] = operand_at(b, h, kh, col0 + kk, col_base + e % DMAX);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BC; kk++) {
        let wk = w_s[r * BC + kk];
        // A hidden pair adds nothing, whatever its operand row holds (the reference skips it).
        if (wk != 0.0) {
            let row = kk * DMAX + c;
            for (var jj = 0u; jj < PER; jj++) {
                (*acc)[jj] = fma(wk, t_s[row + 16u * jj], (*acc)[jj]);
            }
        }
    }
    // The next tile overwrites a_s, b_s, w_s and t_s.
    workgroupBarrier();
}

fn grad_main(wid: vec3<u32>, t: u32) {
    let r = t / BC;
    let c = t % BC;
    let row0 = wid.x * BR;
    let bh = wid.y + p.bh_offset;
    let col_base = wid.z * DMAX;
    var acc: array<f32, PER>;
    for (var jj = 0u; jj < PER; jj++) {
        acc[jj] = 0.0;
    }
    if (rows_are_queries()) {
        let b = bh / p.hq;
        let h = bh % p.hq;
        let kh = h / p.group;
        let range = key_range(b, row0, BR);
        for (var col0 = range.x; col0 < range.y; col0 += BC) {
            grad_tile(b, h, kh, row0, col0, col_base, t, &acc);
        }
        let i = row0 + r;
        if (i < p.sq) {
            let base = b * p.q_sb + i * p.q_ss + h * p.q_sh;
            for (var jj = 0u; jj < PER; jj++) {
                let col = col_base + c + 16u * jj;
                if (col < p.d) {
                    out[base + col] = acc[jj];
                }
            }
        }
        return;
    }
    let hkv = p.hq / p.group;
    let b = bh / hkv;
    let kh = bh % hkv;
    let range = query_range(row0, BR);
    for (var g = 0u; g < p.group; g++) {
        let h = kh * p.group + g;
        for (var col0 = range.x; col0 < range.y; col0 += BC) {
            grad_tile(b, h, kh, row0, col0, col_base, t, &acc);
        }
    }
    let j = row0 + r;
    if (j < p.sk) {
        var base = b * p.k_sb + j * p.k_ss + kh * p.k_sh;
        var n = p.d;
        if (PART == PART_V) {
            base = b * p.v_sb + j * p.v_ss + kh * p.v_sh;
            n = p.dv;
        }
        for (var jj = 0u; jj < PER; jj++) {
            let col = col_base + c + 16u * jj;
            if (col < n) {
                out[base + col] = acc[jj];
            }
        }
    }
}

// The statistics of a block of query rows: lse by a running max and sum, then δ.
fn stats_main(wid: vec3<u32>, t: u32) {
    let r = t / BC;
    let c = t % BC;
    let row0 = wid.x * BR;
    let bh = wid.y + p.bh_offset;
    let b = bh / p.hq;
    let h = bh % p.hq;
    let kh = h / p.group;
    let i = row0 + r;
    var m = f32_bits(NEG_INF_BITS);
    var l = 0.0;
    let range = key_range(b, row0, BR);
    for (var col0 = range.x; col0 < range.y; col0 += BC) {
        let s = tile_dot(SCORES, b, h, kh, row0, col0, t);
        let j = col0 + c;
        let vis = i < p.sq && visible(b, i, j);
        w_s[t] = scored(s, b, h, i, j, vis);
        vis_s[t] = select(0u, 1u, vis);
        workgroupBarrier();
        var tile_max = f32_bits(NEG_INF_BITS);
        for (var kk = 0u; kk < BC; kk++) {
            if (vis_s[r * BC + kk] != 0u) {
                tile_max = max_nan(tile_max, w_s[r * BC + kk]);
            }
        }
        let m_new = max_nan(m, tile_max);
        if (!is_neg_inf(m_new)) {
            var sum = 0.0;
            for (var kk = 0u; kk < BC; kk++) {
                if (vis_s[r * BC + kk] != 0u) {
                    sum += exp(w_s[r * BC + kk] - m_new);
                }
            }
            // m = −∞: no earlier term to scale (l is 0).
            l = select(l * exp(m - m_new), 0.0, is_neg_inf(m)) + sum;
        }
        m = m_new;
        workgroupBarrier();
    }
    var part = 0.0;
    if (i < p.sq) {
        for (var d = c; d < p.dv; d += BC) {
            part = fma(x[b * p.o_sb + i * p.o_ss + h * p.o_sh + d], dy_at(b, h, i, d), part);
        }
    }
    w_s[t] = part;
    workgroupBarrier();
    if (c == 0u && i < p.sq) {
        var delta = 0.0;
        for (var kk = 0u; kk < BC; kk++) {
            delta += w_s[r * BC + kk];
        }
        let lse = select(m + log(l), m, is_neg_inf(m));
        let at = ((b * p.hq + h) * p.sq + i) * 2u;
        out[at] = lse;
        out[at + 1u] = delta;
    }
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    if (PART == PART_STATS) {
        stats_main(wid, t);
    } else {
        grad_main(wid, t);
    }
}
