enable f16;
enable wgpu_cooperative_matrix;

// Batched matmul C = A·B on cooperative matrices (tensor cores): the "Coop" rungs of the matmul
// ladder. A and B are f32 in memory (B may be f16: see b_vec) and rounded to f16 on their way
// into shared memory; the products accumulate in f32 (Precision::Mixed). Same bindings, params, epilogues and batch
// handling as matmul_tiled.wgsl (matmul_common.wgsl is appended).
//
// Needs f16 16×16×16 cooperative matrices with f32 accumulation and a subgroup of 32
// invocations (checked by MatmulRung::available before a device is given this kernel).
//
// - Tiling: a workgroup of SG_ROWS × SG_COLS subgroups owns a BM×BN block of C and walks K in
//   steps of BK = 32. Subgroup (sr, sc) owns rows sr·32.. (two 16-row fragments) and columns
//   sc·SUB_N.. (FN 16-column fragments): 2·FN accumulators of 16×16 f32.
// - Shared memory: two stages (double buffering) of an A tile and a B tile as f16. Each tile is
//   stored in the layout that keeps the global loads coalesced: A "m-major" [BM][KP] (row i,
//   k contiguous) when A's K stride is 1, else "k-major" [BK][MP]; B "k-major" [BK][NP] when
//   its N stride is 1, else "n-major" [BN][KP] (a transposed B, as every `linear` has). The
//   fragments are loaded with coopLoadT (row-major) from m-major A and k-major B, and with
//   coopLoad (column-major) from the other two. Pitches are padded by 8 halves (16 bytes) so
//   that fragment rows start 16-byte aligned in different banks. The tiles are arrays of
//   vec4<f16>, so a run of four halves is one 8-byte store and fragment loads see 8-byte
//   elements (strides count vec4s): 4096³ went from 1.33 to 0.99 ms on the H200 with it.
// - Global loads: each invocation loads 4 runs of four elements per tile and K step, along the
//   operand's contiguous dim, as one 16-byte load when the run is contiguous and aligned (the
//   operands are bound as vec4 arrays; bindings come in whole 16-byte units) and as four
//   scalar loads otherwise. The same positions serve both paths, so the shared stores do not
//   depend on which ran. The next K step's values are loaded into registers before the current
//   step is computed and stored into the other stage after it: one barrier per step.
// - Epilogue: each accumulator is stored (coopStoreT) into the subgroup's own 16×16 f32 block
//   of shared memory, then its 32 invocations apply bias and activation to 8 values each and
//   write them to C, skipping what falls outside.
// - Past the edges of A and B the tiles are zero-filled, so any M, N, K is correct.

const BM: u32 = {{TILE}}u;
const BN: u32 = {{TILE}}u;
const BK: u32 = 32u;
const SG_ROWS: u32 = {{SG_ROWS}}u;
const SG_COLS: u32 = {{SG_COLS}}u;
const THREADS: u32 = {{THREADS}}u; // SG_ROWS * SG_COLS * 32
// Columns of C one subgroup owns, and its 16-column fragments (2 or 4).
const SUB_N: u32 = BN / SG_COLS;
const FN: u32 = SUB_N / 16u;
// Pitches in halves: k-contiguous rows (BK + 8) and m/n-contiguous rows (BM/BN + 8).
const KP: u32 = 40u;
const MP: u32 = BM + 8u;
const NP: u32 = BN + 8u;
// Halves in one stage of one tile: the larger of its two layouts.
const STAGE: u32 = {{STAGE}}u;

// The epilogue constants, MatmulParams, the bindings and epilogue() are in matmul_common.wgsl
// (or, for one launch writing several outputs, matmul_coop_split.wgsl): B is read through
// b_elem, C written through put_c, and the workgroup's column tile and N come from tile_n and
// cols_n.

// As vec4<f16> (8 bytes): a run of four halves is stored with one instruction, and fragment
// rows start 8-byte aligned. Offsets below are in halves; /4 gives the element.
var<workgroup> a_sh: array<vec4<f16>, {{STAGES2}} / 4>; // [2][STAGE]
var<workgroup> b_sh: array<vec4<f16>, {{STAGES2}} / 4>; // [2][STAGE]
var<workgroup> c_sh: array<f32, {{C_SHARED}}>; // [subgroups][16 * 16]

