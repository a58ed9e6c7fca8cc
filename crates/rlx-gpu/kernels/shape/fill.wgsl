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

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    out[i] = p.value;
}
