// Scatter-add of f32 rows by i32 ids (Op::ScatterAdd), the transpose of gather.wgsl: the
// gradient of an embedding lookup with respect to its table.
//
// Bindings: 0 = ids (read, i32), 1 = src (read, f32), 2 = out (read_write, f32).
// Params: ScatterAddParams.
//
// src is seen as [outer, nidx, inner], the ids as a flat list of nidx, the output as
// [outer, len, inner]: out[(o·len + v)·inner + j] = Σ_{t : ids[t] == v} src[(o·nidx + t)·inner + j].
// An id outside [0, len) adds nothing. The outer·inner pairs (o, j) are the "lanes" of an
// output row v: lane m = o·inner + j.
//
// Layout: one workgroup per (v, block of WG·LANES lanes), p.groups = len·blocks of them; thread
// lid keeps the lanes block·WG·LANES + k·WG + lid (k < LANES) in private accumulators. The
// workgroup scans the ids in chunks of WG: each thread tests one id (ids[t] == v), a log-step
// (Hillis–Steele) inclusive prefix sum of the 0/1 flags in workgroup memory gives each match
// its place, and the matching positions are written, in increasing t, to a shared list. Every
// thread then adds the src rows of the listed positions, in list order, for its lanes. Matches
// per row are few (an embedding row appears in a handful of tokens), so most chunks end after
// the scan. Work: len·nidx·blocks id tests and outer·nidx·inner adds (each src element is read
// by the one workgroup owning its id's row), against len·nidx·outer·inner id reads for one
// invocation per output element. LANES = 4 makes rows up to 1024 wide (BERT-base's 768,
// MiniLM's 384) one block, so the ids are scanned once per output row.
//
// Determinism: no atomics. Each output element is one thread's f32 accumulator that starts at
// +0.0 and adds its terms in increasing t (chunks in order, positions within a chunk in order):
// the order rlx-cpu's reference follows, so the result is bit-identical run to run (and to the
// CPU's).
//
// The other deterministic form (not done here) sorts the positions by id once per run (a
// stable counting sort: a histogram of ids, an exclusive scan into CSR offsets, a stable
// scatter of positions), then has each output row (v, lane block) sum src rows
// offsets[v]..offsets[v + 1] in their sorted, still increasing, order: O(nidx + len) id work
// instead of len·nidx, same order and therefore the same bits, at the price of three more
// launches and a scratch buffer of nidx + len + 1 words. Worth it when len·nidx id tests
// outweigh the adds (a very large vocabulary and batch).

const WG: u32 = 256u;
const LANES: u32 = 4u;

// p: ScatterAddParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

// Two buffers of WG running counts (the scan reads one and writes the other each step).
var<workgroup> counts: array<u32, 512>;
// The positions t of this chunk whose id is v, in increasing order.
var<workgroup> found: array<u32, 256>;

@compute @workgroup_size(WG, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // Uniform across the workgroup: groups past the last return together, before any barrier.
    let g = linear_group(wid, nwg);
    if (g >= p.groups) {
        return;
    }
    let v = g / p.blocks;
    let first_lane = (g % p.blocks) * WG * LANES + lid;
    // Each lane's first src element (position t = 0) and its output element.
    var src_at: array<u32, LANES>;
    var out_at: array<u32, LANES>;
    var acc: array<f32, LANES>;
    for (var k = 0u; k < LANES; k = k + 1u) {
        let m = first_lane + k * WG;
        let o = m / p.inner;
        let j = m % p.inner;
        src_at[k] = o * p.nidx * p.inner + j;
        out_at[k] = (o * p.len + v) * p.inner + j;
        acc[k] = 0.0;
    }
    for (var c = 0u; c < p.nidx; c = c + WG) {
        let t = c + lid;
        var hit = 0u;
        if (t < p.nidx) {
            let id = ids[t];
            hit = select(0u, 1u, id >= 0 && u32(id) == v);
        }
        counts[lid] = hit;
        workgroupBarrier();
        // Inclusive prefix sum of the flags, log2(WG) steps, ping-ponging between the halves.
        var cur = 0u;
        for (var s = 1u; s < WG; s = s * 2u) {
            var x = counts[cur + lid];
            if (lid >= s) {
                x = x + counts[cur + lid - s];
            }
            counts[WG - cur + lid] = x;
            cur = WG - cur;
            workgroupBarrier();
        }
        if (hit == 1u) {
            found[counts[cur + lid] - 1u] = t;
        }
        workgroupBarrier();
        let n = counts[cur + WG - 1u];
        for (var r = 0u; r < n; r = r + 1u) {
            let step = found[r] * p.inner;
            for (var k = 0u; k < LANES; k = k + 1u) {
                if (first_lane + k * WG < p.lanes) {
                    acc[k] = acc[k] + src[src_at[k] + step];
                }
            }
        }
        // The next chunk overwrites counts and found.
        workgroupBarrier();
    }
    for (var k = 0u; k < LANES; k = k + 1u) {
        if (first_lane + k * WG < p.lanes) {
            out[out_at[k]] = acc[k];
        }
    }
}