// Where vec4 number l (< 4) of invocation t goes in a tile whose other side is `side`: the
// (row or column, k) of its first element. Its four elements run along k when `kc` (8
// invocations cover one row's 32 k: 128 contiguous bytes), else along the rows or columns (32
// invocations cover 128 of one k).
fn place(t: u32, l: u32, kc: bool, side: u32) -> vec2<u32> {
    if (kc) {
        return vec2<u32>(t / 8u + (THREADS / 8u) * l, 4u * (t % 8u));
    }
    let q = side / 4u;
    return vec2<u32>(4u * (t % q), t / q + (THREADS / q) * l);
}

// Elements e.. e + 3 lie inside `limit` (component-wise).
fn inside(e: u32, limit: u32) -> vec4<bool> {
    return (vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u)) < vec4<u32>(limit);
}

// Offset in a stage of element j of a vec4 placed at `pos`: rc-major [rc][KP] when k runs
// along the vec4, else k-major [k][pitch].
fn at(pos: vec2<u32>, j: u32, kc: bool, pitch: u32) -> u32 {
    if (kc) {
        return pos.x * KP + pos.y + j;
    }
    return pos.y * pitch + pos.x + j;
}

@compute @workgroup_size({{THREADS}}, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    // First: with several outputs (matmul_coop_split.wgsl) this picks the part and its params.
    let n0 = tile_n(wid.x) * BN;
    let bases = batch_bases(wid.z);
    let a_base = bases.x;
    let b_base = bases.y;
    let c_base = bases.z;
    let m0 = wid.y * BM;
    let sg = t / 32u;
    let lane = t % 32u;
    let sm = (sg / SG_COLS) * 32u;
    let sn = (sg % SG_COLS) * SUB_N;
    // 16-byte loads where each run of four is contiguous and starts 16-byte aligned: unit
    // stride along the run, the other stride and the batch base multiples of 4.
    let a_run_unit = select(p.a_stride_m == 1u, true, p.a_stride_k == 1u);
    let a_other = select(p.a_stride_k, p.a_stride_m, p.a_stride_k == 1u);
    let vec_a = a_run_unit && a_other % 4u == 0u && a_base % 4u == 0u;
    let b_run_unit = select(p.b_stride_n == 1u, true, p.b_stride_k == 1u);
    let b_other = select(p.b_stride_k, p.b_stride_n, p.b_stride_k == 1u);
    let vec_b = b_run_unit && b_other % 4u == 0u && b_base % 4u == 0u;

    var acc = Acc();

    // The next K step's tiles in registers: four vec4 of A and four of B. Named values, not
    // arrays: a function-local array indexed in a loop can end up in local memory.
    var ra0 = vec4<f32>(0.0);
    var ra1 = vec4<f32>(0.0);
    var ra2 = vec4<f32>(0.0);
    var ra3 = vec4<f32>(0.0);
    var rb0 = vec4<f32>(0.0);
    var rb1 = vec4<f32>(0.0);
    var rb2 = vec4<f32>(0.0);
    var rb3 = vec4<f32>(0.0);
    var qa0 = vec4<f32>(0.0);
    var qa1 = vec4<f32>(0.0);
    var qa2 = vec4<f32>(0.0);
    var qa3 = vec4<f32>(0.0);
    var qb0 = vec4<f32>(0.0);
    var qb1 = vec4<f32>(0.0);
    var qb2 = vec4<f32>(0.0);
    var qb3 = vec4<f32>(0.0);

    // Interior workgroups (the whole tile inside M and N, 16-byte loads on both operands)
    // load every full K step branch-free from per-invocation vec4 indices that advance by one
    // K step's stride: on the H200 this ran 3.5× faster than the bounds-checked loads, whose
    // branches around each load kept it from overlapping the loads with the products. Edge
    // workgroups and the last, partial K step take the checked path.
    let interior = vec_a && vec_b && m0 + BM <= p.m && n0 + BN <= cols_n();
    let full_steps = p.k / BK;
    let a_step = BK * p.a_stride_k / 4u;
    let b_step = BK * p.b_stride_k / 4u;
    let ia0 = a_index(a_base, m0, t, 0u);
    let ia1 = a_index(a_base, m0, t, 1u);
    let ia2 = a_index(a_base, m0, t, 2u);
    let ia3 = a_index(a_base, m0, t, 3u);
    let ib0 = b_index(b_base, n0, t, 0u);
    let ib1 = b_index(b_base, n0, t, 1u);
    let ib2 = b_index(b_base, n0, t, 2u);
    let ib3 = b_index(b_base, n0, t, 3u);

    let steps = (p.k + BK - 1u) / BK;
    // Two K steps in flight: step s computes from shared stage s % 2 while step s + 1 waits
    // in one register set and step s + 2 loads into the other (R for even steps, Q for odd
    // ones). The loop runs two steps per turn so that each set keeps its own names.
    if (steps > 0u) {
        if (interior && 0u < full_steps) {
            let ka = 0u * a_step;
            let kb = 0u * b_step;
            ra0 = a[ia0 + ka];
            ra1 = a[ia1 + ka];
            ra2 = a[ia2 + ka];
            ra3 = a[ia3 + ka];
            rb0 = b_vec(ib0 + kb);
            rb1 = b_vec(ib1 + kb);
            rb2 = b_vec(ib2 + kb);
            rb3 = b_vec(ib3 + kb);
        } else {
            let k1 = 0u * BK;
            ra0 = fetch_a(a_base, m0, k1, t, 0u, vec_a);
            ra1 = fetch_a(a_base, m0, k1, t, 1u, vec_a);
            ra2 = fetch_a(a_base, m0, k1, t, 2u, vec_a);
            ra3 = fetch_a(a_base, m0, k1, t, 3u, vec_a);
            rb0 = fetch_b(b_base, n0, k1, t, 0u, vec_b);
            rb1 = fetch_b(b_base, n0, k1, t, 1u, vec_b);
            rb2 = fetch_b(b_base, n0, k1, t, 2u, vec_b);
            rb3 = fetch_b(b_base, n0, k1, t, 3u, vec_b);
        }
        store_a(0u, t, ra0, ra1, ra2, ra3);
        store_b(0u, t, rb0, rb1, rb2, rb3);
    }
    if (steps > 1u) {
        if (interior && 1u < full_steps) {
            let ka = 1u * a_step;
            let kb = 1u * b_step;
            qa0 = a[ia0 + ka];
            qa1 = a[ia1 + ka];
            qa2 = a[ia2 + ka];
            qa3 = a[ia3 + ka];
            qb0 = b_vec(ib0 + kb);
            qb1 = b_vec(ib1 + kb);
            qb2 = b_vec(ib2 + kb);
            qb3 = b_vec(ib3 + kb);
        } else {
            let k1 = 1u * BK;
            qa0 = fetch_a(a_base, m0, k1, t, 0u, vec_a);
            qa1 = fetch_a(a_base, m0, k1, t, 1u, vec_a);
            qa2 = fetch_a(a_base, m0, k1, t, 2u, vec_a);
            qa3 = fetch_a(a_base, m0, k1, t, 3u, vec_a);
            qb0 = fetch_b(b_base, n0, k1, t, 0u, vec_b);
            qb1 = fetch_b(b_base, n0, k1, t, 1u, vec_b);
            qb2 = fetch_b(b_base, n0, k1, t, 2u, vec_b);
            qb3 = fetch_b(b_base, n0, k1, t, 3u, vec_b);
        }
    }
    workgroupBarrier();

    // The loads are written out inline, once per register set: the same loop with a load
    // function returning a struct of registers ran 1.5× slower on the H200 (0.91 → 1.40 ms at
    // 4096³), while the products behind a function with the accumulators behind a pointer
    // cost nothing (0.913 ms).
    // Pairs of steps: the products run unconditionally inside the loop (cooperative operations
    // need control flow naga can prove uniform, which a branch on the loop variable is not);
    // an odd last step follows the loop.
    let pairs = steps / 2u;
    for (var q = 0u; q < pairs; q++) {
        let s = 2u * q;
        if (s + 2u < steps) {
            if (interior && (s + 2u) < full_steps) {
                let ka = (s + 2u) * a_step;
                let kb = (s + 2u) * b_step;
                ra0 = a[ia0 + ka];
                ra1 = a[ia1 + ka];
                ra2 = a[ia2 + ka];
                ra3 = a[ia3 + ka];
                rb0 = b_vec(ib0 + kb);
                rb1 = b_vec(ib1 + kb);
                rb2 = b_vec(ib2 + kb);
                rb3 = b_vec(ib3 + kb);
            } else {
                let k1 = (s + 2u) * BK;
                ra0 = fetch_a(a_base, m0, k1, t, 0u, vec_a);
                ra1 = fetch_a(a_base, m0, k1, t, 1u, vec_a);
                ra2 = fetch_a(a_base, m0, k1, t, 2u, vec_a);
                ra3 = fetch_a(a_base, m0, k1, t, 3u, vec_a);
                rb0 = fetch_b(b_base, n0, k1, t, 0u, vec_b);
                rb1 = fetch_b(b_base, n0, k1, t, 1u, vec_b);
                rb2 = fetch_b(b_base, n0, k1, t, 2u, vec_b);
                rb3 = fetch_b(b_base, n0, k1, t, 3u, vec_b);
            }
        }
        products(0u, sm, sn, &acc);
        store_a(1u, t, qa0, qa1, qa2, qa3);
        store_b(1u, t, qb0, qb1, qb2, qb3);
        workgroupBarrier();
        if (s + 3u < steps) {
            if (interior && (s + 3u) < full_steps) {
                let ka = (s + 3u) * a_step;
                let kb = (s + 3u) * b_step;
                qa0 = a[ia0 + ka];
                qa1 = a[ia1 + ka];
                qa2 = a[ia2 + ka];
                qa3 = a[ia3 + ka];
                qb0 = b_vec(ib0 + kb);
                qb1 = b_vec(ib1 + kb);
                qb2 = b_vec(ib2 + kb);
                qb3 = b_vec(ib3 + kb);
            } else {
                let k1 = (s + 3u) * BK;
                qa0 = fetch_a(a_base, m0, k1, t, 0u, vec_a);
                qa1 = fetch_a(a_base, m0, k1, t, 1u, vec_a);
                qa2 = fetch_a(a_base, m0, k1, t, 2u, vec_a);
                qa3 = fetch_a(a_base, m0, k1, t, 3u, vec_a);
                qb0 = fetch_b(b_base, n0, k1, t, 0u, vec_b);
                qb1 = fetch_b(b_base, n0, k1, t, 1u, vec_b);
                qb2 = fetch_b(b_base, n0, k1, t, 2u, vec_b);
                qb3 = fetch_b(b_base, n0, k1, t, 3u, vec_b);
            }
        }
        products(1u, sm, sn, &acc);
        if (s + 2u < steps) {
            store_a(0u, t, ra0, ra1, ra2, ra3);
            store_b(0u, t, rb0, rb1, rb2, rb3);
        }
        workgroupBarrier();
    }
    if (steps % 2u == 1u) {
        products(0u, sm, sn, &acc);
    }

    let rows0 = m0 + sm;
    let rows1 = m0 + sm + 16u;
    let cols = n0 + sn;
    write_block(acc.c00, sg, lane, c_base, rows0, cols);
    write_block(acc.c01, sg, lane, c_base, rows0, cols + 16u);
    write_block(acc.c10, sg, lane, c_base, rows1, cols);
    write_block(acc.c11, sg, lane, c_base, rows1, cols + 16u);
    if (FN == 4u) {
        write_block(acc.c02, sg, lane, c_base, rows0, cols + 32u);
        write_block(acc.c03, sg, lane, c_base, rows0, cols + 48u);
        write_block(acc.c12, sg, lane, c_base, rows1, cols + 32u);
        write_block(acc.c13, sg, lane, c_base, rows1, cols + 48u);
    }
}

