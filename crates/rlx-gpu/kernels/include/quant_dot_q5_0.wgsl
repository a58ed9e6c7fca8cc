// Q5_0's piece dot (matmul_quant_vec1.wgsl): piece r of a block, d · Σ x·(q − 16), the nibbles
// as Q4_0's at byte 6 and the fifth bits from qh (bytes 2..6) spread one per byte
// (spread_bits4).
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 4u) * 22u;
    let r = pc % 4u;
    let nib = words2(bb + 6u + (r % 2u) * 8u) >> vec2<u32>((r / 2u) * 4u);
    let qh = bytes4(bb + 2u) >> (8u * r);
    let q0 = (nib.x & 0x0f0f0f0fu) | (spread_bits4(qh) << 4u);
    let q1 = (nib.y & 0x0f0f0f0fu) | (spread_bits4(qh >> 4u) << 4u);
    let s = fma(xa, lanes_f(q0, 0xffu, 16.0), xb * lanes_f(q1, 0xffu, 16.0));
    return f16_at(bb) * lane_sum(s);
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
