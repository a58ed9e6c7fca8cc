enable f16;
enable wgpu_cooperative_matrix;

// Flash attention's backward on cooperative matrices (tensor cores): the row statistics, dq,
// dk or dv (the PART define: 0, 1, 2, 3) with f16 16×16×16 products and f32 accumulation; the
// weights (p and ds) are computed in f32 and rounded to f16 for the last product. The gradient
// rung of Precision::Mixed and Precision::F16; attention_bwd.wgsl is the f32 one. Same params,
// bindings, masks, layouts, grouped-query heads and soft-cap (attention_common.wgsl,
// attention_bwd_common.wgsl and attention_coop_frags.wgsl are appended).
//
// Variant defines: DH (64 or 128): the head dim the tiles hold, d and dv anything up to it
// (zero-filled past them); PART. Needs f16 16×16×16 cooperative matrices with f32
// accumulation and subgroups of 32 (checked before a device is given this kernel). Every
// workgroup variable is a multiple of 16 bytes (see attention_coop.wgsl).
//
// Workgroup (x: block of BR = 64 rows, y: a (batch, head) pair), 4 subgroups; subgroup g owns
// rows 16g .. 16g + 15. The statistics and dq take query rows (y: b·Hq + h) and walk tiles of
// BC = 32 keys; dk
// and dv take key rows (y: b·Hkv + kv head) and walk tiles of 32 query rows of every query
// head of their group. The block's rows of the "row side" stay in registers as DH/16 f16 A
// fragments for the whole run: R1 (q for dq, k otherwise) and R2 (dy for dq, v for dk). Per
// tile:
// 1. the tile's "column side" is staged as f16 [32][DH]: X1 (k for dq, q otherwise) and X2
//    (v for dq, dy otherwise), zero past the ends;
// 2. S = R1·X1ᵀ and (dq, dk) dP = R2·X2ᵀ on the tensor cores, stored to shared memory;
// 3. each pair of invocations owns one row and turns its half of the tile into f16 weights
//    (grad_weight: p for dv, ds for dq and dk);
// 4. the accumulators += W·X, X the operand the weights multiply (X1 for dq and dk: k and q,
//    X2 for dv: dy).
// The statistics stop after S: each invocation of a row's pair keeps a running max and sum of
// exp over its half of every tile; the pair merges them at the end, with δ = Σ dy·o summed
// over the row's dims the same way.
// Loop bounds and barriers depend only on the workgroup id and params (uniform control flow):
// cooperative operations need it.
//
// Numerics: q, k, v and dy round to f16 for the products, as in the forward's tensor-core
// rung; a pair's weight is exactly 0 where it is hidden. A non-finite value in a row of the
// column side that some of the block's rows see and others do not reaches those others as
// NaN (0 · inf on the tensor cores), as in the forward's tensor-core rung.

const BR: u32 = 64u;
const BC: u32 = 32u;
const DH: u32 = {{DH}}u;
// Fragments of 16 head dims.
const NF: u32 = DH / 16u;
// Pitches: staged rows (halves), scores (floats), weights (halves). Each row start moves by 16
// bytes, so the 16 rows of a fragment spread over the banks.
const QP: u32 = DH + 8u;
const SP: u32 = BC + 4u;
const PP: u32 = BC + 8u;
// Where X2 starts in t_sh (X1 comes first). The row block staged at the start takes the whole
// of t_sh: BR = 2·BC rows.
const X2_AT: u32 = BC * QP;
// The matrices elem() reads.
const R1: u32 = 0u;
const R2: u32 = 1u;
const X1: u32 = 2u;
const X2: u32 = 3u;

var<workgroup> t_sh: array<f16, 2u * BC * QP>; // the row block, then X1 [BC][QP] and X2 [BC][QP]
var<workgroup> s_sh: array<f32, BR * SP>; // scores; output staging [BR][SP]
var<workgroup> dp_sh: array<f32, BR * SP>; // dP [BR][SP]
var<workgroup> w_sh: array<f16, BR * PP>; // weights [BR][PP]

