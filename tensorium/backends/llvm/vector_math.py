"""exp, erf and tanh of f32 vectors as polynomials, so that vectorized loops need no per-lane libm calls.

LLVM turns ``llvm.exp.v16f32`` into sixteen calls of ``expf``; these keep every lane in registers.
Accuracy (checked against numpy in tests/backends/test_vectorize.py): exp within 2 ulp on the normal
range (denormal results flush to 0), erf and tanh within 1e-6 relative (2e-7 absolute).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir

from .common import I32

MathCall = Callable[..., ir.Value]
"""``call_math(name, *args)``: an LLVM math intrinsic on the arguments' (vector) type."""

_EXP_POLY = [5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4]
_TANH_SERIES = [1.0, -1 / 3, 2 / 15, -17 / 315, 62 / 2835]
_ERF_SERIES = [2 / math.sqrt(math.pi) * (-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(7)]
_ERFC = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587]
_ERFC += [-0.82215223, 0.17087277]


def _c(x: ir.Value, value: float) -> ir.Constant:
    return ir.Constant(x.type, value)


def _horner(bl: ir.IRBuilder, x: ir.Value, coefficients: list[float]) -> ir.Value:
    acc: ir.Value = _c(x, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = bl.fadd(bl.fmul(acc, x), _c(x, c))
    return acc


def vector_exp(bl: ir.IRBuilder, x: ir.Value, call_math: MathCall) -> ir.Value:
    """e**x of an f32 vector: 2**n * p(r) with x = n ln 2 + r (Cephes' expf); inf above 88.72, 0 below -87.3."""
    clamped = call_math("minnum", call_math("maxnum", x, _c(x, -87.3)), _c(x, 88.72))
    n = call_math("floor", bl.fadd(bl.fmul(clamped, _c(x, 1.4426950408889634)), _c(x, 0.5)))
    r = bl.fsub(bl.fsub(clamped, bl.fmul(n, _c(x, 0.693359375))), bl.fmul(n, _c(x, -2.12194440e-4)))
    p = bl.fadd(bl.fadd(bl.fmul(_horner(bl, r, _EXP_POLY), bl.fmul(r, r)), r), _c(x, 1.0))
    ints = ir.VectorType(I32, x.type.count)
    scale = bl.bitcast(bl.shl(bl.add(bl.fptosi(n, ints), ir.Constant(ints, 127)), ir.Constant(ints, 23)), x.type)
    out = bl.fmul(p, scale)
    out = bl.select(bl.fcmp_ordered(">", x, _c(x, 88.72)), _c(x, math.inf), out)
    out = bl.select(bl.fcmp_ordered("<", x, _c(x, -87.3)), _c(x, 0.0), out)
    return bl.select(bl.fcmp_unordered("uno", x, x), x, out)


def vector_tanh(bl: ir.IRBuilder, x: ir.Value, call_math: MathCall) -> ir.Value:
    """tanh of an f32 vector: its series below |x| = 0.1, else sign(x) (1 - 2 / (e**(2|x|) + 1))."""
    ax = call_math("fabs", x)
    small = bl.fmul(x, _horner(bl, bl.fmul(x, x), _TANH_SERIES))
    e = vector_exp(bl, bl.fmul(ax, _c(x, 2.0)), call_math)
    large = bl.fsub(_c(x, 1.0), bl.fdiv(_c(x, 2.0), bl.fadd(e, _c(x, 1.0))))
    out = bl.select(bl.fcmp_ordered("<", ax, _c(x, 0.1)), small, call_math("copysign", large, x))
    return bl.select(bl.fcmp_unordered("uno", x, x), x, out)


def vector_erf(bl: ir.IRBuilder, x: ir.Value, call_math: MathCall) -> ir.Value:
    """erf of an f32 vector: its series below |x| = 0.5, else 1 - erfc with the Numerical Recipes erfc."""
    ax = call_math("fabs", x)
    small = bl.fmul(x, _horner(bl, bl.fmul(x, x), _ERF_SERIES))
    t = bl.fdiv(_c(x, 1.0), bl.fadd(_c(x, 1.0), bl.fmul(_c(x, 0.5), ax)))
    exponent = bl.fsub(_horner(bl, t, _ERFC), bl.fmul(ax, ax))
    erfc = bl.fmul(t, vector_exp(bl, exponent, call_math))
    large = call_math("copysign", bl.fsub(_c(x, 1.0), erfc), x)
    out = bl.select(bl.fcmp_unordered("<", ax, _c(x, 0.5)), small, large)
    return bl.select(bl.fcmp_unordered("uno", x, x), x, out)


VECTOR_MATH = {"loop.exp": vector_exp, "loop.tanh": vector_tanh, "loop.erf": vector_erf}
"""Loop ops with an f32 vector polynomial, by op name."""
