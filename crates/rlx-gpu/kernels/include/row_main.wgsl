// The entry point of the row kernels (norm_row.wgsl, softmax_row.wgsl): one workgroup of WG
// threads per row of p.cols contiguous elements, p.rows rows. It runs the kernel's
// `fn row(lid: u32, base: u32, cols: u32)` with the row's first element and its length, which
// is 0 past the last row (those workgroups still reach every barrier). Appended after the
// kernel, before the prelude.

@compute @workgroup_size(WG, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let r = linear_group(wid, nwg);
    let live = r < p.rows;
    row(lid, r * p.cols, select(0u, p.cols, live));
}
