// NVFP4 decoder (see rlx_ir::QuantType): blocks of 64 elements in 36 bytes (9 words): word 0
// holds the four e4m3 micro-block scales (byte i scales elements 16·i ..), words 1..9 the e2m1
// codes, element 2j in the low nibble of byte j. A piece of 8 is one word of codes and half a
// micro-block; x = e4m3(scale) · e2m1(q). The per-tensor global scale is a separate multiply.

const BLOCK_ELEMS: u32 = 64u;
const BLOCK_BYTES: u32 = 36u;

fn decode(bb: u32, j: u32) -> Piece {
    let bw = bb >> 2u;
    let s = e4m3((w[bw] >> (8u * (j / 2u))) & 0xffu);
    let v = vec4<u32>(w[bw + 1u + j]);
    let lo = e2m1x4((v >> vec4<u32>(0u, 4u, 8u, 12u)) & vec4<u32>(0xfu));
    let hi = e2m1x4((v >> vec4<u32>(16u, 20u, 24u, 28u)) & vec4<u32>(0xfu));
    return Piece(s * lo, s * hi);
}
