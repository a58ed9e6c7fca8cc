//! The kernels, one file per op family. Each public function takes its attributes, then its
//! operands, then the node's output type, and trusts that they fit (see [`crate::eval`]).

pub(crate) mod attention;
pub(crate) mod attention_grad;
pub(crate) mod cast;
pub(crate) mod conv;
pub(crate) mod elementwise;
pub(crate) mod fft;
pub(crate) mod grouped;
pub(crate) mod matmul;
pub(crate) mod norm;
pub(crate) mod quant;
pub(crate) mod random;
pub(crate) mod reduce;
pub(crate) mod rope;
pub(crate) mod shape;
pub(crate) mod ssm;
pub(crate) mod state;
