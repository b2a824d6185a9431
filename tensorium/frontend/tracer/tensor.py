"""Tensorium's own tracer: a numpy-like :class:`Tensor` that records graph ops as it is used.

Every operation on a Tensor, and every :mod:`tensorium.nn` function, goes through one path:
:func:`bind` takes an op declaration, operands and attributes, infers the result types from the
declaration, appends the op to the current :class:`Trace` and wraps its results in new Tensors
(JAX's bind -> trace -> abstract evaluation -> equation). Values are identified by object identity;
names appear only when the IR is printed.

    def f(x, w):
        return tensorium.nn.softmax(x @ w + 1.0, axis=-1)

    graph = tensorium.trace(f, np.ones((2, 4), np.float32), np.ones((4, 3), np.float32))
"""

from __future__ import annotations

import functools
import inspect
import linecache
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias, Union

import numpy as np

from ...errors import Location, TensoriumError, VerifyError
from ...ir.attributes import DenseAttr
from ...ir.builder import InsertionPoint
from ...ir.core import Operation, Value
from ...ir.dialects import graph
from ...ir.dialects.builtin import func_body, make_func, make_module, set_results
from ...ir.opdef import OpDef
from ...ir.types import (
    Dim,
    IntegerType,
    ScalarType,
    Sym,
    TensorType,
    is_bool,
    is_float,
    parse_scalar_type,
    scalar_type_of,
    storage_dtype,
)
from ..common import ImportedGraph

__all__ = ["DynamicSpec", "Tensor", "Trace", "TracerError", "bind", "current_trace", "trace", "trace_function"]

INT64_MAX = 2**63 - 1
_PACKAGE_DIR = str(Path(__file__).resolve().parent)

DynamicSpec: TypeAlias = Mapping[str, Mapping[int, str]]
"""``dynamic=`` of :func:`trace` and ``tensorium.compile``: argument name -> {axis: symbol name}."""

Scalar: TypeAlias = Union[bool, int, float]


class TracerError(TensoriumError):
    """Tracing cannot go on: a Tensor used as a Python value, an unsupported index, an op outside a trace."""


class Trace:
    """One function being recorded: its body block and, in order, every op :func:`bind` appended."""

    def __init__(self, func: Operation):
        self.func = func
        self.block = func_body(func)
        self.ops: list[Operation] = []

    def __enter__(self) -> Trace:
        _TRACES.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _TRACES.pop()


_TRACES: list[Trace] = []


def current_trace() -> Trace:
    """The innermost active trace; TracerError outside any."""
    if not _TRACES:
        raise TracerError(
            "tensorium ops need an active trace: call them inside a function given to tensorium.trace "
            "or tensorium.compile"
        )
    return _TRACES[-1]


