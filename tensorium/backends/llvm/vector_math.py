"""exp, erf and tanh of f32 vectors as polynomials, so that vectorized loops need no per-lane libm calls.

LLVM turns ``llvm.exp.v16f32`` into sixteen calls of ``expf``; these keep every lane in registers. They
are the vectorizer's path for modules compiled without the decompose stage: the loop-level decompositions
(:mod:`tensorium.lowering.decompose`, the same polynomials as loop ops) replace them in the CPU pipeline,
where they ran faster. Accuracy (checked against numpy in tests/backends/test_vectorize.py): exp within
2 ulp on the normal range (denormal results flush to 0), tanh within 1e-6 relative (2e-7 absolute), erf
within 4.5e-7 absolute and relative.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir

from ...lowering.decompose import ERF_P, ERF_Q, EXP_POLY, TANH_SERIES
from .common import I32

MathCall = Callable[..., ir.Value]
"""``call_math(name, *args)``: an LLVM math intrinsic on the arguments' (vector) type."""


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
    p = bl.fadd(bl.fadd(bl.fmul(_horner(bl, r, EXP_POLY), bl.fmul(r, r)), r), _c(x, 1.0))
    ints = ir.VectorType(I32, x.type.count)
    scale = bl.bitcast(bl.shl(bl.add(bl.fptosi(n, ints), ir.Constant(ints, 127)), ir.Constant(ints, 23)), x.type)
    out = bl.fmul(p, scale)
    out = bl.select(bl.fcmp_ordered(">", x, _c(x, 88.72)), _c(x, math.inf), out)
    out = bl.select(bl.fcmp_ordered("<", x, _c(x, -87.3)), _c(x, 0.0), out)
    return bl.select(bl.fcmp_unordered("uno", x, x), x, out)


def vector_tanh(bl: ir.IRBuilder, x: ir.Value, call_math: MathCall) -> ir.Value:
    """tanh of an f32 vector: its series below |x| = 0.1, else sign(x) (1 - 2 / (e**(2|x|) + 1))."""
    ax = call_math("fabs", x)
    small = bl.fmul(x, _horner(bl, bl.fmul(x, x), TANH_SERIES))
    e = vector_exp(bl, bl.fmul(ax, _c(x, 2.0)), call_math)
    large = bl.fsub(_c(x, 1.0), bl.fdiv(_c(x, 2.0), bl.fadd(e, _c(x, 1.0))))
    out = bl.select(bl.fcmp_ordered("<", ax, _c(x, 0.1)), small, call_math("copysign", large, x))
    return bl.select(bl.fcmp_unordered("uno", x, x), x, out)


def vector_erf(bl: ir.IRBuilder, x: ir.Value, call_math: MathCall) -> ir.Value:
    """erf of an f32 vector: a rational function of x on [-4, 4] (beyond, erf rounds to +-1 in f32)."""
    clamped = call_math("minnum", call_math("maxnum", x, _c(x, -4.0)), _c(x, 4.0))
    square = bl.fmul(clamped, clamped)
    out = bl.fdiv(bl.fmul(clamped, _horner(bl, square, ERF_P)), _horner(bl, square, ERF_Q))
    return bl.select(bl.fcmp_unordered("uno", x, x), x, out)


VECTOR_MATH = {"loop.exp": vector_exp, "loop.tanh": vector_tanh, "loop.erf": vector_erf}
"""Loop ops with an f32 vector polynomial, by op name."""
