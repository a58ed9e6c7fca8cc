enable f16;
enable wgpu_cooperative_matrix;

// Flash attention on cooperative matrices (tensor cores), in one pass over the keys: Q·Kᵀ and
// P·V are f16 16×16×16 products with f32 accumulation; the softmax statistics stay f32. The
// attention rung of Precision::Mixed and Precision::F16. Same params, bindings, masks, layouts,
// grouped-query heads and soft-cap as attention.wgsl (attention_common.wgsl and
// attention_coop_frags.wgsl, with the fragment structs, are appended).
//
// Variant defines: DH (64 or 128): the head dim the tiles hold, d and dv anything up to it (the
// tiles are zero-filled past them); BKV (32): keys per tile; LW (1 or 4) and QKV (f32 or
// vec4<f32>, the element type of the q binding, and of k and v when they are stored f32; f16
// ones are read through attention_kv_f16.wgsl): each invocation loads LW consecutive values at
// a time. LW = 4 needs d, dv and every q, k, v stride divisible by 4 (the host checks;
// bindings start on 16-byte boundaries); on the H100 it halved the kernel's time. Needs f16
// 16×16×16 cooperative matrices with f32 accumulation and subgroups of 32 (checked before a
// device is given this kernel).
//
// Every workgroup variable is a multiple of 16 bytes. On the H100 (driver 580) a 4-byte one
// (the flag, or a 33-word array) beside the cooperative-matrix code made the results wrong:
// writing it corrupted the products, and a 16-byte array in its place was exact. A test in
// rlx-gpu (wgsl_tests.rs) holds every cooperative-matrix kernel to this rule.
//
// Workgroup (x: block of BQ = 64 query rows, y: b·Hq + h), 4 subgroups; subgroup g owns rows
// 16g .. 16g + 15 of the block and keeps them as DH/16 f16 A fragments for the whole run. Each
// tile of BKV keys that some row can see (causal and sliding-window masks skip the rest):
// 1. K and V are staged as f16 in shared memory (zero past Sk and the head dims);
// 2. S = Q·Kᵀ on the tensor cores, stored to shared memory;
// 3. each pair of invocations owns one row and writes P = exp(S − m) for its half as f16,
//    summing its share of l (see the lazy rescaling below for m);
// 4. O += P·V on the tensor cores.
// Lazy rescaling: a row's max m moves only when a score passes it by more than TAU (in log2
// units), so P stays below 2^TAU (256, exact enough in f16), and most tiles make no max pass:
// P is computed against the m in hand, and only a tile where some score passes m + TAU (each
// row's first visible one, then rarely) is redone with its exact row max. The output
// accumulators, which cannot be scaled row by row inside a cooperative matrix, make their
// round trip through shared memory only on those tiles. The result divides by the running l,
// computed against the same m, so it is the same softmax.
//
// Tiles: a tile is "plain" when every key in it is valid and visible to every row of the block
// (no padding or bias mask; causal and sliding-window tiles away from the diagonal): no
// per-element checks. Without a bias or a soft-cap, visibility is a shared per-key flag (valid
// length and padding mask, computed while V loads) and the position test; with them, the full
// rule of attention_common.wgsl (`visible`, `scored`).
//
// Numerics: l sums the f16-rounded probabilities that P·V uses, so the normalisation divides by
// the sum of the weights actually applied. A row with no visible key (or only −∞ scores) is
// written as zeros; NaN scores make the row NaN, as in the f32 kernel. A hidden key contributes
// p = 0 exactly; its v row is zero-filled when no row of the block can see it (the padding mask,
// keys past Sk), so a NaN there stays out. A key that some rows of a causal block see and
// others do not is multiplied by 0 in the rows that do not: a non-finite v there reaches them as
// NaN (as in PyTorch's masked attention), where the f32 kernel skips the key.
//
// Loop bounds, barriers and the rescale branch depend only on the workgroup id, params and a
// workgroupUniformLoad (uniform control flow): cooperative operations need it.

