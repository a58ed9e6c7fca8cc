// Scaled dot-product attention on f32 with an online softmax (flash-attention style): the
// scores of a query row are never stored whole, only a running max and sum.
//
// Variant defines: DMAX (64, 128 or 256: the output columns one workgroup owns). The
// bindings, params, mask kinds and the visibility rule are in attention_common.wgsl, which is
// appended.
//
// Addressing: element d of row (batch b, position s, head h) of q sits at
// b·q_sb + s·q_ss + h·q_sh + d (likewise k, v, out), so both layouts need no copy. Query head
// h reads kv head h / group (grouped-query attention). The bias element (b, h, i, j) sits at
// b·m_sb + h·m_sh + i·m_si + j·m_sj (stride 0 on broadcast dims); the padding mask at
// b·m_sb + j·m_sj.
//
// Workgroup (x: block of BQ = 16 query rows, y: b·Hq + h, z: block of DMAX output columns),
// 256 threads; thread t works on row r = t / 16 and lane c = t % 16. For each tile of BKV = 16
// keys that some row of the block can see (causal and sliding-window masks skip the rest):
// 1. scores: Q and K are staged through shared memory in chunks of DC = 64 head dims (so any
//    head dim works) and thread (r, c) accumulates the score of row r and key c of the tile;
// 2. scale, soft-cap (cap·tanh(s/cap)), mask, bias. A hidden key is flagged rather than given
//    −∞, so it is skipped exactly as the reference skips it (a NaN in its v row stays out);
// 3. online softmax: every thread of a row computes the same new max m' from the row's 16
//    scores in shared memory, p = exp(s − m') per key, and rescales its accumulators and the
//    running sum by exp(m − m');
// 4. the V tile [BKV][DMAX] is staged in shared memory and thread (r, c) accumulates output
//    columns c, c + 16, c + 32, ... in registers.
// A row whose max is still −∞ at the end (no visible key, or only −∞ scores) is written as
// zeros, as the reference does. NaN scores make the max NaN and so the whole row NaN.
// Loop bounds and barriers depend only on the workgroup id and params (uniform control flow).

const BQ: u32 = 16u;
const BKV: u32 = 16u;
const DC: u32 = 64u;
// Row pitch of the K chunk: 65 so that the 16 lanes reading key c, dim d hit 16 banks.
const K_PITCH: u32 = 65u;
const DMAX: u32 = {{DMAX}};
const PER: u32 = DMAX / 16u;
// The K chunk [BKV][K_PITCH] and the V tile [BKV][DMAX] share one array (DMAX ≥ 64).
const KV_LEN: u32 = BKV * (DMAX + 1u);

