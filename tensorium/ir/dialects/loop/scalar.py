"""Scalar ops of the loop dialect: constants, arithmetic, comparisons, select, casts and math.

Operands are scalars (floats, integers, ``index``) of one type. Each op that shares its name with a
graph op (``add``, ``div``, ``max``, ``cast``, ``exp``, ...) computes exactly what that graph op
computes on one element, so a lowering from graph to loop ops keeps the interpreter's results. The
exceptions are ``rem`` (the truncated remainder of C, LLVM and WGSL, sign of the dividend) and
``fma``; ``cmp`` and ``select`` are the scalar forms of graph.eq/ne/lt/le/gt/ge and graph.where.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...attributes import AttrSpec, ScalarTypeAttr, StrAttr
from ...core import Value
from ...opdef import InferError, OpDef, Reference, define
from ...printer import format_attr
from ...semantics import ELEMENTWISE
from ...types import FloatType, IntegerType, Type, i1, storage_dtype
from .common import expect_scalar, same_scalar


def _const_infer(*, value: Any, dtype: Any) -> Type:
    t = expect_scalar(dtype, what="dtype")
    shown = format_attr(value)
    if isinstance(t, FloatType):
        if not isinstance(value, float):
            raise InferError(f"a constant of type {t} needs a float value, got {shown}")
    elif isinstance(t, IntegerType) and t.is_bool:
        if not isinstance(value, bool):
            raise InferError(f"a constant of type i1 needs true or false, got {shown}")
    else:
        if not isinstance(value, int) or isinstance(value, bool):
            raise InferError(f"a constant of type {t} needs an integer value, got {shown}")
        low, high = (t.min_value, t.max_value) if isinstance(t, IntegerType) else (-(1 << 63), (1 << 63) - 1)
        if not low <= value <= high:
            raise InferError(f"value {value} is out of range for {t} ({low}..{high})")
    return t


const = define(
    "loop.const",
    attrs={
        "value": AttrSpec("a number or boolean", lambda v: isinstance(v, (bool, int, float))),
        "dtype": ScalarTypeAttr(),
    },
    infer=_const_infer,
    reference=lambda *, value, dtype: np.asarray(value),
    traits=("pure", "constant"),
    doc="A scalar constant of type `dtype`: a float for float types, an integer for integers and index, "
    "true or false for i1.",
)


def const_value(value: Value) -> Any:
    """The ``value`` attribute of the ``loop.const`` that defines ``value``, or None when something else does."""
    op = value.defining_op()
    return op.attr("value") if op is not None and op.name == "loop.const" else None


def _unary(name: str, dtypes: str, doc: str, fn: Reference | None = None) -> OpDef:
    def infer(x: Type) -> Type:
        return expect_scalar(x, dtypes)

    return define(
        f"loop.{name}",
        operands=("x",),
        infer=infer,
        reference=fn or ELEMENTWISE[name],
        traits=("pure",),
        doc=doc,
    )


def _binary(name: str, dtypes: str, doc: str, commutative: bool = False, fn: Reference | None = None) -> OpDef:
    def infer(lhs: Type, rhs: Type) -> Type:
        return same_scalar([lhs, rhs], dtypes)

    return define(
        f"loop.{name}",
        operands=("lhs", "rhs"),
        infer=infer,
        reference=fn or ELEMENTWISE[name],
        traits=("pure", "commutative") if commutative else ("pure",),
        doc=doc,
    )


def _rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        if a.dtype.kind in "iu":
            return np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b))).astype(a.dtype)
        return np.fmod(a, b)


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        if a.dtype.kind == "f" and a.dtype.itemsize < 8:
            return np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
        return np.asarray(a * b + c)


add = _binary("add", "number", "lhs + rhs (integers wrap)", commutative=True)
sub = _binary("sub", "number", "lhs - rhs (integers wrap)")
mul = _binary("mul", "number", "lhs * rhs (integers wrap)", commutative=True)
div = _binary("div", "number", "lhs / rhs; integers truncate toward zero and give 0 when dividing by 0")
rem = _binary(
    "rem",
    "number",
    "The truncated remainder lhs - trunc(lhs / rhs) * rhs (sign of lhs, C's %); integer rhs 0 gives 0.",
    fn=_rem,
)
max_ = _binary("max", "number", "the larger operand; NaN if either is NaN", commutative=True)
min_ = _binary("min", "number", "the smaller operand; NaN if either is NaN", commutative=True)
pow_ = _binary("pow", "number", "lhs ** rhs (as graph.pow for integers: negative powers give 0 unless lhs is +-1)")
and_ = _binary("and", "intbool", "logical and of i1, bitwise and of integers", commutative=True)
or_ = _binary("or", "intbool", "logical or of i1, bitwise or of integers", commutative=True)
xor = _binary("xor", "intbool", "logical xor of i1, bitwise xor of integers", commutative=True)

neg = _unary("neg", "number", "-x (integers wrap)")
abs_ = _unary("abs", "number", "|x|")
exp = _unary("exp", "float", "e**x")
log = _unary("log", "float", "natural logarithm")
sqrt = _unary("sqrt", "float", "square root")
rsqrt = _unary("rsqrt", "float", "1 / sqrt(x)")
tanh = _unary("tanh", "float", "hyperbolic tangent")
erf = _unary("erf", "float", "the error function")
sin = _unary("sin", "float", "sine")
cos = _unary("cos", "float", "cosine")
floor = _unary("floor", "float", "round down")
asin = _unary("asin", "float", "arcsine in [-pi/2, pi/2]; NaN outside [-1, 1]")
acos = _unary("acos", "float", "arccosine in [0, pi]; NaN outside [-1, 1]")
atan = _unary("atan", "float", "arctangent in (-pi/2, pi/2)")


def _fma_infer(a: Type, b: Type, c: Type) -> Type:
    return same_scalar([a, b, c], "number")


fma = define(
    "loop.fma",
    operands=("a", "b", "c"),
    infer=_fma_infer,
    reference=_fma,
    traits=("pure",),
    doc="a * b + c; backends may fuse it into one rounding (the interpreter computes f16, bf16 and f32 in f64).",
)

PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
_COMPARE = {p: ELEMENTWISE[p] for p in PREDICATES}


def _cmp_infer(lhs: Type, rhs: Type, *, predicate: str) -> Type:
    same_scalar([lhs, rhs])
    return i1


cmp = define(
    "loop.cmp",
    operands=("lhs", "rhs"),
    attrs={"predicate": StrAttr(choices=PREDICATES)},
    infer=_cmp_infer,
    reference=lambda lhs, rhs, *, predicate: _COMPARE[predicate](lhs, rhs),
    traits=("pure",),
    doc="Compare two scalars of one type, giving i1; float comparisons with NaN are false except `ne`.",
)


def _select_infer(cond: Type, lhs: Type, rhs: Type) -> Type:
    if cond != i1:
        raise InferError(f"condition must be i1, got {cond}")
    return same_scalar([lhs, rhs])


select = define(
    "loop.select",
    operands=("cond", "lhs", "rhs"),
    infer=_select_infer,
    reference=ELEMENTWISE["where"],
    traits=("pure",),
    doc="lhs where the i1 cond is true, else rhs.",
)


def _cast_infer(x: Type, *, dtype: Any) -> Type:
    expect_scalar(x)
    return expect_scalar(dtype, what="dtype")


cast = define(
    "loop.cast",
    operands=("x",),
    attrs={"dtype": ScalarTypeAttr()},
    infer=_cast_infer,
    reference=ELEMENTWISE["cast"],
    traits=("pure",),
    doc="Convert a scalar to `dtype` as graph.cast does: floats to integers truncate toward zero, saturate to "
    "the i64 range (NaN gives 0) and wrap to the width; integers wrap; anything to i1 is x != 0.",
)

_BITCAST_WIDTHS = {"f16": 16, "f32": 32, "f64": 64}


def _bitcast_infer(x: Type, *, dtype: Any) -> Type:
    src, dst = expect_scalar(x), expect_scalar(dtype, what="dtype")
    floats = [t for t in (src, dst) if isinstance(t, FloatType)]
    ints = [t for t in (src, dst) if isinstance(t, IntegerType) and not t.is_bool]
    if len(floats) != 1 or len(ints) != 1 or _BITCAST_WIDTHS.get(floats[0].name) != ints[0].width:
        raise InferError(f"bitcast converts between f16, f32 or f64 and an integer of its width, not {src} to {dst}")
    return dst


bitcast = define(
    "loop.bitcast",
    operands=("x",),
    attrs={"dtype": ScalarTypeAttr()},
    infer=_bitcast_infer,
    reference=lambda x, *, dtype: np.asarray(x).view(storage_dtype(dtype)),
    traits=("pure",),
    doc="The bits of a float (f16, f32, f64) as an integer of the same width, or back: what math "
    "decompositions use to reach exponents and to scale by powers of two.",
)
