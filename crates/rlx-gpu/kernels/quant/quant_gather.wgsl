// Rows of a quantized table, decoded (an embedding lookup): out [nids, K] = dequant(w[ids]),
// w U8 [V, row_bytes] of quantized blocks (quant_common.wgsl and one decoder file are
// appended). Each invocation decodes one piece of 8 weights and writes it as two vec4. An id
// outside [0, V) gives a row of zeros, never an out-of-bounds read. p.m = nids, p.n = V.

const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> ids: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
// p: QuantParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

// One invocation per item; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.m * (p.k / 8u);
}

fn element(i: u32) {
    let pieces = p.k / 8u;
    let row = i / pieces;
    let pc = i % pieces;
    let id = ids[row];
    var v = Piece(vec4<f32>(0.0), vec4<f32>(0.0));
    if (id >= 0 && u32(id) < p.n) {
        v = decode8(u32(id) * p.row_bytes, pc);
    }
    out[2u * i] = v.lo;
    out[2u * i + 1u] = v.hi;
}
