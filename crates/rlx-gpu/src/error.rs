//! Errors of kernel preparation: preprocessing a kernel source and building a kernel's params.

/// Why a kernel could not be prepared. Every variant names the kernel and the numbers involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// A `{{NAME}}` placeholder in a kernel source that no define fills.
    #[error(
        "kernel source: placeholder {{{{{name}}}}} on line {line} has no define; pass (\"{name}\", value)"
    )]
    MissingDefine { name: String, line: usize },

    /// A `{{` without its closing `}}`.
    #[error("kernel source: unterminated placeholder on line {line}")]
    UnterminatedPlaceholder { line: usize },

    /// A define value with a line break (it would shift the line numbers of compile errors).
    #[error("define {name}: value must be a single line, got {value:?}")]
    MultiLineDefine { name: String, value: String },

    /// Operand shapes that the kernel cannot take as given; the lowering must reshape, expand
    /// or copy first.
    #[error("{kernel}: shapes {shapes} cannot be expressed: {reason}")]
    Shape { kernel: &'static str, shapes: String, reason: String },

    /// A count that does not fit the kernel's index arithmetic or the dispatch limits.
    #[error("{kernel}: {what} is {value}, above the limit of {limit}; split the op into smaller parts")]
    TooLarge { kernel: &'static str, what: &'static str, value: u64, limit: u64 },

    /// A value larger than one storage binding (names the node, its op and type).
    #[error("{node} needs {bytes} bytes, above the largest storage binding of {limit} bytes")]
    TensorTooLarge { node: String, bytes: u64, limit: u64 },

    /// A node the lowering cannot turn into kernel launches (names the node and why).
    #[error("lowering {node}: {reason}")]
    Lowering { node: String, reason: String },
}
