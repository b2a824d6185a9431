"""Elementwise graph ops: constants, unary math, binary arithmetic with broadcasting, where,
cast and clamp.

Binary ops need both operands of one element type (frontends insert casts); integer ``div``
truncates toward zero and ``mod`` takes the sign of the divisor (numpy's ``mod``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...attributes import DenseElementsAttr, OptionalFloatAttr, ScalarTypeAttr, StrAttr
from ...opdef import InferError, OpDef, define
from ...shapes import broadcast_shapes
from ...types import Type, i1
from .common import binary, check_dtype, erf, same_element, tensors, unary


def _constant_infer(*, value: Any) -> Type:
    return value.type


constant = define(
    "graph.constant",
    attrs={"value": DenseElementsAttr()},
    infer=_constant_infer,
    reference=lambda *, value: value.array,
    traits=("pure", "constant"),
    doc="A constant tensor.",
)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _gelu(x: np.ndarray, *, approximate: str) -> np.ndarray:
    # As PyTorch computes them: x * x * x for the cube, a multiplication by 1/sqrt(2) rather than a division.
    if approximate == "tanh":
        c = np.sqrt(2 / np.pi).astype(x.dtype)
        return (0.5 * x * (1 + np.tanh(c * (x + 0.044715 * (x * x * x))))).astype(x.dtype)
    return (0.5 * x * (1 + erf(x * np.sqrt(0.5).astype(x.dtype)))).astype(x.dtype)


def _safe(fn: Any) -> Any:
    def run(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(x)

    return run


neg = unary("neg", np.negative, "number", doc="-x")
abs_ = unary("abs", np.abs, "number", doc="|x|")
exp = unary("exp", _safe(np.exp), doc="e**x")
log = unary("log", _safe(np.log), doc="natural logarithm")
sqrt = unary("sqrt", _safe(np.sqrt), doc="square root")
rsqrt = unary("rsqrt", _safe(lambda x: (1 / np.sqrt(x)).astype(x.dtype)), doc="1 / sqrt(x)")
sin = unary("sin", np.sin, doc="sine")
cos = unary("cos", np.cos, doc="cosine")
tanh = unary("tanh", np.tanh, doc="hyperbolic tangent")
sigmoid = unary("sigmoid", _sigmoid, doc="1 / (1 + exp(-x))")
erf_ = unary("erf", erf, doc="the error function")
relu = unary("relu", lambda x: np.maximum(x, 0).astype(x.dtype), "number", doc="max(x, 0)")
gelu = unary(
    "gelu",
    _gelu,
    attrs={"approximate": StrAttr("none", choices=("none", "tanh"))},
    doc="x * Phi(x); approximate='tanh' uses the tanh form",
)
silu = unary("silu", lambda x: (x * _sigmoid(x)).astype(x.dtype), doc="x * sigmoid(x)")
floor = unary("floor", np.floor, doc="round down")
ceil = unary("ceil", np.ceil, doc="round up")
round_ = unary("round", np.round, doc="round half to even")
not_ = unary(
    "not",
    lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
    "intbool",
    doc="logical not of i1, bitwise not of integers",
)
sign = unary("sign", np.sign, "number", doc="-1, 0 or 1")
reciprocal = unary("reciprocal", _safe(lambda x: (1 / x).astype(x.dtype)), doc="1 / x")


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a.dtype.kind in "iu":
            safe_b = np.where(b == 0, 1, b).astype(b.dtype)
            q = a // safe_b
            q = q + ((a % safe_b != 0) & ((a < 0) != (safe_b < 0)))
            return np.where(b == 0, 0, q).astype(np.result_type(a, b))
        return np.divide(a, b)


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        if a.dtype.kind in "iu":
            return np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b)))
        return np.mod(a, b)


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a.dtype.kind in "iu":
            dtype = np.result_type(a, b)
            odd = (b % 2) != 0  # also right for the most negative exponent, whose abs() overflows
            one, zero = np.ones((), dtype), np.zeros((), dtype)
            minus_one = np.array(-1).astype(dtype)  # only reachable for signed types
            negative = np.where(a == 1, one, np.where(a == -1, np.where(odd, minus_one, one), zero))
            return np.where(b < 0, negative, np.power(a, np.where(b < 0, zero, b).astype(dtype)))
        return np.power(a, b)


def _logical(name: str, fn_bool: Any, fn_int: Any) -> OpDef:
    """Declare ``graph.<name>``: logical on i1, bitwise on integers."""
    return binary(
        name,
        lambda a, b: fn_bool(a, b) if a.dtype == np.bool_ else fn_int(a, b),
        "intbool",
        commutative=True,
        doc=f"logical {name} of i1, bitwise {name} of integers",
    )


add = binary("add", np.add, commutative=True, doc="lhs + rhs")
sub = binary("sub", np.subtract, doc="lhs - rhs")
mul = binary("mul", np.multiply, commutative=True, doc="lhs * rhs")
div = binary("div", _div, doc="lhs / rhs (integers truncate toward zero)")
pow_ = binary("pow", _pow, doc="lhs ** rhs")
max_ = binary("max", np.maximum, commutative=True, doc="elementwise maximum (NaN propagates)")
min_ = binary("min", np.minimum, commutative=True, doc="elementwise minimum (NaN propagates)")
mod = binary("mod", _mod, doc="remainder with the sign of rhs")
eq = binary("eq", np.equal, "any", i1, commutative=True, doc="lhs == rhs")
ne = binary("ne", np.not_equal, "any", i1, commutative=True, doc="lhs != rhs")
lt = binary("lt", np.less, "any", i1, doc="lhs < rhs")
le = binary("le", np.less_equal, "any", i1, doc="lhs <= rhs")
gt = binary("gt", np.greater, "any", i1, doc="lhs > rhs")
ge = binary("ge", np.greater_equal, "any", i1, doc="lhs >= rhs")
and_ = _logical("and", np.logical_and, np.bitwise_and)
or_ = _logical("or", np.logical_or, np.bitwise_or)
xor = _logical("xor", np.logical_xor, np.bitwise_xor)


def _where_infer(cond: Type, lhs: Type, rhs: Type) -> Type:
    c, a, b = tensors(cond, lhs, rhs)
    check_dtype(c, "bool", "condition")
    element = same_element([a, b], "the two branches")
    return a.with_shape(broadcast_shapes(c.shape, a.shape, b.shape)).with_element(element)


where = define(
    "graph.where",
    operands=("cond", "lhs", "rhs"),
    infer=_where_infer,
    reference=lambda c, a, b: np.where(c, a, b),
    traits=("pure", "elementwise"),
    doc="lhs where cond is true, else rhs",
)


def _cast_infer(x: Type, *, dtype: Any) -> Type:
    (t,) = tensors(x)
    return t.with_element(dtype)


def _float_to_i64(x: np.ndarray) -> np.ndarray:
    """Truncate toward zero, saturating to the i64 range; NaN becomes 0 (LLVM's fptosi.sat)."""
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.trunc(x.astype(np.float64))
        high = y >= 2.0**63
        low = y < -(2.0**63)
        safe = np.where(np.isnan(y) | high | low, 0.0, y).astype(np.int64)
    info = np.iinfo(np.int64)
    return np.where(high, info.max, np.where(low, info.min, safe))


def _cast_reference(x: np.ndarray, *, dtype: Any) -> np.ndarray:
    from ...types import FloatType, IntegerType, storage_dtype

    target = storage_dtype(dtype)
    if isinstance(dtype, IntegerType) and dtype.is_bool:
        return x != 0
    if not isinstance(dtype, FloatType) and x.dtype.kind == "f":
        return _float_to_i64(x).astype(target)
    with np.errstate(over="ignore"):
        return x.astype(target)


cast = define(
    "graph.cast",
    operands=("x",),
    attrs={"dtype": ScalarTypeAttr()},
    infer=_cast_infer,
    reference=_cast_reference,
    traits=("pure", "elementwise"),
    doc=(
        "Convert elements to `dtype`. Floats to integers truncate toward zero, saturate to the i64 range "
        "(NaN gives 0), then wrap to the target width; anything to i1 is `x != 0`."
    ),
)


def _clamp_infer(x: Type, *, min: float | None, max: float | None) -> Type:
    (t,) = tensors(x)
    check_dtype(t, "number")
    if min is not None and max is not None and min > max:
        raise InferError(f"clamp min {min} is greater than max {max}")
    return t


def _clamp_reference(x: np.ndarray, *, min: float | None, max: float | None) -> np.ndarray:
    y = x
    if min is not None:
        y = np.maximum(y, np.asarray(min).astype(x.dtype) if x.dtype.kind == "f" else np.ceil(min))
    if max is not None:
        y = np.minimum(y, np.asarray(max).astype(x.dtype) if x.dtype.kind == "f" else np.floor(max))
    return y.astype(x.dtype)


clamp = define(
    "graph.clamp",
    operands=("x",),
    attrs={"min": OptionalFloatAttr(), "max": OptionalFloatAttr()},
    infer=_clamp_infer,
    reference=_clamp_reference,
    traits=("pure", "elementwise"),
    doc="min(max(x, min), max); either bound may be absent",
)
