"""IR types: frozen, hashable, self-verifying on construction.

Scalars are floats (f16, bf16, f32, f64), integers of any width 1..64, signed (``i3``) or
unsigned (``u5``), and ``index``. A :class:`QuantizedType` is a k-bit integer storage type that
stands for a float, with scale/zero-point granularity. A :class:`TensorType` has a shape whose
dimensions are ints or :class:`Sym` (``?`` when anonymous, ``[name]`` when named). A
:class:`BufferType` is the loop dialect's mutable memory: a shape, an element type and a memory space.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, Union

import numpy as np


class Type:
    """Base of every IR type."""

    def __str__(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError


class ScalarType(Type):
    """Base of element types (floats, integers, index)."""


@dataclass(frozen=True)
class FloatType(ScalarType):
    """An IEEE-style float: ``f16``, ``bf16``, ``f32`` or ``f64``."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in _FLOAT_WIDTHS:
            raise ValueError(f"unknown float type '{self.name}' (expected one of f16, bf16, f32, f64)")

    @property
    def width(self) -> int:
        return _FLOAT_WIDTHS[self.name]

    def __str__(self) -> str:
        return self.name


_FLOAT_WIDTHS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


@dataclass(frozen=True)
class IntegerType(ScalarType):
    """An integer of ``width`` bits (1..64), signed (``i8``) or unsigned (``u8``); ``i1`` is bool."""

    width: int
    signed: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.width <= 64:
            raise ValueError(f"integer width must be in 1..64, got {self.width}")

    @property
    def is_bool(self) -> bool:
        return self.width == 1

    @property
    def min_value(self) -> int:
        if self.is_bool or not self.signed:
            return 0
        return -(1 << (self.width - 1))

    @property
    def max_value(self) -> int:
        if self.is_bool:
            return 1
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    def __str__(self) -> str:
        return f"{'i' if self.signed else 'u'}{self.width}"


@dataclass(frozen=True)
class IndexType(ScalarType):
    """A machine-sized integer used for loop indices and sizes."""

    def __str__(self) -> str:
        return "index"


Granularity: TypeAlias = Literal["per_tensor", "per_channel", "per_group"]


@dataclass(frozen=True)
class QuantizedType(ScalarType):
    """A k-bit integer storage type standing for values of ``expressed`` float type.

    Scales and zero points live in tensors beside the data; the type records their layout:
    one per tensor, one per channel along ``axis``, or one per group of ``group_size`` elements
    along ``axis``.
    """

    bits: int
    signed: bool
    expressed: FloatType
    granularity: Granularity = "per_tensor"
    axis: int | None = None
    group_size: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.bits <= 8:
            raise ValueError(f"quantized storage must be 1..8 bits, got {self.bits}")
        if self.granularity == "per_tensor":
            if self.axis is not None or self.group_size is not None:
                raise ValueError("per_tensor quantization takes no axis or group size")
        elif self.granularity == "per_channel":
            if self.axis is None or self.group_size is not None:
                raise ValueError("per_channel quantization needs an axis and no group size")
        elif self.granularity == "per_group":
            if self.axis is None or self.group_size is None or self.group_size < 1:
                raise ValueError("per_group quantization needs an axis and a group size >= 1")
        else:
            raise ValueError(f"unknown quantization granularity '{self.granularity}'")

    @property
    def storage(self) -> IntegerType:
        return IntegerType(self.bits, self.signed)

    @property
    def code_range(self) -> tuple[int, int]:
        """The least and greatest stored integer (a 1-bit signed code is -1 or 0, unlike the boolean ``i1``)."""
        return (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1) if self.signed else (0, (1 << self.bits) - 1)

    def __str__(self) -> str:
        layout: str = self.granularity
        if self.granularity == "per_channel":
            layout += f"(axis={self.axis})"
        elif self.granularity == "per_group":
            layout += f"(axis={self.axis}, size={self.group_size})"
        return f"!quant<{self.storage}:{self.expressed}, {layout}>"


@dataclass(frozen=True)
class Sym:
    """A dimension not known at compile time: anonymous (``?``), named (``[batch]``), or a product of named
    dims and a static factor (``[batch*seq]``, ``[8*batch]``: a dim expression, what flattening named dims gives).

    Two dims with the same name are equal at run time; anonymous dims are never assumed equal. A product's name
    is kept canonical (the factor first, then the names sorted), so equal products compare equal; its size is
    known wherever its factors' are (:func:`dim_size`).
    """

    name: str | None = None

    def __post_init__(self) -> None:
        if self.name is None:
            return
        if not _SYM_EXPR.fullmatch(self.name):
            raise ValueError(f"bad symbolic dimension name '{self.name}'")
        if "*" in self.name:
            coefficient, names = _factors(self.name)
            object.__setattr__(self, "name", _product_name(coefficient, names))

    @staticmethod
    def product(coefficient: int, names: Iterable[str]) -> Dim:
        """The dim ``coefficient * prod(names)``: an int without names, a named dim for one name and factor 1."""
        names = sorted(names)
        if not names or coefficient == 0:
            return coefficient
        return Sym(_product_name(coefficient, names))

    @property
    def factors(self) -> tuple[int, tuple[str, ...]]:
        """A named dim as (static factor, the sorted names it multiplies): ``[8*batch*seq]`` -> (8, (batch, seq))."""
        if self.name is None:
            raise ValueError("an anonymous dim has no factors")
        return _factors(self.name)

    @property
    def is_product(self) -> bool:
        """True for a dim expression (``[batch*seq]``) rather than a plain name."""
        return self.name is not None and "*" in self.name

    def __str__(self) -> str:
        return "?" if self.name is None else f"[{self.name}]"


