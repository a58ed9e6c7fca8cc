// IQ2_XS decoder (see rlx_ir::QuantType): 256 elements in 74 bytes: f16 d, 32 u16 at 2 (a 9-bit
// grid index and a 7-bit sign index per 8 elements), 8 bytes of 4-bit scales at 66 (one per
// 16, low nibble first). x = (d·(0.5 + scale)·0.25)·grid·sign. Grid: quant_grid_iq2xs.wgsl.

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 74u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = u16_at(bb + 2u + 2u * j);
    let scale = (byte_at(bb + 66u + j / 4u) >> (4u * ((j / 2u) % 2u))) & 15u;
    let db = f16_at(bb) * (0.5 + f32(scale)) * 0.25;
    let index = q & 511u;
    let entry = grid_entry(iq2xs_word(index >> 1u), index);
    return iq2_piece(entry, db, ksigns(q >> 9u));
}