// The 2×FN accumulators of one subgroup (rows 0-15 and 16-31 of its block, 16-column
// fragments 0..FN-1; c02, c03, c12 and c13 only when FN is 4).
struct Acc {
    c00: coop_mat16x16<f32, C>,
    c01: coop_mat16x16<f32, C>,
    c02: coop_mat16x16<f32, C>,
    c03: coop_mat16x16<f32, C>,
    c10: coop_mat16x16<f32, C>,
    c11: coop_mat16x16<f32, C>,
    c12: coop_mat16x16<f32, C>,
    c13: coop_mat16x16<f32, C>,
}

// The products of one K step from shared stage `stage` into the subgroup's accumulators.
fn products(stage: u32, sm: u32, sn: u32, acc: ptr<function, Acc>) {
    let base = stage * STAGE;
    for (var kk = 0u; kk < BK; kk += 16u) {
        let a0 = load_a(base, sm, kk);
        let a1 = load_a(base, sm + 16u, kk);
        let b0 = load_b(base, sn, kk);
        let b1 = load_b(base, sn + 16u, kk);
        (*acc).c00 = coopMultiplyAdd(a0, b0, (*acc).c00);
        (*acc).c01 = coopMultiplyAdd(a0, b1, (*acc).c01);
        (*acc).c10 = coopMultiplyAdd(a1, b0, (*acc).c10);
        (*acc).c11 = coopMultiplyAdd(a1, b1, (*acc).c11);
        if (FN == 4u) {
            let b2 = load_b(base, sn + 32u, kk);
            let b3 = load_b(base, sn + 48u, kk);
            (*acc).c02 = coopMultiplyAdd(a0, b2, (*acc).c02);
            (*acc).c03 = coopMultiplyAdd(a0, b3, (*acc).c03);
            (*acc).c12 = coopMultiplyAdd(a1, b2, (*acc).c12);
            (*acc).c13 = coopMultiplyAdd(a1, b3, (*acc).c13);
        }
    }
}

