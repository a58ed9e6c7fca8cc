//! Typed storage: a cast for every ordered pair of the seven dtypes at their rounding,
//! saturation and special points, on lengths 1, 3, 5, 7 and 1025 (odd lengths end in a partial
//! 32-bit word of f16, bf16 and u8), compared bit for bit; and whole graphs on f16, bf16 and
//! u8 values, whose ops GPUs compute through casts to f32 and i32.

use crate::{Case, CaseCtx};
use half::{bf16, f16};
use rlx_ir::{DType, IrError, NodeId, Tensor, TensorData};

/// The lengths every cast runs on.
const LENGTHS: [usize; 5] = [1, 3, 5, 7, 1025];

pub(super) fn cases(out: &mut Vec<Case>) {
    for from in DType::ALL {
        for to in DType::ALL {
            // A cast is a rounding rule: every output bit must be the CPU's (−0 included; any
            // NaN matches any NaN).
            out.push(
                Case::new(format!("cast_dtypes_{from}_to_{to}"), move |c| {
                    let mut outs = Vec::with_capacity(LENGTHS.len());
                    for (k, n) in LENGTHS.into_iter().enumerate() {
                        let v = values(c, from, n, k)?;
                        let x = c.input_tensor(&format!("x{n}"), v)?;
                        outs.push(c.cast(x, to)?);
                    }
                    Ok(outs)
                })
                .exact(),
            );
        }
    }
    graphs(out);
}

/// Bit patterns of f16 every cast from it must get right: subnormals (smallest, largest), the
/// smallest normal, 65504 and infinities, NaNs (quiet, signalling, negative), −0, values at the
/// u8 and i32 edges, and values that round when narrowed to bf16.
const F16_EDGES: [u16; 22] = [
    0x0001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7d01, 0xfe00, 0x8000, 0x0000, 0x3c00,
    0xbc00, 0x3555, 0x5bf8, 0x5bfc, 0x5c00, 0xd800, 0xdbfc, 0x3c01, 0x3c03,
];

/// Bit patterns of bf16: subnormals, the largest finite, infinities, NaNs, −0, values past f16's
/// range (65536, 65280 rounding to f16's 65280), the u8 and i32 edges (255, 256, 2^31, 2^32,
/// −2^31) and f16's subnormal range.
const BF16_EDGES: [u16; 22] = [
    0x0001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x8000, 0x0000, 0x3f80, 0x477f,
    0x4780, 0x437f, 0x4380, 0x4f00, 0x4f80, 0xcf00, 0x3380, 0x3300, 0x3eab,
];

/// f32 values: specials, subnormals, f16's limits (65504, the 65520 tie, half its smallest
/// subnormal), bf16 ties (1 + 2⁻⁸ rounds down, 1 + 3·2⁻⁸ up, just past a tie up), values around
/// u8's and i32's saturation, and f32::MAX (infinite in bf16 and f16).
pub(super) fn f32_edges() -> Vec<f32> {
    let t = 1.0f32 / 256.0;
    vec![
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-40,
        -1e-45,
        65504.0,
        65519.996,
        65520.0,
        -65520.0,
        2f32.powi(-25),
        2f32.powi(-25) * 1.0000001,
        5.9604645e-8,
        6.097555e-5,
        1.0 + t,
        1.0 + 3.0 * t,
        f32::from_bits((1.0f32 + t).to_bits() + 1),
        -1.5,
        0.7,
        2.5,
        254.99998,
        255.5,
        256.0,
        -0.9,
        2_147_483_520.0,
        2_147_483_648.0,
        -2_147_483_904.0,
        4_294_967_040.0,
        4_294_967_296.0,
        1e20,
        f32::MAX,
        -f32::MAX,
        3.3961776e38,
        16_777_217.0,
    ]
}

/// i32 values: both ends, f16's range (65504 exact, 65519 rounds to it, 65520 overflows), u8's,
/// 2^24 ± 1 (f32's last exact integers), and bf16 ties around 2^24 (2^24 + 2^16 is a tie that
/// rounds to even; one more rounds up, where rounding through f32 would round down).
const I32_EDGES: [i32; 22] = [
    i32::MIN,
    i32::MIN + 1,
    -16_777_217,
    -65_520,
    -65_519,
    -256,
    -1,
    0,
    1,
    255,
    256,
    65_504,
    65_519,
    65_520,
    16_777_217,
    (1 << 24) + (1 << 16),
    (1 << 24) + (1 << 16) + 1,
    (1 << 24) + 3 * (1 << 16),
    2_147_483_583,
    2_147_483_584,
    i32::MAX - 1,
    i32::MAX,
];