const BQ: u32 = 64u;
const BKV: u32 = {{BKV}}u;
// Keys of a tile each invocation of a row's pair turns into probabilities.
const KPL: u32 = BKV / 2u;
const DH: u32 = {{DH}}u;
// Output fragments of 16 columns per subgroup.
const NF: u32 = DH / 16u;
// Pitches: Q and K/V rows (halves), scores (floats), probabilities (halves). Each row start
// moves by 16 bytes, so the 16 rows of a fragment spread over the banks.
const QP: u32 = DH + 8u;
const SP: u32 = BKV + 4u;
const PP: u32 = BKV + 8u;
// Where the V tile starts in kv_sh (the K tile comes first). The Q block staged at the start
// takes the whole of kv_sh: BQ = 2·BKV rows.
const V_AT: u32 = BKV * QP;
// Values per load, and loads per row of DH.
const LW: u32 = {{LW}}u;
const LPR: u32 = DH / LW;
const LOG2E: f32 = 1.4426950408889634;
// How far (log2 units) a tile's max may pass the running max before the max moves.
const TAU: f32 = 8.0;

var<workgroup> kv_sh: array<f16, 2u * BKV * QP>; // the Q block, then K [BKV][QP] and V [BKV][QP]
var<workgroup> s_sh: array<f32, BQ * SP>; // scores; rescale and output staging [BQ][SP]
var<workgroup> p_sh: array<f16, BQ * PP>; // probabilities [BQ][PP]
var<workgroup> red_sh: array<f32, 128>; // one value per invocation, for its pair
var<workgroup> kvis_sh: array<u32, BKV>; // 1 where the tile's key is valid and not padding
// The number of the last tile on which some row passed its max ([0]) and on which such a row
// had accumulators to rescale ([1]). 16 bytes: see the top.
var<workgroup> flag_sh: array<atomic<u32>, 4>;

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
    let len = kv_len(b);
    let range = key_range(b, q0, BQ);
    let lo = range.x;
    let hi = range.y;
    // Without a bias or a soft-cap a score is q·k · scale (here in log2 units).
    let fast = p.softcap <= 0.0 && p.mask_kind != MASK_BIAS;
    let c2 = p.scale * LOG2E;

    // The Q block, rounded to f16 (zero past Sq and d), staged in kv_sh; each subgroup then
    // keeps its rows in registers.
    for (var e = t; e < BQ * LPR; e += 128u) {
        let rr = e / LPR;
        let dd = (e % LPR) * LW;
        let qi = q0 + rr;
        var qv = vec4<f32>(0.0);
        if (qi < p.sq && dd < p.d) {
            qv = vec4<f32>(q[(q_base + qi * p.q_ss + dd) / LW]);
        }
        stage4(rr * QP + dd, qv);
    }
    if (sg == 0u) {
        atomicStore(&flag_sh[0], 0u);
        atomicStore(&flag_sh[1], 0u);
    }
    workgroupBarrier();
    var qr = Rows();
    let qa = sg * 16u * QP;
    qr.f0 = q_frag(qa);
    qr.f1 = q_frag(qa + 16u);
    qr.f2 = q_frag(qa + 32u);
    qr.f3 = q_frag(qa + 48u);
    if (NF == 8u) {
        qr.f4 = q_frag(qa + 64u);
        qr.f5 = q_frag(qa + 80u);
        qr.f6 = q_frag(qa + 96u);
        qr.f7 = q_frag(qa + 112u);
    }
    // The first tile's K and V overwrite the Q block.
    workgroupBarrier();

    var m = f32_bits(NEG_INF_BITS);
    var l = 0.0;
    var o = Acc();
    var tile = 0u;
    for (var j0 = lo; j0 < hi; j0 += BKV) {
        tile += 1u;
        let plain = tile_plain(q0, j0, len);
        load_kv(b, k_base, v_base, j0, len, plain, t);
        workgroupBarrier();
        scores(sg, &qr);
        workgroupBarrier();

        // P against the running max m, as long as no score passes m by more than TAU (or is
        // NaN, or m is still −∞ while the row sees a key). Where one does, the whole workgroup
        // redoes the tile: the exact row max of the tile, the accumulators rescaled, P again.
        // After each row's first visible tile that is rare, so most tiles make no max pass.
        var lt = 0.0;
        var over = false;
        for (var c = 0u; c < KPL; c++) {
            let kk = half * KPL + c;
            let x = score_at(lr, kk, b, h, i, j0, len, row_live, plain, fast, c2);
            over = over || x - m > TAU || is_nan(x);
            let pv = select(f16(exp2(x - m)), f16(0.0), is_neg_inf(x));
            lt += f32(pv);
            p_sh[lr * PP + kk] = pv;
        }
        atomicMax(&flag_sh[0], select(0u, tile, over));
        // [1]: some row that passed its max already had accumulators to rescale.
        atomicMax(&flag_sh[1], select(0u, tile, over && !is_neg_inf(m)));
        // A barrier too: P and the flag are everyone's from here.
        if (workgroupUniformLoad(&flag_sh[0]) == tile) {
            var mt = f32_bits(NEG_INF_BITS);
            for (var c = 0u; c < BKV; c++) {
                mt = max_nan(mt, score_at(lr, c, b, h, i, j0, len, row_live, plain, fast, c2));
            }
            let moved = mt > m + TAU || (is_neg_inf(m) && !is_neg_inf(mt));
            let alpha = select(1.0, exp2(m - mt), moved);
            m = select(m, mt, moved);
            l *= alpha;
            lt = 0.0;
            for (var c = 0u; c < KPL; c++) {
                let kk = half * KPL + c;
                let x = score_at(lr, kk, b, h, i, j0, len, row_live, plain, fast, c2);
                let pv = select(f16(exp2(x - m)), f16(0.0), is_neg_inf(x));
                lt += f32(pv);
                p_sh[lr * PP + kk] = pv;
            }
            // Rows whose max did not move have alpha 1; rows that saw nothing before have
            // zero accumulators, so a tile where only those moved needs no rescale. The
            // rescale stages through s_sh: after every score is read.
            if (workgroupUniformLoad(&flag_sh[1]) == tile) {
                rescale(sg, lr, half, alpha, &o);
            }
            workgroupBarrier();
        }
        l += lt;
        accumulate(sg, &o);
        // The next tile overwrites kv_sh, s_sh and p_sh.
        workgroupBarrier();
    }
    red_sh[t] = l;
    workgroupBarrier();
    l += red_sh[t ^ 1u];
    let none = is_neg_inf(m);

    let o_base = b * p.o_sb + i * p.o_ss + h * p.o_sh;
    write_pair(o.a0, o.a1, 0u, sg, lr, half, row_live, none, l, o_base);
    write_pair(o.a2, o.a3, 2u, sg, lr, half, row_live, none, l, o_base);
    if (NF == 8u) {
        write_pair(o.a4, o.a5, 4u, sg, lr, half, row_live, none, l, o_base);
        write_pair(o.a6, o.a7, 6u, sg, lr, half, row_live, none, l, o_base);
    }
}

