// The entry point of the kernels with one invocation per item (an output element, word or
// block): invocation i of the 1-D grid of WG-thread workgroups runs the kernel's
// `fn element(i: u32)` for each i below its `fn invocations() -> u32`. rlx-gpu appends this
// file after such a kernel, before the prelude, so the kernel's own line numbers stay those of
// its file. The kernel declares `const WG: u32`.

@compute @workgroup_size(WG, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = linear_id(wid, nwg, WG, lid);
    if (i >= invocations()) {
        return;
    }
    element(i);
}
