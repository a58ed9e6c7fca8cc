//! Device ranking for `Device::Auto`: what a graph costs ([`GraphStats`]), what a device
//! delivers ([`Calibration`]), and the estimated time that orders the devices ([`rank`]).
//!
//! The model is deliberately simple: a run costs a fixed launch overhead, plus one dispatch per
//! step, plus its matmul-class flops at the measured matmul rate, plus every tensor it touches at
//! the measured bandwidth. It cannot predict absolute times well, but it orders devices the way
//! that matters: tiny graphs go where launching is cheap, big ones where compute is fast.

use crate::device::Device;
use rlx_ir::{Graph, TensorType};
use serde::{Deserialize, Serialize};

/// What a device delivers, measured by `calibrate`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// f32 matmul rate, GFLOP/s.
    pub gflops: f64,
    /// Elementwise bandwidth (bytes read plus written), GB/s.
    pub gbps: f64,
    /// Cost of one more step in a run, µs.
    pub dispatch_us: f64,
    /// Fixed cost of one `run` of a one-step graph (submit, wait, tiny readback), µs.
    pub launch_us: f64,
}

/// The cost drivers of one run of a graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphStats {
    /// Flops of the matmul-class ops (matmul, attention, convolution, ...), as each op family
    /// counts them ([`rlx_ir::infer::flops`]); others are bandwidth-bound and counted in `bytes`.
    pub flops: f64,
    /// Sum of the sizes of every tensor in the graph (leaves included).
    pub bytes: f64,
    /// Nodes that compute something (not inputs, params or constants).
    pub steps: usize,
}

impl GraphStats {
    /// The statistics of `g`, from its shapes alone.
    pub fn of(g: &Graph) -> GraphStats {
        let mut stats = GraphStats { flops: 0.0, bytes: 0.0, steps: 0 };
        for node in g.nodes() {
            stats.bytes += node.ty.size_bytes() as f64;
            if node.op.is_leaf() {
                continue;
            }
            stats.steps += 1;
            let inputs: Vec<&TensorType> = node.inputs.iter().filter_map(|&id| g.ty(id).ok()).collect();
            stats.flops += rlx_ir::infer::flops(&node.op, &inputs, &node.ty);
        }
        stats
    }

    /// What `Session::new(Device::Auto)` ranks for, having no graph yet: one BERT-base encoder
    /// layer at batch 1, sequence 128 (about 1.9 GFLOP over 34 MB in 20 steps).
    pub fn representative() -> GraphStats {
        let (s, h, f) = (128.0, 768.0, 3072.0);
        let projections = 2.0 * s * h * h * 4.0;
        let ffn = 2.0 * s * h * f * 2.0;
        let attention = 2.0 * 2.0 * s * s * h;
        let weights = (4.0 * h * h + 2.0 * h * f) * 4.0;
        let activations = (8.0 * s * h + 2.0 * s * f) * 4.0;
        GraphStats { flops: projections + ffn + attention, bytes: weights + activations, steps: 20 }
    }
}

/// Estimated seconds for one run of a graph with `stats` on a device with calibration `c`.
/// A calibration with a non-positive or non-finite rate gives infinity (never chosen).
pub fn estimate_seconds(c: &Calibration, stats: &GraphStats) -> f64 {
    let valid = |x: f64| x.is_finite() && x > 0.0;
    let valid_cost = |x: f64| x.is_finite() && x >= 0.0;
    if !(valid(c.gflops) && valid(c.gbps) && valid_cost(c.dispatch_us) && valid_cost(c.launch_us)) {
        return f64::INFINITY;
    }
    stats.flops / (c.gflops * 1e9)
        + stats.bytes / (c.gbps * 1e9)
        + (stats.steps as f64 * c.dispatch_us + c.launch_us) * 1e-6
}