@compute @workgroup_size(128, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let sg = t / 32u;
    let row0 = wid.x * BR;
    let bh = wid.y + p.bh_offset;
    let hkv = p.hq / p.group;
    var b = bh / hkv;
    var kh = bh % hkv;
    var h0 = kh * p.group;
    var heads = p.group;
    if (rows_are_queries()) {
        b = bh / p.hq;
        h0 = bh % p.hq;
        kh = h0 / p.group;
        heads = 1u;
    }

    var r1 = Rows();
    var r2 = Rows();
    stage(R1, b, h0, kh, row0, BR, 0u, t);
    workgroupBarrier();
    row_frags(sg, &r1);
    workgroupBarrier();
    if (PART == PART_Q || PART == PART_K) {
        stage(R2, b, h0, kh, row0, BR, 0u, t);
        workgroupBarrier();
        row_frags(sg, &r2);
        workgroupBarrier();
    }

    var acc = Acc();
    // The statistics' running max and sum of exp over this invocation's half of each tile.
    var ml = vec2<f32>(f32_bits(NEG_INF_BITS), 0.0);
    for (var g = 0u; g < heads; g++) {
        let h = h0 + g;
        var range = query_range(row0, BR);
        if (rows_are_queries()) {
            range = key_range(b, row0, BR);
        }
        for (var col0 = range.x; col0 < range.y; col0 += BC) {
            stage(X1, b, h, kh, col0, BC, 0u, t);
            if (PART != PART_STATS) {
                stage(X2, b, h, kh, col0, BC, X2_AT, t);
            }
            workgroupBarrier();
            product(sg, &r1, 0u, false);
            if (PART == PART_Q || PART == PART_K) {
                product(sg, &r2, X2_AT, true);
            }
            workgroupBarrier();
            if (PART == PART_STATS) {
                ml = stats_tile(b, h, row0, col0, t, ml);
            } else {
                weights(b, h, row0, col0, t);
                workgroupBarrier();
                accumulate(sg, &acc);
            }
            // The next tile overwrites t_sh, s_sh, dp_sh and w_sh.
            workgroupBarrier();
        }
    }
    if (PART == PART_STATS) {
        stats_out(b, h0, row0, t, ml);
        return;
    }

    write_pair(acc.a0, acc.a1, 0u, sg, b, h0, kh, row0, t);
    write_pair(acc.a2, acc.a3, 2u, sg, b, h0, kh, row0, t);
    if (NF == 8u) {
        write_pair(acc.a4, acc.a5, 4u, sg, b, h0, kh, row0, t);
        write_pair(acc.a6, acc.a7, 6u, sg, b, h0, kh, row0, t);
    }
}

// Whether the block's rows are query rows (the statistics and dq), else key rows.
fn rows_are_queries() -> bool {
    return PART == PART_STATS || PART == PART_Q;
}

// Element d of row `row` of matrix `which` (R1, R2, X1, X2; see the top), 0 past the ends.
fn elem(which: u32, b: u32, h: u32, kh: u32, row: u32, d: u32) -> f32 {
    let row_side = which == R1 || which == R2;
    // The statistics' and dq's rows are query rows, dk's and dv's columns are.
    let queries = row_side == rows_are_queries();
    let second = which == R2 || which == X2;
    if (d >= select(p.d, p.dv, second)) {
        return 0.0;
    }
    if (queries) {
        if (row >= p.sq) {
            return 0.0;
        }
        if (second) {
            return dy_at(b, h, row, d);
        }
        return q_at(b, h, row, d);
    }
    if (row >= p.sk) {
        return 0.0;
    }
    if (second) {
        return v_at(b, kh, row, d);
    }
    return k_at(b, kh, row, d);
}

// Rows row0 .. row0 + rows − 1 of matrix `which` as f16 [row][QP] at element `at` of t_sh.
fn stage(which: u32, b: u32, h: u32, kh: u32, row0: u32, rows: u32, at: u32, t: u32) {
    for (var e = t; e < rows * DH; e += 128u) {
        let rr = e / DH;
        let dd = e % DH;
        t_sh[at + rr * QP + dd] = f16(elem(which, b, h, kh, row0 + rr, dd));
    }
}

// The subgroup's 16 staged rows as A fragments, into r.
fn row_frags(sg: u32, r: ptr<function, Rows>) {
    let at = sg * 16u * QP;
    (*r).f0 = a_frag(at);
    (*r).f1 = a_frag(at + 16u);
    (*r).f2 = a_frag(at + 32u);
    (*r).f3 = a_frag(at + 48u);
    if (NF == 8u) {
        (*r).f4 = a_frag(at + 64u);
        (*r).f5 = a_frag(at + 80u);
        (*r).f6 = a_frag(at + 96u);
        (*r).f7 = a_frag(at + 112u);
    }
}

// A row-major A fragment of t_sh at element i.
fn a_frag(i: u32) -> coop_mat16x16<f16, A> {
    let stride = QP;
    return coopLoadT<coop_mat16x16<f16, A>>(&t_sh[i], stride);
}

// The transposed B fragment ([d][column]) of the staged columns starting at element i: their
// rows read column-major.
fn xt_frag(i: u32) -> coop_mat16x16<f16, B> {
    let stride = QP;
    return coopLoad<coop_mat16x16<f16, B>>(&t_sh[i], stride);
}

