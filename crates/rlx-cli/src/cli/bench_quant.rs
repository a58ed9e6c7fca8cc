//! The quantized matmul workload of `rlx bench` (`--quant`): x [M, K] times a weight [N, K] of
//! random valid blocks kept packed on the device (`QuantMatMul`), reported with the weight
//! bytes it streams.

use super::bench::{kernel_tag, BenchOptions, Prepared};
use rlx::prelude::*;
use rlx_models::random::{quant_blocks, uniform};

/// The matmul workload on a quantized weight: x [M, K] (input) · dequant(w)ᵀ, w [N, K] of
/// random valid blocks (finite f16 scales of 0.01).
pub(super) fn quant_matmul(o: &BenchOptions<'_>) -> Result<Prepared, Box<dyn std::error::Error>> {
    let q = o.graph.quant.ok_or("quant_matmul needs --quant")?;
    let n = o.graph.matmul_size;
    let [m, k, n] = o.graph.matmul_shape.unwrap_or([1, n, n]);
    let row_bytes = q.byte_len(k).map_err(|e| format!("--matmul-shape: K = {k}: {e}"))?;
    let mut g = Graph::new("quant_matmul");
    let a = g.input("a", &[m, k], DType::F32)?;
    let w = g.param("b", &[n, row_bytes], DType::U8)?;
    let c = g.quant_matmul(a, w, q)?;
    g.set_outputs(&[c])?;
    super::bench::check_host_room(&g, "--matmul-size or --matmul-shape")?;
    let inputs = vec![("a".to_string(), uniform(m * k, 7, 1.0))];
    let blocks = quant_blocks(q, n * row_bytes, 17);
    let label = format!("matmul {m}×{k}×{n} {q}{}", kernel_tag(o));
    let flops = 2.0 * m as f64 * k as f64 * n as f64;
    Ok(Prepared {
        params: Some(vec![("b".into(), Tensor::from_u8(&[n, row_bytes][..], blocks)?)]),
        ..Prepared::new(label, g, inputs, flops, o.common.iters)
    })
}
