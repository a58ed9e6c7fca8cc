// Strided copy of 32-bit words: the one data-movement kernel behind permute, slice (with a
// step), expand, reverse, the interior of pad, each part of concat, and reshapes that cannot
// be views.
//
// Bindings: 0 = src (read), 1 = out (read_write). Params: CopyParams.
//
// Thread i takes the element with coordinates c[d], row-major over p.shape[0..rank], and does
//   out[out_base + Σ c[d]·out_strides[d]] = src[src_base + Σ c[d]·src_strides[d]].
// Strides may be negative (reverse: two's complement words) or zero (expand). The sums wrap
// in u32, and the params constructor has checked that every true offset lies inside its
// binding, so the wrapped sums are the true offsets.

const WG: u32 = 256u;

// p: CopyParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    var rem = i;
    var s = p.src_base;
    var o = p.out_base;
    for (var d = p.rank; d > 0u; d--) {
        let k = d - 1u;
        let n = p.shape[k >> 2u][k & 3u];
        let c = rem % n;
        rem = rem / n;
        s += c * p.src_strides[k >> 2u][k & 3u];
        o += c * p.out_strides[k >> 2u][k & 3u];
    }
    out[o] = src[s];
}