def _factors(name: str) -> tuple[int, tuple[str, ...]]:
    coefficient, names = 1, []
    for part in name.split("*"):
        if part.isdigit():
            coefficient *= int(part)
        else:
            names.append(part)
    return coefficient, tuple(sorted(names))


def _product_name(coefficient: int, names: Sequence[str]) -> str:
    parts = ([str(coefficient)] if coefficient != 1 or not names else []) + sorted(names)
    return "*".join(parts)


def dim_size(d: Dim, bindings: Mapping[str, int]) -> int:
    """The size of ``d`` given the sizes of named dims (a product's factors are looked up and multiplied);
    KeyError names the first unbound one, ValueError an anonymous dim."""
    if isinstance(d, int):
        return d
    if d.name is None:
        raise ValueError("an anonymous dim has no size before run time")
    if d.name in bindings or not d.is_product:
        return bindings[d.name]
    coefficient, names = d.factors
    size = coefficient
    for n in names:
        size *= bindings[n]
    return size


def dim_known(d: Dim, names: Container[str]) -> bool:
    """True when the size of ``d`` follows from the sizes of ``names``: static, named among them, or a product of
    names among them."""
    if isinstance(d, int):
        return True
    if d.name is None:
        return False
    return d.name in names or (d.is_product and all(n in names for n in d.factors[1]))


SYM_PATTERN = r"(?:\d+\*)*[A-Za-z_][A-Za-z0-9_]*(?:\*(?:[A-Za-z_][A-Za-z0-9_]*|\d+))*"
"""The text of a named dim or a product (``batch``, ``8*batch*seq``): the parser's grammar and :class:`Sym`'s check."""
_SYM_EXPR = re.compile(SYM_PATTERN)
DYN = Sym()
Dim: TypeAlias = Union[int, Sym]


def _check_shape(shape: tuple[Dim, ...], element: object, kind: str) -> None:
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, Sym)):
            raise ValueError(f"bad dimension {d!r} in {kind} shape")
        if isinstance(d, int) and d < 0:
            raise ValueError(f"negative dimension {d} in {kind} shape")
    if not isinstance(element, ScalarType):
        raise ValueError(f"bad {kind} element type {element!r}")


class ShapedType(Type):
    """Base of types with a shape and an element type (tensors and buffers)."""

    shape: tuple[Dim, ...]
    element: ScalarType

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def static_shape(self) -> tuple[int, ...]:
        if not self.is_static:
            raise ValueError(f"{self} has symbolic dimensions")
        return self.shape  # type: ignore[return-value]

    @property
    def num_elements(self) -> int | None:
        if not self.is_static:
            return None
        return int(np.prod(self.static_shape, dtype=np.int64))


@dataclass(frozen=True)
class TensorType(ShapedType):
    """A ranked tensor: ``tensor<4x?x[batch]xf32>``."""

    shape: tuple[Dim, ...]
    element: ScalarType

    def __post_init__(self) -> None:
        shape = tuple(self.shape)
        object.__setattr__(self, "shape", shape)
        _check_shape(shape, self.element, "tensor")

    def with_shape(self, shape: tuple[Dim, ...]) -> TensorType:
        return TensorType(tuple(shape), self.element)

    def with_element(self, element: ScalarType) -> TensorType:
        return TensorType(self.shape, element)

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tensor<{dims}{self.element}>"


MemorySpace: TypeAlias = Literal["global", "shared", "local"]
MEMORY_SPACES: tuple[MemorySpace, ...] = ("global", "shared", "local")


@dataclass(frozen=True)
class BufferType(ShapedType):
    """Mutable memory of the loop dialect: ``buffer<4x?x[n]xf32, shared>``.

    ``space`` says where the buffer lives: ``global`` is device memory every thread can reach
    (kernel arguments, ordinary memory on a CPU); ``shared`` is per-workgroup memory that the
    threads of one GPU block share (ordinary memory on targets without it); ``local`` is per-thread
    scratch such as registers or the stack. Elements are floats, integers or ``index``.
    """

    shape: tuple[Dim, ...]
    element: ScalarType
    space: MemorySpace = "global"

    def __post_init__(self) -> None:
        shape = tuple(self.shape)
        object.__setattr__(self, "shape", shape)
        _check_shape(shape, self.element, "buffer")
        if isinstance(self.element, QuantizedType):
            raise ValueError(f"buffer element must be a float, integer or index type, got {self.element}")
        if self.space not in MEMORY_SPACES:
            raise ValueError(f"unknown memory space '{self.space}' (expected one of {', '.join(MEMORY_SPACES)})")

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"buffer<{dims}{self.element}, {self.space}>"


