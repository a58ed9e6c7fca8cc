// Q6_K's piece dot (matmul_quant_vec1.wgsl): piece j of a super-block (quant_q6_k.wgsl),
// d·scale · Σ x·(q − 32). Four 6-bit values are put together per word (nibbles | bit pairs
// << 4) before they become floats.
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 32u) * 210u;
    let j = pc % 32u;
    let u = j / 4u;
    let h = u / 4u;
    let g = u % 4u;
    let l = (j % 4u) * 8u;
    let ql = words2(bb + 64u * h + 32u * (g % 2u) + l) >> vec2<u32>(4u * (g / 2u));
    let qh = words2(bb + 128u + 32u * h + l) >> vec2<u32>(2u * g);
    let q = (ql & vec2<u32>(0x0f0f0f0fu)) | ((qh & vec2<u32>(0x03030303u)) << vec2<u32>(4u));
    let s = fma(xa, lanes_f(q.x, 0xffu, 32.0), xb * lanes_f(q.y, 0xffu, 32.0));
    let sc_byte = bb + 192u + 8u * h + 2u * g + l / 16u;
    // The signed scale byte in offset binary, through the exponent field.
    let sc = u_f((byte_at(sc_byte) ^ 0x80u)) - 128.0;
    return f16_at(bb + 208u) * sc * lane_sum(s);
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
