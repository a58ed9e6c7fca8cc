// Sets every word of the output to one value: pad borders, reductions over an empty set,
// gathers from empty data, and any op whose non-empty output reads nothing.
//
// Bindings: 0 = out (read_write). Params: FillParams.

const WG: u32 = 256u;

// p: FillParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read_write> out: array<u32>;

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    out[i] = p.value;
}