const U32_EDGES: [u32; 16] = [
    0,
    1,
    255,
    256,
    65_519,
    65_520,
    16_777_217,
    (1 << 24) + (1 << 16) + 1,
    (1 << 24) + (1 << 16),
    2_147_483_647,
    2_147_483_648,
    4_286_578_688,
    4_294_967_167,
    4_294_967_168,
    u32::MAX - 1,
    u32::MAX,
];

const U8_EDGES: [u8; 8] = [0, 1, 2, 127, 128, 200, 254, 255];

/// `n` values of `dtype`: the edges from position `start` on, cycling, then (past the edges)
/// random bit patterns, which cover every rounding case in bulk.
fn values(c: &mut CaseCtx, dtype: DType, n: usize, start: usize) -> Result<Tensor, IrError> {
    let words = c.words(n);
    // Element i is edge (i + start) mod the edge count while i is below it, else random bits.
    fn fill<E: Copy, T>(
        n: usize,
        start: usize,
        edges: &[E],
        edge: impl Fn(E) -> T,
        word: impl Fn(usize) -> T,
    ) -> Vec<T> {
        (0..n)
            .map(|i| if i < edges.len() { edge(edges[(i + start) % edges.len()]) } else { word(i) })
            .collect()
    }
    let data = match dtype {
        DType::F32 => TensorData::F32(fill(n, start, &f32_edges(), |e| e, |i| f32::from_bits(words[i]))),
        DType::F16 => {
            TensorData::F16(fill(n, start, &F16_EDGES, f16::from_bits, |i| f16::from_bits(words[i] as u16)))
        }
        DType::BF16 => TensorData::BF16(fill(n, start, &BF16_EDGES, bf16::from_bits, |i| {
            bf16::from_bits(words[i] as u16)
        })),
        DType::I32 => TensorData::I32(fill(n, start, &I32_EDGES, |e| e, |i| words[i] as i32)),
        DType::U32 => TensorData::U32(fill(n, start, &U32_EDGES, |e| e, |i| words[i])),
        DType::U8 => TensorData::U8(fill(n, start, &U8_EDGES, |e| e, |i| words[i] as u8)),
        DType::Bool => TensorData::Bool(fill(n, start, &[true, false], |e| e, |i| words[i] & 1 == 1)),
    };
    Tensor::new([n], data)
}

/// f16 weights of `dims` uniform in [lo, hi).
fn f16_param(c: &mut CaseCtx, name: &str, dims: &[usize], lo: f32, hi: f32) -> Result<NodeId, IrError> {
    let n = dims.iter().product();
    let v = c.uniform(n, lo, hi).into_iter().map(f16::from_f32).collect();
    c.param_tensor(name, Tensor::from_f16(dims, v)?)
}

