//! The token-id check every language model runs before a forward pass.

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
