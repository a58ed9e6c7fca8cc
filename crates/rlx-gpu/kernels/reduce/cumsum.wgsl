// Inclusive prefix sum along one axis on f32, i32 or u32 words: up to one
// workgroup per line.
//
// Variant defines: T (T_F32, T_I32 or T_U32).
// Bindings: 0 = x (read), 1 = out (read_write). Params: AxisParams.
//
// x is seen as [outer, len, inner]; line l = o·inner + j is x[(o·len + t)·inner + j] for
// t < len. A line gets p.row_threads threads (a power of two ≤ 256 fitted to len by the
// lowering; a workgroup packs 256 / row_threads lines) and is walked in blocks of
// row_threads·ITEMS elements. In a block, thread tl owns ITEMS consecutive elements: it sums
// them serially, the line's thread totals are scanned in shared memory (Hillis–Steele,
// log2 row_threads levels), and each element gets
// carry + (sum of the earlier threads' totals) + (its serial prefix). The carry then grows by
// the block total. Every output is thus a sum of few rounded terms (ITEMS + 8 + one per
// earlier block), close to rlx-cpu's f64 running sum. Integers wrap (i32 and u32 share +).
// Lines past p.lines (the tail of the last workgroup or of a 2-D grid) read and write
// nothing; the block loop runs to p.len for every thread so the barriers stay uniform.

const T: u32 = {{T}};
const WG: u32 = 256u;
const ITEMS: u32 = 4u;

// AxisParams, x and out: include/axis_params.wgsl.

var<workgroup> scan: array<u32, 256>;

fn add(u: u32, v: u32) -> u32 {
    if (T == T_F32) {
        return bitcast<u32>(bitcast<f32>(u) + bitcast<f32>(v));
    }
    return u + v;
}

// One thread of a line; the entry point is include/line_main.wgsl.
fn run_line(lid: u32, tl: u32, line: u32) {
    let tpr = p.row_threads;
    let first_slot = lid - tl;
    let live = line < p.lines;
    let len = select(0u, p.len, live);
    let base = (line / p.inner) * p.len * p.inner + line % p.inner;

    // 0u is the additive identity of every T (0.0 is all zero bits).
    var carry = 0u;
    for (var block = 0u; block < p.len; block += tpr * ITEMS) {
        let first = block + tl * ITEMS;
        var prefix: array<u32, 4>;
        var run = 0u;
        for (var e = 0u; e < ITEMS; e++) {
            let t = first + e;
            if (t < len) {
                run = add(run, x[base + t * p.inner]);
            }
            prefix[e] = run;
        }
        scan[lid] = run;
        workgroupBarrier();
        for (var s = 1u; s < tpr; s <<= 1u) {
            var left = 0u;
            if (tl >= s) {
                left = scan[lid - s];
            }
            workgroupBarrier();
            scan[lid] = add(left, scan[lid]);
            workgroupBarrier();
        }
        // Sum of the totals of the line's threads before this one (scan is inclusive).
        var before = 0u;
        if (tl > 0u) {
            before = scan[lid - 1u];
        }
        let offset = add(carry, before);
        for (var e = 0u; e < ITEMS; e++) {
            let t = first + e;
            if (t < len) {
                out[base + t * p.inner] = add(offset, prefix[e]);
            }
        }
        carry = add(carry, scan[first_slot + tpr - 1u]);
        workgroupBarrier();
    }
}
