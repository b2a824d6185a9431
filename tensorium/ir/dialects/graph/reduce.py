"""Reductions over axes (sum, mean, max, min, prod), argmax/argmin and cumulative sums.

Reductions take a list of axes (negative counts from the end, no repeats); an empty list reduces
nothing and returns the input unchanged. Over an empty dimension sum gives 0, prod 1, float mean
NaN and integer mean 0; max, min, argmax and argmin have no identity, so a reduced dimension of
static size 0 is a verification error and one of run-time size 0 is an interpreter error. Integer
mean truncates toward zero; f16 sums, means, products and cumulative sums accumulate in f32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...attributes import BoolAttr, IntAttr, IntsAttr
from ...opdef import InferError, OpDef, define
from ...shapes import normalize_axes, normalize_axis
from ...types import Dim, TensorType, Type, i64
from .common import check_dtype, tensors


def _reduced_shape(t: TensorType, axes: tuple[int, ...], keepdims: bool) -> tuple[Dim, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(t.shape))
    return tuple(d for i, d in enumerate(t.shape) if i not in axes)


def _check_not_empty(shape: Sequence[Dim], axes: Sequence[int], what: str, error: type[Exception] = InferError) -> None:
    """Raise ``error`` when one of ``axes`` has size 0 in ``shape``: ``what`` has no value there."""
    for axis in axes:
        if shape[axis] == 0:
            raise error(f"{what} of an empty dimension (axis {axis} has size 0) has no value")


def _accumulator(x: np.ndarray) -> Any:
    """The dtype to accumulate ``x`` in: f32 for f16, numpy's default otherwise."""
    return np.float32 if x.dtype == np.float16 else None


def _sum(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    return np.asarray(np.sum(x, axis=axes, keepdims=keepdims, dtype=_accumulator(x)))


def _prod(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(np.prod(x, axis=axes, keepdims=keepdims, dtype=_accumulator(x)))


def _mean(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    total = _sum(x, axes, keepdims)
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return total / count if count else np.full_like(total, np.nan)
    if count == 0:
        return np.zeros_like(total)
    quotient = np.abs(total) // count
    return np.where(total < 0, -quotient, quotient)


def _max(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    _check_not_empty(x.shape, axes, "max", ValueError)
    return np.asarray(np.max(x, axis=axes, keepdims=keepdims))


def _min(x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    _check_not_empty(x.shape, axes, "min", ValueError)
    return np.asarray(np.min(x, axis=axes, keepdims=keepdims))


def _reduction(
    name: str,
    fn: Callable[[np.ndarray, tuple[int, ...], bool], np.ndarray],
    dtypes: str,
    empty_ok: bool,
    doc: str,
) -> OpDef:
    """Declare ``graph.reduce_<name>`` over the ``axes`` attribute."""
    what = name.removeprefix("reduce_")

    def infer(x: Type, *, axes: tuple[int, ...], keepdims: bool) -> Type:
        (t,) = tensors(x)
        check_dtype(t, dtypes)
        norm = normalize_axes(axes, t.rank)
        if not empty_ok:
            _check_not_empty(t.shape, norm, what)
        return t.with_shape(_reduced_shape(t, norm, keepdims))

    def reference(x: np.ndarray, *, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
        if not axes:
            return x
        return fn(x, tuple(a % x.ndim for a in axes), keepdims)

    return define(
        f"graph.{name}",
        operands=("x",),
        attrs={"axes": IntsAttr(), "keepdims": BoolAttr(False)},
        infer=infer,
        reference=reference,
        traits=("pure",),
        doc=doc,
    )


reduce_sum = _reduction("reduce_sum", _sum, "number", True, "Sum over `axes` (0 over an empty dimension).")
reduce_mean = _reduction(
    "reduce_mean",
    _mean,
    "number",
    True,
    "Mean over `axes`; integers truncate toward zero; an empty dimension gives NaN (0 for integers).",
)
reduce_prod = _reduction("reduce_prod", _prod, "number", True, "Product over `axes` (1 over an empty dimension).")
reduce_max = _reduction(
    "reduce_max", _max, "any", False, "Maximum over `axes` (NaN propagates); an empty reduced dimension is an error."
)
reduce_min = _reduction(
    "reduce_min", _min, "any", False, "Minimum over `axes` (NaN propagates); an empty reduced dimension is an error."
)


def _arg_reduction(name: str, fn: Callable[..., np.ndarray]) -> OpDef:
    """Declare ``graph.argmax`` or ``graph.argmin``: the i64 index of the extreme along ``axis``."""

    def infer(x: Type, *, axis: int, keepdims: bool, select_last_index: bool) -> Type:
        (t,) = tensors(x)
        norm = normalize_axis(axis, t.rank)
        _check_not_empty(t.shape, (norm,), name)
        return TensorType(_reduced_shape(t, (norm,), keepdims), i64)

    def reference(x: np.ndarray, *, axis: int, keepdims: bool, select_last_index: bool) -> np.ndarray:
        axis %= x.ndim
        _check_not_empty(x.shape, (axis,), name, ValueError)
        if not select_last_index:
            return np.asarray(fn(x, axis=axis, keepdims=keepdims))
        flipped = fn(np.flip(x, axis), axis=axis, keepdims=keepdims)
        return np.asarray(x.shape[axis] - 1 - flipped)

    extreme = "largest" if name == "argmax" else "smallest"
    return define(
        f"graph.{name}",
        operands=("x",),
        attrs={"axis": IntAttr(), "keepdims": BoolAttr(False), "select_last_index": BoolAttr(False)},
        infer=infer,
        reference=reference,
        traits=("pure",),
        doc=f"The i64 index of the {extreme} element along `axis` (a NaN wins); ties pick the first index "
        "unless `select_last_index`.",
    )


argmax = _arg_reduction("argmax", np.argmax)
argmin = _arg_reduction("argmin", np.argmin)


def _cumsum_infer(x: Type, *, axis: int, exclusive: bool, reverse: bool) -> Type:
    (t,) = tensors(x)
    check_dtype(t, "number")
    normalize_axis(axis, t.rank)
    return t


def _cumsum_reference(x: np.ndarray, *, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    axis %= x.ndim
    y = np.flip(x, axis) if reverse else x
    out = np.cumsum(y, axis=axis, dtype=_accumulator(x))
    if exclusive:
        shifted = np.zeros_like(out)
        dst = [slice(None)] * x.ndim
        src = [slice(None)] * x.ndim
        dst[axis], src[axis] = slice(1, None), slice(None, -1)
        shifted[tuple(dst)] = out[tuple(src)]
        out = shifted
    return np.flip(out, axis) if reverse else out


cumsum = define(
    "graph.cumsum",
    operands=("x",),
    attrs={"axis": IntAttr(), "exclusive": BoolAttr(False), "reverse": BoolAttr(False)},
    infer=_cumsum_infer,
    reference=_cumsum_reference,
    traits=("pure",),
    doc="Cumulative sum along `axis` (ONNX CumSum): `exclusive` leaves out the current element, "
    "`reverse` sums from the end.",
)
