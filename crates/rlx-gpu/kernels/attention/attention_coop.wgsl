enable f16;
enable wgpu_cooperative_matrix;

// Scaled dot-product attention on cooperative matrices (tensor cores): Q·Kᵀ and P·V are f16
// 16×16×16 products with f32 accumulation; the softmax statistics stay f32. The attention rung
// of Precision::Mixed and Precision::F16. Same params, bindings, masks, layouts, grouped-query
// heads and soft-cap as attention.wgsl (attention_common.wgsl is appended).
//
// Variant defines: DH (64 or 128): the head dim the tiles hold, d and dv anything up to it (the
// tiles are zero-filled past them); BKV (32 or 64): keys per tile. Needs f16 16×16×16
// cooperative matrices with f32 accumulation and subgroups of 32 (checked before a device is
// given this kernel).
//
// Workgroup (x: block of BQ = 64 query rows, y: b·Hq + h), 4 subgroups; subgroup g owns rows
// 16g .. 16g + 15 of the block. Two passes over the visible keys, in tiles of BKV keys:
// 1. the row maxima: S = Q·Kᵀ per tile into shared memory, then each pair of invocations folds
//    the visible scores of one row (scaled, soft-capped, biased) into its running max;
// 2. with the max m final, P = exp(S − m) (0 for hidden keys) is written to shared memory as
//    f16 and O += P·V accumulates in cooperative matrices, while the pair sums the row's l.
// Two passes compute Q·Kᵀ twice, but the output accumulators never leave the tensor cores:
// a one-pass online softmax rescales O by exp(m − m') whenever a row's max moves, and
// cooperative matrices cannot be scaled row by row, so O would make a round trip through
// shared memory on every tile.
//
// Numerics: l sums the f16-rounded probabilities that P·V uses, so the normalisation divides by
// the sum of the weights actually applied. A row with no visible key (or only −∞ scores) is
// written as zeros; NaN scores make the row NaN, as in the f32 kernel. A hidden key contributes
// p = 0 exactly; its v row is zero-filled when no row of the block can see it (the padding mask,
// keys past Sk), so a NaN there stays out. A key that some rows of a causal block see and
// others do not is multiplied by 0 in the rows that do not: a non-finite v there reaches them as
// NaN (as in PyTorch's masked attention), where the f32 kernel skips the key.
//
// Loop bounds and barriers depend only on the workgroup id and params (uniform control flow):
// cooperative operations need it.

const BQ: u32 = 64u;
const BKV: u32 = {{BKV}}u;
// Keys of a tile each invocation of a row's pair handles.
const KPL: u32 = BKV / 2u;
const DH: u32 = {{DH}}u;
// Output fragments of 16 columns per subgroup.
const NF: u32 = DH / 16u;
// Pitches: Q and K/V rows (halves), scores (floats), probabilities (halves). Each row start
// moves by 16 bytes, so the 16 rows of a fragment spread over the banks.
const QP: u32 = DH + 8u;
const SP: u32 = BKV + 4u;
const PP: u32 = BKV + 8u;

var<workgroup> q_sh: array<f16, BQ * QP>; // [BQ][QP]
var<workgroup> kv_sh: array<f16, BKV * QP>; // K or V tile [BKV][QP]
var<workgroup> s_sh: array<f32, BQ * SP>; // scores, then output staging [BQ][SP]
var<workgroup> p_sh: array<f16, BQ * PP>; // probabilities [BQ][PP]
var<workgroup> red_sh: array<f32, 128>; // one value per invocation, for its pair

// The output accumulators of one subgroup: fragments of columns 16f .. 16f + 15 (o4..o7 only
// when DH is 128).
struct Out {
    o0: coop_mat16x16<f32, C>,
    o1: coop_mat16x16<f32, C>,
    o2: coop_mat16x16<f32, C>,
    o3: coop_mat16x16<f32, C>,
    o4: coop_mat16x16<f32, C>,
    o5: coop_mat16x16<f32, C>,
    o6: coop_mat16x16<f32, C>,
    o7: coop_mat16x16<f32, C>,
}

