//! `rlx bench`: compile a workload on each device, time `run`, print a table, write JSON.
//!
//! Per run, the end-to-end time is the wall time of `Executable::run` (upload inputs, compute,
//! read outputs back); the compute time is the device work alone as the backend reports it
//! (`Executable::profile`; on Vulkan the recorded program's submit and wait), or the end-to-end
//! time on backends whose data never moves (the CPU). Each figure is the median over the timed
//! runs, after warm-up runs. The first device's output is the reference the others are
//! compared with; the CPU is the reference for the speed ratio.

use super::bench_args::{BenchWorkload as Workload, CommonArgs, DecoderArgs, GraphArgs};
use rlx::prelude::*;
use rlx_models::random::{set_random_params, uniform};
use rlx_models::BertConfig;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// The graph workloads of `rlx bench` and the option groups they read (see
/// [`super::bench_args`]).
#[derive(Clone, Debug)]
pub struct BenchOptions<'a> {
    pub common: &'a CommonArgs,
    pub graph: &'a GraphArgs,
    pub decoder: &'a DecoderArgs,
    pub workloads: Vec<Workload>,
}

/// One measured (workload, device) pair.
#[derive(Clone, Debug)]
struct Row {
    workload: String,
    device: String,
    adapter: String,
    flops: f64,
    /// Weight bytes one run streams (the quantized matmul's), else 0.
    weight_bytes: f64,
    iters: usize,
    compile: Duration,
    compute: Duration,
    /// Whether `compute` came from the backend's profile (else it is the end-to-end time).
    compute_profiled: bool,
    e2e: Duration,
    upload: Option<Duration>,
    readback: Option<Duration>,
    /// ‖out − first device's out‖ / ‖first device's out‖ for the first output.
    rel_err: Option<f64>,
    /// Compute time on the CPU over compute time here, when both ran.
    vs_cpu: Option<f64>,
    /// The same for end-to-end times.
    vs_cpu_e2e: Option<f64>,
}

/// A workload ready to compile: the graph, its input values and how to name it.
pub(super) struct Prepared {
    pub label: String,
    pub graph: Graph,
    pub inputs: Vec<(String, Vec<f32>)>,
    pub int_inputs: Vec<(String, Vec<i32>)>,
    pub flops: f64,
    pub iters: usize,
    /// Every param's value, set instead of random ones (the quantized matmul's packed weight,
    /// an op case's data). The bytes of its U8 params are the weight bytes one run streams.
    pub params: Option<Vec<(String, Tensor)>>,
}

impl Prepared {
    /// A graph fed f32 inputs only, its params random.
    pub(super) fn new(
        label: String,
        graph: Graph,
        inputs: Vec<(String, Vec<f32>)>,
        flops: f64,
        iters: usize,
    ) -> Self {
        Prepared { label, graph, inputs, int_inputs: vec![], flops, iters, params: None }
    }
}

pub(super) fn progress(msg: &str) {
    // Straight to the handle: progress must show even when stdout is piped.
    let _ = writeln!(std::io::stderr(), "bench: {msg}");
}

/// Refuses a workload whose host-side buffers (its inputs, weights and outputs, each made on
/// the host at least once) need more than this machine's memory, before any is allocated: an
/// error naming the graph, the size and the flag to lower, never an allocation abort.
pub(super) fn check_host_room(g: &Graph, flag: &str) -> Result<(), String> {
    let inputs = g.inputs().into_iter().chain(g.params()).map(|(_, _, t)| t.storage_bytes());
    let outputs = g.outputs().iter().map(|&id| g.ty(id).map_or(u64::MAX, |t| t.storage_bytes()));
    let need = inputs.chain(outputs).fold(0u64, u64::saturating_add);
    let have = rlx_cpu::host_memory_bytes();
    if need > have {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        return Err(format!(
            "the {} workload's inputs, weights and outputs need {:.1} GiB, more than this machine's \
             {:.1} GiB of memory: lower {flag}",
            g.name(),
            gib(need),
            gib(have)
        ));
    }
    Ok(())
}

