"""Type stubs of the rlx package (the native module rlx._rlx, re-exported as rlx)."""

from types import TracebackType
from typing import Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple, Type, TypedDict, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

class RlxError(Exception):
    """Base class of every error rlx raises."""

class DeviceUnavailable(RlxError):
    """The device asked for cannot be used here (or its name is unknown)."""

class ShapeError(RlxError):
    """An input or param of the wrong shape, or graph operands whose shapes do not combine."""

class DTypeError(RlxError):
    """An array or operand of the wrong element type."""

class LayoutError(RlxError):
    """A numpy array that is not C-contiguous: pass numpy.ascontiguousarray(a)."""

class ModelError(RlxError):
    """A model that cannot be loaded or run: missing or malformed files, tokenizer, chat template."""

class InvalidInput(RlxError):
    """An argument rlx cannot use: an unknown name, a missing input, a bad token id or option."""

class GraphError(RlxError):
    """A graph that cannot be built or compiled."""

class UnsupportedError(RlxError):
    """An op or size the chosen device does not support."""

class BackendError(RlxError):
    """The device failed while compiling or running."""

class ClosedError(RlxError):
    """A method called after close()."""

class DeviceInfo(TypedDict):
    device: str
    backend: str
    available: bool
    reason: Optional[str]
    software: bool
    details: Dict[str, str]

def devices() -> List[DeviceInfo]:
    """Every concrete device ("cpu", "gpu", "vulkan") with whether it can be used here and why not."""

def fetch(name: str) -> str:
    """Downloads the known model `name` into the cache (nothing when it is there); returns its folder."""

class Embedder:
    """A sentence-embedding model (a BERT-family folder, or a known model name) on one device."""

    def __init__(self, model: str, device: str = "auto", precision: str = "f32") -> None: ...
    @overload
    def encode(self, sentences: str, batch_size: int = 32, normalize: bool = True) -> npt.NDArray[np.float32]: ...
    @overload
    def encode(
        self, sentences: Sequence[str], batch_size: int = 32, normalize: bool = True
    ) -> npt.NDArray[np.float32]: ...
    @property
    def dim(self) -> int: ...
    @property
    def max_seq_length(self) -> int: ...
    @property
    def device(self) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Embedder": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class TextStream(Iterator[str]):
    """The text pieces of a generation, as they come; close() (or dropping it) stops it."""

    def __iter__(self) -> "TextStream": ...
    def __next__(self) -> str: ...
    def close(self) -> None: ...

ChatMessage = Union[Mapping[str, str], Tuple[str, str]]