// The A fragment of tile rows r.., k kk.. from stage `base`. The layout test reads the params
// again rather than taking a flag: cooperative operations need control flow that naga can see
// is uniform, and it treats function arguments as varying.
fn load_a(base: u32, r: u32, kk: u32) -> coop_mat16x16<f16, A> {
    if (p.a_stride_k == 1u) {
        let i = (base + r * KP + kk) / 4u;
        let stride = KP / 4u;
        return coopLoadT<coop_mat16x16<f16, A>>(&a_sh[i], stride);
    }
    let i = (base + kk * MP + r) / 4u;
    let stride = MP / 4u;
    return coopLoad<coop_mat16x16<f16, A>>(&a_sh[i], stride);
}

// The B fragment of k kk.., tile columns c.. from stage `base`.
fn load_b(base: u32, c: u32, kk: u32) -> coop_mat16x16<f16, B> {
    if (p.b_stride_k == 1u) {
        let i = (base + c * KP + kk) / 4u;
        let stride = KP / 4u;
        return coopLoad<coop_mat16x16<f16, B>>(&b_sh[i], stride);
    }
    let i = (base + kk * NP + c) / 4u;
    let stride = NP / 4u;
    return coopLoadT<coop_mat16x16<f16, B>>(&b_sh[i], stride);
}

