// What the matmul kernels (matmul_tiled.wgsl, matmul_reg.wgsl, matmul_coop.wgsl) share: the
// params struct, the bindings and the batch addressing (matmul_epilogue.wgsl, appended too,
// has the epilogue). Appended to each kernel source by rlx-gpu (catalog/nn.rs), so the kernels
// keep their own line numbers; WGSL allows module-scope declarations in any order. Placeholders are the kernels' (see
// matmul_tiled.wgsl).

struct MatmulParams {
    m: u32,
    n: u32,
    k: u32,
    batch: u32,
    batch_inner: u32,
    a_stride_m: u32,
    a_stride_k: u32,
    b_stride_k: u32,
    b_stride_n: u32,
    a_batch_outer: u32,
    a_batch_inner: u32,
    b_batch_outer: u32,
    b_batch_inner: u32,
    a_offset: u32,
    b_offset: u32,
    c_offset: u32,
}

// f32 for the f32 rungs; vec4<f32> for the tensor-core rung, which loads 16 bytes at a time.
// B_ELEM is AB_ELEM except for the matrix-vector kernel on f16 weights (vec2<u32>: four
// halves in 8 bytes).
@group(0) @binding(0) var<storage, read> a: array<{{AB_ELEM}}>;
@group(0) @binding(1) var<storage, read> b: array<{{B_ELEM}}>;
{{BIAS_DECL}}
@group(0) @binding({{C_BINDING}}) var<storage, read_write> c: array<f32>;
{{PARAMS}} p: MatmulParams;

fn bias_at(col: u32) -> f32 {
    {{BIAS_AT}}
}

// Where batch z's A, B and C start: z splits as (outer, inner) = (z / batch_inner,
// z % batch_inner), each operand with a stride per level (0 where it is broadcast); C is
// contiguous [batch, M, N].
fn batch_bases(z: u32) -> vec3<u32> {
    let outer = z / p.batch_inner;
    let inner = z % p.batch_inner;
    let a_base = p.a_offset + outer * p.a_batch_outer + inner * p.a_batch_inner;
    let b_base = p.b_offset + outer * p.b_batch_outer + inner * p.b_batch_inner;
    return vec3<u32>(a_base, b_base, p.c_offset + z * p.m * p.n);
}
