// The entry point of the line kernels (reduce.wgsl, arg_reduce.wgsl, cumsum.wgsl, topk.wgsl):
// p.row_threads threads (a power of two ≤ WG) per line, WG / row_threads lines per workgroup.
// It runs the kernel's `fn run_line(lid: u32, tl: u32, line: u32)` with the thread's slot
// in the workgroup, its index within its line and its line. Lines past the last still run
// (with nothing to read), so that every thread reaches every barrier. Appended after the
// kernel, before the prelude.

@compute @workgroup_size(WG, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let tpr = p.row_threads;
    run_line(lid, lid % tpr, linear_id(wid, nwg, WG / tpr, lid / tpr));
}
