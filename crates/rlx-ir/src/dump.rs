//! Text dump (in progress).
pub fn dump(g: &crate::Graph) -> String {
    g.name().to_string()
}
