"""rlx: compile a neural network once, run it on whatever the machine has (CPU, Vulkan, wgpu).

Sentence embeddings (``rlx.Embedder``), text generation (``rlx.Decoder``) and custom graphs
(``rlx.Graph``, ``rlx.Session``, ``rlx.compile``) with numpy arrays in and out. Every error is
an ``rlx.RlxError`` subclass whose message names the cause.
"""

from rlx._rlx import (
    BackendError,
    ClosedError,
    Decoder,
    DeviceUnavailable,
    DTypeError,
    Embedder,
    Executable,
    Graph,
    GraphError,
    InvalidInput,
    LayoutError,
    ModelError,
    Node,
    RlxError,
    Session,
    ShapeError,
    TextStream,
    UnsupportedError,
    __version__,
    compile,
    devices,
    fetch,
)

__all__ = [
    "BackendError",
    "ClosedError",
    "Decoder",
    "DeviceUnavailable",
    "DTypeError",
    "Embedder",
    "Executable",
    "Graph",
    "GraphError",
    "InvalidInput",
    "LayoutError",
    "ModelError",
    "Node",
    "RlxError",
    "Session",
    "ShapeError",
    "TextStream",
    "UnsupportedError",
    "__version__",
    "compile",
    "devices",
    "fetch",
]
