// Q8_ASYM decoder (int8 asymmetric, see rlx_ir::QuantType): blocks of 32 elements in 36 bytes,
// an f16 scale d, an f16 minimum m, then 32 unsigned bytes; x = q · d + m. Blocks are 9 words.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 36u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = (bb + 4u + j * 8u) >> 2u;
    let d = f16_at(bb);
    let m = f16_at(bb + 2u);
    let lo = vec4<f32>(bits4(w[q], 0u, 0xffu));
    let hi = vec4<f32>(bits4(w[q + 1u], 0u, 0xffu));
    return Piece(lo * d + m, hi * d + m);
}
