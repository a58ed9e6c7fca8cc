// Dequantizing matrix-vector product for one row of x (a decode step): out [1, N] =
// x [1, K] · dequant(w)ᵀ, w U8 [N, row_bytes] of quantized blocks. quant_common.wgsl, the
// type's decoder, quant_dot_common.wgsl and its piece dot (quant_dot_<type>.wgsl, or
// quant_dot_generic.wgsl) are appended; the dot file defines `piece_dot(row, pc, xa, xb, sx)`:
// the dot product of weights 8·pc .. 8·pc + 8 of the row at byte `row` with x's elements there
// (xa, xb; sx is their sum, for formats with a per-block minimum).
//
// Why a kernel of its own (matmul_quant_vec.wgsl takes M > 1): decoding, not memory, bounds a
// mat-vec on quantized weights (docs/perf.md "Where the quantized mat-vec's time goes"), and an
// f32 x costs four bytes of cache traffic per weight when each weight row reads it alone. Here
// every invocation takes the same piece of all COLS weight rows, so x is read once for the
// four; consecutive invocations take consecutive pieces, so each load instruction of a warp
// reads one run of bytes; and the piece dots read whole words and turn integers into floats
// through the exponent field (quant_dot_common.wgsl), never with int → float conversions.
//
// Workgroup: TPB invocations over COLS = 4 weight rows (output columns); invocation t takes
// runs t, t + TPB, … of PER consecutive pieces of each. The dot file sets PER (K is whole
// blocks, so a multiple of 32 and of 8 · PER): 2 for the formats with their own dot, whose
// run shares its block's scales, which the compiler then loads and unpacks once (Q4_K 59 →
// 53 µs at 1×14336×4096 on an H100, the others within a microsecond), 1 over the generic
// decoder (2 left half the invocations idle at K = 2048: NVFP4 31 → 40 µs). The COLS × TPB
// partial sums add up in shared memory in a fixed order, so the result does not depend on
// timing. Grid: x, y over ⌈N / COLS⌉ (linear); z is 1.

const COLS: u32 = 4u;
const TPB: u32 = 256u;
// Partial sums per column after the first fold (TPB / 4).
const FOLD: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// p: QuantParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

var<workgroup> red: array<f32, 1024>; // [COLS][TPB]

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let col0 = (wid.y * groups.x + wid.x) * COLS;
    if (col0 >= p.n) {
        return;
    }
    // Rows past N (the last workgroup's) read row N − 1 again; their sums are not stored.
    let last = p.n - 1u;
    let r0 = col0 * p.row_bytes;
    let r1 = min(col0 + 1u, last) * p.row_bytes;
    let r2 = min(col0 + 2u, last) * p.row_bytes;
    let r3 = min(col0 + 3u, last) * p.row_bytes;
    let runs = p.k / (8u * PER);
    var acc = vec4<f32>(0.0);
    for (var g = t; g < runs; g += TPB) {
        for (var e = 0u; e < PER; e++) {
            let pc = g * PER + e;
            let xa = x[2u * pc];
            let xb = x[2u * pc + 1u];
            let sx = lane_sum(xa + xb);
            acc += vec4<f32>(
                piece_dot(r0, pc, xa, xb, sx),
                piece_dot(r1, pc, xa, xb, sx),
                piece_dot(r2, pc, xa, xb, sx),
                piece_dot(r3, pc, xa, xb, sx),
            );
        }
    }
    red[t] = acc.x;
    red[TPB + t] = acc.y;
    red[2u * TPB + t] = acc.z;
    red[3u * TPB + t] = acc.w;
    workgroupBarrier();
    // Fold each column's TPB sums to FOLD: invocation t takes column t / FOLD.
    let c = t / FOLD;
    let i = t % FOLD;
    var s = 0.0;
    if (c < COLS) {
        for (var q = i; q < TPB; q += FOLD) {
            s += red[c * TPB + q];
        }
    }
    workgroupBarrier();
    red[t] = s;
    workgroupBarrier();
    for (var h = FOLD / 2u; h > 0u; h = h / 2u) {
        if (i < h) {
            red[t] += red[t + h];
        }
        workgroupBarrier();
    }
    if (c < COLS && i == 0u && col0 + c < p.n) {
        out[col0 + c] = red[t];
    }
}
