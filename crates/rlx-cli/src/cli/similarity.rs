//! `rlx similarity A B`: the cosine similarity of two sentences' embeddings.

use super::embed::load;
use super::finite::{check_rows, check_value};
use rlx::prelude::Device;
use rlx_models::cosine;
use std::io::Write as _;
use std::path::PathBuf;

/// `rlx similarity A B`: prints the cosine of the two sentences' embeddings.
pub fn run(
    device: Device,
    model_dir: Option<PathBuf>,
    revision: Option<&str>,
    a: &str,
    b: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut emb = load(device, 2, rlx::prelude::Precision::F32, model_dir, revision)?;
    let e = emb.embed(&[a, b])?;
    match (e.first(), e.get(1)) {
        (Some(x), Some(y)) => {
            check_rows([x.as_slice(), y.as_slice()], "the embedding of sentence")?;
            let similarity = cosine(x, y);
            check_value(similarity, "the similarity")?;
            let mut out = super::stdout::stdout();
            writeln!(out, "{similarity:.6}")?;
            out.flush()?;
            Ok(())
        }
        _ => Err("the model returned fewer than two embeddings".into()),
    }
}
