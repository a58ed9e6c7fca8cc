// IQ2_S decoder (see rlx_ir::QuantType): 256 elements in 82 bytes: f16 d, 32 low index bytes at
// 2, 32 sign bytes at 34, 8 bytes of high index bits at 66 (2 per 8 elements), 8 bytes of
// 4-bit scales at 74 (one per 16). x = (d·(0.5 + scale)·0.25)·grid·sign. Grid:
// quant_grid_iq2s.wgsl.

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 82u;

fn decode(bb: u32, j: u32) -> Piece {
    let high = (byte_at(bb + 66u + j / 4u) >> (2u * (j % 4u))) & 3u;
    let index = byte_at(bb + 2u + j) | (high << 8u);
    let scale = (byte_at(bb + 74u + j / 4u) >> (4u * ((j / 2u) % 2u))) & 15u;
    let db = f16_at(bb) * (0.5 + f32(scale)) * 0.25;
    let entry = grid_entry(iq2s_word(index >> 1u), index);
    return iq2_piece(entry, db, byte_at(bb + 34u + j));
}
