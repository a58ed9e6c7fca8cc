// Gather (numpy take) of 32-bit words along one axis with i32 indices.
//
// Bindings: 0 = data (read), 1 = indices (read, i32), 2 = out (read_write).
// Params: GatherParams.
//
// data is seen as [outer, len, inner], the indices as a flat list of nidx, the output as
// [outer, nidx, inner]: out[(o·nidx + t)·inner + j] = data[(o·len + indices[t])·inner + j].
// An index outside [0, len) gives a 0 word (0.0, 0 or false), never an out-of-bounds read.

const WG: u32 = 256u;

// p: GatherParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read> indices: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    let j = i % p.inner;
    let row = i / p.inner;
    let t = row % p.nidx;
    let o = row / p.nidx;
    let idx = indices[t];
    if (idx < 0 || u32(idx) >= p.len) {
        out[i] = 0u;
        return;
    }
    out[i] = data[(o * p.len + u32(idx)) * p.inner + j];
}