def _user_location() -> Location | None:
    """The innermost caller outside the tensorium package: where the user wrote the op."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None
    column = 1
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if index < len(positions) and positions[index][2] is not None:
        column = int(positions[index][2]) + 1  # type: ignore[arg-type]
    return Location(frame.f_lineno, column, frame.f_code.co_filename)


def bind(opdef: OpDef, *operands: Tensor, **attrs: Any) -> Any:
    """Record one op in the current trace: infer its result types, append it, return its result Tensor(s).

    This is the only place where traced ops are created; a broken rule raises VerifyError at the
    user's source line.
    """
    trace = current_trace()
    loc = _user_location()
    try:
        op = opdef.build([t.value for t in operands], attrs, loc=loc)
    except VerifyError as e:
        line = linecache.getline(loc.file, loc.line).rstrip("\n") if loc is not None else ""
        raise VerifyError(e.message, e.op_name, e.loc, line or None) from None
    InsertionPoint(trace.block).insert(op)
    trace.ops.append(op)
    results = tuple(Tensor(r) for r in op.results)
    return results[0] if len(results) == 1 else results


# --- dtypes ----------------------------------------------------------------------------------------
def to_element(dtype: Any) -> ScalarType:
    """An IR element type from a numpy dtype, a dtype name (``"float32"``, ``"f32"``) or a ScalarType."""
    if isinstance(dtype, ScalarType):
        return dtype
    if isinstance(dtype, str):
        parsed = parse_scalar_type(dtype)
        if parsed is not None:
            return parsed
    try:
        return scalar_type_of(np.dtype(dtype))
    except (TypeError, ValueError):
        raise TracerError(f"{dtype!r} is not a Tensorium element type") from None


def _is_scalar(x: object) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def constant(value: Any, dtype: Any = None) -> Tensor:
    """A constant Tensor holding ``value`` (numpy semantics for its dtype unless ``dtype`` is given)."""
    element = to_element(dtype) if dtype is not None else None
    return bind(graph.constant, value=DenseAttr.of(np.asarray(value), element))  # type: ignore[no-any-return]


def _scalar_element(t: ScalarType, value: Scalar) -> ScalarType:
    """The element type of ``tensor op value`` for a Python scalar (NEP 50: the scalar is weak)."""
    storage = storage_dtype(t)
    result = np.result_type(storage, value)  # type: ignore[arg-type]
    if result == storage:
        if isinstance(t, IntegerType) and not t.is_bool and not isinstance(value, bool) and isinstance(value, int):
            low, high = (t.min_value, t.max_value)
            if not low <= value <= high:
                raise TracerError(f"Python integer {value} is out of bounds for {t}")
        return t
    return scalar_type_of(result)


def _promote(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` cast to their common element type (numpy's promotion of the storage dtypes)."""
    if a.element == b.element:
        return a, b
    common = scalar_type_of(np.result_type(a.dtype, b.dtype))
    return a.astype(common), b.astype(common)


def lift_pair(a: Any, b: Any) -> tuple[Tensor, Tensor]:
    """Two operands of a binary op as Tensors of one element type; Python scalars take the other's type."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return _promote(a, b)
    if isinstance(a, Tensor):
        return _promote(*_lift_other(a, b))
    if isinstance(b, Tensor):
        lb, la = _lift_other(b, a)
        return _promote(la, lb)
    raise TracerError(f"expected a Tensor operand, got {type(a).__name__} and {type(b).__name__}")


def _lift_other(t: Tensor, other: Any) -> tuple[Tensor, Tensor]:
    if _is_scalar(other):
        element = _scalar_element(t.element, other)
        return t.astype(element), constant(other, element)
    if isinstance(other, (np.ndarray, np.generic, list, tuple)):
        return t, constant(np.asarray(other))
    raise TracerError(f"cannot use a {type(other).__name__} as a Tensor operand")


def as_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """``x`` as a Tensor: Tensors pass through; Python scalars take ``like``'s element type; arrays are constants."""
    if isinstance(x, Tensor):
        return x
    if like is not None and _is_scalar(x):
        return constant(x, _scalar_element(like.element, x))
    if isinstance(x, (np.ndarray, np.generic, list, tuple, bool, int, float)):
        return constant(np.asarray(x))
    raise TracerError(f"cannot use a {type(x).__name__} as a Tensor")


def _axes(axis: int | Sequence[int] | None, rank: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, int):
        return (axis,)
    return tuple(axis)


