{{ENABLE_F16}}
// Matrix-vector products for small M (decode steps, batch-1 heads): C [M, N] = A [M, K] · Bᵀ
// where B is stored [N, K] (b_stride_k = 1, as every linear layer's weight), M ≤ MMAX. Each
// weight row is read once, in 16-byte loads along K, so the launch streams B at memory speed
// instead of spending a 64×64 output tile on a handful of rows. Same params, bindings, batch
// addressing (one batch) and fused epilogue as the other matmul kernels (matmul_common.wgsl and
// matmul_epilogue.wgsl are appended), and the layout and reduction of matmul_vec_core.wgsl
// (appended too). The grid is 1-D over ⌈N / cols()⌉ workgroups (x, then y).
//
// Variant define B_LOAD (in the core): the functions b4_at (four weights from one B element,
// read through b_elem) and b1_at (one weight by element index). B is vec4<f32> (f32 weights)
// or vec4<f16> (f16 weights, read as they are stored: half the bytes of f32 and no cast
// launch before; ENABLE_F16 turns on shader f16, which f16 storage needs anyway).

fn a4_at(ar: u32, q: u32) -> vec4<f32> {
    return a[ar + q];
}

fn a1_at(ai: u32, k: u32) -> f32 {
    return a[ai >> 2u][ai & 3u];
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let bases = batch_bases(0u);
    let T = col_threads();
    let col = (wid.y * groups.x + wid.x) * cols() + t / T;
    let j = t % T;
    var acc: array<f32, MMAX>;
    if (col < p.n) {
        acc = row_partials(bases.y + col * p.b_stride_n, bases.x, j);
    }
    reduce_columns(t, j, acc);
    if (col < p.n && j < p.m) {
        c[bases.z + j * p.n + col] = epilogue(red[(t - j) * MMAX + j], col);
    }
}
