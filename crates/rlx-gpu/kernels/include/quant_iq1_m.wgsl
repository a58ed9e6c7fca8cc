// IQ1_M decoder (see rlx_ir::QuantType): 256 elements in 56 bytes: 32 low index bytes, 16 bytes
// at 32 with a nibble per 8 elements (3 high index bits, the shift's sign in bit 3), four u16
// at 48 holding 3-bit scales (one per 16: scale k at bit 3·(k % 4) of word k / 4) and, in their
// top nibbles, the block's f16 d. x = (d·(2·scale + 1))·(grid ± 1/8), grid as IQ1_S's
// (quant_grid_iq1s.wgsl).

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 56u;

fn decode(bb: u32, j: u32) -> Piece {
    let w0 = bytes4(bb + 48u);
    let w1 = bytes4(bb + 52u);
    let bits = ((w0 >> 12u) & 0xfu) | ((w0 >> 24u) & 0xf0u) | ((w1 >> 4u) & 0xf00u) | ((w1 >> 16u) & 0xf000u);
    let d = f16_bits(bits);
    let nib = (byte_at(bb + 32u + j / 2u) >> (4u * (j % 2u))) & 15u;
    let index = byte_at(bb + j) | ((nib & 7u) << 8u);
    let k = j / 2u;
    let word = select(w0, w1, k >= 8u) >> (16u * ((k / 4u) % 2u));
    let scale = (word >> (3u * (k % 4u))) & 7u;
    let dl = d * f32(2u * scale + 1u);
    let delta = select(0.125, -0.125, (nib & 8u) != 0u);
    return iq1_piece(grid_entry(iq1s_word(index >> 1u), index), dl, delta);
}