def _shape_arg(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """Shape arguments given as ``f(2, 3)`` or ``f((2, 3))``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return shape


# --- the Tensor ------------------------------------------------------------------------------------
class Tensor:
    """A traced value: numpy-like operators and methods that record graph ops through :func:`bind`."""

    __slots__ = ("value",)
    __array_ufunc__ = None  # numpy defers to our reflected operators: ndarray + Tensor -> Tensor
    __hash__ = None  # type: ignore[assignment]  # == records an op, so Tensors are unhashable

    def __init__(self, value: Value):
        if not isinstance(value.type, TensorType):
            raise TracerError(f"a Tensor wraps a tensor-typed value, got {value.type}")
        self.value = value

    # properties -----------------------------------------------------------------------------------
    @property
    def type(self) -> TensorType:
        assert isinstance(self.value.type, TensorType)
        return self.value.type

    @property
    def shape(self) -> tuple[Dim, ...]:
        """The shape: ints, and :class:`~tensorium.ir.types.Sym` for dynamic dims."""
        return self.type.shape

    @property
    def ndim(self) -> int:
        return self.type.rank

    @property
    def element(self) -> ScalarType:
        """The IR element type (``f32``, ``i64``, ``i1``, ...)."""
        return self.type.element

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype that holds this Tensor's values."""
        return storage_dtype(self.element)

    def __repr__(self) -> str:
        return f"Tensor({self.type})"

    def __bool__(self) -> bool:
        raise TracerError(
            "a traced Tensor has no value at trace time, so it cannot drive Python control flow "
            "(if/while/and/or on tensor values); use tensorium.nn.where instead"
        )

    def __len__(self) -> int:
        if not self.shape or not isinstance(self.shape[0], int):
            raise TracerError(f"len() needs a static leading dimension, got {self.type}")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    # arithmetic -----------------------------------------------------------------------------------
    def _binary(self, opdef: OpDef, other: Any, reflected: bool = False) -> Tensor:
        a, b = lift_pair(other, self) if reflected else lift_pair(self, other)
        return bind(opdef, a, b)  # type: ignore[no-any-return]

    def __add__(self, other: Any) -> Tensor:
        return self._binary(graph.add, other)

    def __radd__(self, other: Any) -> Tensor:
        return self._binary(graph.add, other, True)

    def __sub__(self, other: Any) -> Tensor:
        return self._binary(graph.sub, other)

    def __rsub__(self, other: Any) -> Tensor:
        return self._binary(graph.sub, other, True)

    def __mul__(self, other: Any) -> Tensor:
        return self._binary(graph.mul, other)

    def __rmul__(self, other: Any) -> Tensor:
        return self._binary(graph.mul, other, True)

    def __truediv__(self, other: Any) -> Tensor:
        return _true_divide(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _true_divide(other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return _floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _floor_divide(other, self)

    def __mod__(self, other: Any) -> Tensor:
        return self._binary(graph.mod, other)

    def __rmod__(self, other: Any) -> Tensor:
        return self._binary(graph.mod, other, True)

    def __pow__(self, other: Any) -> Tensor:
        return self._binary(graph.pow, other)

    def __rpow__(self, other: Any) -> Tensor:
        return self._binary(graph.pow, other, True)

    def __matmul__(self, other: Any) -> Tensor:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return matmul(other, self)

    def __and__(self, other: Any) -> Tensor:
        return self._binary(graph.and_, other)

    def __rand__(self, other: Any) -> Tensor:
        return self._binary(graph.and_, other, True)

    def __or__(self, other: Any) -> Tensor:
        return self._binary(graph.or_, other)

    def __ror__(self, other: Any) -> Tensor:
        return self._binary(graph.or_, other, True)

    def __xor__(self, other: Any) -> Tensor:
        return self._binary(graph.xor, other)

    def __rxor__(self, other: Any) -> Tensor:
        return self._binary(graph.xor, other, True)

    def __neg__(self) -> Tensor:
        return bind(graph.neg, self)  # type: ignore[no-any-return]

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return bind(graph.abs_, self)  # type: ignore[no-any-return]

    def __invert__(self) -> Tensor:
        return bind(graph.not_, self)  # type: ignore[no-any-return]

    # comparisons (elementwise, i1 results) --------------------------------------------------------
    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._binary(graph.eq, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._binary(graph.ne, other)

    def __lt__(self, other: Any) -> Tensor:
        return self._binary(graph.lt, other)

    def __le__(self, other: Any) -> Tensor:
        return self._binary(graph.le, other)

    def __gt__(self, other: Any) -> Tensor:
        return self._binary(graph.gt, other)

    def __ge__(self, other: Any) -> Tensor:
        return self._binary(graph.ge, other)

    # conversion and shape ---------------------------------------------------------------------------
    def astype(self, dtype: Any) -> Tensor:
        """The elements converted to ``dtype`` (graph.cast); the same Tensor when already of that type."""
        element = to_element(dtype)
        if element == self.element:
            return self
        return bind(graph.cast, self, dtype=element)  # type: ignore[no-any-return]

    def reshape(self, *shape: Any) -> Tensor:
        """numpy reshape: one -1 is inferred, 0 is an empty dim; a dynamic dim may stand for itself."""
        return bind(graph.reshape, self, **_reshape_attrs(self, _shape_arg(shape)))  # type: ignore[no-any-return]

    def flatten(self) -> Tensor:
        return self.reshape(-1)

    def transpose(self, *axes: Any) -> Tensor:
        """Permute axes (numpy.transpose); no arguments reverses them."""
        perm = _shape_arg(axes) or tuple(reversed(range(self.ndim)))
        if list(perm) == list(range(self.ndim)):
            return self
        return bind(graph.transpose, self, perm=tuple(int(a) % self.ndim for a in perm))  # type: ignore[no-any-return]

    def permute(self, *dims: Any) -> Tensor:
        """torch-style alias of :meth:`transpose` with explicit dims."""
        return self.transpose(*dims)

    @property
    def T(self) -> Tensor:
        return self.transpose()

    def squeeze(self, axis: int | Sequence[int] | None = None) -> Tensor:
        """Remove size-1 dims: ``axis`` ones, or every static size-1 dim."""
        axes = tuple(i for i, d in enumerate(self.shape) if d == 1) if axis is None else _axes(axis, self.ndim)
        if not axes:
            return self
        return bind(graph.squeeze, self, axes=axes)  # type: ignore[no-any-return]

    def unsqueeze(self, axis: int | Sequence[int]) -> Tensor:
        """Insert size-1 dims at ``axis`` (positions in the result)."""
        return bind(graph.unsqueeze, self, axes=_axes(axis, self.ndim))  # type: ignore[no-any-return]

    expand_dims = unsqueeze

    def broadcast_to(self, *shape: Any) -> Tensor:
        return bind(graph.broadcast_to, self, shape=tuple(_shape_arg(shape)))  # type: ignore[no-any-return]

    # reductions ------------------------------------------------------------------------------------
    def _reduce(self, opdef: OpDef, axis: int | Sequence[int] | None, keepdims: bool) -> Tensor:
        return bind(opdef, self, axes=_axes(axis, self.ndim), keepdims=keepdims)  # type: ignore[no-any-return]

    def _accumulator(self) -> Tensor:
        """numpy's sum/prod accumulate bools and narrow integers in 64 bits."""
        t = self.element
        if isinstance(t, IntegerType) and t.width < 64:
            return self.astype(IntegerType(64, t.signed or t.is_bool))
        return self

    def sum(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
        return self._accumulator()._reduce(graph.reduce_sum, axis, keepdims)

    def prod(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
        return self._accumulator()._reduce(graph.reduce_prod, axis, keepdims)

    def mean(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
        """Mean over ``axis`` (all by default); integers and bools average in f64 like numpy."""
        x = self if is_float(self.element) else self.astype("f64")
        return x._reduce(graph.reduce_mean, axis, keepdims)

    def max(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
        return self._reduce(graph.reduce_max, axis, keepdims)

    def min(self, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
        return self._reduce(graph.reduce_min, axis, keepdims)

    def _arg(self, opdef: OpDef, axis: int | None, keepdims: bool) -> Tensor:
        if axis is None:
            flat = self.flatten()
            out: Tensor = bind(opdef, flat, axis=0)
            return out.reshape((1,) * self.ndim) if keepdims else out
        return bind(opdef, self, axis=axis, keepdims=keepdims)  # type: ignore[no-any-return]

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        """The i64 index of the first maximum along ``axis`` (of the flattened Tensor by default)."""
        return self._arg(graph.argmax, axis, keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        """The i64 index of the first minimum along ``axis`` (of the flattened Tensor by default)."""
        return self._arg(graph.argmin, axis, keepdims)

    # indexing --------------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Tensor:
        """numpy basic indexing (ints, slices, None, ...) plus one integer-array index (a gather)."""
        return _getitem(self, key if isinstance(key, tuple) else (key,))


def _true_divide(a: Any, b: Any) -> Tensor:
    x, y = lift_pair(a, b)
    if not is_float(x.element):
        x, y = x.astype("f64"), y.astype("f64")
    return bind(graph.div, x, y)  # type: ignore[no-any-return]


def _floor_divide(a: Any, b: Any) -> Tensor:
    """numpy floor_divide: floor(a / b) for floats; (a - a mod b) / b, exact, for integers."""
    x, y = lift_pair(a, b)
    if is_float(x.element):
        return bind(graph.floor, bind(graph.div, x, y))  # type: ignore[no-any-return]
    if is_bool(x.element):
        x, y = x.astype("i8"), y.astype("i8")
    return bind(graph.div, bind(graph.sub, x, bind(graph.mod, x, y)), y)  # type: ignore[no-any-return]


def matmul(a: Any, b: Any) -> Tensor:
    """numpy matmul: 1-D operands are promoted to matrices and the added dim removed again."""
    x, y = lift_pair(a, b)
    if x.ndim == 0 or y.ndim == 0:
        raise TracerError("matmul operands must have at least one dimension")
    squeeze: list[int] = []
    if x.ndim == 1:
        x = x.unsqueeze(0)
        squeeze.append(-2)
    if y.ndim == 1:
        y = y.unsqueeze(1)
        squeeze.append(-1)
    out: Tensor = bind(graph.matmul, x, y)
    return out.squeeze([a % out.ndim for a in squeeze]) if squeeze else out


def _reshape_attrs(x: Tensor, shape: tuple[Any, ...]) -> dict[str, Any]:
    """graph.reshape attributes for a numpy shape that may name the input's dynamic dims."""
    syms = [i for i, s in enumerate(shape) if isinstance(s, Sym)]
    if not syms:
        return {"shape": tuple(int(s) for s in shape), "allowzero": True}
    if len(syms) == 1 and -1 not in shape:
        return {"shape": tuple(-1 if isinstance(s, Sym) else int(s) for s in shape), "allowzero": True}
    if 0 not in shape and all(i < x.ndim and x.shape[i] == shape[i] for i in syms):
        return {"shape": tuple(0 if isinstance(s, Sym) else int(s) for s in shape)}
    raise TracerError(f"cannot reshape {x.type} to {list(map(str, shape))}: dynamic dims must keep their position")


def _getitem(x: Tensor, key: tuple[Any, ...]) -> Tensor:
    """Slices and ints in one graph.slice, ints squeezed, Nones unsqueezed, then one gather."""
    consumes = [k for k in key if k is not None and k is not Ellipsis]
    if sum(k is Ellipsis for k in key) > 1:
        raise TracerError("an index can only have a single ellipsis ('...')")
    if len(consumes) > x.ndim:
        raise TracerError(f"too many indices for {x.type}: {len(consumes)} given")
    starts: list[int] = []
    ends: list[int] = []
    axes: list[int] = []
    steps: list[int] = []
    dropped: list[int] = []
    new_axes: list[int] = []
    gather: tuple[int, Tensor] | None = None
    axis = 0  # input axis
    pos = 0  # axis in the result of slice + squeeze + unsqueeze
    for k in key:
        if k is Ellipsis:
            skip = x.ndim - len(consumes)
            axis += skip
            pos += skip
        elif k is None:
            new_axes.append(pos)
            pos += 1
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            size = x.shape[axis]
            if isinstance(size, int) and not -size <= i < size:
                raise TracerError(f"index {i} is out of bounds for axis {axis} with size {size}")
            starts.append(i)
            ends.append(INT64_MAX if i == -1 else i + 1)
            axes.append(axis)
            steps.append(1)
            dropped.append(axis)
            axis += 1
        elif isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            if step == 0:
                raise TracerError("slice step cannot be zero")
            start = k.start if k.start is not None else (0 if step > 0 else INT64_MAX)
            stop = k.stop if k.stop is not None else (INT64_MAX if step > 0 else -INT64_MAX)
            if not (start == 0 and stop == INT64_MAX and step == 1):
                starts.append(int(start))
                ends.append(int(stop))
                axes.append(axis)
                steps.append(step)
            axis += 1
            pos += 1
        else:
            index = k if isinstance(k, Tensor) else None
            if index is None and isinstance(k, (np.ndarray, list)):
                index = constant(np.asarray(k))
            if index is None:
                raise TracerError(f"unsupported index {k!r} of type {type(k).__name__}")
            if gather is not None:
                raise TracerError("only one integer-array index per subscript is supported")
            if not isinstance(index.element, IntegerType) or index.element.is_bool:
                raise TracerError(
                    f"array indices must be integers, got {index.element} (boolean masks give data-dependent "
                    "shapes; use tensorium.nn.where)"
                )
            gather = (pos, index)
            axis += 1
            pos += 1
    out = x
    if axes:
        out = bind(graph.slice_, out, starts=tuple(starts), ends=tuple(ends), axes=tuple(axes), steps=tuple(steps))
    if dropped:
        out = bind(graph.squeeze, out, axes=tuple(dropped))
    if new_axes:
        out = bind(graph.unsqueeze, out, axes=tuple(new_axes))
    if gather is not None:
        out = bind(graph.gather, out, gather[1], axis=gather[0])
    return out


# --- tracing functions ---------------------------------------------------------------------------
def _leaf_specs(params: list[tuple[str, Any]], dynamic: DynamicSpec | None) -> list[tuple[str, TensorType]]:
    """The IR type of each array argument, with the dims ``dynamic`` names made symbolic."""
    arrays = {name for name, v in params if not is_static(v)}
    for name in dynamic or {}:
        if name not in arrays:
            raise TracerError(f"dynamic= names '{name}', which is not an array argument (arguments: {sorted(arrays)})")
    out = []
    for name, value in params:
        if is_static(value):
            continue
        array = np.asarray(value)
        try:
            element = scalar_type_of(array.dtype)
        except ValueError:
            raise TracerError(f"argument '{name}' has dtype {array.dtype}, which Tensorium does not support") from None
        shape: list[Dim] = [int(d) for d in array.shape]
        for axis, sym in (dynamic or {}).get(name, {}).items():
            if not -array.ndim <= axis < array.ndim:
                raise TracerError(f"dynamic= axis {axis} of '{name}' is out of range for rank {array.ndim}")
            shape[axis % array.ndim] = Sym(sym)
        out.append((name, TensorType(tuple(shape), element)))
    return out


def is_static(value: Any) -> bool:
    """Python scalars and None are static arguments: passed as they are, part of the guard key."""
    return value is None or _is_scalar(value)


@functools.lru_cache(maxsize=256)
def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature(fn)``, kept: it costs tens of microseconds, and every call of a compiled model binds."""
    return inspect.signature(fn)


@functools.lru_cache(maxsize=256)
def _positional_names(fn: Callable[..., Any]) -> tuple[tuple[str, ...], str | None] | None:
    """The names of ``fn``'s parameters that can be given by position and of a last ``*args`` (or None) when
    it has no others (keyword-only, ``**kwargs``), else None: a call by position binds them in order."""
    try:
        params = list(_signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    rest = params.pop().name if params and params[-1].kind is inspect.Parameter.VAR_POSITIONAL else None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return (tuple(p.name for p in params), rest) if all(p.kind in positional for p in params) else None


def bind_arguments(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(name, value)`` for each argument of a call, in signature order (``*args`` become ``name_0``, ...)."""
    if not kwargs:
        try:
            positional = _positional_names(fn)
        except TypeError:  # an unhashable callable: bound below like any other
            positional = None
        if positional is not None:  # Signature.bind costs microseconds per call
            names, rest = positional
            if len(args) == len(names) or (rest is not None and len(args) > len(names)):
                extra = [(f"{rest}_{i}", v) for i, v in enumerate(args[len(names) :])]
                return [*zip(names, args), *extra]
    try:
        sig = _signature(fn)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TracerError(f"cannot bind the arguments of {getattr(fn, '__name__', fn)!r}: {e}") from None
    out: list[tuple[str, Any]] = []
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out += [(f"{name}_{i}", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out += list(value.items())
        else:
            out.append((name, value))
    return out


def trace_function(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any] | None = None,
    dynamic: DynamicSpec | None = None,
) -> ImportedGraph:
    """Trace ``fn`` called on numpy arrays (inputs of @main) and Python scalars (static) into a module."""
    from ...runtime.artifact import flatten_tree

    params = bind_arguments(fn, args, kwargs or {})
    for name, value in params:
        if not is_static(value) and not isinstance(value, (np.ndarray, np.generic)):
            raise TracerError(
                f"argument '{name}' is a {type(value).__name__}; traced functions take numpy arrays "
                "(inputs) and Python scalars or None (static)"
            )
    specs = _leaf_specs(params, dynamic)
    func = make_func("main", [t for _, t in specs], arg_names=[n for n, _ in specs])
    block = func_body(func)
    tensors = iter(Tensor(a) for a in block.args)
    call_args = {name: (value if is_static(value) else next(tensors)) for name, value in params}
    with Trace(func) as tr:
        result = _call(fn, params, call_args)
        leaves, tree = flatten_tree(result)
        outs = [leaf if isinstance(leaf, Tensor) else as_tensor(leaf) for leaf in leaves]
    set_results(func, [t.value for t in outs])
    return ImportedGraph(
        module=make_module([func]),
        input_names=[n for n, _ in specs],
        output_names=[f"output{i}" for i in range(len(outs))],
        output_tree=tree,
        metadata={
            "framework": "tensorium.trace",
            "function": getattr(fn, "__qualname__", repr(fn)),
            "ops": len(tr.ops),
            "static_arguments": {n: v for n, v in params if is_static(v)},
        },
    )


def _call(fn: Callable[..., Any], params: list[tuple[str, Any]], values: dict[str, Any]) -> Any:
    """Call ``fn`` with ``values`` arranged back into its signature (positional, *args, keywords)."""
    sig = inspect.signature(fn)
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    names = [n for n, _ in params]
    for name, p in sig.parameters.items():
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            positional += [values[n] for n in names if n.startswith(f"{name}_") and n[len(name) + 1 :].isdigit()]
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            known = set(sig.parameters)
            keywords.update({n: values[n] for n in names if n not in known})
        elif name not in values:
            continue
        elif p.kind is inspect.Parameter.KEYWORD_ONLY:
            keywords[name] = values[name]
        else:
            positional.append(values[name])
    return fn(*positional, **keywords)


def trace(fn: Callable[..., Any], *example_args: Any, dynamic: DynamicSpec | None = None) -> ImportedGraph:
    """Trace a numpy-like function on example arrays; ``dynamic={"x": {0: "batch"}}`` keeps dims symbolic."""
    return trace_function(fn, example_args, None, dynamic)
