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

/// Formats the embeddings for stdout. JSON is serde_json's: shortest round-trip numbers, and
/// a non-finite value (which the finite check refuses before printing) would be null.
pub fn render(embeddings: &[Vec<f32>], format: Format) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Json => serde_json::to_string(embeddings)? + "\n",
        Format::Text => {
            let mut out = String::new();
            for e in embeddings {
                let line: Vec<String> = e.iter().map(|x| format!("{x}")).collect();
                out.push_str(&line.join(" "));
                out.push('\n');
            }
            out
        }
    })
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
    let mut stdout = super::stdout::stdout();
    stdout.write_all(render(&embeddings, o.format)?.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_one_array_of_arrays() {
        // serde_json writes a whole float with ".0".
        let s = render(&[vec![0.5, -1.0], vec![0.25, f32::NAN]], Format::Json).unwrap();
        assert_eq!(s, "[[0.5,-1.0],[0.25,null]]\n");
    }

    #[test]
    fn blank_lines_are_skipped_and_counted() {
        let lines = ["a", "", "  ", "b", "\t"].map(String::from).to_vec();
        assert_eq!(skip_blank(lines), (vec!["a".to_string(), "b".to_string()], 3));
    }

    #[test]
    fn text_is_one_line_per_sentence() {
        let s = render(&[vec![0.5, -1.0], vec![2.0, 3.5]], Format::Text).unwrap();
        assert_eq!(s, "0.5 -1\n2 3.5\n");
    }
}
