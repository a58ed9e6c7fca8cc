// Index of the largest (argmax) or smallest (argmin) element along one axis, as i32: up to
// one workgroup per line.
//
// Variant defines: OP (OP_ARGMAX or OP_ARGMIN), T (T_F32, T_I32 or T_U32).
// Bindings: 0 = x (read), 1 = out (read_write, i32 words). Params: AxisParams.
//
// x is seen as [outer, len, inner]; line l = o·inner + j holds the len elements
// x[(o·len + t)·inner + j], and out[l] gets the winning t. A line gets p.row_threads threads
// (a power of two ≤ 256 fitted to len by the lowering; a workgroup packs 256 / row_threads
// lines). Each thread scans the elements t ≡ tl (mod row_threads) keeping (value, index),
// then a shared-memory tree over the line's slots picks the winner of each pair. The order is rlx-cpu's: NaN beats every number (the first NaN wins), otherwise
// the more extreme value wins, and ties go to the lower index. The infer rules guarantee
// len ≥ 1; threads without an element hold the index NONE, which always loses.

// OP_ARGMAX … OP_ARGMIN: generated from Rust (src/catalog/consts_wgsl.rs: arg_ops).

const OP: u32 = {{OP}};
const T: u32 = {{T}};
const WG: u32 = 256u;
const NONE: u32 = 0xffffffffu;

// AxisParams, x and out: include/axis_params.wgsl.

var<workgroup> best_v: array<u32, 256>;
var<workgroup> best_i: array<u32, 256>;

fn is_nan_word(w: u32) -> bool {
    return T == T_F32 && is_nan_bits(w);
}

// u < v in T's order (no NaN here).
fn less(u: u32, v: u32) -> bool {
    if (T == T_F32) {
        return bitcast<f32>(u) < bitcast<f32>(v);
    } else if (T == T_I32) {
        return bitcast<i32>(u) < bitcast<i32>(v);
    }
    return u < v;
}

// Whether (v2, i2) beats (v1, i1).
fn beats(v1: u32, i1: u32, v2: u32, i2: u32) -> bool {
    if (i2 == NONE) {
        return false;
    }
    if (i1 == NONE) {
        return true;
    }
    let n1 = is_nan_word(v1);
    let n2 = is_nan_word(v2);
    if (n1 || n2) {
        return n2 && (!n1 || i2 < i1);
    }
    var better = less(v1, v2);
    var worse = less(v2, v1);
    if (OP == OP_ARGMIN) {
        let t = better;
        better = worse;
        worse = t;
    }
    return better || (!worse && i2 < i1);
}

// One thread of a line; the entry point is include/line_main.wgsl.
fn run_line(lid: u32, tl: u32, line: u32) {
    let tpr = p.row_threads;
    let live = line < p.lines;
    let len = select(0u, p.len, live);
    let base = (line / p.inner) * p.len * p.inner + line % p.inner;

    var bv = 0u;
    var bi = NONE;
    // Four loads in flight per step (a long line, such as a decode step's 151 936 logits, runs
    // in one workgroup and is bound by load latency); the elements are visited in the same
    // order as one at a time, so the winner is the same.
    var t = tl;
    for (; t + 3u * tpr < len; t += 4u * tpr) {
        let v0 = x[base + t * p.inner];
        let v1 = x[base + (t + tpr) * p.inner];
        let v2 = x[base + (t + 2u * tpr) * p.inner];
        let v3 = x[base + (t + 3u * tpr) * p.inner];
        if (beats(bv, bi, v0, t)) {
            bv = v0;
            bi = t;
        }
        if (beats(bv, bi, v1, t + tpr)) {
            bv = v1;
            bi = t + tpr;
        }
        if (beats(bv, bi, v2, t + 2u * tpr)) {
            bv = v2;
            bi = t + 2u * tpr;
        }
        if (beats(bv, bi, v3, t + 3u * tpr)) {
            bv = v3;
            bi = t + 3u * tpr;
        }
    }
    for (; t < len; t += tpr) {
        let v = x[base + t * p.inner];
        if (beats(bv, bi, v, t)) {
            bv = v;
            bi = t;
        }
    }
    best_v[lid] = bv;
    best_i[lid] = bi;
    workgroupBarrier();
    for (var s = tpr / 2u; s > 0u; s >>= 1u) {
        if (tl < s && beats(best_v[lid], best_i[lid], best_v[lid + s], best_i[lid + s])) {
            best_v[lid] = best_v[lid + s];
            best_i[lid] = best_i[lid + s];
        }
        workgroupBarrier();
    }
    if (live && tl == 0u) {
        out[line] = best_i[lid];
    }
}