class Decoder:
    """A causal language model (checkpoint folder or .gguf file) on one device."""

    def __init__(
        self, model: str, device: str = "auto", precision: str = "f32", kv_cache: str = "auto"
    ) -> None: ...
    @overload
    def generate(
        self,
        prompt: Union[str, Sequence[int]],
        max_tokens: int = 32,
        temperature: float = 0.0,
        top_k: Optional[int] = None,
        top_p: Optional[float] = None,
        seed: int = 0,
        stop: Union[str, Sequence[str], None] = None,
        stream: Literal[False] = False,
        repetition_penalty: float = 1.0,
        ignore_eos: bool = False,
    ) -> str: ...
    @overload
    def generate(
        self,
        prompt: Union[str, Sequence[int]],
        max_tokens: int = 32,
        temperature: float = 0.0,
        top_k: Optional[int] = None,
        top_p: Optional[float] = None,
        seed: int = 0,
        stop: Union[str, Sequence[str], None] = None,
        *,
        stream: Literal[True],
        repetition_penalty: float = 1.0,
        ignore_eos: bool = False,
    ) -> TextStream: ...
    def generate_ids(
        self,
        prompt: Union[str, Sequence[int]],
        max_tokens: int = 32,
        temperature: float = 0.0,
        top_k: Optional[int] = None,
        top_p: Optional[float] = None,
        seed: int = 0,
        repetition_penalty: float = 1.0,
        ignore_eos: bool = False,
    ) -> List[int]: ...
    @overload
    def chat(
        self,
        messages: Sequence[ChatMessage],
        max_tokens: int = 32,
        temperature: float = 0.0,
        top_k: Optional[int] = None,
        top_p: Optional[float] = None,
        seed: int = 0,
        stop: Union[str, Sequence[str], None] = None,
        stream: Literal[False] = False,
        repetition_penalty: float = 1.0,
        ignore_eos: bool = False,
    ) -> str: ...
    @overload
    def chat(
        self,
        messages: Sequence[ChatMessage],
        max_tokens: int = 32,
        temperature: float = 0.0,
        top_k: Optional[int] = None,
        top_p: Optional[float] = None,
        seed: int = 0,
        stop: Union[str, Sequence[str], None] = None,
        *,
        stream: Literal[True],
        repetition_penalty: float = 1.0,
        ignore_eos: bool = False,
    ) -> TextStream: ...
    def apply_chat_template_text(self, messages: Sequence[ChatMessage]) -> str: ...
    def tokenize(self, text: str, add_special_tokens: bool = True) -> List[int]: ...
    def detokenize(self, ids: Sequence[int]) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def architecture(self) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def eos_token_ids(self) -> List[int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Decoder": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Node:
    """A value in a Graph."""

    @property
    def shape(self) -> List[int]: ...
    @property
    def dtype(self) -> str: ...

class Graph:
    """A graph under construction: inputs, params, ops, named outputs."""

    def __init__(self, name: str = "graph") -> None: ...
    def input(self, name: str, shape: Sequence[int], dtype: str = "f32") -> Node: ...
    def param(self, name: str, shape: Sequence[int], dtype: str = "f32") -> Node: ...
    def scalar(self, value: float) -> Node: ...
    def matmul(self, a: Node, b: Node) -> Node: ...
    def add(self, a: Node, b: Node) -> Node: ...
    def sub(self, a: Node, b: Node) -> Node: ...
    def mul(self, a: Node, b: Node) -> Node: ...
    def div(self, a: Node, b: Node) -> Node: ...
    def maximum(self, a: Node, b: Node) -> Node: ...
    def relu(self, x: Node) -> Node: ...
    def gelu(self, x: Node, approximate: str = "none") -> Node: ...
    def silu(self, x: Node) -> Node: ...
    def sigmoid(self, x: Node) -> Node: ...
    def tanh(self, x: Node) -> Node: ...
    def exp(self, x: Node) -> Node: ...
    def sqrt(self, x: Node) -> Node: ...
    def neg(self, x: Node) -> Node: ...
    def softmax(self, x: Node, axis: int = -1) -> Node: ...
    def layer_norm(
        self,
        x: Node,
        gamma: Optional[Node] = None,
        beta: Optional[Node] = None,
        axis: int = -1,
        eps: float = 1e-5,
    ) -> Node: ...
    def sum(self, x: Node, axes: Sequence[int], keepdim: bool = False) -> Node: ...
    def mean(self, x: Node, axes: Sequence[int], keepdim: bool = False) -> Node: ...
    def reshape(self, x: Node, shape: Sequence[int]) -> Node: ...
    def transpose(self, x: Node, a: int = -2, b: int = -1) -> Node: ...
    def cast(self, x: Node, dtype: str) -> Node: ...
    def set_outputs(self, outputs: Union[Node, List[Node], Mapping[str, Node]]) -> None: ...
    @property
    def name(self) -> str: ...
    def dump(self) -> str: ...

class Executable:
    """A compiled graph bound to one device."""

    def set_param(self, name: str, value: npt.NDArray[np.generic]) -> None: ...
    def run(self, inputs: Mapping[str, npt.NDArray[np.generic]]) -> Dict[str, npt.NDArray[np.generic]]: ...
    @property
    def inputs(self) -> List[Tuple[str, List[int], str]]: ...
    @property
    def params(self) -> List[Tuple[str, List[int], str]]: ...
    @property
    def outputs(self) -> List[str]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Executable": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Session:
    """A device opened for compiling graphs."""

    def __init__(self, device: str = "auto") -> None: ...
    def compile(self, graph: Graph, precision: str = "f32") -> Executable: ...
    @property
    def device(self) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Session": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

def compile(graph: Graph, device: str = "auto", precision: str = "f32") -> Executable:
    """rlx.Session(device).compile(graph, precision)."""
