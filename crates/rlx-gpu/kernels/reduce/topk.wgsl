// Top-k along one axis (values or their i32 indices), sorted: up to one workgroup per line doing k
// rounds of a lexicographic arg-selection.
//
// Variant defines: OUT (OUT_VALUES or OUT_INDICES), T (T_F32, T_I32 or T_U32).
// Bindings: 0 = x (read), 1 = out (read_write). Params: TopKParams.
//
// x is seen as [outer, len, inner] and out as [outer, k, inner]; line l = o·inner + j.
// Each element maps to a rank key: a u32 whose unsigned order is the wanted output order
// (descending values when p.largest = 1, ascending otherwise), with NaN the largest value
// (all NaNs equal) and −0 equal to +0. The output order is then (key, index) ascending, which
// is rlx-cpu's stable sort: ties keep the lower index first. A line gets p.row_threads
// threads (a power of two ≤ 256 fitted to len by the lowering; a workgroup packs
// 256 / row_threads lines). Round r finds the smallest pair strictly after round r − 1's
// pick: the line's threads scan their elements (t ≡ tl mod row_threads), a shared-memory tree
// over the line's slots takes the minimum, and the line's first thread writes it. No element
// is marked, so the kernel needs no storage beyond the tree. Cost: k · len / row_threads
// steps per thread.

// OUT_VALUES … OUT_INDICES: generated from Rust (src/catalog/consts_wgsl.rs: topk_outputs).

const OUT: u32 = {{OUT}};
const T: u32 = {{T}};
const WG: u32 = 256u;
const NONE: u32 = 0xffffffffu;

// p: TopKParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

var<workgroup> tree_key: array<u32, 256>;
var<workgroup> tree_idx: array<u32, 256>;

// A u32 whose unsigned order is T's ascending order, NaN above +inf.
fn ascending_key(w: u32) -> u32 {
    if (T == T_F32) {
        if ((w & 0x7fffffffu) > 0x7f800000u) {
            return 0xffffffffu;
        }
        if ((w & 0x7fffffffu) == 0u) {
            return 0x80000000u; // ±0
        }
        // Negative floats: larger magnitude sorts lower, so flip every bit; positive floats
        // sit above them.
        if ((w & 0x80000000u) != 0u) {
            return ~w;
        }
        return w | 0x80000000u;
    } else if (T == T_I32) {
        return w ^ 0x80000000u;
    }
    return w;
}

// (k1, i1) < (k2, i2) lexicographically.
fn before(k1: u32, i1: u32, k2: u32, i2: u32) -> bool {
    return k1 < k2 || (k1 == k2 && i1 < i2);
}

// One thread of a line; the entry point is include/line_main.wgsl.
fn run_line(lid: u32, tl: u32, line: u32) {
    let tpr = p.row_threads;
    let first_slot = lid - tl;
    let live = line < p.lines;
    let len = select(0u, p.len, live);
    let o = line / p.inner;
    let j = line % p.inner;
    let base = o * p.len * p.inner + j;

    var prev_key = 0u;
    var prev_idx = 0u;
    var have_prev = false;
    for (var r = 0u; r < p.k; r++) {
        var bk = NONE;
        var bi = NONE;
        for (var t = tl; t < len; t += tpr) {
            var key = ascending_key(x[base + t * p.inner]);
            if (p.largest != 0u) {
                key = ~key;
            }
            let after = !have_prev || before(prev_key, prev_idx, key, t);
            if (after && before(key, t, bk, bi)) {
                bk = key;
                bi = t;
            }
        }
        tree_key[lid] = bk;
        tree_idx[lid] = bi;
        workgroupBarrier();
        for (var s = tpr / 2u; s > 0u; s >>= 1u) {
            if (tl < s && before(tree_key[lid + s], tree_idx[lid + s], tree_key[lid], tree_idx[lid])) {
                tree_key[lid] = tree_key[lid + s];
                tree_idx[lid] = tree_idx[lid + s];
            }
            workgroupBarrier();
        }
        prev_key = tree_key[first_slot];
        prev_idx = tree_idx[first_slot];
        have_prev = true;
        if (live && tl == 0u) {
            let dst = (o * p.k + r) * p.inner + j;
            if (OUT == OUT_VALUES) {
                out[dst] = x[base + prev_idx * p.inner];
            } else {
                out[dst] = prev_idx;
            }
        }
        // Every thread has read its line's winner before the next round overwrites the tree.
        workgroupBarrier();
    }
}
