// What the matmul kernels (matmul_tiled.wgsl, matmul_reg.wgsl, matmul_coop.wgsl,
// matmul_vec.wgsl) share when they write one output: the bindings and the access functions
// (matmul_batch.wgsl has the params struct and batch addressing, matmul_epilogue.wgsl the
// epilogue; both appended too). Appended to each kernel source by rlx-gpu (catalog/nn.rs), so
// the kernels keep their own line numbers; WGSL allows module-scope declarations in any order.
// Placeholders are the kernels' (see matmul_tiled.wgsl).

// f32 for the f32 rungs; vec4<f32> for the tensor-core rung, which loads 16 bytes at a time.
// B_ELEM is AB_ELEM except for the matrix-vector kernel on f16 weights (vec4<f16>: four
// halves in 8 bytes).
@group(0) @binding(0) var<storage, read> a: array<{{AB_ELEM}}>;
@group(0) @binding(1) var<storage, read> b: array<{{B_ELEM}}>;
{{BIAS_DECL}}
@group(0) @binding({{C_BINDING}}) var<storage, read_write> c: array<f32>;
// p: MatmulParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

// The kernels' access to B and C, and their column tile: one operand each here; the split
// coop launch (matmul_coop_split.wgsl) routes them to one of several.
fn b_elem(i: u32) -> {{B_ELEM}} {
    return b[i];
}

fn put_c(i: u32, col: u32, v: f32) {
    c[i] = epilogue(v, col);
}

fn tile_n(x: u32) -> u32 {
    return x;
}

fn cols_n() -> u32 {
    return p.n;
}

fn bias_at(col: u32) -> f32 {
    {{BIAS_AT}}
}