/// The devices of `estimates` ordered by estimated seconds for `stats`, fastest first. Ties keep
/// the order of `estimates`, so listing the preferred device first breaks them.
pub fn rank(estimates: &[(Device, Calibration)], stats: &GraphStats) -> Vec<(Device, f64)> {
    let mut ranked: Vec<(Device, f64)> =
        estimates.iter().map(|(d, c)| (*d, estimate_seconds(c, stats))).collect();
    ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{AttentionSpec, AttnLayout, DType, MaskKind};

    /// Roughly an H100 through wgpu: very fast, but each step and run costs a few µs.
    const REAL_GPU: Calibration =
        Calibration { gflops: 20_000.0, gbps: 2_000.0, dispatch_us: 4.0, launch_us: 40.0 };
    /// lavapipe: a GPU API on the CPU's own cores, slower than the CPU backend at everything.
    const LAVAPIPE: Calibration =
        Calibration { gflops: 15.0, gbps: 5.0, dispatch_us: 20.0, launch_us: 300.0 };
    /// A laptop-class CPU.
    const CPU: Calibration = Calibration { gflops: 100.0, gbps: 20.0, dispatch_us: 0.3, launch_us: 2.0 };

    fn matmul_graph(n: usize) -> Graph {
        let mut g = Graph::new("mm");
        let a = g.input("a", &[n, n], DType::F32).unwrap();
        let b = g.param("b", &[n, n], DType::F32).unwrap();
        let c = g.matmul(a, b).unwrap();
        g.set_outputs(&[c]).unwrap();
        g
    }

    fn chain_graph(steps: usize) -> Graph {
        let mut g = Graph::new("chain");
        let mut x = g.input("x", &[4], DType::F32).unwrap();
        for _ in 0..steps {
            x = g.relu(x).unwrap();
        }
        g.set_outputs(&[x]).unwrap();
        g
    }

    #[test]
    fn stats_count_matmul_flops_bytes_and_steps() {
        let s = GraphStats::of(&matmul_graph(64));
        assert_eq!(s.flops, 2.0 * 64.0 * 64.0 * 64.0);
        assert_eq!(s.bytes, 3.0 * 64.0 * 64.0 * 4.0);
        assert_eq!(s.steps, 1);

        // [2, 3, 5] x [5, 7] with a transposed: a is [2, 5, 3], K = 5.
        let mut g = Graph::new("t");
        let a = g.input("a", &[2, 5, 3], DType::F32).unwrap();
        let b = g.input("b", &[5, 7], DType::F32).unwrap();
        let c = g.matmul_t(a, b, true, false).unwrap();
        g.set_outputs(&[c]).unwrap();
        let s = GraphStats::of(&g);
        assert_eq!(s.flops, 2.0 * (2 * 3 * 7) as f64 * 5.0);

        let s = GraphStats::of(&chain_graph(1000));
        assert_eq!((s.flops, s.steps), (0.0, 1000));
        assert_eq!(s.bytes, 1001.0 * 16.0);
    }

    #[test]
    fn stats_count_attention_flops() {
        // B=2, S=8 (both), H=3, D=4: q·kᵀ and p·v are 2·B·H·S·S·D each.
        let mut g = Graph::new("attn");
        let q = g.input("q", &[2, 8, 3, 4], DType::F32).unwrap();
        let k = g.input("k", &[2, 8, 3, 4], DType::F32).unwrap();
        let v = g.input("v", &[2, 8, 3, 4], DType::F32).unwrap();
        let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::None);
        let o = g.attention(q, k, v, None, spec).unwrap();
        g.set_outputs(&[o]).unwrap();
        let s = GraphStats::of(&g);
        assert_eq!(s.flops, 2.0 * 2.0 * (2 * 3 * 8 * 8 * 4) as f64);
        assert_eq!(s.steps, 1);
    }

    #[test]
    fn estimate_adds_the_four_costs() {
        let c = Calibration { gflops: 1.0, gbps: 2.0, dispatch_us: 3.0, launch_us: 5.0 };
        let s = GraphStats { flops: 1e9, bytes: 4e9, steps: 10 };
        assert!((estimate_seconds(&c, &s) - (1.0 + 2.0 + 35e-6)).abs() < 1e-12);
        for bad in [
            Calibration { gflops: 0.0, ..c },
            Calibration { gbps: f64::NAN, ..c },
            Calibration { dispatch_us: -1.0, ..c },
            Calibration { launch_us: f64::INFINITY, ..c },
        ] {
            assert_eq!(estimate_seconds(&bad, &s), f64::INFINITY, "{bad:?}");
        }
    }

    #[test]
    fn big_matmul_picks_the_fast_gpu() {
        let stats = GraphStats::of(&matmul_graph(4096));
        let ranked = rank(&[(Device::Cpu, CPU), (Device::Gpu, REAL_GPU)], &stats);
        assert_eq!(ranked[0].0, Device::Gpu, "{ranked:?}");
        assert!(ranked[0].1 < ranked[1].1);
    }

    #[test]
    fn tiny_graph_with_many_steps_prefers_the_lowest_dispatch_cost() {
        let stats = GraphStats::of(&chain_graph(1000));
        let ranked = rank(&[(Device::Gpu, REAL_GPU), (Device::Cpu, CPU)], &stats);
        assert_eq!(ranked[0].0, Device::Cpu, "{ranked:?}");
        // Between two GPUs equal but for the dispatch cost, the cheaper one wins too.
        let cheap = Calibration { dispatch_us: 1.0, ..REAL_GPU };
        let ranked = rank(&[(Device::Gpu, REAL_GPU), (Device::Vulkan, cheap)], &stats);
        assert_eq!(ranked[0].0, Device::Vulkan, "{ranked:?}");
    }

    #[test]
    fn software_adapter_loses_to_a_real_gpu() {
        for stats in [GraphStats::of(&matmul_graph(1024)), GraphStats::representative()] {
            let ranked =
                rank(&[(Device::Gpu, LAVAPIPE), (Device::Vulkan, REAL_GPU), (Device::Cpu, CPU)], &stats);
            let order: Vec<Device> = ranked.iter().map(|r| r.0).collect();
            assert_eq!(order, vec![Device::Vulkan, Device::Cpu, Device::Gpu], "{ranked:?}");
        }
    }

    #[test]
    fn without_a_gpu_the_cpu_wins() {
        let stats = GraphStats::of(&matmul_graph(4096));
        assert_eq!(rank(&[(Device::Cpu, CPU)], &stats)[0].0, Device::Cpu);
        let ranked = rank(&[(Device::Gpu, LAVAPIPE), (Device::Cpu, CPU)], &stats);
        assert_eq!(ranked[0].0, Device::Cpu, "{ranked:?}");
        assert!(rank(&[], &stats).is_empty());
    }

    #[test]
    fn ties_keep_input_order_and_broken_calibrations_go_last() {
        let stats = GraphStats::representative();
        let ranked = rank(&[(Device::Vulkan, REAL_GPU), (Device::Gpu, REAL_GPU)], &stats);
        assert_eq!((ranked[0].0, ranked[1].0), (Device::Vulkan, Device::Gpu));
        let broken = Calibration { gflops: f64::NAN, ..REAL_GPU };
        let ranked = rank(&[(Device::Vulkan, broken), (Device::Cpu, CPU)], &stats);
        assert_eq!(ranked[0].0, Device::Cpu);
        assert_eq!(ranked[1].1, f64::INFINITY);
    }

    #[test]
    fn representative_workload_is_a_bert_layer() {
        let s = GraphStats::representative();
        assert!((1.8e9..2.0e9).contains(&s.flops), "{s:?}");
        assert!((30e6..40e6).contains(&s.bytes), "{s:?}");
        // On it a real GPU beats the CPU, and the CPU beats lavapipe.
        assert!(estimate_seconds(&REAL_GPU, &s) < estimate_seconds(&CPU, &s));
        assert!(estimate_seconds(&CPU, &s) < estimate_seconds(&LAVAPIPE, &s));
    }
}
