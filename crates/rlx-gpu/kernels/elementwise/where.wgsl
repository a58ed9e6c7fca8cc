// cond ? a : b on 32-bit words, all three operands broadcast numpy-style to the output.
//
// Bindings: 0 = cond (read, u32 0/1 words), 1 = a (read), 2 = b (read), 3 = out (read_write,
// contiguous). Params: WhereParams.
//
// Output element i has coordinates c[d], row-major over the sizes p.dims[d].x; it reads cond,
// a and b at Σ c[d]·(p.dims[d].y, .z, .w) (stride 0 = broadcast). One vec4 per dim keeps the
// struct at 128 bytes for rank ≤ 7; the lowering merges dims first. Any nonzero cond word
// selects a.

const WG: u32 = 256u;

// p: WhereParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> cond: array<u32>;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    var rem = i;
    var ic = 0u;
    var ia = 0u;
    var ib = 0u;
    for (var d = p.rank; d > 0u; d--) {
        let dim = p.dims[d - 1u];
        let c = rem % dim.x;
        rem = rem / dim.x;
        ic += c * dim.y;
        ia += c * dim.z;
        ib += c * dim.w;
    }
    out[i] = select(b[ib], a[ia], cond[ic] != 0u);
}
