//! The quantized matmul workload of `rlx bench` (`--quant`): x [M, K] times a weight [N, K] of
//! random valid blocks kept packed on the device (`QuantMatMul`), reported with the weight
//! bytes it streams.

use super::bench::{kernel_tag, BenchOptions, Prepared};
use rlx::prelude::*;
use rlx_models::random::uniform;

/// The matmul workload on a quantized weight: x [M, K] (input) · dequant(w)ᵀ, w [N, K] of
/// random valid blocks (finite f16 scales of 0.01).
pub(super) fn quant_matmul(o: &BenchOptions) -> Result<Prepared, Box<dyn std::error::Error>> {
    let q = o.quant.ok_or("quant_matmul needs --quant")?;
    let n = o.matmul_size;
    let [m, k, n] = o.matmul_shape.unwrap_or([1, n, n]);
    let row_bytes = q.byte_len(k).map_err(|e| format!("--matmul-shape: K = {k}: {e}"))?;
    let mut g = Graph::new("quant_matmul");
    let a = g.input("a", &[m, k], DType::F32)?;
    let w = g.param("b", &[n, row_bytes], DType::U8)?;
    let c = g.quant_matmul(a, w, q)?;
    g.set_outputs(&[c])?;
    let inputs = vec![("a".to_string(), uniform(m * k, 7, 1.0))];
    let blocks = quant_blocks(q, n * row_bytes, 17);
    let label = format!("matmul {m}×{k}×{n} {q}{}", kernel_tag(o));
    Ok(Prepared {
        label,
        graph: g,
        inputs,
        int_inputs: vec![],
        flops: 2.0 * m as f64 * k as f64 * n as f64,
        iters: o.iters,
        packed: Some(("b".into(), blocks)),
    })
}

/// `bytes` bytes of random `q` blocks with every f16 scale set to ±0.01 (splitmix64 bytes).
fn quant_blocks(q: rlx_ir::QuantType, bytes: usize, seed: u64) -> Vec<u8> {
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
    }
    out
}
