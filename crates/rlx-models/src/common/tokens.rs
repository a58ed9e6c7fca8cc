//! The token-id check every language model runs before a forward pass, and the greedy pick
//! of a token from logits.

use crate::error::{ModelError, Result};

/// Refuses an empty sequence and ids outside the vocabulary `0..vocab`, naming the first bad
/// id and its position ([`ModelError::InvalidInput`]).
pub fn check_token_ids(ids: &[i32], vocab: usize) -> Result<()> {
    if ids.is_empty() {
        return Err(ModelError::InvalidInput {
            reason: "the token sequence is empty; give at least one token id".into(),
        });
    }
    if let Some((pos, id)) = ids.iter().enumerate().find(|(_, &id)| id < 0 || id as usize >= vocab) {
        return Err(ModelError::InvalidInput {
            reason: format!("token id {id} at position {pos} is outside the vocabulary 0..{vocab}"),
        });
    }
    Ok(())
}

/// Index of the largest value, the first on ties; a NaN counts as the largest (torch.argmax).
pub fn argmax(v: &[f32]) -> i32 {
    let mut best = 0usize;
    for (i, &x) in v.iter().enumerate() {
        if x.is_nan() {
            return i as i32;
        }
        if v.get(best).is_some_and(|&b| x > b) {
            best = i;
        }
    }
    best as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argmax_takes_the_first_maximum_and_nan() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, 2.0]), 1);
        assert_eq!(argmax(&[-1.0, -0.5]), 1);
        assert_eq!(argmax(&[0.0, f32::NAN, 5.0, f32::NAN]), 1);
        assert_eq!(argmax(&[f32::NEG_INFINITY, f32::NEG_INFINITY]), 0);
        assert_eq!(argmax(&[]), 0);
    }
}
