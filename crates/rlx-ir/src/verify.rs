//! Verifier (in progress).
pub fn verify(_g: &crate::Graph) -> Result<(), crate::IrError> {
    Ok(())
}
