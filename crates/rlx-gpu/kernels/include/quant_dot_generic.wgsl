// The piece dot of matmul_quant_vec1.wgsl for types without their own: the type's decoder
// (decode8).
fn piece_dot(row: u32, pc: u32, xa: vec4<f32>, xb: vec4<f32>, sx: f32) -> f32 {
    let v = decode8(row, pc);
    return lane_sum(fma(v.lo, xa, v.hi * xb));
}

// Pieces per run of matmul_quant_vec1.wgsl: one (the decoder finds each piece's block itself).
const PER: u32 = 1u;