// A Q fragment of the staged block: rows and dims starting at element i of kv_sh.
fn q_frag(i: u32) -> coop_mat16x16<f16, A> {
    let stride = QP;
    return coopLoadT<coop_mat16x16<f16, A>>(&kv_sh[i], stride);
}

// Whether every key of the tile j0 .. j0 + BKV − 1 is valid and visible to every row of the
// block q0 .. q0 + BQ − 1 (rows past Sq included: their results are never written).
fn tile_plain(q0: u32, j0: u32, len: u32) -> bool {
    if (p.mask_kind == MASK_PADDING || p.mask_kind == MASK_BIAS || j0 + BKV > len) {
        return false;
    }
    if (p.mask_kind == MASK_CAUSAL || p.mask_kind == MASK_SLIDING) {
        // The last key visible to the first row: (j0 + BKV − 1) + sq <= q0 + len.
        if (j0 + BKV - 1u + p.sq > q0 + len) {
            return false;
        }
    }
    if (p.mask_kind == MASK_SLIDING) {
        // The first key within the window of the last row.
        if (q0 + BQ - 1u + len - (j0 + p.sq) >= p.window) {
            return false;
        }
    }
    return true;
}

// The score of row i (local row lr) and tile key kk as the softmax sees it, in log2 units:
// −∞ for a hidden key (valid length and padding from kvis_sh, the position test from
// attention_common's position_ok).
fn score_at(
    lr: u32,
    kk: u32,
    b: u32,
    h: u32,
    i: u32,
    j0: u32,
    len: u32,
    row_live: bool,
    plain: bool,
    fast: bool,
    c2: f32,
) -> f32 {
    let j = j0 + kk;
    if (fast) {
        if (plain || (kvis_sh[kk] != 0u && position_ok(i, j, len))) {
            return s_sh[lr * SP + kk] * c2;
        }
        return f32_bits(NEG_INF_BITS);
    }
    let vis = row_live && visible(b, i, j);
    if (!vis) {
        return f32_bits(NEG_INF_BITS);
    }
    return scored(s_sh[lr * SP + kk], b, h, i, j, vis) * LOG2E;
}

