// What the line kernels over one axis (arg_reduce.wgsl, cumsum.wgsl) share, appended after
// each: their params and their two bindings. x is seen as [outer, len, inner]; line
// l = o·inner + j of `lines` gets `row_threads` threads.

// p: AxisParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
