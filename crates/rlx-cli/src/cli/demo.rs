//! `rlx demo`: a small MLP (x[2, 4] → linear(8) → gelu → linear(3) → softmax) with deterministic
//! parameters, run on the chosen device and checked against the same graph compiled with every
//! optional pass off.

use rlx::prelude::*;
use std::io::Write as _;

const IN: usize = 4;
const HIDDEN: usize = 8;
const CLASSES: usize = 3;
const BATCH: usize = 2;

/// Deterministic values in [-scale, scale]: a fixed sine pattern, so every run prints the same.
fn pattern(n: usize, phase: f32, scale: f32) -> Vec<f32> {
    (0..n).map(|i| scale * (0.7 * i as f32 + phase).sin()).collect()
}

fn build() -> Result<Graph, Error> {
    let mut g = Graph::new("demo_mlp");
    let x = g.input("x", &[BATCH, IN], DType::F32)?;
    let w1 = g.param("w1", &[HIDDEN, IN], DType::F32)?;
    let b1 = g.param("b1", &[HIDDEN], DType::F32)?;
    let w2 = g.param("w2", &[CLASSES, HIDDEN], DType::F32)?;
    let b2 = g.param("b2", &[CLASSES], DType::F32)?;
    let h = g.linear(x, w1, Some(b1))?;
    let h = g.gelu(h)?;
    let logits = g.linear(h, w2, Some(b2))?;
    let probs = g.softmax(logits, -1)?;
    g.set_outputs(&[probs])?;
    Ok(g)
}

fn compile_and_run(
    session: &Session,
    g: &Graph,
    opts: &CompileOptions,
) -> Result<(Executable, Tensor), Error> {
    let mut exe = session.compile_with(g, opts)?;
    exe.set_param("w1", &pattern(HIDDEN * IN, 0.1, 0.5))?;
    exe.set_param("b1", &pattern(HIDDEN, 1.3, 0.1))?;
    exe.set_param("w2", &pattern(CLASSES * HIDDEN, 2.9, 0.5))?;
    exe.set_param("b2", &pattern(CLASSES, 0.4, 0.1))?;
    let x: Vec<f32> = (0..BATCH * IN).map(|i| (i as f32 - 3.5) / 2.0).collect();
    let mut out = exe.run(&[("x", &x)])?;
    // One output was declared; the runtime checks the backend returned exactly that.
    let probs = out.swap_remove(0);
    Ok((exe, probs))
}

pub fn run(device: Device, show_graph: bool) -> Result<(), Box<dyn std::error::Error>> {
    let session = Session::new(device)?;
    let g = build()?;
    let (exe, probs) = compile_and_run(&session, &g, &CompileOptions::default())?;
    let reference_session = Session::new(Device::Cpu)?;
    let none = CompileOptions { passes: PassOptions::none(), ..Default::default() };
    let (_, reference) = compile_and_run(&reference_session, &g, &none)?;

    let mut out = super::stdout::stdout();
    writeln!(
        out,
        "rlx demo: x[{BATCH}, {IN}] -> linear({HIDDEN}) -> gelu -> linear({CLASSES}) -> softmax, on {}",
        session.device()
    )?;
    writeln!(
        out,
        "graph '{}': {} nodes as built, {} after optimization",
        g.name(),
        g.len(),
        exe.graph().len()
    )?;
    writeln!(out)?;
    write!(out, "{:<5}", "row")?;
    for c in 0..CLASSES {
        write!(out, " {:>10}", format!("class {c}"))?;
    }
    writeln!(out, " {:>10}", "sum")?;
    let values = probs.to_f32_vec();
    for (r, row) in values.chunks(CLASSES).enumerate() {
        write!(out, "{r:<5}")?;
        for p in row {
            write!(out, " {p:>10.6}")?;
        }
        writeln!(out, " {:>10.6}", row.iter().sum::<f32>())?;
    }
    // NaN on either side counts as an infinite difference (f32::max alone would hide it).
    let diff = values
        .iter()
        .zip(reference.to_f32_vec())
        .map(|(a, b)| if a.is_nan() || b.is_nan() { f32::INFINITY } else { (a - b).abs() })
        .fold(0.0f32, f32::max);
    writeln!(out)?;
    writeln!(out, "check: max |optimized - unoptimized cpu reference| = {diff:.3e}")?;
    if show_graph {
        writeln!(out)?;
        writeln!(out, "optimized graph:")?;
        write!(out, "{}", dump(exe.graph()))?;
    }
    out.flush()?;
    Ok(())
}
