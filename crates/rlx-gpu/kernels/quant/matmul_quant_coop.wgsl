enable f16;
enable wgpu_cooperative_matrix;

// Dequantizing matmul on cooperative matrices (tensor cores) for many rows of x (prefill):
// out [M, N] = x [M, K] · dequant(w)ᵀ with f16 operands and f32 accumulation (Precision::Mixed
// or F16; quant_common.wgsl and one decoder file are appended). Needs f16 16×16×16 cooperative
// matrices and subgroups of 32 (checked before a device is given this kernel).
//
// - Tiling: 2×2 subgroups own a 64×64 block of out; subgroup (sr, sc) owns rows sr·32.. and
//   columns sc·32.. as 2×2 accumulators of 16×16 f32. K advances in steps of BK = 32 (K is
//   whole 32-element blocks: no K tail).
// - Per step, x's 64×32 slice is loaded as vec4 and rounded to f16 into a_sh, row-major
//   [row][KP]; the 64 weight rows' 32 elements are decoded (two pieces of 8 per invocation)
//   and rounded into b_sh, also [row][KP] (k contiguous). Cooperative matrices are column-major:
//   A fragments are read with coopLoadT (row-major x), B fragments, whose element (k, n) sits
//   at n·KP + k, with plain coopLoad. KP = 40 halves pads rows to different banks.
// - Epilogue: each accumulator goes through the subgroup's own 16×16 block of shared memory
//   (coopStoreT) and its 32 invocations write 8 values each, skipping rows past M and columns
//   past N (whose tile rows were zero-filled).

const BM: u32 = 64u;
const BK: u32 = 32u;
const KP: u32 = 40u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// p: QuantParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

var<workgroup> a_sh: array<vec4<f16>, 640>; // [BM][KP] halves
var<workgroup> b_sh: array<vec4<f16>, 640>; // [BM][KP] halves
var<workgroup> c_sh: array<f32, 1024>; // [4 subgroups][16 * 16]

struct Acc {
    c00: coop_mat16x16<f32, C>,
    c01: coop_mat16x16<f32, C>,
    c10: coop_mat16x16<f32, C>,
    c11: coop_mat16x16<f32, C>,
}

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let m0 = wid.y * BM;
    let n0 = wid.x * BM;
    let sg = t / 32u;
    let lane = t % 32u;
    let sm = (sg / 2u) * 32u;
    let sn = (sg % 2u) * 32u;
    let k4 = p.k / 4u;
    var acc = Acc();
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        for (var l = 0u; l < 4u; l++) {
            let idx = t + 128u * l;
            let r = idx / 8u;
            let c4 = idx % 8u;
            var v = vec4<f32>(0.0);
            if (m0 + r < p.m) {
                v = x[(m0 + r) * k4 + k0 / 4u + c4];
            }
            a_sh[r * (KP / 4u) + c4] = vec4<f16>(v);
        }
        for (var l = 0u; l < 2u; l++) {
            let idx = t + 128u * l;
            let r = idx / 4u;
            let q = idx % 4u;
            var piece = Piece(vec4<f32>(0.0), vec4<f32>(0.0));
            if (n0 + r < p.n) {
                piece = decode8((n0 + r) * p.row_bytes, k0 / 8u + q);
            }
            b_sh[r * (KP / 4u) + 2u * q] = vec4<f16>(piece.lo);
            b_sh[r * (KP / 4u) + 2u * q + 1u] = vec4<f16>(piece.hi);
        }
        workgroupBarrier();
        products(sm, sn, &acc);
        workgroupBarrier();
    }
    write_block(acc.c00, sg, lane, m0 + sm, n0 + sn);
    write_block(acc.c01, sg, lane, m0 + sm, n0 + sn + 16u);
    write_block(acc.c10, sg, lane, m0 + sm + 16u, n0 + sn);
    write_block(acc.c11, sg, lane, m0 + sm + 16u, n0 + sn + 16u);
}

// The products of one K step from shared memory into the subgroup's accumulators.
fn products(sm: u32, sn: u32, acc: ptr<function, Acc>) {
    for (var kk = 0u; kk < BK; kk += 16u) {
        let a0 = load_a(sm, kk);
        let a1 = load_a(sm + 16u, kk);
        let b0 = load_b(sn, kk);
        let b1 = load_b(sn + 16u, kk);
        (*acc).c00 = coopMultiplyAdd(a0, b0, (*acc).c00);
        (*acc).c01 = coopMultiplyAdd(a0, b1, (*acc).c01);
        (*acc).c10 = coopMultiplyAdd(a1, b0, (*acc).c10);
        (*acc).c11 = coopMultiplyAdd(a1, b1, (*acc).c11);
    }
}

// The A fragment of tile rows r.., k kk.. (row-major in a_sh).
fn load_a(r: u32, kk: u32) -> coop_mat16x16<f16, A> {
    let i = (r * KP + kk) / 4u;
    let stride = KP / 4u;
    return coopLoadT<coop_mat16x16<f16, A>>(&a_sh[i], stride);
}

// The B fragment of k kk.., tile columns c.. (column-major in b_sh: weight rows are k-contiguous).
fn load_b(c: u32, kk: u32) -> coop_mat16x16<f16, B> {
    let i = (c * KP + kk) / 4u;
    let stride = KP / 4u;
    return coopLoad<coop_mat16x16<f16, B>>(&b_sh[i], stride);
}

// Writes one 16×16 accumulator whose top-left element is out[row0, col0] through the
// subgroup's block of shared memory.
fn write_block(acc: coop_mat16x16<f32, C>, sg: u32, lane: u32, row0: u32, col0: u32) {
    let blk = sg * 256u;
    let stride = 16u;
    coopStoreT(acc, &c_sh[blk], stride);
    workgroupBarrier();
    let col = col0 + lane % 16u;
    for (var i = 0u; i < 8u; i++) {
        let r = i * 2u + lane / 16u;
        let row = row0 + r;
        if (row < p.m && col < p.n) {
            out[row * p.n + col] = c_sh[blk + r * 16u + lane % 16u];
        }
    }
    workgroupBarrier();
}