// The vec4 index of invocation t's vec4 l of the A (B) tile at K step 0 (16-byte path only).
fn a_index(base: u32, m0: u32, t: u32, l: u32) -> u32 {
    let pos = place(t, l, p.a_stride_k == 1u, BM);
    return (base + (m0 + pos.x) * p.a_stride_m + pos.y * p.a_stride_k) >> 2u;
}

fn b_index(base: u32, n0: u32, t: u32, l: u32) -> u32 {
    let pos = place(t, l, p.b_stride_k == 1u, BN);
    return (base + pos.y * p.b_stride_k + (n0 + pos.x) * p.b_stride_n) >> 2u;
}

// Vec4 l of invocation t of the A tile at rows m0.., k k0.. (zero past the edges). With `vec`
// (the run of four is contiguous and 16-byte aligned, see main) one 16-byte load, else four
// scalar ones.
fn fetch_a(base: u32, m0: u32, k0: u32, t: u32, l: u32, vec: bool) -> vec4<f32> {
    let kc = p.a_stride_k == 1u;
    let pos = place(t, l, kc, BM);
    let gm = m0 + pos.x;
    let gk = k0 + pos.y;
    var v = vec4<f32>(0.0);
    if (gm >= p.m || gk >= p.k) {
        return v;
    }
    let i = base + gm * p.a_stride_m + gk * p.a_stride_k;
    let step = select(p.a_stride_m, 1u, kc);
    let ok = select(inside(gm, p.m), inside(gk, p.k), kc);
    if (vec) {
        v = a[i >> 2u];
    } else {
        // Element j sits j steps further (invalid ones read element 0 again, then masked).
        let e = select(vec4<u32>(i), vec4<u32>(i) + vec4<u32>(0u, 1u, 2u, 3u) * step, ok);
        v = vec4<f32>(a[e.x >> 2u][e.x & 3u], a[e.y >> 2u][e.y & 3u], a[e.z >> 2u][e.z & 3u], a[e.w >> 2u][e.w & 3u]);
    }
    return select(vec4<f32>(0.0), v, ok);
}

