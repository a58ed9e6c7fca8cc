// What the piece dots of matmul_quant_vec1.wgsl share (quant_dot_<type>.wgsl): whole-word reads
// of a block's quants and integer → float through the exponent field.

// 2^23 as bits: OR-ing an integer v < 2^23 into its mantissa gives the float 2^23 + v exactly,
// so one subtraction makes v a float without an int → float conversion (a quarter-rate
// instruction on recent GPUs, and the bulk of a decoder's time).
const EXP_2_23: u32 = 0x4b000000u;

// The four bytes of v, each masked by `mask`, as floats minus `off` (an integer below 2^22):
// exact.
fn lanes_f(v: u32, mask: u32, off: f32) -> vec4<f32> {
    let b = (vec4<u32>(v) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(mask);
    return bitcast<vec4<f32>>(b | vec4<u32>(EXP_2_23)) - vec4<f32>(8388608.0 + off);
}

// Eight bytes from the even byte offset o as two little-endian words: read as words and
// shifted by half a word where o is not a word boundary (blocks of 18, 34 and 210 bytes put
// every other block there); branch-free, as neighbouring invocations take blocks of both
// alignments. Every byte asked for is inside the tensor.
fn words2(o: u32) -> vec2<u32> {
    let a = o >> 2u;
    let v = vec2<u32>(w[a], w[a + 1u]);
    let next = vec2<u32>(v.y, w[min(a + 2u, p.last_word)]);
    let sh = (o & 2u) * 8u;
    let keep = select(0u, 0xffffffffu, sh != 0u);
    return (v >> vec2<u32>(sh)) | ((next << vec2<u32>(16u)) & vec2<u32>(keep));
}

// The sum of v's lanes.
fn lane_sum(v: vec4<f32>) -> f32 {
    return (v.x + v.y) + (v.z + v.w);
}

// The low four bits of v, one per byte (bit i to bit 0 of byte i): the four shifted copies
// of a 4-bit value that the multiplication adds never overlap.
fn spread_bits4(v: u32) -> u32 {
    return ((v & 0xfu) * 0x00204081u) & 0x01010101u;
}

// The unsigned integer v < 2^23 as a float, through the exponent field.
fn u_f(v: u32) -> f32 {
    return bitcast<f32>(v | EXP_2_23) - 8388608.0;
}

// k_factors (quant_k_scales.wgsl) for a super-block at a word boundary (Q4_K's and Q5_K's):
// word loads, the two layouts of the 6-bit fields chosen by select rather than a branch
// (neighbouring invocations take both), and no int → float conversions.
fn k_factors_w(bb: u32, s: u32) -> vec2<f32> {
    let b = bb >> 2u;
    let dm = w[b];
    let w0 = w[b + 1u];
    let w1 = w[b + 2u];
    let w2 = w[b + 3u];
    let t = (s % 4u) * 8u;
    let hi = s >= 4u;
    let low_mask = select(63u, 15u, hi);
    let sc = (select(w0 >> t, w2 >> t, hi) & low_mask) | select(0u, ((w0 >> (t + 6u)) & 3u) << 4u, hi);
    let mn = (select(w1 >> t, w2 >> (t + 4u), hi) & low_mask) | select(0u, ((w1 >> (t + 6u)) & 3u) << 4u, hi);
    return vec2<f32>(f16_bits(dm & 0xffffu) * u_f(sc), f16_bits(dm >> 16u) * u_f(mn));
}
