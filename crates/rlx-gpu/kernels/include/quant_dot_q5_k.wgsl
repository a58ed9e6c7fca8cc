// Q5_K's piece dot (matmul_quant_vec1.wgsl): piece j of a super-block (quant_q5_k.wgsl), as
// Q4_K's with the fifth bits (bit s of the bytes at 16 + l) moved to bit 4 of each byte.
// Super-blocks are 44 words, so every field is word-aligned.
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 32u) * 176u;
    let j = pc % 32u;
    let s = j / 4u;
    let l = (j % 4u) * 8u;
    let a = (bb + 48u + (s / 2u) * 32u + l) >> 2u;
    let h = (bb + 16u + l) >> 2u;
    let sh = (s % 2u) * 4u;
    let q0 = ((w[a] >> sh) & 0x0f0f0f0fu) | (((w[h] >> s) & 0x01010101u) << 4u);
    let q1 = ((w[a + 1u] >> sh) & 0x0f0f0f0fu) | (((w[h + 1u] >> s) & 0x01010101u) << 4u);
    let f = k_factors_w(bb, s);
    let d = fma(xa, lanes_f(q0, 0xffu, 0.0), xb * lanes_f(q1, 0xffu, 0.0));
    return f.x * lane_sum(d) - f.y * sx;
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
