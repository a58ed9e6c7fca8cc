// Batched f32 matmul C = A·B with 8×8 register tiles and double-buffered shared memory: the
// "Reg128" rung of the matmul ladder (core WGSL only, like matmul_tiled.wgsl, but with a larger
// tile for big outputs).
//
// Variant defines, driver defines, bindings, params, epilogue, addressing and batch handling are
// exactly those of matmul_tiled.wgsl (see there); only the tiling differs.
//
// - Tiling: a workgroup of 16×16 threads owns a 128×128 block of C and walks K in steps of 8.
//   Thread (tx, ty) owns rows 4ty + i and 64 + 4ty + i and columns 4tx + j and 64 + 4tx + j
//   (i, j < 4): an 8×8 block held as 16 vec4 accumulators. Each k step reads two vec4 of A and
//   two vec4 of B from shared memory for 64 FMAs. In a warp, the 16 threads of one ty read 16
//   consecutive vec4 of B (256 contiguous bytes) and all share one A vec4 (a broadcast).
// - Shared memory: two stages (double buffering) of an A tile [BK][A_PITCH] and a B tile
//   [BK][B_PITCH], both k-major, as vec4: 2 · 8 · (33 + 33) vec4 = 16.5 KiB. While the threads
//   compute on one stage, the next K step's values are already loaded from global memory into
//   registers; they are stored into the other stage after the compute, so one barrier per step
//   suffices (the other stage was last read before the previous step's barrier).
// - Global loads are scalar and coalesced whichever way an operand is laid out: when its K
//   stride is 1 (A plain, B transposed) eight consecutive threads read one row's eight
//   consecutive k; otherwise (A transposed, B plain) 32 threads read 32 consecutive rows or
//   columns of one k. The layout test is on uniform params, so the branch does not diverge.
//   The pitch of 33 vec4 (132 floats) puts the scalar shared stores of the first pattern,
//   whose 32 threads write 4 rows × 8 k, in 32 distinct banks.
// - Past the edges of A and B the tiles are zero-filled, so any M, N, K is correct; stores
//   outside C are skipped.

const BM: u32 = 128u;
const BN: u32 = 128u;
const BK: u32 = 8u;
// Row pitch of both tiles in vec4 (32 + 1) and in floats.
const PITCH4: u32 = 33u;
const PITCH: u32 = 132u;
// vec4 in one stage of one tile.
const STAGE4: u32 = 264u; // BK * PITCH4

// The epilogue constants, MatmulParams, the bindings and epilogue() are in matmul_common.wgsl.

var<workgroup> a_tile: array<vec4<f32>, 528>; // [2][BK][PITCH4]
var<workgroup> b_tile: array<vec4<f32>, 528>; // [2][BK][PITCH4]

// Where thread t's four loads of one tile go: (row or column in the tile, k in the tile) of
// load l < 4. Pattern "k contiguous": 8 threads per row; otherwise 32 threads per k.
fn slot(t: u32, l: u32, k_contiguous: bool) -> vec2<u32> {
    let idx = t + 256u * l;
    if (k_contiguous) {
        return vec2<u32>(idx / BK, idx % BK);
    }
    return vec2<u32>(idx % BM, idx / BM);
}

// Stores a loaded value of tile row/column `rc` and tile k `kk` into stage `s` of a tile.
fn put_a(s: u32, rc: u32, kk: u32, v: f32) {
    a_tile[s * STAGE4 + kk * PITCH4 + rc / 4u][rc % 4u] = v;
}

