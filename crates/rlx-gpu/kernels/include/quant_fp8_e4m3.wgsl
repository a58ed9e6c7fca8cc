// FP8_E4M3 decoder (see rlx_ir::QuantType): blocks of 32 elements in 36 bytes (9 words), an f32
// scale s, then 32 e4m3 codes (quant_minifloat.wgsl); x = s · e4m3(q). NaN codes give NaN.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 36u;

fn decode(bb: u32, j: u32) -> Piece {
    return fp8_piece(bb, j, false);
}
