// Split-K, second step: C = epilogue(Σ_s parts[s]) for the `splits` partial products a matmul
// with few output tiles wrote (one per slice of K, through the batch levels of the matmul
// kernels), then the same bias and activation as the fused epilogues (matmul_epilogue.wgsl is
// appended). The partial sums are added in order s = 0, 1, ...
//
// Variant defines: the epilogue's ACT and HAS_BIAS, BIAS_DECL / BIAS_AT (binding 1), C_BINDING.
// Bindings: 0 = parts [splits][M·N] (read), [1 = bias [N] (read)],
// then c (read_write). A 1-D launch over M·N (grid::linear: x then y).

// p: SplitKParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> parts: array<f32>;
{{BIAS_DECL}}
@group(0) @binding({{C_BINDING}}) var<storage, read_write> c: array<f32>;

fn bias_at(col: u32) -> f32 {
    {{BIAS_AT}}
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let i = (wid.y * groups.x + wid.x) * 256u + t;
    if (i >= p.mn) {
        return;
    }
    var acc = 0.0;
    for (var s = 0u; s < p.splits; s++) {
        acc += parts[s * p.mn + i];
    }
    c[p.c_offset + i] = epilogue(acc, i % p.n);
}
