//! The `ops` workload of `rlx bench`: the op families' benchmark cases
//! (`rlx_parity::bench_cases`), each on its own seeded data. `parity --bench-cases --dump DIR`
//! writes the same data for `scripts/check_ops_gpu_host.py bench DIR`, which times torch on it,
//! so the two timings are of one computation on one set of numbers.

use super::bench::{BenchOptions, Prepared};
use rlx::prelude::*;

/// One [`Prepared`] per benchmark case whose name contains `--case` (all without it). Float
/// inputs go in as f32, integer ones as i32; params are the case's own values.
pub(super) fn cases(o: &BenchOptions<'_>) -> Result<Vec<Prepared>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for case in rlx_parity::bench_cases() {
        if o.graph.case_filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let built = case.instantiate()?;
        let (mut inputs, mut int_inputs) = (Vec::new(), Vec::new());
        for (name, t) in built.inputs {
            match t.dtype() {
                DType::F32 => inputs.push((name, t.to_f32_vec())),
                DType::I32 => int_inputs.push((name, t.as_i32().unwrap_or_default().to_vec())),
                d => {
                    return Err(format!(
                        "bench case {}: input {name} is {d}; the ops workload feeds f32 and i32 inputs",
                        case.name
                    )
                    .into())
                }
            }
        }
        out.push(Prepared {
            label: case.name.clone(),
            graph: built.graph,
            inputs,
            int_inputs,
            flops: 0.0,
            iters: o.common.iters,
            params: Some(built.params),
        });
    }
    if out.is_empty() {
        let names: Vec<String> = rlx_parity::bench_cases().into_iter().map(|c| c.name).collect();
        return Err(format!(
            "no benchmark case matches --case {:?}; the cases are: {}",
            o.graph.case_filter.as_deref().unwrap_or(""),
            names.join(", ")
        )
        .into());
    }
    Ok(out)
}
