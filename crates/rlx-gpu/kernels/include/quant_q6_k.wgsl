// Q6_K decoder: super-blocks of 256 elements in 210 bytes: 128 bytes of low nibbles, 64 bytes
// of high bit pairs, 16 signed 8-bit scales, f16 d at byte 208. Group u (32 elements, 0..8) of
// half h = u / 4, g = u % 4, takes nibbles at bit 4·(g / 2) of bytes 64·h + 32·(g % 2) .., bit
// pair g of bytes 128 + 32·h .., and scale 8·h + 2·g + (element / 16); x = d·scale·(q − 32).

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 210u;

fn decode(bb: u32, j: u32) -> Piece {
    let u = j / 4u;
    let h = u / 4u;
    let g = u % 4u;
    let l = (j % 4u) * 8u;
    let ql = bb + 64u * h + 32u * (g % 2u) + l;
    let qh = bb + 128u + 32u * h + l;
    let shift = 4u * (g / 2u);
    let sc_byte = bb + 192u + 8u * h + 2u * g + l / 16u;
    let sc = bitcast<i32>(((w[sc_byte >> 2u] >> ((sc_byte & 3u) * 8u)) & 0xffu) << 24u) >> 24u;
    let m = f16_at(bb + 208u) * f32(sc);
    let q0 = nib4(bytes4(ql), shift) | (bits4(bytes4(qh), 2u * g, 3u) << vec4<u32>(4u));
    let q1 = nib4(bytes4(ql + 4u), shift) | (bits4(bytes4(qh + 4u), 2u * g, 3u) << vec4<u32>(4u));
    let v0 = vec4<f32>(vec4<i32>(q0) - vec4<i32>(32));
    let v1 = vec4<f32>(vec4<i32>(q1) - vec4<i32>(32));
    return Piece(m * v0, m * v1);
}
