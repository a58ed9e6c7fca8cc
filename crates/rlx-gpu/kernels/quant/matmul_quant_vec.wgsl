// Dequantizing matrix-vector product for few rows of x (decode steps): out [M, N] =
// x [M, K] · dequant(w)ᵀ, w U8 [N, row_bytes] of quantized blocks (quant_common.wgsl and one
// decoder file are appended). Memory bound: every weight byte is read once, decoded in
// registers and used for up to MMAX rows of x.
//
// Workgroup: 256 invocations over COLS = 4 weight rows (output columns). Invocation t decodes
// pieces t, t + 256, … (8 weights each) of all four weight rows: each piece of x is loaded once
// into registers and used by the four rows (reading x per weight row cost more L1 traffic than
// the weights themselves for 4-bit types), consecutive invocations read consecutive bytes of
// each row, and two pieces per row are decoded before any is used, so eight independent weight
// loads are in flight per invocation. One row of x (decode) takes a path with four
// accumulators; more rows go through the general loop. Each row of x is then reduced over the
// 256 invocations in a fixed two-level order (16 sums of 16, then one of 16), so the result does
// not depend on timing. Grid: x, y over ⌈N / COLS⌉ (linear), z over ⌈M / MMAX⌉ row chunks.

const COLS: u32 = 4u;
const WG: u32 = 256u;
const MMAX: u32 = 8u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// p: QuantParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

var<workgroup> red: array<f32, 1024>; // [COLS][WG] partial sums of one row of x
var<workgroup> red16: array<f32, 64>; // [COLS][16]

// x · piece for the piece `pc` of row `xr` (in vec4 units) of x.
fn dot_piece(v: Piece, xr: u32, pc: u32) -> f32 {
    return dot(v.lo, x[xr + 2u * pc]) + dot(v.hi, x[xr + 2u * pc + 1u]);
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let col0 = (wid.y * groups.x + wid.x) * COLS;
    let row0 = wid.z * MMAX;
    let rows = min(MMAX, p.m - row0);
    let k4 = p.k / 4u;
    let pieces = p.k / 8u;
    // Weight rows past N are clamped to the last one (read, never stored): the loops stay
    // uniform and no branch splits the workgroup.
    var rb: array<u32, COLS>;
    for (var c = 0u; c < COLS; c++) {
        rb[c] = min(col0 + c, p.n - 1u) * p.row_bytes;
    }
    var acc: array<array<f32, COLS>, MMAX>;
    for (var m = 0u; m < MMAX; m++) {
        for (var c = 0u; c < COLS; c++) {
            acc[m][c] = 0.0;
        }
    }
    if (rows == 1u) {
        let xr = row0 * k4;
        var s0 = 0.0;
        var s1 = 0.0;
        var s2 = 0.0;
        var s3 = 0.0;
        var pc = t;
        for (; pc + WG < pieces; pc += 2u * WG) {
            let a0 = decode8(rb[0], pc);
            let a1 = decode8(rb[1], pc);
            let a2 = decode8(rb[2], pc);
            let a3 = decode8(rb[3], pc);
            let b0 = decode8(rb[0], pc + WG);
            let b1 = decode8(rb[1], pc + WG);
            let b2 = decode8(rb[2], pc + WG);
            let b3 = decode8(rb[3], pc + WG);
            let xa0 = x[xr + 2u * pc];
            let xa1 = x[xr + 2u * pc + 1u];
            let xb0 = x[xr + 2u * (pc + WG)];
            let xb1 = x[xr + 2u * (pc + WG) + 1u];
            s0 += dot(a0.lo, xa0) + dot(a0.hi, xa1) + dot(b0.lo, xb0) + dot(b0.hi, xb1);
            s1 += dot(a1.lo, xa0) + dot(a1.hi, xa1) + dot(b1.lo, xb0) + dot(b1.hi, xb1);
            s2 += dot(a2.lo, xa0) + dot(a2.hi, xa1) + dot(b2.lo, xb0) + dot(b2.hi, xb1);
            s3 += dot(a3.lo, xa0) + dot(a3.hi, xa1) + dot(b3.lo, xb0) + dot(b3.hi, xb1);
        }
        if (pc < pieces) {
            s0 += dot_piece(decode8(rb[0], pc), xr, pc);
            s1 += dot_piece(decode8(rb[1], pc), xr, pc);
            s2 += dot_piece(decode8(rb[2], pc), xr, pc);
            s3 += dot_piece(decode8(rb[3], pc), xr, pc);
        }
        acc[0][0] = s0;
        acc[0][1] = s1;
        acc[0][2] = s2;
        acc[0][3] = s3;
    } else {
        for (var pc = t; pc < pieces; pc += WG) {
            var v: array<Piece, COLS>;
            for (var c = 0u; c < COLS; c++) {
                v[c] = decode8(rb[c], pc);
            }
            for (var m = 0u; m < MMAX; m++) {
                if (m < rows) {
                    let xi = (row0 + m) * k4 + 2u * pc;
                    let x0 = x[xi];
                    let x1 = x[xi + 1u];
                    for (var c = 0u; c < COLS; c++) {
                        acc[m][c] += dot(v[c].lo, x0) + dot(v[c].hi, x1);
                    }
                }
            }
        }
    }
    // One row of x at a time: [COLS][WG] partials → [COLS][16] → COLS sums.
    for (var m = 0u; m < MMAX; m++) {
        if (m < rows) {
            for (var c = 0u; c < COLS; c++) {
                red[c * WG + t] = acc[m][c];
            }
            workgroupBarrier();
            if (t < COLS * 16u) {
                let base = (t / 16u) * WG + (t % 16u) * 16u;
                var s = 0.0;
                for (var i = 0u; i < 16u; i++) {
                    s += red[base + i];
                }
                red16[t] = s;
            }
            workgroupBarrier();
            if (t < COLS && col0 + t < p.n) {
                var s = 0.0;
                for (var i = 0u; i < 16u; i++) {
                    s += red16[t * 16u + i];
                }
                out[(row0 + m) * p.n + col0 + t] = s;
            }
            workgroupBarrier();
        }
    }
}
