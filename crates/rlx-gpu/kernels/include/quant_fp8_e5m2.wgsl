// FP8_E5M2 decoder (see rlx_ir::QuantType): blocks of 32 elements in 36 bytes (9 words), an f32
// scale s, then 32 e5m2 codes (quant_minifloat.wgsl); x = s · e5m2(q). NaN codes give NaN.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 36u;

fn decode8(row: u32, piece: u32) -> Piece {
    let bw = (row + (piece / 4u) * BLOCK_BYTES) >> 2u;
    let q = bw + 1u + (piece % 4u) * 2u;
    let s = bitcast<f32>(w[bw]);
    return Piece(s * e5m2x4(w[q]), s * e5m2x4(w[q + 1u]));
}
