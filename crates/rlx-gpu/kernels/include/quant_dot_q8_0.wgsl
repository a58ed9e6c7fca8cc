// Q8_0's piece dot (matmul_quant_vec1.wgsl): piece r of a block, d · Σ x·q. The signed bytes
// are flipped to offset binary (q + 128) and read through the exponent field.
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 4u) * 34u;
    let q = words2(bb + 2u + (pc % 4u) * 8u) ^ vec2<u32>(0x80808080u);
    let s = fma(xa, lanes_f(q.x, 0xffu, 128.0), xb * lanes_f(q.y, 0xffu, 128.0));
    return f16_at(bb) * lane_sum(s);
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
