// Q8_0 decoder (see rlx_ir::QuantType): blocks of 32 elements in 34 bytes, an f16 scale d then
// 32 signed bytes; x = q · d. A block has 4 pieces of 8.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 34u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = bb + 2u + j * 8u;
    let d = f16_at(bb);
    return Piece(i8x4(bytes4(q)) * d, i8x4(bytes4(q + 4u)) * d);
}
