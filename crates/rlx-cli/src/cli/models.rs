//! `rlx models`: what the caches hold (rlx's own model folders and the Hugging Face hub cache)
//! as a table of name, revision, size and path; `rlx models --remove NAME` deletes one entry.

use super::stdout::stdout;
use super::table;
use rlx_models::hub_cache;
use std::io::Write as _;

/// `rlx models [--remove NAME]`.
pub fn run(remove: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(name) = remove {
        let dir = hub_cache::remove_cached(name)?;
        writeln!(stdout(), "removed {name} ({})", dir.display())?;
        return Ok(());
    }
    let models = hub_cache::list_cached()?;
    if models.is_empty() {
        let rlx = rlx_models::fetch::models_cache_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|e| e.to_string());
        let hub = rlx_models::HubOptions::from_env()?.cache;
        writeln!(stdout(), "no models cached (looked in {rlx} and {})", hub.display())?;
        return Ok(());
    }
    let mut t = table::plain(&["name", "revision", "size", "path"], &[2]);
    for m in &models {
        t.add_row(vec![m.name.clone(), m.revision.clone(), size(m.bytes), m.path.display().to_string()]);
    }
    stdout().write_all(table::render(&t).as_bytes())?;
    Ok(())
}

/// Bytes as MB with one decimal (KB below one MB).
fn size(bytes: u64) -> String {
    if bytes < 1_000_000 {
        format!("{:.1} KB", bytes as f64 / 1e3)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_in_kb_or_mb() {
        assert_eq!(super::size(1_500), "1.5 KB");
        assert_eq!(super::size(22_700_000), "22.7 MB");
    }
}
