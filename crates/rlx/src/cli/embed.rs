//! `rlx embed`: sentence embeddings with all-MiniLM-L6-v2 (or a model
//! folder given with --model-dir). Embeddings go to stdout; everything else to stderr.

use super::fetch::resolve_embedder;
use rlx::prelude::{Device, Precision};
use rlx_models::{Embedder, EmbedderOptions};
use std::io::{BufRead, Write as _};
use std::path::{Path, PathBuf};

/// How `rlx embed` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON array of arrays: one embedding per sentence, in order.
    Json,
    /// One line per sentence: the values separated by spaces.
    Text,
}

/// Options of `rlx embed`.
#[derive(Clone, Debug)]
pub struct EmbedOptions {
    pub device: Device,
    pub format: Format,
    pub batch: usize,
    pub precision: Precision,
    pub model_dir: Option<PathBuf>,
    pub revision: Option<String>,
    pub file: Option<PathBuf>,
    pub sentences: Vec<String>,
}

/// Lines of `path` (`-` reads stdin), one sentence each.
fn read_lines(path: &Path) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let lines = if path == Path::new("-") {
        std::io::stdin().lock().lines().collect::<Result<Vec<_>, _>>()
    } else {
        let f = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        std::io::BufReader::new(f).lines().collect::<Result<Vec<_>, _>>()
    };
    lines.map_err(|e| format!("reading {}: {e}", path.display()).into())
}

/// The lines that hold text (an empty or all-whitespace line is no sentence) and how many
/// were left out.
fn skip_blank(lines: Vec<String>) -> (Vec<String>, usize) {
    let total = lines.len();
    let kept: Vec<String> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
    let blank = total - kept.len();
    (kept, blank)
}

pub fn load(
    device: Device,
    batch: usize,
    precision: Precision,
    model_dir: Option<PathBuf>,
    revision: Option<&str>,
) -> Result<Embedder, Box<dyn std::error::Error>> {
    let dir = resolve_embedder(model_dir.as_deref(), revision)?;
    let opts = EmbedderOptions { batch_size: batch, precision, ..EmbedderOptions::default() };
    let emb = Embedder::load(&dir, device, opts)?;
    eprintln!("model {} on {}", dir.display(), emb.device());
    Ok(emb)
}

/// Writes `v` as JSON numbers (shortest round-trip form; a non-finite value, which a correct
/// model never gives, becomes null so the output stays valid JSON).
fn json_row(out: &mut String, v: &[f32]) {
    out.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if x.is_finite() {
            out.push_str(&format!("{x}"));
        } else {
            out.push_str("null");
        }
    }
    out.push(']');
}

/// Formats the embeddings for stdout.
pub fn render(embeddings: &[Vec<f32>], format: Format) -> String {
    let mut out = String::new();
    match format {
        Format::Json => {
            out.push('[');
            for (i, e) in embeddings.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_row(&mut out, e);
            }
            out.push_str("]\n");
        }
        Format::Text => {
            for e in embeddings {
                let line: Vec<String> = e.iter().map(|x| format!("{x}")).collect();
                out.push_str(&line.join(" "));
                out.push('\n');
            }
        }
    }
    out
}

/// `rlx embed`.
pub fn run(o: EmbedOptions) -> Result<(), Box<dyn std::error::Error>> {
    let mut sentences = match &o.file {
        Some(f) => {
            let (lines, blank) = skip_blank(read_lines(f)?);
            if blank > 0 {
                eprintln!(
                    "skipped {blank} blank line{} of {}",
                    if blank == 1 { "" } else { "s" },
                    f.display()
                );
            }
            lines
        }
        None => Vec::new(),
    };
    sentences.extend(o.sentences.iter().cloned());
    if sentences.is_empty() {
        return Err("no sentences: pass them as arguments or with --file F (one per line)".into());
    }
    if o.batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    let mut emb = load(o.device, o.batch, o.precision, o.model_dir, o.revision.as_deref())?;
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let start = std::time::Instant::now();
    let embeddings = emb.embed(&refs)?;
    super::finite::check_rows(embeddings.iter().map(Vec::as_slice), "the embedding of sentence")?;
    eprintln!("embedded {} sentences in {:.3} s", refs.len(), start.elapsed().as_secs_f64());
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(render(&embeddings, o.format).as_bytes())?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_one_array_of_arrays() {
        let s = render(&[vec![0.5, -1.0], vec![0.25, f32::NAN]], Format::Json);
        assert_eq!(s, "[[0.5,-1],[0.25,null]]\n");
    }

    #[test]
    fn blank_lines_are_skipped_and_counted() {
        let lines = ["a", "", "  ", "b", "\t"].map(String::from).to_vec();
        assert_eq!(skip_blank(lines), (vec!["a".to_string(), "b".to_string()], 3));
    }

    #[test]
    fn text_is_one_line_per_sentence() {
        let s = render(&[vec![0.5, -1.0], vec![2.0, 3.5]], Format::Text);
        assert_eq!(s, "0.5 -1\n2 3.5\n");
    }
}
