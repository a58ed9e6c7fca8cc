//! Builder for rotary position embedding.

use crate::{AttnLayout, Graph, IrError, NodeId, Op, RopeStyle};

impl Graph {
    /// Rotary position embedding on the first `rotary_dims` of the head dim.
    pub fn rope(
        &mut self,
        x: NodeId,
        cos: NodeId,
        sin: NodeId,
        style: RopeStyle,
        layout: AttnLayout,
        rotary_dims: usize,
    ) -> Result<NodeId, IrError> {
        self.push(Op::Rope { style, layout, rotary_dims }, &[x, cos, sin])
    }
}
