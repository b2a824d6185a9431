"""What an ONNX op converter sees: one node, its inputs as graph values or folded constants, its attributes.

Converters (tensorium/frontend/onnx_ops.py) receive a :class:`Node` and return the graph values of
the node's outputs; they raise :class:`ConversionError` when the node uses something the graph
dialect cannot express, and the importer lists every such node at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import onnx
from onnx import TensorProto

from ..ir.attributes import DenseAttr
from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import (
    FloatType,
    IntegerType,
    ScalarType,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
    storage_dtype,
    u8,
)


class ValueSource(Protocol):
    """What a :class:`Node` reads from the import it belongs to (the importer in :mod:`.onnx_import`
    implements it): the graph value of an ONNX name, and the values known at import time."""

    consts: dict[str, np.ndarray]

    def value(self, name: str) -> Value:
        """The graph value of ONNX value ``name``."""
        ...

    def subgraph(self, body: onnx.GraphProto, inputs: Sequence[Value]) -> list[Value]:
        """Convert sub-graph ``body`` inline with its inputs bound to ``inputs``; its outputs."""
        ...


ONNX_TO_SCALAR: dict[int, ScalarType] = {
    TensorProto.FLOAT: f32,
    TensorProto.UINT8: u8,
    TensorProto.INT8: i8,
    TensorProto.UINT16: IntegerType(16, False),
    TensorProto.INT16: i16,
    TensorProto.INT32: i32,
    TensorProto.INT64: i64,
    TensorProto.BOOL: i1,
    TensorProto.FLOAT16: f16,
    TensorProto.DOUBLE: f64,
    TensorProto.UINT32: IntegerType(32, False),
    TensorProto.UINT64: IntegerType(64, False),
    TensorProto.BFLOAT16: bf16,
    TensorProto.UINT4: IntegerType(4, False),
    TensorProto.INT4: IntegerType(4),
    TensorProto.UINT2: IntegerType(2, False),
    TensorProto.INT2: IntegerType(2),
}


class ConversionError(Exception):
    """A node the importer cannot translate; the message is the reason shown to the user.

    ``needs`` names the ONNX value that would have to be known at import time for the node to convert.
    """

    def __init__(self, message: str, needs: str | None = None):
        super().__init__(message)
        self.needs = needs


class FailedInput(ConversionError):
    """A node reads a value whose own node failed to convert (and was reported already)."""


def scalar_type(elem_type: int) -> ScalarType:
    """The graph element type of ONNX tensor element type ``elem_type``; ConversionError if none."""
    found = ONNX_TO_SCALAR.get(elem_type)
    if found is None:
        raise ConversionError(f"element type {TensorProto.DataType.Name(elem_type)} is not supported")
    return found


def to_storage(array: np.ndarray, element: ScalarType) -> np.ndarray:
    """``array`` (as onnx.numpy_helper gives it, ml_dtypes included) in the interpreter's dtype."""
    arr = np.asarray(array)
    if isinstance(element, FloatType) and element.name == "bf16":
        return arr.astype(np.float32)
    return arr.astype(storage_dtype(element))


def tensor_type(value: Value) -> TensorType:
    """The tensor type of a graph value."""
    t = value.type
    assert isinstance(t, TensorType)
    return t


def constant_value(value: Value) -> np.ndarray | None:
    """The array of a ``graph.constant`` result, None for a value computed at run time."""
    op = value.defining_op()
    attr = op.attributes.get("value") if op is not None and op.name == "graph.constant" else None
    return attr.array if isinstance(attr, DenseAttr) else None


class Node:
    """One ONNX node during import: typed access to its inputs and attributes."""

    def __init__(self, proto: onnx.NodeProto, importer: ValueSource, opset: int):
        self.proto = proto
        self.importer = importer
        self.opset = opset
        self.attrs = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}

    @property
    def op_type(self) -> str:
        return str(self.proto.op_type)

    @property
    def num_outputs(self) -> int:
        return len(self.proto.output)

    def has(self, i: int) -> bool:
        """True when optional input ``i`` is given."""
        return i < len(self.proto.input) and self.proto.input[i] != ""

    def input(self, i: int) -> Value:
        """The graph value of input ``i``."""
        if not self.has(i):
            raise ConversionError(f"input #{i} is required")
        return self.importer.value(self.proto.input[i])

    def optional(self, i: int) -> Value | None:
        """The graph value of optional input ``i``, or None when absent."""
        return self.input(i) if self.has(i) else None

    def inputs(self) -> list[Value]:
        """Every given input, in order (absent optional ones skipped)."""
        return [self.input(i) for i in range(len(self.proto.input)) if self.has(i)]

    def is_const(self, i: int) -> bool:
        """True when input ``i`` is given and its value is known at import time."""
        return self.has(i) and self.proto.input[i] in self.importer.consts

    def const(self, i: int) -> np.ndarray:
        """The constant value of input ``i``; ConversionError when it is computed at run time."""
        if not self.has(i):
            raise ConversionError(f"input #{i} is required")
        name = self.proto.input[i]
        found = self.importer.consts.get(name)
        if found is None:
            raise ConversionError(f"input #{i} ('{name}') must be a constant", needs=name)
        return found

    def ints(self, i: int) -> tuple[int, ...]:
        """Constant input ``i`` as a tuple of Python ints."""
        return tuple(int(v) for v in self.const(i).reshape(-1))

    def axes(self, attr: str = "axes", index: int = 1) -> tuple[int, ...] | None:
        """Axes given as attribute (older opsets) or as constant input ``index`` (newer); None if neither."""
        if attr in self.attrs:
            return tuple(int(a) for a in self.attrs[attr])
        if self.has(index):
            return self.ints(index)
        return None

    def attr(self, name: str, default: Any = None) -> Any:
        """Attribute ``name`` (strings decoded, lists as tuples), or ``default``."""
        value = self.attrs.get(name, default)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, list):
            return tuple(v.decode() if isinstance(v, bytes) else v for v in value)
        if isinstance(value, TensorProto):
            return onnx.numpy_helper.to_array(value)
        return value

    def constant(self, array: Any, element: ScalarType | None = None) -> Value:
        """A new graph constant holding ``array`` (element type from its dtype unless given)."""
        arr = np.asarray(array)
        if element is None:
            return graph.constant(value=DenseAttr.of(arr))  # type: ignore[no-any-return]
        return graph.constant(value=DenseAttr(arr, TensorType(arr.shape, element)))  # type: ignore[no-any-return]

    def scalar(self, value: float, like: Value) -> Value:
        """A constant ``value`` with the element type of ``like``, shaped 1x..x1 to broadcast against it."""
        t = tensor_type(like)
        arr = np.full((1,) * t.rank, value, dtype=storage_dtype(t.element))
        return self.constant(arr, t.element)


Converter = Callable[[Node], "Value | Sequence[Value | None]"]
