// What the grouped matmul kernels (matmul_grouped_vec.wgsl, matmul_grouped_tiled.wgsl) share:
// the params, the bindings and the weight loads. Appended to each.
//
// Variant defines: W_ELEM, vec4<f32> (f32 weights) or vec4<f16> (f16 weights read as they are
// stored, widened by the hardware; ENABLE_F16 at the kernel's top turns shader f16 on), and
// B_LOAD, the matrix-vector kernels' b4_at (four weights from one W_ELEM) and b1_at (one weight
// by element index), reading through b_elem.

{{B_LOAD}}

// p: GroupedParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<{{W_ELEM}}>;
@group(0) @binding(2) var<storage, read> ids: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn b_elem(i: u32) -> {{W_ELEM}} {
    return w[i];
}
