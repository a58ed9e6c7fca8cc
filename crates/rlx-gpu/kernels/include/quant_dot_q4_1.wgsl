// Q4_1's piece dot (matmul_quant_vec1.wgsl): piece r of a block, d · Σ x·q + m · Σ x; pieces 0,
// 1 are the low nibbles of bytes 4..20, pieces 2, 3 the high ones. Blocks are 5 words.
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 4u) * 20u;
    let r = pc % 4u;
    let a = (bb + 4u + (r % 2u) * 8u) >> 2u;
    let sh = (r / 2u) * 4u;
    let s = fma(xa, lanes_f(w[a] >> sh, 0xfu, 0.0), xb * lanes_f(w[a + 1u] >> sh, 0xfu, 0.0));
    let dm = w[bb >> 2u];
    return f16_bits(dm & 0xffffu) * lane_sum(s) + f16_bits(dm >> 16u) * sx;
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
