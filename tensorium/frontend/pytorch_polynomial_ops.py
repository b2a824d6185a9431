"""The orthogonal polynomials of torch.special (Chebyshev T, U, V, W and their shifted forms, Hermite H and
He, Laguerre L, Legendre P) as one table of three-term recurrences, evaluated in f64.

Registered into the converter table of :mod:`.pytorch_ops` on import. The degree ``n`` is a tensor, so
every degree up to :data:`MAX_DEGREE` is computed and the one equal to ``trunc(n)`` picked (a negative
degree gives 0, as torch). Beyond :data:`MAX_DEGREE` the Chebyshev polynomials use their trigonometric
closed forms inside (-1, 1) (as torch does for large degrees) and their values at the ends +-1, and every
other case gives NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import f64
from .pytorch_ops import Context, cast, converts

__all__: list[str] = []

MAX_DEGREE = 24

Step = Callable[[Context, int, Value, Value, Value], Value]
"""(cx, k, x, p_{k-1}, p_k) -> p_{k+1}."""


def _c(cx: Context, value: float) -> Value:
    return cx.const(value, f64)


def _two_x(cx: Context, k: int, x: Value, p: Value, q: Value) -> Value:
    return graph.sub(graph.mul(graph.add(x, x), q), p)


def _hermite(cx: Context, k: int, x: Value, p: Value, q: Value) -> Value:
    return graph.sub(graph.mul(graph.add(x, x), q), graph.mul(_c(cx, 2.0 * k), p))


def _hermite_e(cx: Context, k: int, x: Value, p: Value, q: Value) -> Value:
    return graph.sub(graph.mul(x, q), graph.mul(_c(cx, float(k)), p))


def _laguerre(cx: Context, k: int, x: Value, p: Value, q: Value) -> Value:
    ahead = graph.mul(graph.sub(_c(cx, 2.0 * k + 1.0), x), q)
    return graph.div(graph.sub(ahead, graph.mul(_c(cx, float(k)), p)), _c(cx, k + 1.0))


def _legendre(cx: Context, k: int, x: Value, p: Value, q: Value) -> Value:
    ahead = graph.mul(graph.mul(_c(cx, 2.0 * k + 1.0), x), q)
    return graph.div(graph.sub(ahead, graph.mul(_c(cx, float(k)), p)), _c(cx, k + 1.0))


Closed = Callable[[Context, Value, Value], Value]
"""(cx, theta = acos(x), n) -> the polynomial for x in (-1, 1)."""


def _cos_n(cx: Context, theta: Value, n: Value) -> Value:
    return graph.cos(graph.mul(n, theta))


def _sin_ratio(cx: Context, theta: Value, n: Value) -> Value:
    return graph.div(graph.sin(graph.mul(graph.add(n, _c(cx, 1.0)), theta)), graph.sin(theta))


def _half_cos(cx: Context, theta: Value, n: Value) -> Value:
    half = graph.mul(theta, _c(cx, 0.5))
    return graph.div(graph.cos(graph.mul(graph.add(n, _c(cx, 0.5)), theta)), graph.cos(half))


def _half_sin(cx: Context, theta: Value, n: Value) -> Value:
    half = graph.mul(theta, _c(cx, 0.5))
    return graph.div(graph.sin(graph.mul(graph.add(n, _c(cx, 0.5)), theta)), graph.sin(half))


@dataclass(frozen=True)
class Polynomial:
    """One family: p_1 as a x + b (p_0 = 1), the step to the next degree, and for Chebyshev polynomials the
    closed form inside (-1, 1) and the values at the ends: ``ends = (u, v, s, t)`` gives u n + v at 1 and
    (-1)**n (s n + t) at -1; ``shifted`` evaluates at 2x - 1."""

    a: float
    b: float
    step: Step
    closed: Closed | None = None
    ends: tuple[float, float, float, float] | None = None
    shifted: bool = False


_CHEBYSHEV = {
    "t": Polynomial(1.0, 0.0, _two_x, _cos_n, (0.0, 1.0, 0.0, 1.0)),
    "u": Polynomial(2.0, 0.0, _two_x, _sin_ratio, (1.0, 1.0, 1.0, 1.0)),
    "v": Polynomial(2.0, -1.0, _two_x, _half_cos, (0.0, 1.0, 2.0, 1.0)),
    "w": Polynomial(2.0, 1.0, _two_x, _half_sin, (2.0, 1.0, 0.0, 1.0)),
}
POLYNOMIALS: dict[str, Polynomial] = {
    **{f"chebyshev_polynomial_{k}": poly for k, poly in _CHEBYSHEV.items()},
    **{f"shifted_chebyshev_polynomial_{k}": replace(poly, shifted=True) for k, poly in _CHEBYSHEV.items()},
    "hermite_polynomial_h": Polynomial(2.0, 0.0, _hermite),
    "hermite_polynomial_he": Polynomial(1.0, 0.0, _hermite_e),
    "laguerre_polynomial_l": Polynomial(-1.0, 1.0, _laguerre),
    "legendre_polynomial_p": Polynomial(1.0, 0.0, _legendre),
}


def evaluate(cx: Context, poly: Polynomial, x: Value, n: Value) -> Value:
    """The polynomial of degree ``trunc(n)`` at ``x`` (both f64, broadcast)."""
    if poly.shifted:
        x = graph.sub(graph.add(x, x), _c(cx, 1.0))
    degree = graph.where(graph.lt(n, _c(cx, 0.0)), graph.neg(graph.floor(graph.neg(n))), graph.floor(n))
    p, q = graph.add(graph.mul(x, _c(cx, 0.0)), _c(cx, 1.0)), graph.add(graph.mul(x, _c(cx, poly.a)), _c(cx, poly.b))
    out = graph.where(graph.eq(degree, _c(cx, 0.0)), p, graph.where(graph.eq(degree, _c(cx, 1.0)), q, _c(cx, math.nan)))
    for k in range(1, MAX_DEGREE):
        p, q = q, poly.step(cx, k, x, p, q)
        out = graph.where(graph.eq(degree, _c(cx, k + 1.0)), q, out)
    if poly.closed is not None:
        inside = graph.lt(graph.abs(x), _c(cx, 1.0))
        theta = graph.acos(graph.clamp(x, min=-1.0, max=1.0))
        far = graph.and_(inside, graph.gt(degree, _c(cx, float(MAX_DEGREE))))
        out = graph.where(far, poly.closed(cx, theta, degree), out)
    if poly.ends is not None:
        u, v, s, t = poly.ends
        odd = graph.ne(graph.mod(degree, _c(cx, 2.0)), _c(cx, 0.0))
        sign = graph.where(odd, _c(cx, -1.0), _c(cx, 1.0))
        at_one = graph.add(graph.mul(degree, _c(cx, u)), _c(cx, v))
        at_minus_one = graph.mul(sign, graph.add(graph.mul(degree, _c(cx, s)), _c(cx, t)))
        out = graph.where(graph.eq(x, _c(cx, 1.0)), at_one, graph.where(graph.eq(x, _c(cx, -1.0)), at_minus_one, out))
    return graph.where(graph.lt(degree, _c(cx, 0.0)), _c(cx, 0.0), out)


def _operand(cx: Context, v: Any) -> Value:
    return cast(v, f64) if isinstance(v, Value) else _c(cx, float(v))


def _converter(poly: Polynomial) -> Callable[..., Value]:
    def convert(cx: Context, x: Any, n: Any) -> Value:
        return cast(evaluate(cx, poly, _operand(cx, x), _operand(cx, n)), cx.out_element())

    return convert


for _name, _poly in POLYNOMIALS.items():
    converts(*(f"aten.special_{_name}.{overload}" for overload in ("default", "x_scalar", "n_scalar")))(
        _converter(_poly)
    )