fn put_b(s: u32, rc: u32, kk: u32, v: f32) {
    b_tile[s * STAGE4 + kk * PITCH4 + rc / 4u][rc % 4u] = v;
}

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
    let a_kc = p.a_stride_k == 1u;
    let b_kc = p.b_stride_k == 1u;

    var acc00 = vec4<f32>(0.0);
    var acc01 = vec4<f32>(0.0);
    var acc10 = vec4<f32>(0.0);
    var acc11 = vec4<f32>(0.0);
    var acc20 = vec4<f32>(0.0);
    var acc21 = vec4<f32>(0.0);
    var acc30 = vec4<f32>(0.0);
    var acc31 = vec4<f32>(0.0);
    var acc40 = vec4<f32>(0.0);
    var acc41 = vec4<f32>(0.0);
    var acc50 = vec4<f32>(0.0);
    var acc51 = vec4<f32>(0.0);
    var acc60 = vec4<f32>(0.0);
    var acc61 = vec4<f32>(0.0);
    var acc70 = vec4<f32>(0.0);
    var acc71 = vec4<f32>(0.0);

    // The next K step's values, loaded before the current step is computed.
    var ra = vec4<f32>(0.0);
    var rb = vec4<f32>(0.0);

    // Interior workgroups (the whole tile inside M and N) load every full K step branch-free
    // from per-invocation indices that advance by one K step's stride; edge workgroups and the
    // last, partial K step take the checked loads. Bounds checks around each load kept the
    // tensor-core rung from overlapping loads with compute (3.5× on the H200); see
    // matmul_coop.wgsl.
    let interior = m0 + BM <= p.m && n0 + BN <= p.n;
    let full_steps = p.k / BK;
    let a_step = BK * p.a_stride_k;
    let b_step = BK * p.b_stride_k;
    let ia = vec4<u32>(a_at(a_base, m0, t, 0u, a_kc), a_at(a_base, m0, t, 1u, a_kc),
                       a_at(a_base, m0, t, 2u, a_kc), a_at(a_base, m0, t, 3u, a_kc));
    let ib = vec4<u32>(b_at(b_base, n0, t, 0u, b_kc), b_at(b_base, n0, t, 1u, b_kc),
                       b_at(b_base, n0, t, 2u, b_kc), b_at(b_base, n0, t, 3u, b_kc));

    let steps = (p.k + BK - 1u) / BK;
    if (steps > 0u) {
        ra = load_a(a_base, m0, 0u, t, a_kc);
        rb = load_b(b_base, n0, 0u, t, b_kc);
        store_stage(0u, t, a_kc, b_kc, ra, rb);
    }
    workgroupBarrier();

    for (var s = 0u; s < steps; s++) {
        let cur = s % 2u;
        let more = s + 1u < steps;
        if (more && interior && s + 1u < full_steps) {
            let ja = ia + vec4<u32>((s + 1u) * a_step);
            let jb = ib + vec4<u32>((s + 1u) * b_step);
            ra = vec4<f32>(a[ja.x], a[ja.y], a[ja.z], a[ja.w]);
            rb = vec4<f32>(b[jb.x], b[jb.y], b[jb.z], b[jb.w]);
        } else if (more) {
            let k0 = (s + 1u) * BK;
            ra = load_a(a_base, m0, k0, t, a_kc);
            rb = load_b(b_base, n0, k0, t, b_kc);
        }
        let base = cur * STAGE4;
        for (var kk = 0u; kk < BK; kk++) {
            let r = base + kk * PITCH4;
            let a0 = a_tile[r + ty];
            let a1 = a_tile[r + 16u + ty];
            let b0 = b_tile[r + tx];
            let b1 = b_tile[r + 16u + tx];
            acc00 = fma(vec4<f32>(a0.x), b0, acc00);
            acc01 = fma(vec4<f32>(a0.x), b1, acc01);
            acc10 = fma(vec4<f32>(a0.y), b0, acc10);
            acc11 = fma(vec4<f32>(a0.y), b1, acc11);
            acc20 = fma(vec4<f32>(a0.z), b0, acc20);
            acc21 = fma(vec4<f32>(a0.z), b1, acc21);
            acc30 = fma(vec4<f32>(a0.w), b0, acc30);
            acc31 = fma(vec4<f32>(a0.w), b1, acc31);
            acc40 = fma(vec4<f32>(a1.x), b0, acc40);
            acc41 = fma(vec4<f32>(a1.x), b1, acc41);
            acc50 = fma(vec4<f32>(a1.y), b0, acc50);
            acc51 = fma(vec4<f32>(a1.y), b1, acc51);
            acc60 = fma(vec4<f32>(a1.z), b0, acc60);
            acc61 = fma(vec4<f32>(a1.z), b1, acc61);
            acc70 = fma(vec4<f32>(a1.w), b0, acc70);
            acc71 = fma(vec4<f32>(a1.w), b1, acc71);
        }
        if (more) {
            store_stage(1u - cur, t, a_kc, b_kc, ra, rb);
        }
        workgroupBarrier();
    }

    let r0 = m0 + 4u * ty;
    let r1 = m0 + 64u + 4u * ty;
    let c0 = n0 + 4u * tx;
    let c1 = n0 + 64u + 4u * tx;
    store4(c_base, r0, c0, acc00);
    store4(c_base, r0, c1, acc01);
    store4(c_base, r0 + 1u, c0, acc10);
    store4(c_base, r0 + 1u, c1, acc11);
    store4(c_base, r0 + 2u, c0, acc20);
    store4(c_base, r0 + 2u, c1, acc21);
    store4(c_base, r0 + 3u, c0, acc30);
    store4(c_base, r0 + 3u, c1, acc31);
    store4(c_base, r1, c0, acc40);
    store4(c_base, r1, c1, acc41);
    store4(c_base, r1 + 1u, c0, acc50);
    store4(c_base, r1 + 1u, c1, acc51);
    store4(c_base, r1 + 2u, c0, acc60);
    store4(c_base, r1 + 2u, c1, acc61);
    store4(c_base, r1 + 3u, c0, acc70);
    store4(c_base, r1 + 3u, c1, acc71);
}

