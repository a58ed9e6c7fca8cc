// IQ3_XXS decoder (see rlx_ir::QuantType): 256 elements in 98 bytes: f16 d, 64 grid indices at
// 2 (4 elements each), then per sub-block s of 32 a u32 at 66 + 4s: scale in the top 4 bits,
// piece l's 7-bit sign index at bit 7l (ksigns). x = (d·(0.5 + scale)·0.5)·grid·sign, grid
// values 4, 12, …, 52, 62 (quant_grid_iq3xxs.wgsl).

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 98u;

// IQ3_XXS's values of 3-bit codes: 4 + 8c, except 62 for code 7.
fn iq3xxs_values(entry: u32) -> vec4<f32> {
    let c = codes3(entry);
    return vec4<f32>(select(vec4<u32>(4u) + 8u * c, vec4<u32>(62u), c == vec4<u32>(7u)));
}

fn decode(bb: u32, j: u32) -> Piece {
    let s = j / 4u;
    let l = j % 4u;
    let aux = bytes4(bb + 66u + 4u * s);
    let db = f16_at(bb) * (0.5 + f32(aux >> 28u)) * 0.5;
    let e0 = byte_at(bb + 2u + 8u * s + 2u * l);
    let e1 = byte_at(bb + 3u + 8u * s + 2u * l);
    let signs = ksigns(aux >> (7u * l));
    let lo = db * iq3xxs_values(grid_entry(iq3xxs_word(e0 >> 1u), e0)) * sign_lo(signs);
    let hi = db * iq3xxs_values(grid_entry(iq3xxs_word(e1 >> 1u), e1)) * sign_hi(signs);
    return Piece(lo, hi);
}