fn prepare(w: Workload, o: &BenchOptions<'_>) -> Result<Prepared, Box<dyn std::error::Error>> {
    match w {
        Workload::Ops => Err("the ops workload is prepared per case (bench_ops)".into()),
        Workload::Embed | Workload::Generate | Workload::Soak => {
            Err(format!("the {} workload has a runner of its own, not one graph", w.name()).into())
        }
        Workload::Tiny => {
            let mut g = Graph::new("tiny");
            let x = g.input("x", &[4], DType::F32)?;
            let one = g.scalar(1.0)?;
            let y = g.add(x, one)?;
            g.set_outputs(&[y])?;
            let inputs = vec![("x".to_string(), vec![1.0, 2.0, 3.0, 4.0])];
            let label = "tiny x[4]+1".into();
            Ok(Prepared::new(label, g, inputs, 4.0, o.graph.tiny_iters))
        }
        Workload::Matmul if o.graph.quant.is_some() => super::bench_quant::quant_matmul(o),
        Workload::Matmul => {
            let n = o.graph.matmul_size;
            let [m, k, n] = o.graph.matmul_shape.unwrap_or([n, n, n]);
            let mut g = Graph::new("matmul");
            let a = g.input("a", &[m, k], DType::F32)?;
            // A linear layer's weight is stored [N, K].
            let b_dims = if o.graph.matmul_transpose_b { [n, k] } else { [k, n] };
            let b = g.param("b", &b_dims, DType::F32)?;
            let c = g.matmul_t(a, b, false, o.graph.matmul_transpose_b)?;
            g.set_outputs(&[c])?;
            check_host_room(&g, "--matmul-size or --matmul-shape")?;
            let inputs = vec![("a".to_string(), uniform(m * k, 7, 1.0))];
            let flops = 2.0 * m as f64 * k as f64 * n as f64;
            let dims = if m == k && k == n { format!("{n}³") } else { format!("{m}×{k}×{n}") };
            let tb = if o.graph.matmul_transpose_b { " bᵀ" } else { "" };
            let label = format!("matmul {dims}{tb} {}{}", o.common.precision, kernel_tag(o));
            Ok(Prepared::new(label, g, inputs, flops, o.common.iters))
        }
        Workload::Attention => {
            let [b, h, s, d] = o.graph.attn_shape;
            let mut g = Graph::new("attention");
            let shape = [b, s, h, d];
            let q = g.input("q", &shape, DType::F32)?;
            let k = g.input("k", &shape, DType::F32)?;
            let v = g.input("v", &shape, DType::F32)?;
            let mask = if o.graph.attn_causal { MaskKind::Causal } else { MaskKind::None };
            let spec = AttentionSpec::new(AttnLayout::Bshd, mask);
            let y = g.attention(q, k, v, None, spec)?;
            g.set_outputs(&[y])?;
            check_host_room(&g, "--attn-shape")?;
            let n = b * s * h * d;
            let inputs = ["q", "k", "v"]
                .iter()
                .zip(21u64..)
                .map(|(name, seed)| (name.to_string(), uniform(n, seed, 1.0)))
                .collect();
            // Q·Kᵀ and P·V: 4·B·H·S²·D, about half of it under a causal mask.
            let full = 4.0 * (b * h) as f64 * (s as f64).powi(2) * d as f64;
            let flops = if o.graph.attn_causal { full / 2.0 } else { full };
            let tag = if o.graph.attn_causal { " causal" } else { "" };
            let label = format!("attn b{b}h{h}s{s}d{d}{tag} {}", o.common.precision);
            Ok(Prepared::new(label, g, inputs, flops, o.common.iters))
        }
        Workload::Bert => {
            let cfg = BertConfig { num_hidden_layers: o.graph.bert_layers, ..BertConfig::base() };
            let (batch, seq) = (o.graph.bert_batch, BERT_SEQ);
            let graph = rlx_models::encoder_graph(&cfg, batch, seq)?;
            check_host_room(&graph, "--bert-layers or --bert-batch")?;
            let x = uniform(batch * seq * cfg.hidden_size, 11, 1.0);
            let label = format!(
                "bert {}L b{batch}×s{seq} {}{}",
                cfg.num_hidden_layers,
                o.common.precision,
                kernel_tag(o)
            );
            let flops = cfg.encoder_flops(batch, seq);
            let inputs = vec![(rlx_models::bert::graph::ENCODER_INPUT.into(), x)];
            Ok(Prepared::new(label, graph, inputs, flops, o.common.iters))
        }
        Workload::Prefill => {
            let p =
                super::bench_decoder::prefill(o.decoder.shape, o.decoder.prefill_tokens, o.common.precision)?;
            let label = format!(
                "prefill {} {} tok {}",
                o.decoder.shape.name(),
                o.decoder.prefill_tokens,
                o.common.precision
            );
            Ok(Prepared {
                label,
                graph: p.graph,
                inputs: p.f32_inputs,
                int_inputs: p.i32_inputs,
                flops: p.flops,
                iters: o.common.iters,
                params: None,
            })
        }
    }
}

