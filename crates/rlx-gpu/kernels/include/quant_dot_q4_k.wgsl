// Q4_K's piece dot (matmul_quant_vec1.wgsl): piece j of a super-block (quant_q4_k.wgsl),
// d·scale · Σ x·q − dmin·min · Σ x. Super-blocks are 36 words, so every field is word-aligned.
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 32u) * 144u;
    let j = pc % 32u;
    let s = j / 4u;
    let a = (bb + 16u + (s / 2u) * 32u + (j % 4u) * 8u) >> 2u;
    let sh = (s % 2u) * 4u;
    let f = k_factors_w(bb, s);
    let d = fma(xa, lanes_f(w[a] >> sh, 0xfu, 0.0), xb * lanes_f(w[a + 1u] >> sh, 0xfu, 0.0));
    return f.x * lane_sum(d) - f.y * sx;
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
