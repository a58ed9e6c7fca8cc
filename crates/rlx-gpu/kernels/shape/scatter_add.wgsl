// Scatter-add of f32 rows by i32 ids (Op::ScatterAdd), the transpose of gather.wgsl: the
// gradient of an embedding lookup with respect to its table.
//
// Bindings: 0 = ids (read, i32), 1 = src (read, f32), 2 = out (read_write, f32).
// Params: ScatterAddParams.
//
// src is seen as [outer, nidx, inner], the ids as a flat list of nidx, the output as
// [outer, len, inner]: out[(o·len + v)·inner + j] = Σ_{t : ids[t] == v} src[(o·nidx + t)·inner + j].
// An id outside [0, len) adds nothing.
//
// Determinism: no atomics. Each invocation owns one output element and adds its terms into an
// f32 accumulator that starts at +0.0, in increasing t: the order rlx-cpu's reference follows,
// so the result is bit-identical run to run (and to the CPU's). A workgroup's 256
// invocations are consecutive j of one v wherever inner ≥ 256 (a BERT embedding row), so each
// id load is the same address across the workgroup (a broadcast) and the src loads of one t
// are contiguous.
//
// Cost: every output element reads all nidx ids, O(outer·len·inner·nidx) id reads and
// compares, fine for the parity table and small vocabularies. The faster deterministic form
// (not done here) sorts the positions by id once per run (a stable counting sort: a histogram
// of ids, an exclusive scan into CSR offsets, a stable scatter of positions), then has each
// output row (v, j-range) sum src rows offsets[v]..offsets[v + 1] in their sorted, still
// increasing, order: a segmented sum reading src once, O(nidx·inner + len·inner), with the
// same order and therefore the same bits.

const WG: u32 = 256u;

// p: ScatterAddParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    let j = i % p.inner;
    let row = i / p.inner;
    let v = row % p.len;
    let o = row / p.len;
    let base = o * p.nidx * p.inner + j;
    var acc: f32 = 0.0;
    for (var t = 0u; t < p.nidx; t = t + 1u) {
        let id = ids[t];
        if (id >= 0 && u32(id) == v) {
            acc = acc + src[base + t * p.inner];
        }
    }
    out[i] = acc;
}
