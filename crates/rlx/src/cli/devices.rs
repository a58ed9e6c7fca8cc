//! `rlx devices`: the backend registry as a table, then the details of each available device.

use rlx::prelude::{devices, Device, Session};

pub fn run() {
    let all = devices();
    println!("{:<14} {:<10} reason", "device", "available");
    for s in &all {
        let label = match s.device {
            Device::Gpu => format!("{} ({})", s.device, s.backend),
            d => d.to_string(),
        };
        let available = if s.available { "yes" } else { "no" };
        println!("{:<14} {:<10} {}", label, available, s.reason.as_deref().unwrap_or("-"));
    }
    for s in all.iter().filter(|s| s.available) {
        println!();
        println!("{}:", s.device);
        let width = s.details.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in &s.details {
            println!("  {k:<width$}  {v}");
        }
    }
    println!();
    // What `Device::Auto` picks here, RLX_DEVICE included.
    match Session::new(Device::Auto) {
        Ok(s) => println!("auto selects: {}", s.device()),
        Err(e) => println!("auto selects nothing: {e}"),
    }
}