// A row-major B fragment ([column][d]) of the staged columns at element i.
fn x_frag(i: u32) -> coop_mat16x16<f16, B> {
    let stride = QP;
    return coopLoadT<coop_mat16x16<f16, B>>(&t_sh[i], stride);
}

// The subgroup's rows times the staged matrix at `x_at`, transposed: [16][32] into s_sh, or
// into dp_sh when `to_dp`.
fn product(sg: u32, r: ptr<function, Rows>, x_at: u32, to_dp: bool) {
    let x2 = x_at + 16u * QP;
    var s0 = coop_mat16x16<f32, C>();
    var s1 = coop_mat16x16<f32, C>();
    s0 = coopMultiplyAdd((*r).f0, xt_frag(x_at), s0);
    s1 = coopMultiplyAdd((*r).f0, xt_frag(x2), s1);
    s0 = coopMultiplyAdd((*r).f1, xt_frag(x_at + 16u), s0);
    s1 = coopMultiplyAdd((*r).f1, xt_frag(x2 + 16u), s1);
    s0 = coopMultiplyAdd((*r).f2, xt_frag(x_at + 32u), s0);
    s1 = coopMultiplyAdd((*r).f2, xt_frag(x2 + 32u), s1);
    s0 = coopMultiplyAdd((*r).f3, xt_frag(x_at + 48u), s0);
    s1 = coopMultiplyAdd((*r).f3, xt_frag(x2 + 48u), s1);
    if (NF == 8u) {
        s0 = coopMultiplyAdd((*r).f4, xt_frag(x_at + 64u), s0);
        s1 = coopMultiplyAdd((*r).f4, xt_frag(x2 + 64u), s1);
        s0 = coopMultiplyAdd((*r).f5, xt_frag(x_at + 80u), s0);
        s1 = coopMultiplyAdd((*r).f5, xt_frag(x2 + 80u), s1);
        s0 = coopMultiplyAdd((*r).f6, xt_frag(x_at + 96u), s0);
        s1 = coopMultiplyAdd((*r).f6, xt_frag(x2 + 96u), s1);
        s0 = coopMultiplyAdd((*r).f7, xt_frag(x_at + 112u), s0);
        s1 = coopMultiplyAdd((*r).f7, xt_frag(x2 + 112u), s1);
    }
    // Every index of a cooperative store is a named value: naga 30's SPIR-V writer panics on
    // an index computed inside the call ("Expression is not cached").
    let at = sg * 16u * SP;
    let at2 = at + 16u;
    let stride = SP;
    if (to_dp) {
        coopStoreT(s0, &dp_sh[at], stride);
        coopStoreT(s1, &dp_sh[at2], stride);
    } else {
        coopStoreT(s0, &s_sh[at], stride);
        coopStoreT(s1, &s_sh[at2], stride);
    }
}

// Step 3: invocation t turns columns 16·(t % 2) .. + 15 of block row t / 2 into f16 weights.
fn weights(b: u32, h: u32, row0: u32, col0: u32, t: u32) {
    let lr = t / 2u;
    let half = t % 2u;
    for (var c = 0u; c < 16u; c++) {
        let cc = half * 16u + c;
        var i = col0 + cc;
        var j = row0 + lr;
        if (PART == PART_Q) {
            i = row0 + lr;
            j = col0 + cc;
        }
        var dp = 0.0;
        if (PART != PART_V) {
            dp = dp_sh[lr * SP + cc];
        }
        w_sh[lr * PP + cc] = f16(grad_weight(b, h, i, j, s_sh[lr * SP + cc], dp));
    }
}

// Step 4: the accumulators += W·X for the subgroup's 16 rows (W [row][column] and X
// [column][d] both row-major).
fn accumulate(sg: u32, a: ptr<function, Acc>) {
    var x_at = 0u;
    if (PART == PART_V) {
        x_at = X2_AT;
    }
    for (var c0 = 0u; c0 < BC; c0 += 16u) {
        let wi = sg * 16u * PP + c0;
        let stride = PP;
        let w = coopLoadT<coop_mat16x16<f16, A>>(&w_sh[wi], stride);
        let xi = x_at + c0 * QP;
        (*a).a0 = coopMultiplyAdd(w, x_frag(xi), (*a).a0);
        (*a).a1 = coopMultiplyAdd(w, x_frag(xi + 16u), (*a).a1);
        (*a).a2 = coopMultiplyAdd(w, x_frag(xi + 32u), (*a).a2);
        (*a).a3 = coopMultiplyAdd(w, x_frag(xi + 48u), (*a).a3);
        if (NF == 8u) {
            (*a).a4 = coopMultiplyAdd(w, x_frag(xi + 64u), (*a).a4);
            (*a).a5 = coopMultiplyAdd(w, x_frag(xi + 80u), (*a).a5);
            (*a).a6 = coopMultiplyAdd(w, x_frag(xi + 96u), (*a).a6);
            (*a).a7 = coopMultiplyAdd(w, x_frag(xi + 112u), (*a).a7);
        }
    }
}

