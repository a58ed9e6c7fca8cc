// The k and v bindings of the forward attention kernels for keys and values stored as f32
// (binding 1 = k, 2 = v; elements of type QKV: f32, or vec4<f32> for the coop kernel's wide
// loads, LW values each). The backward kernels index k and v directly. Its twin for keys and
// values stored as f16 is attention_kv_f16.wgsl; rlx-gpu appends one of them.

@group(0) @binding(1) var<storage, read> k: array<{{QKV}}>;
@group(0) @binding(2) var<storage, read> v: array<{{QKV}}>;

// Values i .. i + LW − 1 of k (i a multiple of LW) as f32; a single value is splatted.
fn k_load(i: u32) -> vec4<f32> {
    return vec4<f32>(k[i / {{LW}}u]);
}

// Values i .. i + LW − 1 of v, as k_load.
fn v_load(i: u32) -> vec4<f32> {
    return vec4<f32>(v[i / {{LW}}u]);
}
