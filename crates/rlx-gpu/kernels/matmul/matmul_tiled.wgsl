// Batched f32 matmul C = A·B, tiled through workgroup shared memory with register blocking.
// This is the portable rung of the matmul ladder: it needs nothing past core WGSL.
//
// Variant defines (the epilogue): HAS_BIAS (true/false), BIAS_DECL (the bias binding's
// declaration, or empty), BIAS_AT (body of bias_at), C_BINDING (2, or 3 after a bias), ACT (one
// of the ACT_* constants).
// Bindings: 0 = a (read), 1 = b (read), [2 = bias (read), f32 [N]], then c (read_write).
// Params: MatmulParams.
//
// - Epilogue: c = act(a·b + bias[n]), each step in f32 as the unfused ops would round it.
//   With K = 0 the K loop runs zero times and c = act(bias) (or act(0)); the driver binds a
//   dummy buffer for the empty a and b, which are then never read.
// - a_offset, b_offset, c_offset (elements) shift every address: a lowering that cannot
//   express a batch broadcast with two levels launches this kernel once per outer batch index.
//
// - A is read at a_base + m·a_stride_m + k·a_stride_k and B at b_base + k·b_stride_k +
//   n·b_stride_n, so transposed operands need no copy. C is contiguous [batch, M, N].
// - Batch: workgroup z is the batch index, split as (outer, inner) = (z / batch_inner,
//   z % batch_inner); each operand has a stride per level (0 where it is broadcast). Two
//   levels cover broadcasts like [B, H, M, K]·[B, 1, K, N] without copies.
// - Tiling: a workgroup of 16×16 threads owns a 64×64 block of C and walks K in steps of 16.
//   Each step stages a 64×16 tile of A and a 16×64 tile of B in shared memory (zero-filled past
//   the matrix edges, so any M, N, K is correct); each thread then accumulates a 4×4 block of C
//   in registers. Thread (tx, ty) owns rows ty + 16i and columns tx + 16j: a warp then reads
//   one A value per row (a broadcast) and 16 consecutive B values, both free of bank conflicts.
// - The A tile is stored k-major with a row pitch of 65 (not 64) so that the 16 threads that
//   store one row of A write to 16 different banks.

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;
const A_PITCH: u32 = 65u;

// The epilogue constants, MatmulParams, the bindings and epilogue() are in matmul_common.wgsl.

var<workgroup> a_tile: array<f32, 1040>; // [BK][A_PITCH]
var<workgroup> b_tile: array<f32, 1024>; // [BK][BN]

@compute @workgroup_size(16, 16, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let bases = batch_bases(wid.z);
    let a_base = bases.x;
    let b_base = bases.y;
    let c_base = bases.z;
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let tx = lid.x;
    let ty = lid.y;

    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);

    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        // 1024 elements of each tile, 4 per thread.
        for (var l = 0u; l < 4u; l++) {
            let idx = t + l * 256u;

            let row = idx / BK;
            let ka = idx % BK;
            let gm = m0 + row;
            let gka = k0 + ka;
            var av = 0.0;
            if (gm < p.m && gka < p.k) {
                av = a[a_base + gm * p.a_stride_m + gka * p.a_stride_k];
            }
            a_tile[ka * A_PITCH + row] = av;

            let kb = idx / BN;
            let col = idx % BN;
            let gkb = k0 + kb;
            let gn = n0 + col;
            var bv = 0.0;
            if (gkb < p.k && gn < p.n) {
                bv = b[b_base + gkb * p.b_stride_k + gn * p.b_stride_n];
            }
            b_tile[kb * BN + col] = bv;
        }
        workgroupBarrier();

        for (var kk = 0u; kk < BK; kk++) {
            let ar = kk * A_PITCH + ty;
            let br = kk * BN + tx;
            let bv = vec4<f32>(b_tile[br], b_tile[br + 16u], b_tile[br + 32u], b_tile[br + 48u]);
            acc0 = fma(vec4<f32>(a_tile[ar]), bv, acc0);
            acc1 = fma(vec4<f32>(a_tile[ar + 16u]), bv, acc1);
            acc2 = fma(vec4<f32>(a_tile[ar + 32u]), bv, acc2);
            acc3 = fma(vec4<f32>(a_tile[ar + 48u]), bv, acc3);
        }
        workgroupBarrier();
    }

    store_row(c_base, m0 + ty, n0 + tx, acc0);
    store_row(c_base, m0 + ty + 16u, n0 + tx, acc1);
    store_row(c_base, m0 + ty + 32u, n0 + tx, acc2);
    store_row(c_base, m0 + ty + 48u, n0 + tx, acc3);
}

// Writes the four columns gn, gn + 16, gn + 32, gn + 48 of row gm that fall inside C.
fn store_row(c_base: u32, gm: u32, gn: u32, v: vec4<f32>) {
    if (gm >= p.m) {
        return;
    }
    let r = c_base + gm * p.n;
    for (var j = 0u; j < 4u; j++) {
        let col = gn + 16u * j;
        if (col < p.n) {
            c[r + col] = epilogue(v[j], col);
        }
    }
}
