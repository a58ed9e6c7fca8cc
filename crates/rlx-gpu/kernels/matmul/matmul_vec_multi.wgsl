{{ENABLE_F16}}
// Several matrix-vector products that share A, in one launch: the projections a decode step
// takes from one normalized vector (q, k and v; an MLP's gate and up). B_s is stored [N_s, K]
// like every linear layer's weight, contiguous from its binding's start; M ≤ MMAX rows of A.
// The layout, dot products and reduction are matmul_vec_core.wgsl's (appended); the weights
// are read as the single kernel reads them (B_LOAD: f32, or f16 as stored, through b_elem).
//
// Two forms (define GATED):
// - split (GATED false): C_s [M, N_s] = A · B_sᵀ (+ bias_s) for s = 0, 1, 2. Global column g
//   of n0 + n1 + n2 belongs to the first part whose range holds it; a part with N_s = 0 gets
//   no column (its bindings are placeholders). One launch writes Q, K and V.
// - gated (GATED true): C [M, N] = act(A · B_0ᵀ) ⊙ (A · B_1ᵀ) with n0 = n1 = N: a workgroup's
//   cols() columns are output columns h·w .. h·w + h − 1 of B_0, then the same h of B_1
//   (h = cols() / 2), and the first half multiplies in the second after the reduction. One
//   launch replaces gate, up and their product.
//
// The part a column reads is workgroup-uniform for the gated form and changes at most twice
// across the grid for the split one; `part` (private) selects the binding in b4_at / b1_at.
//
// Define PRENORM: A is RMSNorm(x)·γ of the x bound as `a` (γ bound last, eps in the params):
// every workgroup first computes each row's 1/sqrt(Σx²/K + eps) (the RMS-norm kernel's
// formula), reads x·γ in the dot products and scales each sum by the row's factor. The norm
// launches nothing: a decode step's norms were 49 launches of microseconds of work each.

// p: VecMultiParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

const GATED: bool = {{GATED}};
const PRENORM: bool = {{PRENORM}};
{{NORM_DECL}}

// Each row's RMS-norm factor (PRENORM), else 1.
var<workgroup> row_scale: array<f32, MMAX>;

fn a4_at(ar: u32, q: u32) -> vec4<f32> {
    return a[ar + q] * gamma4(q);
}

fn a1_at(ai: u32, k: u32) -> f32 {
    return a[ai >> 2u][ai & 3u] * gamma1(k);
}

// row_scale for every row of A: Σx² over K by all 256 invocations, a tree, then the factor.
fn norm_rows(t: u32) {
    for (var m = 0u; m < MMAX; m++) {
        if (m < p.m) {
            var s = 0.0;
            for (var k = t; k < p.k; k += 256u) {
                let ai = p.a_offset + m * p.a_stride_m + k * p.a_stride_k;
                let v = a[ai >> 2u][ai & 3u];
                s = fma(v, v, s);
            }
            red[t * MMAX + m] = s;
        }
    }
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s / 2u) {
        if (t < s) {
            for (var m = 0u; m < MMAX; m++) {
                if (m < p.m) {
                    red[t * MMAX + m] += red[(t + s) * MMAX + m];
                }
            }
        }
        workgroupBarrier();
    }
    if (t < MMAX) {
        row_scale[t] = 1.0 / sqrt(red[t] / f32(p.k) + p.eps);
    }
    workgroupBarrier();
}

alias BElem = {{B_ELEM}};

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b0: array<BElem>;
@group(0) @binding(2) var<storage, read> b1: array<BElem>;
{{MULTI_DECL}}

var<private> part: u32;

fn b_elem(i: u32) -> BElem {
    {{B_SELECT}}
}

// The gated form's activation is matmul_epilogue.wgsl's `activate` (appended); this kernel
// adds biases itself (`store`), so the epilogue's bias is off (HAS_BIAS false).
fn bias_at(col: u32) -> f32 {
    return 0.0;
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let w = wid.y * groups.x + wid.x;
    let T = col_threads();
    let slot = t / T;
    let j = t % T;
    let half = cols() / 2u;
    var col = 0u;
    var n = 0u;
    if (GATED) {
        part = slot / half;
        col = w * half + slot % half;
        n = p.n0;
    } else {
        let g = w * cols() + slot;
        if (g < p.n0) {
            part = 0u;
            col = g;
            n = p.n0;
        } else if (g < p.n0 + p.n1) {
            part = 1u;
            col = g - p.n0;
            n = p.n1;
        } else {
            part = 2u;
            col = g - p.n0 - p.n1;
            n = p.n2;
        }
    }
    if (PRENORM) {
        norm_rows(t);
    }
    var acc: array<f32, MMAX>;
    if (col < n) {
        acc = row_partials(col * p.k, p.a_offset, j);
    }
    reduce_columns(t, j, acc);
    if (col >= n || j >= p.m) {
        return;
    }
    let scale = select(1.0, row_scale[j], PRENORM);
    let v = red[(t - j) * MMAX + j] * scale;
    let at = j * n + col;
    if (GATED) {
        // The second half of the columns holds B_1's products of the same output columns.
        if (slot < half) {
            c0[at] = activate(v) * (red[(t - j + half * T) * MMAX + j] * scale);
        }
    } else {
        store(part, at, col, v);
    }
}
