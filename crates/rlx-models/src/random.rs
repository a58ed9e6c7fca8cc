//! Deterministic random weights for graphs run without a checkpoint (the `rlx bench` BERT
//! workload, tests): LayerNorm gammas near 1, betas and biases small, weights with variance
//! 1/fan_in so activations keep their scale through the layers.

use half::{bf16, f16};
use rlx_ir::{DType, Graph, TensorType};
use rlx_runtime::Executable;

/// `n` values uniform in [−scale, scale) from `seed` (splitmix64, 24 bits a value).
pub fn uniform(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let u = ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32;
            (2.0 * u - 1.0) * scale
        })
        .collect()
}

/// A value for the param `name` of type `ty` (see the module doc).
pub fn param_value(name: &str, ty: &TensorType, seed: u64) -> Vec<f32> {
    let n = ty.numel();
    if name.ends_with("LayerNorm.weight") || name.ends_with(".gamma") {
        return uniform(n, seed, 0.1).into_iter().map(|v| 1.0 + v).collect();
    }
    if name.ends_with(".bias") || name.ends_with(".beta") {
        return uniform(n, seed, 0.05);
    }
    let fan_in = ty.shape.dims().last().copied().unwrap_or(1).max(1);
    uniform(n, seed, (3.0 / fan_in as f32).sqrt())
}

/// Sets every param of `exe` (compiled from `g`) with [`param_value`]; the i-th param of
/// `g.params()` is seeded `seed + i`, so every device gets the same weights. F16 and BF16
/// params get the values rounded to their dtype; other dtypes take the f32 values as they are
/// (and `set_param` says what it expects when that does not fit).
pub fn set_random_params(exe: &mut Executable, g: &Graph, seed: u64) -> Result<(), rlx_runtime::Error> {
    for (i, (name, _, ty)) in g.params().iter().enumerate() {
        let v = param_value(name, ty, seed.wrapping_add(i as u64));
        match ty.dtype {
            DType::F16 => exe.set_param(name, &v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>())?,
            DType::BF16 => exe.set_param(name, &v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>())?,
            _ => exe.set_param(name, &v)?,
        }
    }
    Ok(())
}

/// `bytes` bytes of random `q` blocks. ggml's formats (but Q4_1): splitmix64 bytes with every
/// f16 scale set to ±0.01. rlx's formats (Q4_1, Q8_ASYM, FP8_*, NVFP4): uniform values in [−0.05, 0.05)
/// quantized by `rlx_ir::quantize`, so no fp8 code is NaN or infinite. A byte count that is
/// not whole blocks gives the whole blocks it holds.
pub fn quant_blocks(q: rlx_ir::QuantType, bytes: usize, seed: u64) -> Vec<u8> {
    use rlx_ir::QuantType as Q;
    if matches!(q, Q::Q4_1 | Q::Q8Asym | Q::Fp8E4M3 | Q::Fp8E5M2 | Q::NvFp4) {
        let elems = bytes / q.block_bytes() * q.block_elems();
        return rlx_ir::quantize(q, &uniform(elems, seed, 0.05)).unwrap_or_default();
    }
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = (state ^ (state >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut out: Vec<u8> = (0..bytes).map(|_| next() as u8).collect();
    let d = half::f16::from_f32(0.01).to_bits();
    for block in out.chunks_exact_mut(q.block_bytes()) {
        for &at in q.f16_offsets() {
            let sign = if next() & 1 == 1 { 0x8000 } else { 0 };
            block[at..at + 2].copy_from_slice(&(d | sign).to_le_bytes());
        }
        if q == Q::IQ1M {
            let sign = if next() & 1 == 1 { 0x8000 } else { 0 };
            rlx_ir::iq1m_write_d(block, d | sign);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_deterministic_and_in_range() {
        assert_eq!(uniform(50, 3, 2.0), uniform(50, 3, 2.0));
        assert_ne!(uniform(50, 3, 2.0), uniform(50, 4, 2.0));
        assert!(uniform(1000, 9, 2.0).iter().all(|v| (-2.0..2.0).contains(v)));
    }

    #[test]
    fn params_get_values_by_role() {
        let ty = TensorType::new([48, 12], DType::F32);
        let w = param_value("encoder.layer.0.output.dense.weight", &ty, 1);
        let bound = (3.0f32 / 12.0).sqrt();
        assert!(w.iter().all(|v| v.abs() <= bound) && w.iter().any(|v| v.abs() > bound / 2.0));
        let gamma = param_value("x.LayerNorm.weight", &TensorType::new([8], DType::F32), 1);
        assert!(gamma.iter().all(|v| (0.9..1.1).contains(v)));
        let bias = param_value("x.dense.bias", &TensorType::new([8], DType::F32), 1);
        assert!(bias.iter().all(|v| v.abs() <= 0.05));
    }

    #[test]
    fn f16_params_get_f16_values() {
        let mut g = Graph::new("p");
        let x = g.input("x", &[2], DType::F32).unwrap();
        let w = g.param("w", &[2], DType::F16).unwrap();
        let w = g.cast(w, DType::F32).unwrap();
        let y = g.add(x, w).unwrap();
        g.set_outputs(&[y]).unwrap();
        let mut exe = rlx_runtime::Session::new(rlx_runtime::Device::Cpu).unwrap().compile(&g).unwrap();
        set_random_params(&mut exe, &g, 5).unwrap();
        let out = exe.run(&[("x", &[0.0f32, 0.0])]).unwrap();
        let want: Vec<f32> = param_value("w", &TensorType::new([2], DType::F16), 5)
            .iter()
            .map(|&v| f16::from_f32(v).to_f32())
            .collect();
        assert_eq!(out[0].to_f32_vec(), want);
    }
}