// The element index of thread t's load l of the A (B) tile at K step 0, for interior tiles.
fn a_at(a_base: u32, m0: u32, t: u32, l: u32, kc: bool) -> u32 {
    let at = slot(t, l, kc);
    return a_base + (m0 + at.x) * p.a_stride_m + at.y * p.a_stride_k;
}

fn b_at(b_base: u32, n0: u32, t: u32, l: u32, kc: bool) -> u32 {
    let at = slot(t, l, kc);
    return b_base + at.y * p.b_stride_k + (n0 + at.x) * p.b_stride_n;
}

// Thread t's four values of the A tile at rows m0.., k k0.. (zero past the edges).
fn load_a(a_base: u32, m0: u32, k0: u32, t: u32, kc: bool) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var l = 0u; l < 4u; l++) {
        let at = slot(t, l, kc);
        let gm = m0 + at.x;
        let gk = k0 + at.y;
        if (gm < p.m && gk < p.k) {
            v[l] = a[a_base + gm * p.a_stride_m + gk * p.a_stride_k];
        }
    }
    return v;
}

// Thread t's four values of the B tile at columns n0.., k k0.. (zero past the edges).
fn load_b(b_base: u32, n0: u32, k0: u32, t: u32, kc: bool) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    for (var l = 0u; l < 4u; l++) {
        let at = slot(t, l, kc);
        let gn = n0 + at.x;
        let gk = k0 + at.y;
        if (gn < p.n && gk < p.k) {
            v[l] = b[b_base + gk * p.b_stride_k + gn * p.b_stride_n];
        }
    }
    return v;
}

// Stores loaded values into stage `s` of both tiles.
fn store_stage(s: u32, t: u32, a_kc: bool, b_kc: bool, ra: vec4<f32>, rb: vec4<f32>) {
    for (var l = 0u; l < 4u; l++) {
        let at = slot(t, l, a_kc);
        put_a(s, at.x, at.y, ra[l]);
        let bt = slot(t, l, b_kc);
        put_b(s, bt.x, bt.y, rb[l]);
    }
}

// Writes the four columns gn..gn + 3 of row gm that fall inside C.
fn store4(c_base: u32, gm: u32, gn: u32, v: vec4<f32>) {
    if (gm >= p.m) {
        return;
    }
    let r = c_base + gm * p.n;
    for (var j = 0u; j < 4u; j++) {
        let col = gn + j;
        if (col < p.n) {
            c[r + col] = epilogue(v[j], col);
        }
    }
}