// Whether key j is valid and not hidden by the padding mask (some row may see it).
fn key_ok(b: u32, j: u32, len: u32) -> bool {
    return j < len && (p.mask_kind != MASK_PADDING || visible(b, 0u, j));
}

// The K and V tiles of keys j0 .. j0 + BKV − 1 as f16 rows [key][d] (zero past Sk and the head
// dims; a V row no row of the block may see is zero too), and the tile's key flags.
fn load_kv(b: u32, k_base: u32, v_base: u32, j0: u32, len: u32, plain: bool, t: u32) {
    for (var e = t; e < BKV * LPR; e += 128u) {
        let kk = e / LPR;
        let dd = (e % LPR) * LW;
        let kj = j0 + kk;
        var kx = vec4<f32>(0.0);
        var vx = vec4<f32>(0.0);
        if (plain) {
            if (dd < p.d) {
                kx = k_load(k_base + kj * p.k_ss + dd);
            }
            if (dd < p.dv) {
                vx = v_load(v_base + kj * p.v_ss + dd);
            }
        } else if (kj < p.sk) {
            if (dd < p.d) {
                kx = k_load(k_base + kj * p.k_ss + dd);
            }
            if (dd < p.dv && key_ok(b, kj, len)) {
                vx = v_load(v_base + kj * p.v_ss + dd);
            }
        }
        stage4(kk * QP + dd, kx);
        stage4(V_AT + kk * QP + dd, vx);
    }
    if (t < BKV) {
        kvis_sh[t] = select(u32(key_ok(b, j0 + t, len)), 1u, plain);
    }
}

// The first LW values of x as f16 at element i of kv_sh onwards (a scalar load is splatted
// into x; only its first lane is kept).
fn stage4(i: u32, x: vec4<f32>) {
    kv_sh[i] = f16(x.x);
    if (LW == 4u) {
        kv_sh[i + 1u] = f16(x.y);
        kv_sh[i + 2u] = f16(x.z);
        kv_sh[i + 3u] = f16(x.w);
    }
}

// S = Q·Kᵀ for the subgroup's 16 rows and the tile's 32 keys, stored row-major into s_sh.
// Kᵀ as the B operand ([d][key]) is K's rows read column-major.
fn scores(sg: u32, qr: ptr<function, Rows>) {
    let r0 = sg * 16u;
    let k2 = 16u * QP;
    var s0 = coop_mat16x16<f32, C>();
    var s1 = coop_mat16x16<f32, C>();
    s0 = coopMultiplyAdd((*qr).f0, k_frag(0u), s0);
    s1 = coopMultiplyAdd((*qr).f0, k_frag(k2), s1);
    s0 = coopMultiplyAdd((*qr).f1, k_frag(16u), s0);
    s1 = coopMultiplyAdd((*qr).f1, k_frag(k2 + 16u), s1);
    s0 = coopMultiplyAdd((*qr).f2, k_frag(32u), s0);
    s1 = coopMultiplyAdd((*qr).f2, k_frag(k2 + 32u), s1);
    s0 = coopMultiplyAdd((*qr).f3, k_frag(48u), s0);
    s1 = coopMultiplyAdd((*qr).f3, k_frag(k2 + 48u), s1);
    if (NF == 8u) {
        s0 = coopMultiplyAdd((*qr).f4, k_frag(64u), s0);
        s1 = coopMultiplyAdd((*qr).f4, k_frag(k2 + 64u), s1);
        s0 = coopMultiplyAdd((*qr).f5, k_frag(80u), s0);
        s1 = coopMultiplyAdd((*qr).f5, k_frag(k2 + 80u), s1);
        s0 = coopMultiplyAdd((*qr).f6, k_frag(96u), s0);
        s1 = coopMultiplyAdd((*qr).f6, k_frag(k2 + 96u), s1);
        s0 = coopMultiplyAdd((*qr).f7, k_frag(112u), s0);
        s1 = coopMultiplyAdd((*qr).f7, k_frag(k2 + 112u), s1);
    }
    store_scores(s0, r0 * SP);
    store_scores(s1, r0 * SP + 16u);
}

