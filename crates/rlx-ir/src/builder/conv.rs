//! Builders for convolution, pooling and nearest upsampling (NCHW).

use crate::{Graph, IrError, NodeId, Op, PoolKind};

impl Graph {
    /// 2-D convolution (cross-correlation, like PyTorch) on NCHW data.
    #[allow(clippy::too_many_arguments)]
    pub fn conv2d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        groups: usize,
    ) -> Result<NodeId, IrError> {
        let mut ins = vec![x, w];
        ins.extend(bias);
        self.push(Op::Conv2d { stride, padding, dilation, groups }, &ins)
    }

    /// 2-D max pooling of x [N, C, H, W] over `kernel` windows (padding never wins the max).
    pub fn max_pool2d(
        &mut self,
        x: NodeId,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
    ) -> Result<NodeId, IrError> {
        self.push(Op::Pool2d { kind: PoolKind::Max, kernel, stride, padding }, &[x])
    }

    /// Average pooling; padded positions count in the divisor (PyTorch's default).
    pub fn avg_pool2d(
        &mut self,
        x: NodeId,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
    ) -> Result<NodeId, IrError> {
        self.push(Op::Pool2d { kind: PoolKind::Avg, kernel, stride, padding }, &[x])
    }

    /// [N, C, H, W] → [N, C, 2H, 2W], nearest neighbour.
    pub fn upsample_nearest2x(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Upsample2x, &[x])
    }
}