/// `N` positive sizes separated by `x`, e.g. "512x14336x4096".
pub fn parse_dims<const N: usize>(s: &str) -> Result<[usize; N], String> {
    let parts: Vec<&str> = s.split(['x', 'X', '×']).collect();
    if parts.len() != N {
        return Err(format!("expected {N} sizes separated by 'x', got '{s}'"));
    }
    let mut out = [0; N];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = p.trim().parse().map_err(|_| format!("'{p}' is not a size in '{s}'"))?;
        if *o == 0 {
            return Err(format!("sizes must be at least 1 in '{s}'"));
        }
    }
    Ok(out)
}

/// " [coop]" when a matmul kernel is forced, else "".
pub(super) fn kernel_tag(o: &BenchOptions<'_>) -> String {
    o.graph.matmul_kernel.map(|k| format!(" [{k}]")).unwrap_or_default()
}

/// Sequence length of the BERT workload (DESIGN.md "Benchmarks").
const BERT_SEQ: usize = 128;

/// Sets params (weights from the same generator on every device; the matmul's b included).
fn set_params(exe: &mut Executable, g: &Graph) -> Result<(), rlx::Error> {
    set_random_params(exe, g, 1000)
}

/// The median of the timed runs (the upper one of an even count); zero for none.
pub(super) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn rel_err(out: &[f32], reference: &[f32]) -> f64 {
    if out.len() != reference.len() {
        return f64::NAN;
    }
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&o, &r) in out.iter().zip(reference) {
        num += (o as f64 - r as f64).powi(2);
        den += (r as f64).powi(2);
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

/// Compiles and times one workload on one device; returns the row and the first output.
fn measure(p: &Prepared, device: Device, o: &BenchOptions<'_>) -> Result<(Row, Vec<f32>), rlx::Error> {
    let session = Session::new(device)?;
    let name = session.device().to_string();
    progress(&format!("{} on {name} ({}): compiling", p.label, session.capabilities().device_name));
    let t = Instant::now();
    let opts =
        CompileOptions { precision: o.common.precision, matmul: o.graph.matmul_kernel, ..Default::default() };
    let mut exe = session.compile_with(&p.graph, &opts)?;
    let compile = t.elapsed();
    match &p.params {
        Some(given) => {
            for (name, value) in given {
                exe.set_param(name, value)?;
            }
        }
        None => set_params(&mut exe, &p.graph)?,
    }
    let feeds: Vec<(&str, &dyn HostData)> = p
        .inputs
        .iter()
        .map(|(n, v)| (n.as_str(), v as &dyn HostData))
        .chain(p.int_inputs.iter().map(|(n, v)| (n.as_str(), v as &dyn HostData)))
        .collect();
    progress(&format!(
        "{} on {name}: compiled in {:.1} ms; {} warm-up run(s)",
        p.label,
        ms(compile),
        o.common.warmup
    ));
    let mut first = Vec::new();
    for i in 0..o.common.warmup.max(1) {
        let out = exe.run(&feeds)?;
        if i == 0 {
            first = out.first().map(Tensor::to_f32_vec).unwrap_or_default();
        }
    }
    let (mut e2e, mut compute, mut upload, mut readback) = (vec![], vec![], vec![], vec![]);
    let started = Instant::now();
    let bar = super::progress::count(&format!("{} on {name}", p.label), p.iters.max(1) as u64);
    for _ in 0..p.iters.max(1) {
        let t = Instant::now();
        exe.run(&feeds)?;
        let total = t.elapsed();
        e2e.push(total);
        match exe.profile() {
            Some(prof) => {
                compute.push(prof.compute);
                upload.push(prof.upload);
                readback.push(prof.readback);
            }
            None => compute.push(total),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let profiled = !upload.is_empty();
    progress(&format!(
        "{} on {name}: {} runs in {:.1} s",
        p.label,
        e2e.len(),
        started.elapsed().as_secs_f64()
    ));
    let row = Row {
        workload: p.label.clone(),
        device: name,
        adapter: session.capabilities().device_name.clone(),
        flops: p.flops,
        weight_bytes: p
            .params
            .iter()
            .flatten()
            .filter(|(_, t)| t.dtype() == DType::U8)
            .map(|(_, t)| t.numel() as f64)
            .sum(),
        iters: e2e.len(),
        compile,
        compute: median(compute),
        compute_profiled: profiled,
        e2e: median(e2e),
        upload: profiled.then(|| median(upload)),
        readback: profiled.then(|| median(readback)),
        rel_err: None,
        vs_cpu: None,
        vs_cpu_e2e: None,
    };
    Ok((row, first))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs every workload on every device; a device that fails is reported and skipped.
pub fn run(o: &BenchOptions<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let mut rows: Vec<Row> = Vec::new();
    let mut failures = Vec::new();
    let mut prepared = Vec::new();
    for &w in &o.workloads {
        match w {
            Workload::Ops => prepared.extend(super::bench_ops::cases(o)?.into_iter().map(|p| (w, p))),
            w => prepared.push((w, prepare(w, o)?)),
        }
    }
    for (w, p) in prepared {
        let start = rows.len();
        let mut reference: Option<Vec<f32>> = None;
        for &d in &o.common.devices {
            match measure(&p, d, o) {
                Ok((mut row, out)) => {
                    match &reference {
                        Some(r) => row.rel_err = Some(rel_err(&out, r)),
                        None => reference = Some(out),
                    }
                    rows.push(row);
                }
                Err(e) => {
                    progress(&format!("{} on {d}: skipped: {e}", p.label));
                    failures.push((w.name(), d.to_string(), e.to_string()));
                }
            }
        }
        // The speed ratio against this workload's CPU row, when the CPU ran.
        let this = &mut rows[start..];
        if let Some((compute, e2e)) = this.iter().find(|r| r.device == "cpu").map(|r| (r.compute, r.e2e)) {
            let ratio = |cpu: Duration, here: Duration| cpu.as_secs_f64() / here.as_secs_f64().max(1e-12);
            for r in this {
                r.vs_cpu = Some(ratio(compute, r.compute));
                r.vs_cpu_e2e = Some(ratio(e2e, r.e2e));
            }
        }
    }
    print_table(&rows, &failures)?;
    if let Some(path) = &o.common.json {
        std::fs::write(path, to_json(&rows, &failures, o)?)
            .map_err(|e| format!("writing the JSON report {}: {e}", path.display()))?;
        progress(&format!("wrote {}", path.display()));
    }
    Ok(())
}

fn print_table(rows: &[Row], failures: &[(String, String, String)]) -> std::io::Result<()> {
    let header = [
        "workload",
        "device",
        "compute ms",
        "e2e ms",
        "TFLOP/s",
        "weight GB/s",
        "vs cpu",
        "rel err",
        "compile ms",
    ];
    let mut table = super::table::plain(&header, &[2, 3, 4, 5, 6, 7, 8]);
    for r in rows {
        let tflops = if r.flops > 1e6 {
            format!("{:.4}", r.flops / r.compute.as_secs_f64() / 1e12)
        } else {
            "-".into()
        };
        let vs = r.vs_cpu.map_or("-".to_string(), |v| format!("{v:.2}x"));
        let err = r.rel_err.map_or("-".to_string(), |e| format!("{e:.1e}"));
        let gbs = weight_gbps(r).map_or("-".to_string(), |g| format!("{g:.1}"));
        let compute = format!("{:.3}{}", ms(r.compute), if r.compute_profiled { "" } else { "*" });
        table.add_row(vec![
            r.workload.clone(),
            r.device.clone(),
            compute,
            format!("{:.3}", ms(r.e2e)),
            tflops,
            gbs,
            vs,
            err,
            format!("{:.1}", ms(r.compile)),
        ]);
    }
    let mut out = super::stdout::stdout();
    out.write_all(super::table::render(&table).as_bytes())?;
    writeln!(out)?;
    writeln!(out, "medians; * = no separate device time (the CPU): compute is the end-to-end time")?;
    writeln!(out, "vs cpu = cpu compute time / this compute time (the JSON also has the end-to-end ratio)")?;
    writeln!(out, "rel err = ‖out − first device's out‖ / ‖first device's out‖")?;
    writeln!(out, "weight GB/s = bytes of the quantized weight / compute time (quantized matmul only)")?;
    let mut adapters: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !adapters.contains(&(r.device.as_str(), r.adapter.as_str())) {
            adapters.push((r.device.as_str(), r.adapter.as_str()));
        }
    }
    for (device, adapter) in adapters {
        writeln!(out, "{device}: {adapter}")?;
    }
    for (w, d, e) in failures {
        writeln!(out, "skipped {w} on {d}: {e}")?;
    }
    out.flush()
}

/// Weight bytes streamed per second of compute, in GB/s (the quantized matmul's rows only).
fn weight_gbps(r: &Row) -> Option<f64> {
    (r.weight_bytes > 0.0).then(|| r.weight_bytes / r.compute.as_secs_f64().max(1e-12) / 1e9)
}

/// A JSON number, `null` when not finite or absent.
fn jn(v: Option<f64>) -> serde_json::Value {
    v.filter(|x| x.is_finite()).map_or(serde_json::Value::Null, Into::into)
}

fn to_json(
    rows: &[Row],
    failures: &[(String, String, String)],
    o: &BenchOptions<'_>,
) -> Result<String, serde_json::Error> {
    use serde_json::json;
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let tflops = (r.flops > 1e6).then(|| r.flops / r.compute.as_secs_f64() / 1e12);
            json!({
                "workload": r.workload,
                "device": r.device,
                "adapter": r.adapter,
                "iters": r.iters,
                "flops": jn(Some(r.flops)),
                "compile_ms": jn(Some(ms(r.compile))),
                "compute_ms": jn(Some(ms(r.compute))),
                "compute_profiled": r.compute_profiled,
                "e2e_ms": jn(Some(ms(r.e2e))),
                "upload_ms": jn(r.upload.map(ms)),
                "readback_ms": jn(r.readback.map(ms)),
                "tflops": jn(tflops),
                "vs_cpu_compute": jn(r.vs_cpu),
                "vs_cpu_e2e": jn(r.vs_cpu_e2e),
                "rel_err": jn(r.rel_err),
                "weight_gbps": jn(weight_gbps(r)),
            })
        })
        .collect();
    let skipped: Vec<serde_json::Value> =
        failures.iter().map(|(w, d, e)| json!({"workload": w, "device": d, "error": e})).collect();
    let when = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let report = json!({
        "unix_time": when,
        "warmup": o.common.warmup,
        "bert_layers": o.graph.bert_layers,
        "bert_batch": o.graph.bert_batch,
        "matmul_size": o.graph.matmul_size,
        "rows": rows,
        "skipped": skipped,
    });
    serde_json::to_string_pretty(&report).map(|text| text + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_are_null_when_not_finite() {
        assert_eq!(jn(Some(1.5)).to_string(), "1.5");
        assert_eq!(jn(Some(f64::NAN)).to_string(), "null");
        assert_eq!(jn(None).to_string(), "null");
    }

    #[test]
    fn medians_and_errors() {
        let d = |x| Duration::from_millis(x);
        assert_eq!(median(vec![d(5), d(1), d(3)]), d(3));
        assert_eq!(median(vec![]), Duration::ZERO);
        assert_eq!(rel_err(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        assert!((rel_err(&[3.0, 4.0], &[0.0, 5.0]) - (10f64).sqrt() / 5.0).abs() < 1e-12);
        assert!(rel_err(&[1.0], &[1.0, 2.0]).is_nan());
    }

    #[test]
    fn dims_parse_or_say_why() {
        assert_eq!(parse_dims::<3>("512x14336x4096"), Ok([512, 14336, 4096]));
        assert_eq!(parse_dims::<4>("32×12×128×64"), Ok([32, 12, 128, 64]));
        assert!(parse_dims::<3>("4x4").unwrap_err().contains("expected 3"));
        assert!(parse_dims::<3>("4x0x4").unwrap_err().contains("at least 1"));
        assert!(parse_dims::<3>("4xax4").unwrap_err().contains("'a'"));
    }

    #[test]
    fn bert_base_flops() {
        // 12 × (4·2·1024·768² + 2·2·1024·768·3072 + 2·2·96·128²·64) by hand.
        let f = BertConfig::base().encoder_flops(8, BERT_SEQ);
        let by_hand = 12.0
            * (4.0 * 2.0 * 1024.0 * 589_824.0 + 4.0 * 1024.0 * 768.0 * 3072.0 + 4.0 * 96.0 * 16_384.0 * 64.0);
        assert_eq!(f, by_hand);
    }
}
