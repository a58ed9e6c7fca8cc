// Q4_0's piece dot (matmul_quant_vec1.wgsl): piece r of a block, d · Σ x·(q − 8); pieces 0, 1
// are the low nibbles of bytes 0..16, pieces 2, 3 the high ones.
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let bb = row + (pc / 4u) * 18u;
    let r = pc % 4u;
    let q = words2(bb + 2u + (r % 2u) * 8u) >> vec2<u32>((r / 2u) * 4u);
    let s = fma(xa, lanes_f(q.x, 0xfu, 8.0), xb * lanes_f(q.y, 0xfu, 8.0));
    return f16_at(bb) * lane_sum(s);
}

// Pieces per run of matmul_quant_vec1.wgsl: two, so the run's shared scales unpack once.
const PER: u32 = 2u;
