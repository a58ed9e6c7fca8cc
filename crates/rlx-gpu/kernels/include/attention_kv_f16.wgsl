// The k and v bindings of the forward attention kernels for keys and values stored as f16 (a
// KV cache held in f16 under f32 queries): binding 1 = k, 2 = v, read as packed words (two
// halves each, the lower first) and widened exactly in registers by integer arithmetic (the
// prelude's f16_to_f32_bits: subnormals, infinities and NaN included, no f16 shader feature;
// on lavapipe `vec2<f32>(bitcast<vec2<f16>>(word))` gave wrong values). Element i of k is half
// (i & 1) of word i / 2: every binding starts on a word, and LW = 4 needs i a multiple of 4 (the
// host checks the head dims and strides, as for f32). Its twin for f32 is attention_kv_f32.wgsl.

@group(0) @binding(1) var<storage, read> k: array<u32>;
@group(0) @binding(2) var<storage, read> v: array<u32>;

// Values i .. i + LW − 1 of k (i a multiple of LW) as f32; a single value is splatted.
fn k_load(i: u32) -> vec4<f32> {
    let w = halves(k[i >> 1u]);
    if ({{LW}}u == 4u) {
        return vec4<f32>(w, halves(k[(i >> 1u) + 1u]));
    }
    return vec4<f32>(select(w.x, w.y, (i & 1u) != 0u));
}

// Values i .. i + LW − 1 of v, as k_load.
fn v_load(i: u32) -> vec4<f32> {
    let w = halves(v[i >> 1u]);
    if ({{LW}}u == 4u) {
        return vec4<f32>(w, halves(v[(i >> 1u) + 1u]));
    }
    return vec4<f32>(select(w.x, w.y, (i & 1u) != 0u));
}

// The two f16 of word w (the lower first), widened.
fn halves(w: u32) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(f16_to_f32_bits(w & 0xffffu)), bitcast<f32>(f16_to_f32_bits(w >> 16u)));
}
