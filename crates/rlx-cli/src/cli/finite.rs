//! The check that a model's output is made of numbers: a NaN or an infinity in an embedding, a
//! similarity or a logit row is an error naming where it is, never data on stdout.

/// The first non-finite value of `values` as a word ("NaN", "inf", "-inf") and its index.
fn first_non_finite(values: &[f32]) -> Option<(usize, &'static str)> {
    values.iter().position(|x| !x.is_finite()).map(|i| {
        let word = match values[i] {
            x if x.is_nan() => "NaN",
            x if x > 0.0 => "inf",
            _ => "-inf",
        };
        (i, word)
    })
}

/// Checks each row of `rows` (named `what` and numbered from 1 in the message, e.g. "the
/// embedding of sentence"), and errors at the first non-finite value.
pub fn check_rows<'a>(rows: impl IntoIterator<Item = &'a [f32]>, what: &str) -> Result<(), String> {
    for (r, row) in rows.into_iter().enumerate() {
        if let Some((i, word)) = first_non_finite(row) {
            return Err(format!(
                "the model produced {word} in {what} {} (at index {i}); the weights or input may be corrupt",
                r + 1
            ));
        }
    }
    Ok(())
}

/// Checks one number, named `what` in the message.
pub fn check_value(value: f32, what: &str) -> Result<(), String> {
    match first_non_finite(&[value]) {
        Some((_, word)) => {
            Err(format!("the model produced {word} as {what}; the weights or input may be corrupt"))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_non_finite_value_is_named_with_its_row() {
        let rows = [vec![0.5, 1.0], vec![0.0, 2.0], vec![1.0, f32::NAN], vec![f32::INFINITY, 0.0]];
        let e = check_rows(rows.iter().map(Vec::as_slice), "the embedding of sentence").unwrap_err();
        assert_eq!(
            e,
            "the model produced NaN in the embedding of sentence 3 (at index 1); the weights or input may be corrupt"
        );
        let e = check_rows([&[f32::NEG_INFINITY][..]], "the logits of token").unwrap_err();
        assert!(e.starts_with("the model produced -inf in the logits of token 1"), "{e}");
        assert!(check_rows(rows[..2].iter().map(Vec::as_slice), "row").is_ok());
    }

    #[test]
    fn a_non_finite_similarity_is_an_error() {
        assert!(check_value(0.25, "the similarity").is_ok());
        let e = check_value(f32::INFINITY, "the similarity").unwrap_err();
        assert!(e.starts_with("the model produced inf as the similarity"), "{e}");
    }
}
