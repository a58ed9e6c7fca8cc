// Q4_1 decoder (int4 asymmetric, see rlx_ir::QuantType): blocks of 32 elements in 20 bytes, an
// f16 scale d, an f16 minimum m, then 16 bytes whose low nibbles are elements 0..16 and high
// nibbles elements 16..32; x = q · d + m. Blocks are 5 words, so fields sit on word boundaries.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 20u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = q4_nibbles(bb + 4u, j);
    let d = f16_at(bb);
    let m = f16_at(bb + 2u);
    return Piece(vec4<f32>(q.lo) * d + m, vec4<f32>(q.hi) * d + m);
}