// Output columns 16f .. 16f + 31 of the subgroup's rows: fragments f and f + 1 go through the
// subgroup's rows of s_sh side by side, then each invocation writes 16 values of its row.
fn write_pair(
    fa: coop_mat16x16<f32, C>,
    fb: coop_mat16x16<f32, C>,
    f: u32,
    sg: u32,
    b: u32,
    h: u32,
    kh: u32,
    row0: u32,
    t: u32,
) {
    let si = sg * 16u * SP;
    let sj = si + 16u;
    let stride = SP;
    coopStoreT(fa, &s_sh[si], stride);
    coopStoreT(fb, &s_sh[sj], stride);
    workgroupBarrier();
    let lr = t / 2u;
    let half = t % 2u;
    let row = row0 + lr;
    var base = b * p.q_sb + row * p.q_ss + h * p.q_sh;
    var n = p.d;
    var live = row < p.sq;
    if (PART == PART_K) {
        base = b * p.k_sb + row * p.k_ss + kh * p.k_sh;
        live = row < p.sk;
    }
    if (PART == PART_V) {
        base = b * p.v_sb + row * p.v_ss + kh * p.v_sh;
        n = p.dv;
        live = row < p.sk;
    }
    if (live) {
        for (var c = 0u; c < 16u; c++) {
            // Columns 0..7 and 16..23 for the first of the pair, 8..15 and 24..31 for the second.
            let cc = (c / 8u) * 16u + half * 8u + c % 8u;
            let col = f * 16u + cc;
            if (col < n) {
                out[base + col] = s_sh[lr * SP + cc];
            }
        }
    }
    workgroupBarrier();
}

// The statistics, one tile: invocation t takes columns 16·(t % 2) .. + 15 of block row t / 2
// and returns its running (max, sum of exp) with them folded in.
fn stats_tile(b: u32, h: u32, row0: u32, col0: u32, t: u32, ml: vec2<f32>) -> vec2<f32> {
    let lr = t / 2u;
    let half = t % 2u;
    let i = row0 + lr;
    var xs: array<f32, 16>;
    var tmax = f32_bits(NEG_INF_BITS);
    for (var c = 0u; c < 16u; c++) {
        let cc = half * 16u + c;
        let j = col0 + cc;
        var sc = f32_bits(NEG_INF_BITS);
        if (i < p.sq && j < p.sk && visible(b, i, j)) {
            sc = scored(s_sh[lr * SP + cc], b, h, i, j, true);
        }
        xs[c] = sc;
        tmax = max_nan(tmax, sc);
    }
    let m = max_nan(ml.x, tmax);
    if (is_neg_inf(m)) {
        return ml;
    }
    // m was −∞: no earlier term (l is 0).
    var l = select(ml.y * exp(ml.x - m), 0.0, is_neg_inf(ml.x));
    for (var c = 0u; c < 16u; c++) {
        l += select(exp(xs[c] - m), 0.0, is_neg_inf(xs[c]));
    }
    return vec2<f32>(m, l);
}

// The statistics of the block's rows: each pair merges its two (max, sum), sums δ = Σ dy·o
// over its row's dims (alternate dims each), and writes (lse, δ).
fn stats_out(b: u32, h: u32, row0: u32, t: u32, ml: vec2<f32>) {
    let lr = t / 2u;
    let half = t % 2u;
    let i = row0 + lr;
    var part = 0.0;
    if (i < p.sq) {
        for (var d = half; d < p.dv; d += 2u) {
            part = fma(x[b * p.o_sb + i * p.o_ss + h * p.o_sh + d], dy_at(b, h, i, d), part);
        }
    }
    // s_sh as [128][3]: each invocation's max, sum and share of δ.
    s_sh[t * 3u] = ml.x;
    s_sh[t * 3u + 1u] = ml.y;
    s_sh[t * 3u + 2u] = part;
    workgroupBarrier();
    if (half == 0u && i < p.sq) {
        let o = (t + 1u) * 3u;
        let m1 = s_sh[o];
        let m = max_nan(ml.x, m1);
        var lse = m;
        if (!is_neg_inf(m)) {
            let l0 = select(ml.y * exp(ml.x - m), 0.0, is_neg_inf(ml.x));
            let l1 = select(s_sh[o + 1u] * exp(m1 - m), 0.0, is_neg_inf(m1));
            lse = m + log(l0 + l1);
        }
        let at = ((b * p.hq + h) * p.sq + i) * 2u;
        out[at] = lse;
        out[at + 1u] = part + s_sh[o + 2u];
    }
}