// Four elements of B at vec4 index i, as f32: B is bound as vec4<f32>, or as vec4<f16> when
// the weight is stored f16 (a cast f16 → f32 the lowering absorbed: half the bytes, no cast
// launch). Widening f16 to f32 and rounding back to f16 in put_b is exact.
fn b_vec(i: u32) -> vec4<f32> {
    return vec4<f32>(b_elem(i));
}

// Vec4 l of invocation t of the B tile at columns n0.., k k0.., as fetch_a.
fn fetch_b(base: u32, n0: u32, k0: u32, t: u32, l: u32, vec: bool) -> vec4<f32> {
    let kc = p.b_stride_k == 1u;
    let pos = place(t, l, kc, BN);
    let gn = n0 + pos.x;
    let gk = k0 + pos.y;
    var v = vec4<f32>(0.0);
    if (gn >= cols_n() || gk >= p.k) {
        return v;
    }
    let i = base + gk * p.b_stride_k + gn * p.b_stride_n;
    let step = select(p.b_stride_n, 1u, kc);
    let ok = select(inside(gn, cols_n()), inside(gk, p.k), kc);
    if (vec) {
        v = b_vec(i >> 2u);
    } else {
        // Element j sits j steps further (invalid ones read element 0 again, then masked).
        let e = select(vec4<u32>(i), vec4<u32>(i) + vec4<u32>(0u, 1u, 2u, 3u) * step, ok);
        v = vec4<f32>(b_vec(e.x >> 2u)[e.x & 3u], b_vec(e.y >> 2u)[e.y & 3u], b_vec(e.z >> 2u)[e.z & 3u], b_vec(e.w >> 2u)[e.w & 3u]);
    }
    return select(vec4<f32>(0.0), v, ok);
}

// Stores vec4 l of invocation t, rounded to f16, at its place in stage `s` of a tile.
fn put_a(s: u32, t: u32, l: u32, v: vec4<f32>) {
    let kc = p.a_stride_k == 1u;
    let pos = place(t, l, kc, BM);
    let h = vec4<f16>(v);
    let base = s * STAGE;
    a_sh[(base + at(pos, 0u, kc, MP)) / 4u] = h;
}

fn put_b(s: u32, t: u32, l: u32, v: vec4<f32>) {
    let kc = p.b_stride_k == 1u;
    let pos = place(t, l, kc, BN);
    let h = vec4<f16>(v);
    let base = s * STAGE;
    b_sh[(base + at(pos, 0u, kc, NP)) / 4u] = h;
}

// Invocation t's four vec4 of the A (B) tile into stage `s`.
fn store_a(s: u32, t: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>) {
    put_a(s, t, 0u, v0);
    put_a(s, t, 1u, v1);
    put_a(s, t, 2u, v2);
    put_a(s, t, 3u, v3);
}

fn store_b(s: u32, t: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>) {
    put_b(s, t, 0u, v0);
    put_b(s, t, 1u, v1);
    put_b(s, t, 2u, v2);
    put_b(s, t, 3u, v3);
}

// Writes one 16×16 accumulator whose top-left element is C[row0, col0], through the
// subgroup's block of shared memory, with the epilogue applied.
fn write_block(acc: coop_mat16x16<f32, C>, sg: u32, lane: u32, c_base: u32, row0: u32, col0: u32) {
    let blk = sg * 256u;
    let stride = 16u;
    coopStoreT(acc, &c_sh[blk], stride);
    workgroupBarrier();
    let col = col0 + lane % 16u;
    for (var i = 0u; i < 8u; i++) {
        let r = i * 2u + lane / 16u;
        let row = row0 + r;
        if (row < p.m && col < cols_n()) {
            put_c(c_base + row * cols_n() + col, col, c_sh[blk + r * 16u + lane % 16u]);
        }
    }
    workgroupBarrier();
}
