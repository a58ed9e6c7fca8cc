// IQ2_XXS decoder (see rlx_ir::QuantType): 256 elements in 66 bytes: f16 d, then per sub-block
// s of 32 eight bytes at 2 + 8s: four grid indices and a u32 whose top 4 bits are the scale
// and whose bits 7l.. pick piece l's signs (ksigns). x = (d·(0.5 + scale)·0.25)·grid·sign.
// Grid: quant_grid_iq2xxs.wgsl.

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 66u;

fn decode(bb: u32, j: u32) -> Piece {
    let s = j / 4u;
    let l = j % 4u;
    let aux = bytes4(bb + 6u + 8u * s);
    let index = byte_at(bb + 2u + 8u * s + l);
    let db = f16_at(bb) * (0.5 + f32(aux >> 28u)) * 0.25;
    let entry = grid_entry(iq2xxs_word(index >> 1u), index);
    return iq2_piece(entry, db, ksigns(aux >> (7u * l)));
}