var<workgroup> q_s: array<f32, 1024>; // [BQ][DC]
var<workgroup> kv_s: array<f32, KV_LEN>;
var<workgroup> s_s: array<f32, 256>; // scores [BQ][BKV]
var<workgroup> p_s: array<f32, 256>; // probabilities [BQ][BKV]
var<workgroup> vis_s: array<u32, 256>; // 1 where the key is visible to the row

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let r = t / BKV;
    let c = t % BKV;
    let q0 = wid.x * BQ;
    // Launches of more (batch, head) pairs than one grid dimension holds are split; bh_offset
    // is where this launch starts.
    let bh = wid.y + p.bh_offset;
    let b = bh / p.hq;
    let h = bh % p.hq;
    let kh = h / p.group;
    let dv0 = wid.z * DMAX;
    let i = q0 + r;
    let row_live = i < p.sq;
    let q_base = b * p.q_sb + h * p.q_sh;
    let k_base = b * p.k_sb + kh * p.k_sh;
    let v_base = b * p.v_sb + kh * p.v_sh;

    let range = key_range(b, q0, BQ);
    let lo = range.x;
    let hi = range.y;

    var m = f32_bits(NEG_INF_BITS);
    var l = 0.0;
    var acc: array<f32, PER>;
    for (var jj = 0u; jj < PER; jj++) {
        acc[jj] = 0.0;
    }

    for (var j0 = lo; j0 < hi; j0 += BKV) {
        // 1. Scores.
        var s = 0.0;
        for (var d0 = 0u; d0 < p.d; d0 += DC) {
            for (var e = t; e < BQ * DC; e += 256u) {
                let rr = e / DC;
                let dd = e % DC;
                let gd = d0 + dd;
                let qi = q0 + rr;
                var qv = 0.0;
                if (qi < p.sq && gd < p.d) {
                    qv = q[q_base + qi * p.q_ss + gd];
                }
                q_s[e] = qv;
                let kj = j0 + rr;
                var kv = 0.0;
                if (kj < p.sk && gd < p.d) {
                    kv = k_load(k_base + kj * p.k_ss + gd).x;
                }
                kv_s[rr * K_PITCH + dd] = kv;
            }
            workgroupBarrier();
            let dn = min(DC, p.d - d0);
            for (var dd = 0u; dd < dn; dd++) {
                s = fma(q_s[r * DC + dd], kv_s[c * K_PITCH + dd], s);
            }
            workgroupBarrier();
        }

        // 2. Scale, soft-cap, mask, bias.
        let j = j0 + c;
        let vis = row_live && visible(b, i, j);
        let sc = scored(s, b, h, i, j, vis);
        s_s[t] = sc;
        vis_s[t] = select(0u, 1u, vis);
        workgroupBarrier();

        // 3. Online softmax.
        let row0 = r * BKV;
        var tile_max = f32_bits(NEG_INF_BITS);
        for (var kk = 0u; kk < BKV; kk++) {
            if (vis_s[row0 + kk] != 0u) {
                tile_max = max_nan(tile_max, s_s[row0 + kk]);
            }
        }
        let m_new = max_nan(m, tile_max);
        let none_yet = is_neg_inf(m_new);
        var pv = 0.0;
        if (vis && !none_yet) {
            pv = exp(sc - m_new);
        }
        p_s[t] = pv;
        // m = −∞ → m' finite: the old terms (all p = 0) vanish; m = m' = −∞: nothing to scale.
        let alpha = select(exp(m - m_new), select(0.0, 1.0, none_yet), is_neg_inf(m));

        // 4. V tile, then the accumulators.
        for (var e = t; e < BKV * DMAX; e += 256u) {
            let kk = e / DMAX;
            let col = e % DMAX;
            let kj = j0 + kk;
            let gc = dv0 + col;
            var vv = 0.0;
            if (kj < p.sk && gc < p.dv) {
                vv = v_load(v_base + kj * p.v_ss + gc).x;
            }
            kv_s[kk * DMAX + col] = vv;
        }
        workgroupBarrier();

        var psum = 0.0;
        for (var kk = 0u; kk < BKV; kk++) {
            psum += p_s[row0 + kk];
        }
        l = l * alpha + psum;
        for (var jj = 0u; jj < PER; jj++) {
            acc[jj] *= alpha;
        }
        for (var kk = 0u; kk < BKV; kk++) {
            if (vis_s[row0 + kk] != 0u) {
                let pk = p_s[row0 + kk];
                let vrow = kk * DMAX + c;
                for (var jj = 0u; jj < PER; jj++) {
                    acc[jj] = fma(pk, kv_s[vrow + 16u * jj], acc[jj]);
                }
            }
        }
        m = m_new;
        // The next tile overwrites q_s, kv_s, s_s, p_s and vis_s.
        workgroupBarrier();
    }

    if (row_live) {
        let o_base = b * p.o_sb + i * p.o_ss + h * p.o_sh;
        let empty = is_neg_inf(m);
        for (var jj = 0u; jj < PER; jj++) {
            let col = dv0 + c + 16u * jj;
            if (col < p.dv) {
                out[o_base + col] = select(acc[jj] / l, 0.0, empty);
            }
        }
    }
}