// The Kᵀ fragment of dims and keys starting at element i of the K tile.
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
fn accumulate(sg: u32, o: ptr<function, Acc>) {
    let r0 = sg * 16u;
    for (var k0 = 0u; k0 < BKV; k0 += 16u) {
        let pi = r0 * PP + k0;
        let stride = PP;
        let a = coopLoadT<coop_mat16x16<f16, A>>(&p_sh[pi], stride);
        let vi = V_AT + k0 * QP;
        (*o).a0 = coopMultiplyAdd(a, v_frag(vi), (*o).a0);
        (*o).a1 = coopMultiplyAdd(a, v_frag(vi + 16u), (*o).a1);
        (*o).a2 = coopMultiplyAdd(a, v_frag(vi + 32u), (*o).a2);
        (*o).a3 = coopMultiplyAdd(a, v_frag(vi + 48u), (*o).a3);
        if (NF == 8u) {
            (*o).a4 = coopMultiplyAdd(a, v_frag(vi + 64u), (*o).a4);
            (*o).a5 = coopMultiplyAdd(a, v_frag(vi + 80u), (*o).a5);
            (*o).a6 = coopMultiplyAdd(a, v_frag(vi + 96u), (*o).a6);
            (*o).a7 = coopMultiplyAdd(a, v_frag(vi + 112u), (*o).a7);
        }
    }
}

// The V fragment of tile rows (keys) and columns starting at element i of kv_sh.
fn v_frag(i: u32) -> coop_mat16x16<f16, B> {
    let stride = QP;
    return coopLoadT<coop_mat16x16<f16, B>>(&kv_sh[i], stride);
}

// Every output fragment of the subgroup with each row multiplied by its alpha (1 where the
// row's max did not move), through the subgroup's rows of s_sh.
fn rescale(sg: u32, lr: u32, half: u32, alpha: f32, o: ptr<function, Acc>) {
    (*o).a0 = scaled((*o).a0, 0u, sg, lr, half, alpha);
    (*o).a1 = scaled((*o).a1, 1u, sg, lr, half, alpha);
    (*o).a2 = scaled((*o).a2, 0u, sg, lr, half, alpha);
    (*o).a3 = scaled((*o).a3, 1u, sg, lr, half, alpha);
    if (NF == 8u) {
        (*o).a4 = scaled((*o).a4, 0u, sg, lr, half, alpha);
        (*o).a5 = scaled((*o).a5, 1u, sg, lr, half, alpha);
        (*o).a6 = scaled((*o).a6, 0u, sg, lr, half, alpha);
        (*o).a7 = scaled((*o).a7, 1u, sg, lr, half, alpha);
    }
}

// One fragment, rows scaled, through columns 16·slot .. 16·slot + 15 of the subgroup's rows
// of s_sh. Consecutive fragments alternate slots, so a store never meets the load before it.
fn scaled(
    frag: coop_mat16x16<f32, C>,
    slot: u32,
    sg: u32,
    lr: u32,
    half: u32,
    alpha: f32,
) -> coop_mat16x16<f32, C> {
    let at = sg * 16u * SP + slot * 16u;
    let stride = SP;
    coopStoreT(frag, &s_sh[at], stride);
    workgroupBarrier();
    for (var c = 0u; c < 8u; c++) {
        let si = lr * SP + slot * 16u + half * 8u + c;
        s_sh[si] *= alpha;
    }
    workgroupBarrier();
    return coopLoadT<coop_mat16x16<f32, C>>(&s_sh[at], stride);
}

// Output columns 16f .. 16f + 31 of the subgroup's rows: fragments f and f + 1 go through the
// subgroup's rows of s_sh side by side, then each invocation writes 16 values of its row
// divided by l.
fn write_pair(
    fa: coop_mat16x16<f32, C>,
    fb: coop_mat16x16<f32, C>,
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
    let sj = si + 16u;
    let stride = SP;
    coopStoreT(fa, &s_sh[si], stride);
    coopStoreT(fb, &s_sh[sj], stride);
    workgroupBarrier();
    if (row_live) {
        for (var c = 0u; c < 16u; c++) {
            // Columns 0..7 and 16..23 for the first of the pair, 8..15 and 24..31 for the second.
            let cc = (c / 8u) * 16u + half * 8u + c % 8u;
            let col = f * 16u + cc;
            if (col < p.dv) {
                out[o_base + col] = select(s_sh[lr * SP + cc] / l, 0.0, none);
            }
        }
    }
    workgroupBarrier();
}