@compute @workgroup_size(128, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let sg = t / 32u;
    let lane = t % 32u;
    let q0 = wid.x * BQ;
    let bh = wid.y + p.bh_offset;
    let b = bh / p.hq;
    let h = bh % p.hq;
    let kh = h / p.group;
    // The invocation's row and its half of each key tile (KPL keys).
    let lr = sg * 16u + lane / 2u;
    let half = lane % 2u;
    let i = q0 + lr;
    let row_live = i < p.sq;
    let q_base = b * p.q_sb + h * p.q_sh;
    let k_base = b * p.k_sb + kh * p.k_sh;
    let v_base = b * p.v_sb + kh * p.v_sh;
    let range = key_range(b, q0, BQ);
    let lo = range.x;
    let hi = range.y;

    // The Q block, rounded to f16 (zero past Sq and d).
    for (var e = t; e < BQ * DH; e += 128u) {
        let rr = e / DH;
        let dd = e % DH;
        let qi = q0 + rr;
        var qv = 0.0;
        if (qi < p.sq && dd < p.d) {
            qv = q[q_base + qi * p.q_ss + dd];
        }
        q_sh[rr * QP + dd] = f16(qv);
    }

    // Pass 1: the row maxima over the visible scores.
    var m = f32_bits(NEG_INF_BITS);
    for (var j0 = lo; j0 < hi; j0 += BKV) {
        load_k(k_base, j0, t);
        workgroupBarrier();
        scores(sg);
        workgroupBarrier();
        for (var c = 0u; c < KPL; c++) {
            let kk = half * KPL + c;
            let j = j0 + kk;
            let vis = row_live && visible(b, i, j);
            if (vis) {
                m = max_nan(m, scored(s_sh[lr * SP + kk], b, h, i, j, vis));
            }
        }
        // No barrier: the next tile's K load writes kv_sh, which every subgroup is done with
        // (the barrier after scores), and its scores come after the barrier that follows the
        // load, when every invocation is done reading its row of s_sh.
    }
    red_sh[t] = m;
    workgroupBarrier();
    m = max_nan(m, red_sh[t ^ 1u]);
    let none = is_neg_inf(m);
    workgroupBarrier();

    // Pass 2: P = exp(S − m) and O += P·V.
    var l = 0.0;
    var o = Out();
    for (var j0 = lo; j0 < hi; j0 += BKV) {
        load_k(k_base, j0, t);
        workgroupBarrier();
        scores(sg);
        workgroupBarrier();
        for (var c = 0u; c < KPL; c++) {
            let kk = half * KPL + c;
            let j = j0 + kk;
            let vis = row_live && visible(b, i, j);
            var pv = f16(0.0);
            if (vis && !none) {
                pv = f16(exp(scored(s_sh[lr * SP + kk], b, h, i, j, vis) - m));
            }
            l += f32(pv);
            p_sh[lr * PP + kk] = pv;
        }
        // Everyone is done with K before V takes its place.
        workgroupBarrier();
        for (var e = t; e < BKV * DH; e += 128u) {
            let kk = e / DH;
            let cc = e % DH;
            let kj = j0 + kk;
            var vv = 0.0;
            if (kj < p.sk && cc < p.dv && !hidden_to_all(b, kj)) {
                vv = v[v_base + kj * p.v_ss + cc];
            }
            kv_sh[kk * QP + cc] = f16(vv);
        }
        workgroupBarrier();
        accumulate(sg, &o);
        // The next tile overwrites kv_sh and p_sh.
        workgroupBarrier();
    }
    red_sh[t] = l;
    workgroupBarrier();
    l += red_sh[t ^ 1u];

    let o_base = b * p.o_sb + i * p.o_ss + h * p.o_sh;
    write_fragment(o.o0, 0u, sg, lr, half, row_live, none, l, o_base);
    write_fragment(o.o1, 1u, sg, lr, half, row_live, none, l, o_base);
    write_fragment(o.o2, 2u, sg, lr, half, row_live, none, l, o_base);
    write_fragment(o.o3, 3u, sg, lr, half, row_live, none, l, o_base);
    if (NF == 8u) {
        write_fragment(o.o4, 4u, sg, lr, half, row_live, none, l, o_base);
        write_fragment(o.o5, 5u, sg, lr, half, row_live, none, l, o_base);
        write_fragment(o.o6, 6u, sg, lr, half, row_live, none, l, o_base);
        write_fragment(o.o7, 7u, sg, lr, half, row_live, none, l, o_base);
    }
}

// Whether no query row can see key j whatever its position: a key past the valid length, or a
// zero in the padding mask. Its v row is never read (a NaN there would reach rows as p·v).
fn hidden_to_all(b: u32, j: u32) -> bool {
    return j >= kv_len(b) || (p.mask_kind == MASK_PADDING && !visible(b, 0u, j));
}

// The K tile of keys j0 .. j0 + BKV - 1 as f16 rows [key][d] (zero past Sk and d).
fn load_k(k_base: u32, j0: u32, t: u32) {
    for (var e = t; e < BKV * DH; e += 128u) {
        let kk = e / DH;
        let dd = e % DH;
        let kj = j0 + kk;
        var kv = 0.0;
        if (kj < p.sk && dd < p.d) {
            kv = k[k_base + kj * p.k_ss + dd];
        }
        kv_sh[kk * QP + dd] = f16(kv);
    }
}

