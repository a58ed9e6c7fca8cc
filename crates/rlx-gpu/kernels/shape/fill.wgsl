// Sets every word of the output to one value: pad borders, reductions over an empty set,
// gathers from empty data, and any op whose non-empty output reads nothing.
//
// Driver defines: PARAMS.
// Bindings: 0 = out (read_write). Params: FillParams.

const WG: u32 = 256u;

struct FillParams {
    numel: u32,
    value: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
{{PARAMS}} p: FillParams;

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = linear_id(wid, nwg, WG, lid);
    if (i >= p.numel) {
        return;
    }
    out[i] = p.value;
}