@dataclass(frozen=True)
class FunctionType(Type):
    """The signature of a function: inputs and results."""

    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.results))
        return f"({ins}) -> ({outs})"


f16 = FloatType("f16")
bf16 = FloatType("bf16")
f32 = FloatType("f32")
f64 = FloatType("f64")
i1 = IntegerType(1)
i8 = IntegerType(8)
i16 = IntegerType(16)
i32 = IntegerType(32)
i64 = IntegerType(64)
u8 = IntegerType(8, False)
index = IndexType()


@dataclass(frozen=True)
class TypeSyntax:
    """How a dialect spells its own types, ``!name<...>``: the dialect prints them (the type's ``__str__``)
    and parses them with ``parse`` (text -> type, ValueError with a message naming the text when malformed);
    ``forms`` says what the syntax looks like, for errors about text that does not even lex as a type."""

    name: str
    parse: Callable[[str], Type]
    forms: str

    def malformed(self, text: str) -> str:
        """The error message for ``text`` that is not one of this dialect's types."""
        return f"bad {self.name} type '{text}': {self.forms}"


_TYPE_SYNTAXES: dict[str, TypeSyntax] = {}


def register_type_syntax(dialect: str, syntax: TypeSyntax) -> TypeSyntax:
    """Let the parser read ``!dialect<...>`` types with ``syntax`` (a dialect calls this once, on import)."""
    if dialect in _TYPE_SYNTAXES and _TYPE_SYNTAXES[dialect] != syntax:
        raise ValueError(f"type syntax '!{dialect}<...>' is registered twice")
    _TYPE_SYNTAXES[dialect] = syntax
    return syntax


def type_syntax(dialect: str) -> TypeSyntax | None:
    """The syntax registered for ``!dialect<...>`` types, or None."""
    return _TYPE_SYNTAXES.get(dialect)


def is_float(t: ScalarType) -> bool:
    return isinstance(t, FloatType)


def is_int(t: ScalarType) -> bool:
    return isinstance(t, (IntegerType, IndexType))


def is_bool(t: ScalarType) -> bool:
    return isinstance(t, IntegerType) and t.is_bool


_SCALAR = re.compile(r"(f16|bf16|f32|f64|index)|([iu])([0-9]+)")


def parse_scalar_type(text: str) -> ScalarType | None:
    """The scalar type spelled ``text`` (``f32``, ``i3``, ``u5``, ``index``), or None."""
    m = _SCALAR.fullmatch(text)
    if m is None:
        return None
    if m.group(1):
        return index if m.group(1) == "index" else FloatType(m.group(1))
    width = int(m.group(3))
    if not 1 <= width <= 64:
        return None
    return IntegerType(width, m.group(2) == "i")


def integer_bounds(element: ScalarType) -> tuple[int, int] | None:
    """The least and greatest value an integer element type holds (a k-bit code's range for a quantized
    type; None for floats)."""
    if isinstance(element, QuantizedType):
        return element.code_range
    if isinstance(element, IndexType):
        return -(1 << 63), (1 << 63) - 1
    if isinstance(element, IntegerType):
        return element.min_value, element.max_value
    return None


def storage_dtype(t: ScalarType) -> np.dtype:
    """The numpy dtype that holds values of ``t`` in the interpreter.

    bf16 is held in float32 (rounded to bf16 precision); sub-byte and odd-width integers in the
    next wider numpy integer (wrapped to their range).
    """
    if isinstance(t, FloatType):
        return np.dtype({"f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64}[t.name])
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, QuantizedType):
        return np.dtype(np.int8 if t.signed else np.uint8)  # k <= 8; a 1-bit signed code holds -1
    assert isinstance(t, IntegerType)
    if t.is_bool:
        return np.dtype(np.bool_)
    for bits in (8, 16, 32, 64):
        if t.width <= bits:
            return np.dtype(f"{'int' if t.signed else 'uint'}{bits}")
    raise AssertionError("unreachable")


def scalar_type_of(dtype: np.dtype) -> ScalarType:
    """The IR scalar type of a numpy dtype."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return i1
    if dtype.kind == "f":
        return FloatType({2: "f16", 4: "f32", 8: "f64"}[dtype.itemsize])
    if dtype.kind in "iu":
        return IntegerType(dtype.itemsize * 8, dtype.kind == "i")
    raise ValueError(f"numpy dtype {dtype} has no Tensorium type")


def tensor_type_of(array: np.ndarray) -> TensorType:
    """The static tensor type of a numpy array."""
    return TensorType(tuple(int(d) for d in array.shape), scalar_type_of(array.dtype))
