// Q4_K decoder: super-blocks of 256 elements in 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit
// scales and mins (quant_k_scales.wgsl), 128 bytes of nibbles. Sub-block s (32 elements) takes
// the low (even s) or high (odd s) nibbles of bytes 16 + 32·(s / 2) ..; x = d·scale·q − dmin·min.
// 32 pieces of 8 per super-block.

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 144u;

fn decode(bb: u32, j: u32) -> Piece {
    let s = j / 4u;
    let q = bb + 16u + (s / 2u) * 32u + (j % 4u) * 8u;
    let shift = (s % 2u) * 4u;
    let f = k_factors(bb, s);
    let lo = f.x * vec4<f32>(nib4(bytes4(q), shift)) - f.y;
    let hi = f.x * vec4<f32>(nib4(bytes4(q + 4u), shift)) - f.y;
    return Piece(lo, hi);
}