// S = Q·Kᵀ for the subgroup's 16 rows and the tile's BKV keys, stored row-major into s_sh.
// Kᵀ as the B operand ([d][key]) is K's rows read column-major.
fn scores(sg: u32) {
    let r0 = sg * 16u;
    var s0 = coop_mat16x16<f32, C>();
    var s1 = coop_mat16x16<f32, C>();
    var s2 = coop_mat16x16<f32, C>();
    var s3 = coop_mat16x16<f32, C>();
    for (var d0 = 0u; d0 < DH; d0 += 16u) {
        let qi = r0 * QP + d0;
        let a = coopLoadT<coop_mat16x16<f16, A>>(&q_sh[qi], QP);
        s0 = coopMultiplyAdd(a, k_frag(d0), s0);
        s1 = coopMultiplyAdd(a, k_frag(16u * QP + d0), s1);
        if (BKV == 64u) {
            s2 = coopMultiplyAdd(a, k_frag(32u * QP + d0), s2);
            s3 = coopMultiplyAdd(a, k_frag(48u * QP + d0), s3);
        }
    }
    store_scores(s0, r0 * SP);
    store_scores(s1, r0 * SP + 16u);
    if (BKV == 64u) {
        store_scores(s2, r0 * SP + 32u);
        store_scores(s3, r0 * SP + 48u);
    }
}

// The Kᵀ fragment of dims and keys starting at element i of kv_sh.
fn k_frag(i: u32) -> coop_mat16x16<f16, B> {
    let stride = QP;
    return coopLoad<coop_mat16x16<f16, B>>(&kv_sh[i], stride);
}

// A score fragment into s_sh at element i (row-major).
fn store_scores(frag: coop_mat16x16<f32, C>, i: u32) {
    let at = i;
    let stride = SP;
    coopStoreT(frag, &s_sh[at], stride);
}

// O += P·V for the subgroup's 16 rows: P [row][key] and V [key][col] are both row-major.
fn accumulate(sg: u32, o: ptr<function, Out>) {
    let r0 = sg * 16u;
    for (var k0 = 0u; k0 < BKV; k0 += 16u) {
        let pi = r0 * PP + k0;
        let stride = PP;
        let a = coopLoadT<coop_mat16x16<f16, A>>(&p_sh[pi], stride);
        let vi = k0 * QP;
        (*o).o0 = coopMultiplyAdd(a, v_frag(vi), (*o).o0);
        (*o).o1 = coopMultiplyAdd(a, v_frag(vi + 16u), (*o).o1);
        (*o).o2 = coopMultiplyAdd(a, v_frag(vi + 32u), (*o).o2);
        (*o).o3 = coopMultiplyAdd(a, v_frag(vi + 48u), (*o).o3);
        if (NF == 8u) {
            (*o).o4 = coopMultiplyAdd(a, v_frag(vi + 64u), (*o).o4);
            (*o).o5 = coopMultiplyAdd(a, v_frag(vi + 80u), (*o).o5);
            (*o).o6 = coopMultiplyAdd(a, v_frag(vi + 96u), (*o).o6);
            (*o).o7 = coopMultiplyAdd(a, v_frag(vi + 112u), (*o).o7);
        }
    }
}

// The V fragment of tile rows (keys) and columns starting at element i of kv_sh.
fn v_frag(i: u32) -> coop_mat16x16<f16, B> {
    let stride = QP;
    return coopLoadT<coop_mat16x16<f16, B>>(&kv_sh[i], stride);
}

// Output columns 16f .. 16f + 15 of the subgroup's rows: the fragment goes through the
// subgroup's rows of s_sh, then each invocation writes 8 values of its row divided by l.
fn write_fragment(
    frag: coop_mat16x16<f32, C>,
    f: u32,
    sg: u32,
    lr: u32,
    half: u32,
    row_live: bool,
    none: bool,
    l: f32,
    o_base: u32,
) {
    let si = sg * 16u * SP;
    let stride = SP;
    coopStoreT(frag, &s_sh[si], stride);
    workgroupBarrier();
    if (row_live) {
        for (var c = 0u; c < 8u; c++) {
            let cc = half * 8u + c;
            let col = f * 16u + cc;
            if (col < p.dv) {
                out[o_base + col] = select(s_sh[lr * SP + cc] / l, 0.0, none);
            }
        }
    }
    workgroupBarrier();
}
