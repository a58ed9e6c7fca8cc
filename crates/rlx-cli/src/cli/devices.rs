//! `rlx devices`: the backend registry as a table, then the details and calibration of each
//! available device. `--calibrate` measures every available device first (progress on stderr).

use rlx::prelude::{devices, Device, Session};
use rlx::runtime::{cached_ranking, calibrate_device, calibration_path, Calibration, GraphStats};
use std::io::Write as _;

pub fn run(calibrate: bool) -> std::io::Result<()> {
    if calibrate {
        calibrate_all();
    }
    let all = devices();
    let mut out = super::stdout::stdout();
    let mut table = super::table::plain(&["device", "available", "reason"], &[]);
    for s in &all {
        let label = match s.device {
            Device::Gpu => format!("{} ({})", s.device, s.backend),
            d => d.to_string(),
        };
        let available = if s.available { "yes" } else { "no" };
        table.add_row(vec![label.as_str(), available, s.reason.as_deref().unwrap_or("-")]);
    }
    out.write_all(super::table::render(&table).as_bytes())?;
    for s in all.iter().filter(|s| s.available) {
        writeln!(out)?;
        writeln!(out, "{}:", s.device)?;
        let mut rows = s.details.clone();
        rows.push(("calibration".to_string(), calibration_text(s.calibration.as_ref())));
        if s.software {
            rows.push(("auto".to_string(), "never selects it (a GPU API on the CPU's cores)".to_string()));
        }
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in &rows {
            writeln!(out, "  {k:<width$}  {v}")?;
        }
    }
    writeln!(out)?;
    let cache =
        calibration_path().map_or_else(|| "none ($HOME unset)".to_string(), |p| p.display().to_string());
    writeln!(out, "calibration cache: {cache}")?;
    let ranking = cached_ranking(&GraphStats::representative());
    if !ranking.is_empty() {
        let listed: Vec<String> =
            ranking.iter().map(|(d, secs)| format!("{d} {:.2} ms", secs * 1e3)).collect();
        writeln!(out, "estimated time of one BERT-base layer (b1 s128): {}", listed.join(", "))?;
    }
    // What `Device::Auto` picks here, RLX_DEVICE included.
    match Session::new(Device::Auto) {
        Ok(s) => writeln!(out, "auto selects: {}", s.device())?,
        Err(e) => writeln!(out, "auto selects nothing: {e}")?,
    }
    out.flush()
}

fn calibration_text(c: Option<&Calibration>) -> String {
    match c {
        Some(c) => format!(
            "{:.1} GFLOP/s matmul, {:.1} GB/s, {:.2} µs/step, {:.1} µs/run",
            c.gflops, c.gbps, c.dispatch_us, c.launch_us
        ),
        None => {
            "not measured yet (auto measures it when it needs it; `rlx devices --calibrate` now)".to_string()
        }
    }
}

/// Measures every available device, with a progress bar per device on stderr (drawn only on a
/// terminal) and one line per device when it is done.
fn calibrate_all() {
    let available: Vec<Device> = devices().into_iter().filter(|s| s.available).map(|s| s.device).collect();
    let total = available.len();
    for (i, device) in available.into_iter().enumerate() {
        let bar = super::progress::fraction(&format!("calibrating {device} ({}/{total})", i + 1));
        let result = calibrate_device(device, &mut |f| super::progress::set_fraction(&bar, f));
        bar.finish_and_clear();
        let mut err = std::io::stderr();
        let _ = match result {
            Ok(_) => writeln!(err, "calibrated {device}"),
            Err(e) => writeln!(err, "{device}: calibration failed: {e}"),
        };
    }
}
