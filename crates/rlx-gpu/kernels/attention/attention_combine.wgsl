// Merges the per-chunk partials of attention_split.wgsl into the attention output.
//
// Bindings: 0 = partials (read), 1 = out (read_write). Params:
// AttnCombineParams.
//
// One workgroup per query row (y, offset by row_offset), 64 threads over the output columns:
// M = max over chunks of m (NaN propagates), L = Σ l · exp(m − M), out = Σ acc · exp(m − M) / L,
// skipping chunks with m = −∞ (nothing visible there). A row whose M is −∞ (no visible key)
// is written as zeros, as the other attention kernels do.

// p: AttnCombineParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

const NEG_INF_BITS: u32 = 0xff800000u;

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let row = wid.y + p.row_offset;
    let i = row % p.sq;
    let bh = row / p.sq;
    let b = bh / p.hq;
    let h = bh % p.hq;
    let stride = 2u + p.dv;
    let first = row * p.chunks * stride;
    let neg_inf = f32_bits(NEG_INF_BITS);
    var m_all = neg_inf;
    for (var c = 0u; c < p.chunks; c++) {
        m_all = max_nan(m_all, part[first + c * stride]);
    }
    let empty = bitcast<u32>(m_all) == NEG_INF_BITS;
    var l_all = 0.0;
    for (var c = 0u; c < p.chunks; c++) {
        let m = part[first + c * stride];
        if (bitcast<u32>(m) != NEG_INF_BITS) {
            l_all += part[first + c * stride + 1u] * exp(m - m_all);
        }
    }
    let o_base = b * p.o_sb + i * p.o_ss + h * p.o_sh;
    for (var col = t; col < p.dv; col += 64u) {
        var acc = 0.0;
        for (var c = 0u; c < p.chunks; c++) {
            let m = part[first + c * stride];
            if (bitcast<u32>(m) != NEG_INF_BITS) {
                acc += part[first + c * stride + 2u + col] * exp(m - m_all);
            }
        }
        out[o_base + col] = select(acc / l_all, 0.0, empty);
    }
}
