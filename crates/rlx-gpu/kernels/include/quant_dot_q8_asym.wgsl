// Q8_ASYM's piece dot (matmul_quant_vec1.wgsl): piece r of a block, d · Σ x·q + m · Σ x.
// Blocks are 9 words.
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 4u) * 36u;
    let a = (bb + 4u + (pc % 4u) * 8u) >> 2u;
    let s = fma(xa, lanes_f(w[a], 0xffu, 0.0), xb * lanes_f(w[a + 1u], 0xffu, 0.0));
    let dm = w[bb >> 2u];
    return f16_bits(dm & 0xffffu) * lane_sum(s) + f16_bits(dm >> 16u) * sx;
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
