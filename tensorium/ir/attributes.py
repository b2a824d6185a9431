"""Attribute values and the constraints op declarations put on them.

Attribute values are immutable Python values: ``bool``, ``int``, ``float``, ``str``, tuples of
attributes, :class:`~tensorium.ir.types.Type` and :class:`DenseAttr` (tensor constants).
Constraints (:class:`AttrSpec`) check a value's kind and supply defaults.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias, Union

import numpy as np

from .types import FloatType, ScalarType, TensorType, Type

Attr: TypeAlias = Union[bool, int, float, str, tuple, Type, "DenseAttr", None]


@dataclass(frozen=True, eq=False)
class DenseAttr:
    """A constant tensor: a read-only numpy array and its IR type.

    Equality and hashing compare type and bytes, so two equal constants are one attribute value (the hash
    reads a digest of the bytes, made when first needed: large weights are never copied to bytes).
    """

    array: np.ndarray
    type: TensorType
    _digest: list[bytes] = field(init=False, repr=False, default_factory=list)

    def __post_init__(self) -> None:
        if not self.type.is_static:
            raise ValueError(f"a constant needs a static type, got {self.type}")
        from .storage import coerce

        arr = np.array(coerce(np.asarray(self.array), self.type.element), copy=True)
        if arr.shape != self.type.static_shape:
            if arr.size == 1:
                arr = np.broadcast_to(arr.reshape(()), self.type.static_shape).copy()
            else:
                raise ValueError(f"constant of shape {arr.shape} does not match {self.type}")
        arr.setflags(write=False)
        object.__setattr__(self, "array", arr)

    @staticmethod
    def adopt(array: np.ndarray, t: TensorType) -> DenseAttr:
        """A constant that takes ``array`` as its own, without the copy the constructor makes: for arrays the
        caller just made and will not write again (it becomes read-only). Arrays that need converting to
        ``t`` (another dtype or shape, integers, bf16) go through the constructor."""
        from .types import FloatType, storage_dtype

        element = t.element
        exact = isinstance(element, FloatType) and element.name in ("f16", "f32", "f64")
        if not exact or array.dtype != storage_dtype(element) or array.shape != t.static_shape:
            return DenseAttr(array, t)
        array = np.asarray(array, order="C")  # np.ascontiguousarray would make a 0-d array 1-d
        array.setflags(write=False)
        attr = object.__new__(DenseAttr)
        object.__setattr__(attr, "array", array)
        object.__setattr__(attr, "type", t)
        object.__setattr__(attr, "_digest", [])
        return attr

    @staticmethod
    def of(array: np.ndarray | float | int | bool, element: ScalarType | None = None) -> DenseAttr:
        """A constant holding ``array``; its element type is taken from the dtype unless given."""
        from .types import scalar_type_of, tensor_type_of

        arr = np.asarray(array)
        t = tensor_type_of(arr)
        if element is not None:
            t = TensorType(t.shape, element)
        else:
            t = TensorType(t.shape, scalar_type_of(arr.dtype))
        return DenseAttr(arr, t)

    @property
    def is_splat(self) -> bool:
        """True when every element has the same bits (so -0.0 and 0.0 differ), or every element is a NaN.

        NaNs match whatever their sign and payload: the text format has one ``nan``, so a constant of
        NaNs with different bits (as folding may make) must print as the splat its parsed copy is."""
        flat = self.array.reshape(-1)
        if flat.size == 0:
            return False
        if isinstance(self.type.element, FloatType):
            nan = np.isnan(flat.astype(np.float32) if flat.dtype.kind != "f" else flat)
            if nan.any():
                return bool(nan.all())
        rows = np.ascontiguousarray(flat).view(np.uint8).reshape(flat.size, -1)
        if flat.size > 1 and not np.array_equal(rows[1], rows[0]):
            return False  # most constants differ at once: no scan of a whole weight
        return bool(np.all(rows == rows[0]))

    def _bytes(self) -> np.ndarray:
        return np.ascontiguousarray(self.array).reshape(-1).view(np.uint8)

    def digest(self) -> bytes:
        """The sha256 of the constant's bytes (computed once)."""
        if not self._digest:
            self._digest.append(hashlib.sha256(self._bytes().data).digest())
        return self._digest[0]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DenseAttr) or self.type != other.type:
            return False
        return self is other or np.array_equal(self._bytes(), other._bytes())

    def __hash__(self) -> int:
        return hash((self.type, self.digest()))

    def __repr__(self) -> str:
        return f"DenseAttr({self.type}, {self.array.tolist()!r})"