fn graphs(out: &mut Vec<Case>) {
    // f16 in, f16 out; every op in between computes in f32 on a GPU and rounds to f16 after
    // each op, as the CPU does. Differences come from f32 math flipping an f16 rounding: a few
    // f16 ulps (2⁻¹¹ relative) on some elements, far below 2e-3 (DESIGN.md's f16 matmul bound).
    out.push(
        Case::new("typed_f16_mlp_gelu_softmax", |c| {
            let v = c.uniform(5 * 24, -2.0, 2.0).into_iter().map(f16::from_f32).collect();
            let x = c.input_tensor("x", Tensor::from_f16([5, 24], v)?)?;
            let w = f16_param(c, "w", &[24, 7], -0.5, 0.5)?;
            let b = f16_param(c, "b", &[7], -0.5, 0.5)?;
            let h = c.matmul(x, w)?;
            let h = c.add(h, b)?;
            let h = c.gelu(h)?;
            Ok(vec![c.softmax(h, -1)?, h])
        })
        .with_tol(2e-3),
    );
    // Data movement on f16 and bf16 through the casts around it: exact.
    out.push(
        Case::new("typed_16bit_data_movement_exact", |c| {
            let v: Vec<f16> = c.words(3 * 5 * 7).into_iter().map(|w| f16::from_bits(w as u16)).collect();
            let x = c.input_tensor("x", Tensor::from_f16([3, 5, 7], v)?)?;
            let t = c.permute(x, &[2, 0, 1])?;
            let s = c.slice(t, 1, 1, 3, 1)?;
            let r = c.reverse(s, &[0, 2])?;
            let p = c.pad(r, &[(1, 0), (0, 0), (2, 1)], 70000.0)?;
            let idx = c.input_tensor("idx", Tensor::from_i32([4], vec![4, 0, 6, 9])?)?;
            let g = c.gather(x, idx, 2)?;
            let b = c.cast(x, DType::BF16)?;
            let first = c.slice(b, 0, 0, 1, 1)?;
            let e = c.expand(first, &[2, 5, 7])?;
            let cat = c.concat(&[b, e], 0)?;
            Ok(vec![p, g, cat])
        })
        .exact(),
    );
    // bf16: a norm, a scale and a mean, within DESIGN.md's 1e-2 for bf16 results (bf16 keeps 8
    // bits, so one flipped rounding is 2⁻⁸ relative on that element).
    out.push(
        Case::new("typed_bf16_norm_scale_mean", |c| {
            let v = c.uniform(6 * 33, -3.0, 3.0).into_iter().map(bf16::from_f32).collect();
            let x = c.input_tensor("x", Tensor::from_bf16([6, 33], v)?)?;
            let gv = c.uniform(33, 0.5, 1.5).into_iter().map(bf16::from_f32).collect();
            let gamma = c.param_tensor("gamma", Tensor::from_bf16([33], gv)?)?;
            let n = c.layer_norm(x, Some(gamma), None, -1, 1e-5)?;
            let y = c.mul(n, x)?;
            let m = c.mean(y, &[1], true)?;
            let centred = c.sub(y, m)?;
            let t = c.tanh(centred)?;
            Ok(vec![t, m])
        })
        .with_tol(1e-2),
    );
    // u8: saturating arithmetic, reductions and moves compute in i32 on a GPU (exact), and an
    // image normalised to f32 and stored as f16 and bf16.
    out.push(
        Case::new("typed_u8_image_ops", |c| {
            let img: Vec<u8> = c.words(2 * 3 * 9).into_iter().map(|w| w as u8).collect();
            let x = c.input_tensor("img", Tensor::from_u8([2, 3, 9], img)?)?;
            let off: Vec<u8> = c.words(9).into_iter().map(|w| w as u8).collect();
            let o = c.input_tensor("off", Tensor::from_u8([9], off)?)?;
            let brighter = c.add(x, o)?;
            let darker = c.sub(x, o)?;
            let mx = c.max(x, &[2], false)?;
            let sum = c.sum(x, &[0], false)?;
            let mask = c.gt(x, o)?;
            let pick = c.where_(mask, darker, brighter)?;
            let cut = c.slice(pick, 2, 1, 8, 3)?;
            let moved = c.transpose(cut, 0, 2)?;
            let f = c.cast(x, DType::F32)?;
            let scale = c.scalar(1.0 / 255.0)?;
            let norm = c.mul(f, scale)?;
            let (h, b) = (c.cast(norm, DType::F16)?, c.cast(norm, DType::BF16)?);
            Ok(vec![brighter, darker, mx, sum, moved, h, b])
        })
        .exact(),
    );
    // Embedding lookups in 2-byte tables: rows of an even length move as stored words (no
    // widened copy of the table); an odd row length goes through the widening path. Ids past
    // either end give zero rows.
    for (tag, dtype, dims, axis) in [
        ("f16_rows", DType::F16, vec![11usize, 6], 0usize),
        ("bf16_rows", DType::BF16, vec![7, 4], 0),
        ("f16_odd_rows", DType::F16, vec![5, 3], 0),
        ("f16_axis1_pairs", DType::F16, vec![3, 5, 2], 1),
    ] {
        out.push(
            Case::new(format!("typed_gather_{tag}"), move |c| {
                let table = values(c, dtype, dims.iter().product(), 0)?.reshape(dims.clone())?;
                let t = c.input_tensor("table", table)?;
                let ids = c.input_tensor("ids", Tensor::from_i32([2, 3], vec![0, 2, -1, 1, 99, 2])?)?;
                Ok(vec![c.gather(t, ids, axis as isize)?])
            })
            .exact(),
        );
    }
}
