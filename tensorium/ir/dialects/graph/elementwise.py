"""Elementwise graph ops: constants, unary math, binary arithmetic with broadcasting, where,
cast and clamp.

Binary ops need both operands of one element type (frontends insert casts); integer ``div``
truncates toward zero and ``mod`` takes the sign of the divisor (numpy's ``mod``).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...attributes import DenseElementsAttr, OptionalFloatAttr, ScalarTypeAttr, StrAttr
from ...opdef import InferError, OpDef, define
from ...semantics import ELEMENTWISE, erf, safe
from ...shapes import broadcast_shapes
from ...types import Type, i1
from .common import binary, check_dtype, same_element, tensors, unary


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


neg = unary("neg", ELEMENTWISE["neg"], "number", doc="-x")
abs_ = unary("abs", ELEMENTWISE["abs"], "number", doc="|x|")
exp = unary("exp", ELEMENTWISE["exp"], doc="e**x")
log = unary("log", ELEMENTWISE["log"], doc="natural logarithm")
sqrt = unary("sqrt", ELEMENTWISE["sqrt"], doc="square root")
rsqrt = unary("rsqrt", ELEMENTWISE["rsqrt"], doc="1 / sqrt(x)")
sin = unary("sin", ELEMENTWISE["sin"], doc="sine")
cos = unary("cos", ELEMENTWISE["cos"], doc="cosine")
tanh = unary("tanh", ELEMENTWISE["tanh"], doc="hyperbolic tangent")
sigmoid = unary("sigmoid", _sigmoid, doc="1 / (1 + exp(-x))")
erf_ = unary("erf", ELEMENTWISE["erf"], doc="the error function")
relu = unary("relu", lambda x: np.maximum(x, 0).astype(x.dtype), "number", doc="max(x, 0)")
gelu = unary(
    "gelu",
    _gelu,
    attrs={"approximate": StrAttr("none", choices=("none", "tanh"))},
    doc="x * Phi(x); approximate='tanh' uses the tanh form",
)
silu = unary("silu", lambda x: (x * _sigmoid(x)).astype(x.dtype), doc="x * sigmoid(x)")
floor = unary("floor", ELEMENTWISE["floor"], doc="round down")
ceil = unary("ceil", np.ceil, doc="round up")
round_ = unary("round", np.round, doc="round half to even")
not_ = unary(
    "not",
    lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
    "intbool",
    doc="logical not of i1, bitwise not of integers",
)
sign = unary("sign", np.sign, "number", doc="-1, 0 or 1")
reciprocal = unary("reciprocal", safe(lambda x: (1 / x).astype(x.dtype)), doc="1 / x")


def _logical(name: str) -> OpDef:
    """Declare ``graph.<name>``: logical on i1, bitwise on integers."""
    return binary(
        name, ELEMENTWISE[name], "intbool", commutative=True, doc=f"logical {name} of i1, bitwise {name} of integers"
    )


add = binary("add", ELEMENTWISE["add"], commutative=True, doc="lhs + rhs")
sub = binary("sub", ELEMENTWISE["sub"], doc="lhs - rhs")
mul = binary("mul", ELEMENTWISE["mul"], commutative=True, doc="lhs * rhs")
div = binary("div", ELEMENTWISE["div"], doc="lhs / rhs (integers truncate toward zero)")
pow_ = binary("pow", ELEMENTWISE["pow"], doc="lhs ** rhs")
max_ = binary("max", ELEMENTWISE["max"], commutative=True, doc="elementwise maximum (NaN propagates)")
min_ = binary("min", ELEMENTWISE["min"], commutative=True, doc="elementwise minimum (NaN propagates)")
mod = binary("mod", ELEMENTWISE["mod"], doc="remainder with the sign of rhs")
eq = binary("eq", ELEMENTWISE["eq"], "any", i1, commutative=True, doc="lhs == rhs")
ne = binary("ne", ELEMENTWISE["ne"], "any", i1, commutative=True, doc="lhs != rhs")
lt = binary("lt", ELEMENTWISE["lt"], "any", i1, doc="lhs < rhs")
le = binary("le", ELEMENTWISE["le"], "any", i1, doc="lhs <= rhs")
gt = binary("gt", ELEMENTWISE["gt"], "any", i1, doc="lhs > rhs")
ge = binary("ge", ELEMENTWISE["ge"], "any", i1, doc="lhs >= rhs")
and_ = _logical("and")
or_ = _logical("or")
xor = _logical("xor")


def _where_infer(cond: Type, lhs: Type, rhs: Type) -> Type:
    c, a, b = tensors(cond, lhs, rhs)
    check_dtype(c, "bool", "condition")
    element = same_element([a, b], "the two branches")
    return a.with_shape(broadcast_shapes(c.shape, a.shape, b.shape)).with_element(element)


where = define(
    "graph.where",
    operands=("cond", "lhs", "rhs"),
    infer=_where_infer,
    reference=ELEMENTWISE["where"],
    traits=("pure", "elementwise"),
    doc="lhs where cond is true, else rhs",
)


def _cast_infer(x: Type, *, dtype: Any) -> Type:
    (t,) = tensors(x)
    return t.with_element(dtype)


cast = define(
    "graph.cast",
    operands=("x",),
    attrs={"dtype": ScalarTypeAttr()},
    infer=_cast_infer,
    reference=ELEMENTWISE["cast"],
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
        y = np.maximum(y, _bound(min, x.dtype, math.ceil))
    if max is not None:
        y = np.minimum(y, _bound(max, x.dtype, math.floor))
    return y.astype(x.dtype)


def _bound(value: float, dtype: np.dtype, rounded: Callable[[float], int]) -> np.ndarray:
    """A clamp bound in ``dtype``: itself for floats; for integers the nearest integer inside it (``rounded``),
    within the dtype's range, so that the comparison stays in integers (through float64, integers past 2**53
    would round)."""
    if dtype.kind == "f":
        return np.asarray(value).astype(dtype)
    if math.isnan(value):
        return np.asarray(value)
    info = np.iinfo(dtype)
    if math.isinf(value):
        return np.asarray(info.min if value < 0 else info.max, dtype)
    return np.asarray(builtins.min(builtins.max(rounded(value), int(info.min)), int(info.max)), dtype)


clamp = define(
    "graph.clamp",
    operands=("x",),
    attrs={"min": OptionalFloatAttr(), "max": OptionalFloatAttr()},
    infer=_clamp_infer,
    reference=_clamp_reference,
    traits=("pure", "elementwise"),
    doc="min(max(x, min), max); either bound may be absent",
)
