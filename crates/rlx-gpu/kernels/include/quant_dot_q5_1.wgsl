// Q5_1's piece dot (matmul_quant_vec1.wgsl): piece r of a block, d · Σ x·q + m · Σ x, the
// nibbles as Q4_1's at byte 8 and the fifth bits from the word at byte 4 (spread_bits4).
// Blocks are 6 words.
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 4u) * 24u;
    let r = pc % 4u;
    let a = (bb + 8u + (r % 2u) * 8u) >> 2u;
    let sh = (r / 2u) * 4u;
    let qh = w[(bb + 4u) >> 2u] >> (8u * r);
    let q0 = ((w[a] >> sh) & 0x0f0f0f0fu) | (spread_bits4(qh) << 4u);
    let q1 = ((w[a + 1u] >> sh) & 0x0f0f0f0fu) | (spread_bits4(qh >> 4u) << 4u);
    let s = fma(xa, lanes_f(q0, 0xffu, 0.0), xb * lanes_f(q1, 0xffu, 0.0));
    let dm = w[bb >> 2u];
    return f16_bits(dm & 0xffffu) * lane_sum(s) + f16_bits(dm >> 16u) * sx;
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
