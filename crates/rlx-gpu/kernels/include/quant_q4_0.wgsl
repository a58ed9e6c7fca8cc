// Q4_0 decoder: blocks of 32 elements in 18 bytes, an f16 scale d then 16 bytes whose low
// nibbles are elements 0..16 and high nibbles elements 16..32; x = (q − 8) · d.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 18u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = q4_nibbles(bb + 2u, j);
    let d = f16_at(bb);
    let lo = vec4<f32>(vec4<i32>(q.lo) - vec4<i32>(8));
    let hi = vec4<f32>(vec4<i32>(q.hi) - vec4<i32>(8));
    return Piece(d * lo, d * hi);
}
