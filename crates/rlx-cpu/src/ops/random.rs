//! Counter-based random numbers: Philox4x32-10 and the recipe of `rlx_ir::Op::Random`.
//!
//! Philox4x32 as published by Salmon, Moraes, Dror and Shaw ("Parallel random numbers: as easy
//! as 1, 2, 3", SC 2011): a 4-word counter and a 2-word key; each round multiplies two counter
//! words by fixed constants, keeps both halves of the 64-bit products and mixes them with the
//! other two words and the key; the key is bumped by two Weyl constants between rounds.

use crate::elem::{elems, invalid, tensor};
use rlx_backend::BackendError;
use rlx_ir::{RandomDist, Tensor, TensorData, TensorType};

/// Round multipliers.
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
/// Key increments (the golden ratio and √3 − 1, as 32-bit fractions).
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;
/// 2⁻²⁴: one step of a 24-bit uniform.
const STEP: f32 = 1.0 / 16_777_216.0;

/// `(high, low)` words of the 64-bit product `a · b`.
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = u64::from(a) * u64::from(b);
    ((p >> 32) as u32, p as u32)
}

/// Philox4x32 with 10 rounds: the four output words of `counter` under `key`.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let (hi0, lo0) = mulhilo(M0, c[0]);
        let (hi1, lo1) = mulhilo(M1, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// The four words of block `block` of the stream `(seed, offset)`.
pub fn philox_block(seed: u32, offset: u32, block: u64) -> [u32; 4] {
    philox4x32_10([block as u32, (block >> 32) as u32, offset, 0], [seed, 0])
}

/// A word's top 24 bits as a uniform in [0, 1).
pub fn uniform_from_word(w: u32) -> f32 {
    (w >> 8) as f32 * STEP
}

/// The two normals of one Box–Muller pair of words.
fn normal_pair(a: u32, c: u32) -> (f32, f32) {
    let u1 = ((a >> 8) + 1) as f32 * STEP;
    let u2 = (c >> 8) as f32 * STEP;
    let r = (-2.0 * u1.ln()).sqrt();
    let theta = std::f32::consts::TAU * u2;
    (r * theta.cos(), r * theta.sin())
}

/// `Op::Random`: `out.numel()` values of `dist` keyed by `key` = `[seed, offset]`.
pub(crate) fn random(dist: RandomDist, key: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let name = match dist {
        RandomDist::Uniform => "random_uniform",
        RandomDist::Normal => "random_normal",
    };
    let &[seed, offset] = elems::<u32>(key, name)? else {
        return Err(invalid(name, format!("the key must hold 2 u32 words, it has {}", key.numel())));
    };
    let n = out.numel();
    let mut v = Vec::with_capacity(n);
    let mut block = 0u64;
    while v.len() < n {
        let w = philox_block(seed, offset, block);
        match dist {
            RandomDist::Uniform => v.extend(w.iter().map(|&x| uniform_from_word(x))),
            RandomDist::Normal => {
                let (z0, z1) = normal_pair(w[0], w[1]);
                let (z2, z3) = normal_pair(w[2], w[3]);
                v.extend([z0, z1, z2, z3]);
            }
        }
        block += 1;
    }
    v.truncate(n);
    tensor(&out.shape, TensorData::F32(v))
}