def attr_equal(a: Attr, b: Attr) -> bool:
    """Structural equality that treats NaN floats as equal to themselves and 1 != 1.0 != True."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        assert isinstance(b, float)
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, tuple):
        assert isinstance(b, tuple)
        return len(a) == len(b) and all(attr_equal(x, y) for x, y in zip(a, b))
    return a == b


@dataclass(frozen=True)
class AttrSpec:
    """What an op accepts for one attribute: a kind check, a default and a description."""

    kind: str
    check: Callable[[Any], bool]
    default: Any = None
    required: bool = True
    convert: Callable[[Any], Any] | None = None
    choices: tuple[str, ...] | None = None
    """The accepted values of a string attribute that is restricted to a few (None: any string)."""

    def coerce(self, value: Any) -> Any:
        """``value`` in this attribute's canonical form (ints become floats for float attributes)."""
        return self.convert(value) if self.convert is not None else value

    def validate(self, value: Any) -> str | None:
        """None when ``value`` is acceptable, else what was expected."""
        if value is None and not self.required:
            return None
        return None if self.check(value) else f"expected {self.kind}"


_NO_DEFAULT = object()


def _spec(
    kind: str, check: Callable[[Any], bool], default: Any, convert: Callable[[Any], Any] | None = None
) -> AttrSpec:
    if default is _NO_DEFAULT:
        return AttrSpec(kind, check, None, True, convert)
    return AttrSpec(kind, check, convert(default) if convert and default is not None else default, False, convert)


def _to_float(v: Any) -> Any:
    return float(v) if _is_int(v) else v


def _to_floats(v: Any) -> Any:
    return tuple(_to_float(x) for x in v) if isinstance(v, tuple) else v


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_float(v: Any) -> bool:
    return isinstance(v, float)


def IntAttr(default: Any = _NO_DEFAULT) -> AttrSpec:
    """An integer attribute."""
    return _spec("an integer", _is_int, default)


def FloatAttr(default: Any = _NO_DEFAULT) -> AttrSpec:
    """A float attribute (ints are converted by the builder)."""
    return _spec("a float", _is_float, default, _to_float)


def BoolAttr(default: Any = _NO_DEFAULT) -> AttrSpec:
    """A boolean attribute (``true`` / ``false``)."""
    return _spec("a boolean", lambda v: isinstance(v, bool), default)


def StrAttr(default: Any = _NO_DEFAULT, choices: tuple[str, ...] | None = None) -> AttrSpec:
    """A string attribute, optionally restricted to ``choices``."""
    if choices is None:
        return _spec("a string", lambda v: isinstance(v, str), default)
    kind = "one of " + ", ".join(f'"{c}"' for c in choices)
    spec = _spec(kind, lambda v: isinstance(v, str) and v in choices, default)
    return dataclasses.replace(spec, choices=tuple(choices))


def IntsAttr(default: Any = _NO_DEFAULT, length: int | None = None) -> AttrSpec:
    """A list of integers (``[1, 2]``), optionally of a fixed length."""
    kind = "a list of integers" if length is None else f"a list of {length} integers"
    return _spec(
        kind,
        lambda v: isinstance(v, tuple) and all(map(_is_int, v)) and (length is None or len(v) == length),
        default,
    )


def FloatsAttr(default: Any = _NO_DEFAULT) -> AttrSpec:
    """A list of floats."""
    return _spec("a list of floats", lambda v: isinstance(v, tuple) and all(map(_is_float, v)), default, _to_floats)


def OptionalFloatAttr() -> AttrSpec:
    """A float that may be absent (None)."""
    return AttrSpec("a float", _is_float, None, False, _to_float)


def OptionalIntAttr() -> AttrSpec:
    """An integer that may be absent (None)."""
    return AttrSpec("an integer", _is_int, None, False)


def TypeAttr(default: Any = _NO_DEFAULT) -> AttrSpec:
    """A type attribute, such as the target element type of a cast."""
    return _spec("a type", lambda v: isinstance(v, Type), default)


def ScalarTypeAttr(default: Any = _NO_DEFAULT) -> AttrSpec:
    """An element type attribute (``f32``, ``i8``, ...)."""
    return _spec("an element type", lambda v: isinstance(v, ScalarType), default)


def DenseElementsAttr() -> AttrSpec:
    """A constant tensor (``dense<...> : tensor<...>``)."""
    return _spec("a dense tensor constant", lambda v: isinstance(v, DenseAttr), _NO_DEFAULT)


def normalize_attr(value: Any) -> Attr:
    """Turn convenient Python values (lists, numpy scalars) into canonical attribute values."""
    if isinstance(value, (list, tuple)):
        return tuple(normalize_attr(v) for v in value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return DenseAttr.of(value)
    return value  # type: ignore[no-any-return]
