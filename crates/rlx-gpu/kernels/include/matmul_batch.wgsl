// The matmul params and batch addressing, appended to every matmul kernel (with
// matmul_common.wgsl for one output, matmul_coop_split.wgsl for several).

// p: MatmulParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

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
