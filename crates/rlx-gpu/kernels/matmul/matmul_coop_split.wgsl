// matmul_coop.wgsl writing several outputs in one launch (appended in place of
// matmul_common.wgsl): up to three matmuls of one A [M, K] with weights B_s stored [N_s, K]
// (a linear layer's layout, each contiguous from its binding's start), each to its own
// C_s [M, N_s] with its own bias: the q, k and v projections of a prompt in one launch.
//
// The grid's x runs over the column tiles of every part in turn (tiles0 of part 0, then
// tiles1, then the rest); tile_n, called first in main, picks the workgroup's part and its N
// (cols_n) and returns the tile within it. B reads, C writes and the bias then go to that
// part's bindings: the choice is uniform over the workgroup. The params keep MatmulParams'
// field names (matmul_batch.wgsl reads them), and `p` stays the uniform params variable:
// the cooperative-matrix loads branch on its strides and must stay in uniform control flow
// (a private copy would not be, to naga's uniformity analysis).

// p: CoopSplitParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
// B_ELEM: vec4<f32>, or vec4<f16> for f16 weights (see b_vec in matmul_coop.wgsl).
@group(0) @binding(1) var<storage, read> b0: array<{{B_ELEM}}>;
@group(0) @binding(2) var<storage, read> b1: array<{{B_ELEM}}>;
@group(0) @binding(3) var<storage, read> b2: array<{{B_ELEM}}>;
@group(0) @binding(4) var<storage, read_write> c0: array<f32>;
@group(0) @binding(5) var<storage, read_write> c1: array<f32>;
@group(0) @binding(6) var<storage, read_write> c2: array<f32>;
{{SPLIT_BIAS_DECL}}

var<private> part: u32;
var<private> part_n: u32;

fn tile_n(x: u32) -> u32 {
    if (x < p.tiles0) {
        part = 0u;
        part_n = p.n;
        return x;
    }
    if (x < p.tiles0 + p.tiles1) {
        part = 1u;
        part_n = p.n1;
        return x - p.tiles0;
    }
    part = 2u;
    part_n = p.n2;
    return x - p.tiles0 - p.tiles1;
}

fn cols_n() -> u32 {
    return part_n;
}

fn b_elem(i: u32) -> {{B_ELEM}} {
    if (part == 0u) {
        return b0[i];
    } else if (part == 1u) {
        return b1[i];
    }
    return b2[i];
}

fn put_c(i: u32, col: u32, v: f32) {
    let y = epilogue(v, col);
    if (part == 0u) {
        c0[i] = y;
    } else if (part == 1u) {
        c1[i] = y;
    } else {
        c2[i] = y;
    }
}

fn bias_at(col: u32) -> f32 {
    {{SPLIT_BIAS_AT}}
}
