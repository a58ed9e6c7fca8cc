// IQ3_S decoder (see rlx_ir::QuantType): 256 elements in 110 bytes: f16 d, 64 low index bytes at
// 2, 8 bytes of ninth index bits at 66 (entry k's at bit k % 8 of byte k / 8), 32 sign bytes
// at 74 (one per 8 elements), 4 bytes of 4-bit scales at 106 (one per 32). x = (d·(1 +
// 2·scale))·grid·sign, grid values 1, 3, …, 15 (quant_grid_iq3s.wgsl, 4 elements an entry).

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 110u;

// Grid entry k (0..64) of the block at bb, as IQ3_S values 1 + 2c.
fn iq3s_values(bb: u32, k: u32) -> vec4<f32> {
    let index = byte_at(bb + 2u + k) | (((byte_at(bb + 66u + k / 8u) >> (k % 8u)) & 1u) << 8u);
    let c = codes3(grid_entry(iq3s_word(index >> 1u), index));
    return vec4<f32>(vec4<u32>(1u) + 2u * c);
}

fn decode(bb: u32, j: u32) -> Piece {
    let scale = (byte_at(bb + 106u + j / 8u) >> (4u * ((j / 4u) % 2u))) & 15u;
    let db = f16_at(bb) * f32(1u + 2u * scale);
    let signs = byte_at(bb + 74u + j);
    return Piece(db * iq3s_values(bb, 2u * j) * sign_lo(signs), db * iq3s_values(bb, 2u * j + 1u) * sign_hi(signs));
}
