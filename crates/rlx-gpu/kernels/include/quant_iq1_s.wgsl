// IQ1_S decoder (see rlx_ir::QuantType): 256 elements in 50 bytes: f16 d, 32 low index bytes at
// 2, then per sub-block s of 32 a u16 at 34 + 2s: 3 high index bits per 8 elements (bit 3l),
// the 3-bit scale at bit 12, the shift's sign at bit 15. x = (d·(2·scale + 1))·(grid ± 1/8),
// grid values −1, 0, 1 (quant_grid_iq1s.wgsl).

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 50u;

fn decode(bb: u32, j: u32) -> Piece {
    let s = j / 4u;
    let l = j % 4u;
    let qh = u16_at(bb + 34u + 2u * s);
    let dl = f16_at(bb) * f32(2u * ((qh >> 12u) & 7u) + 1u);
    let delta = select(0.125, -0.125, (qh & 0x8000u) != 0u);
    let index = byte_at(bb + 2u + 4u * s + l) | (((qh >> (3u * l)) & 7u) << 8u);
    return iq1_piece(grid_entry(iq1s_word(index >> 1u), index), dl, delta);
}
