// The matmul params and batch addressing, appended to every matmul kernel (with
// matmul_common.wgsl for one output, matmul_coop_split.wgsl for several).

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
