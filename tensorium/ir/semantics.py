"""Elementwise semantics: the numpy functions that define what an elementwise op computes.

The graph dialect's elementwise ops (on tensors, with broadcasting) and the loop dialect's scalar ops (on
one element) compute the same thing by construction: both take their reference from here, so a lowering
from graph to loop ops keeps the interpreter's results, and neither dialect imports the other.
:data:`ELEMENTWISE` names each function by its op's short name (``add``, ``exp``, ``eq``, ``where``,
``cast``, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .types import FloatType, IntegerType, storage_dtype

__all__ = ["ELEMENTWISE", "cast", "div", "erf", "logical", "mod", "pow_", "quiet", "safe"]


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise (scipy's when installed)."""
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # pragma: no cover - scipy is a test dependency
        return np.vectorize(math.erf, otypes=[x.dtype])(x)
    return np.asarray(scipy_erf(x)).astype(x.dtype, copy=False)


def safe(fn: Any) -> Any:
    """``fn`` with numpy's divide, invalid and overflow warnings silenced (inf and NaN are results)."""

    def run(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(x)  # type: ignore[no-any-return]

    return run


def quiet(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` with numpy's invalid-value warnings silenced (out-of-domain inputs give NaN), in ``x``'s dtype."""

    def run(x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return fn(x).astype(x.dtype, copy=False)

    return run


def div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b``; integers truncate toward zero and give 0 when dividing by 0."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a.dtype.kind in "iu":
            safe_b = np.where(b == 0, 1, b).astype(b.dtype)
            q = a // safe_b
            q = q + ((a % safe_b != 0) & ((a < 0) != (safe_b < 0)))
            return np.where(b == 0, 0, q).astype(np.result_type(a, b))
        return np.divide(a, b)


def mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The remainder with the sign of ``b`` (numpy's mod); integer ``b`` 0 gives 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if a.dtype.kind in "iu":
            return np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b)))
        return np.mod(a, b)


def pow_(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a ** b``; for integers, negative powers give 0 unless ``a`` is +-1."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a.dtype.kind in "iu":
            dtype = np.result_type(a, b)
            odd = (b % 2) != 0  # also right for the most negative exponent, whose abs() overflows
            one, zero = np.ones((), dtype), np.zeros((), dtype)
            minus_one = np.array(-1).astype(dtype)  # only reachable for signed types
            negative = np.where(a == 1, one, np.where(a == -1, np.where(odd, minus_one, one), zero))
            return np.where(b < 0, negative, np.power(a, np.where(b < 0, zero, b).astype(dtype)))
        return np.power(a, b)


def logical(fn_bool: Any, fn_int: Any) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Logical ``fn_bool`` on booleans, bitwise ``fn_int`` on integers."""
    return lambda a, b: fn_bool(a, b) if a.dtype == np.bool_ else fn_int(a, b)


def _float_to_i64(x: np.ndarray) -> np.ndarray:
    """Truncate toward zero, saturating to the i64 range; NaN becomes 0 (LLVM's fptosi.sat)."""
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.trunc(x.astype(np.float64))
        high = y >= 2.0**63
        low = y < -(2.0**63)
        safe_y = np.where(np.isnan(y) | high | low, 0.0, y).astype(np.int64)
    info = np.iinfo(np.int64)
    return np.where(high, info.max, np.where(low, info.min, safe_y))


def cast(x: np.ndarray, *, dtype: Any) -> np.ndarray:
    """``x`` converted to the element type ``dtype``: floats to integers truncate toward zero, saturate to
    the i64 range (NaN gives 0), then wrap to the width; anything to i1 is ``x != 0``."""
    target = storage_dtype(dtype)
    if isinstance(dtype, IntegerType) and dtype.is_bool:
        return x != 0
    if not isinstance(dtype, FloatType) and x.dtype.kind == "f":
        return _float_to_i64(x).astype(target)
    with np.errstate(over="ignore"):
        return x.astype(target)


ELEMENTWISE: dict[str, Callable[..., Any]] = {
    "neg": np.negative,
    "abs": np.abs,
    "exp": safe(np.exp),
    "log": safe(np.log),
    "sqrt": safe(np.sqrt),
    "rsqrt": safe(lambda x: (1 / np.sqrt(x)).astype(x.dtype)),
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "erf": erf,
    "floor": np.floor,
    "asin": quiet(np.arcsin),
    "acos": quiet(np.arccos),
    "atan": quiet(np.arctan),
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": div,
    "pow": pow_,
    "max": np.maximum,
    "min": np.minimum,
    "mod": mod,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "and": logical(np.logical_and, np.bitwise_and),
    "or": logical(np.logical_or, np.bitwise_or),
    "xor": logical(np.logical_xor, np.bitwise_xor),
    "where": lambda c, a, b: np.where(c, a, b),
    "cast": cast,
}
"""The numpy function of each elementwise op, by the op's name without its dialect."""
