"""ATen elementwise math and activations that decompose exactly into existing graph ops.

Registered into the converter table of :mod:`.pytorch_ops` on import (the PyTorch frontend imports
this module). Each converter is a few graph ops: ``atan2`` from ``atan`` and quadrant fixes, ``fmod``
from the floor remainder, ``logaddexp`` from ``max`` and ``log(1 + exp(-|a - b|))``, and so on.
"""

from __future__ import annotations

import math
from typing import Any

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import FloatType, Sym, f64, i1, i64
from .pytorch_ops import Context, ConversionError, cast, converts, ttype
from .pytorch_special_ops import polygamma
from .symbolic_dims import arange_symbolic

__all__: list[str] = []


def _const(cx: Context, value: float, like: Value) -> Value:
    return cx.const(value, ttype(like).element)


def _float_operand(cx: Context, x: Any) -> Value:
    """``x`` as a value of the node's (float) result type."""
    return cx.tensor(x, cx.out_element())


def _float_pair(cx: Context, a: Any, b: Any) -> tuple[Value, Value]:
    element = cx.out_element()
    return cx.tensor(a, element), cx.tensor(b, element)


# unary math ------------------------------------------------------------------------------------
@converts("aten.exp2.default")
def _exp2(cx: Context, x: Any) -> Value:
    v = _float_operand(cx, x)
    return graph.exp(graph.mul(v, _const(cx, math.log(2), v)))


@converts("aten.log10.default")
def _log10(cx: Context, x: Any) -> Value:
    v = _float_operand(cx, x)
    return graph.mul(graph.log(v), _const(cx, 1 / math.log(10), v))


@converts("aten.tan.default")
def _tan(cx: Context, x: Any) -> Value:
    v = _float_operand(cx, x)
    return graph.div(graph.sin(v), graph.cos(v))


@converts("aten.sinh.default", "aten.cosh.default")
def _sinh_cosh(cx: Context, x: Any) -> Value:
    assert cx.node is not None
    v = _float_operand(cx, x)
    half = _const(cx, 0.5, v)
    up, down = graph.mul(graph.exp(v), half), graph.mul(graph.exp(graph.neg(v)), half)
    return graph.sub(up, down) if str(cx.node.target) == "aten.sinh.default" else graph.add(up, down)


@converts("aten.asinh.default")
def _asinh(cx: Context, x: Any) -> Value:
    v = _float_operand(cx, x)
    a = graph.abs(v)
    # sign(x) * log(|x| + sqrt(x^2 + 1)) avoids the cancellation of the plain formula for x < 0.
    magnitude = graph.log(graph.add(a, graph.sqrt(graph.add(graph.mul(a, a), _const(cx, 1, v)))))
    return graph.where(graph.lt(v, _const(cx, 0, v)), graph.neg(magnitude), magnitude)


@converts("aten.acosh.default")
def _acosh(cx: Context, x: Any) -> Value:
    v = _float_operand(cx, x)
    return graph.log(graph.add(v, graph.sqrt(graph.sub(graph.mul(v, v), _const(cx, 1, v)))))


@converts("aten.atanh.default")
def _atanh(cx: Context, x: Any) -> Value:
    v = _float_operand(cx, x)
    one = _const(cx, 1, v)
    return graph.mul(graph.log(graph.div(graph.add(one, v), graph.sub(one, v))), _const(cx, 0.5, v))


@converts("aten.erfc.default")
def _erfc(cx: Context, x: Any) -> Value:
    v = _float_operand(cx, x)
    return graph.sub(_const(cx, 1, v), graph.erf(v))


@converts("aten.frac.default")
def _frac(cx: Context, x: Value) -> Value:
    from .pytorch_ops import _trunc

    return graph.sub(x, _trunc(x))


@converts("aten.deg2rad.default", "aten.rad2deg.default")
def _degrees(cx: Context, x: Any) -> Value:
    assert cx.node is not None
    v = _float_operand(cx, x)
    factor = math.pi / 180 if str(cx.node.target) == "aten.deg2rad.default" else 180 / math.pi
    return graph.mul(v, _const(cx, factor, v))


# classification --------------------------------------------------------------------------------
def _is_float(x: Value) -> bool:
    return isinstance(ttype(x).element, FloatType)


def _all(cx: Context, x: Value, value: bool) -> Value:
    from .pytorch_ops import broadcast_to

    return broadcast_to(cx.const(value, i1), ttype(x).shape)


@converts("aten.isfinite.default")
def _isfinite(cx: Context, x: Value) -> Value:
    if not _is_float(x):
        return _all(cx, x, True)
    return graph.eq(graph.sub(x, x), _const(cx, 0, x))  # inf - inf and nan - nan are nan


@converts("aten.isinf.default", "aten.isposinf.default", "aten.isneginf.default")
def _isinf(cx: Context, x: Value) -> Value:
    assert cx.node is not None
    if not _is_float(x):
        return _all(cx, x, False)
    name = str(cx.node.target)
    if name == "aten.isposinf.default":
        return graph.eq(x, _const(cx, math.inf, x))
    if name == "aten.isneginf.default":
        return graph.eq(x, _const(cx, -math.inf, x))
    return graph.eq(graph.abs(x), _const(cx, math.inf, x))


def _signbit_of(cx: Context, x: Value) -> Value:
    """True where the sign bit is set, -0.0 included (1 / -0.0 is -inf)."""
    zero = _const(cx, 0, x)
    if not _is_float(x):
        return graph.lt(x, zero)
    negative_zero = graph.and_(graph.eq(x, zero), graph.lt(graph.reciprocal(x), zero))
    return graph.or_(graph.lt(x, zero), negative_zero)


@converts("aten.signbit.default")
def _signbit(cx: Context, x: Value) -> Value:
    return _signbit_of(cx, x)


# binary math ----------------------------------------------------------------------------------
@converts("aten.atan2.default", "aten.arctan2.default")
def _atan2(cx: Context, y: Any, x: Any) -> Value:
    y, x = _float_pair(cx, y, x)
    zero, pi = _const(cx, 0, y), _const(cx, math.pi, y)
    base = graph.atan(graph.div(y, x))
    negative_y = _signbit_of(cx, y)
    # x < 0 (or -0.0): the angle is in the left half plane, pi away from atan(y / x).
    left = graph.where(negative_y, graph.sub(base, pi), graph.add(base, pi))
    on_axis = graph.where(negative_y, graph.neg(_const(cx, math.pi / 2, y)), _const(cx, math.pi / 2, y))
    y_zero = graph.eq(y, zero)
    x_left = _signbit_of(cx, x)
    at_origin = graph.where(x_left, graph.where(negative_y, graph.neg(pi), pi), y)
    angle = graph.where(x_left, left, base)
    angle = graph.where(graph.eq(x, zero), on_axis, angle)
    return graph.where(graph.and_(y_zero, graph.eq(x, zero)), at_origin, angle)


@converts("aten.fmod.Tensor", "aten.fmod.Scalar")
def _fmod(cx: Context, a: Any, b: Any) -> Value:
    element = cx.out_element()
    lhs, rhs = cx.tensor(a, element), cx.tensor(b, element)
    floor_rem = graph.mod(lhs, rhs)  # the sign of the divisor; fmod takes the sign of the dividend
    zero = cx.const(0, element)
    differ = graph.and_(graph.ne(floor_rem, zero), graph.ne(graph.lt(floor_rem, zero), graph.lt(lhs, zero)))
    return graph.where(differ, graph.sub(floor_rem, rhs), floor_rem)


@converts("aten.hypot.default")
def _hypot(cx: Context, a: Any, b: Any) -> Value:
    a, b = _float_pair(cx, a, b)
    return graph.sqrt(graph.add(graph.mul(a, a), graph.mul(b, b)))


@converts("aten.logaddexp.default", "aten.logaddexp2.default")
def _logaddexp(cx: Context, a: Any, b: Any) -> Value:
    assert cx.node is not None
    a, b = _float_pair(cx, a, b)
    base2 = str(cx.node.target) == "aten.logaddexp2.default"
    ln2 = _const(cx, math.log(2), a)
    if base2:
        a, b = graph.mul(a, ln2), graph.mul(b, ln2)
    high = graph.max(a, b)
    gap = graph.neg(graph.abs(graph.sub(a, b)))
    total = graph.add(high, graph.log(graph.add(_const(cx, 1, a), graph.exp(gap))))
    # Equal infinities: the gap is nan, the answer is that infinity.
    total = graph.where(graph.eq(a, b), graph.add(a, graph.log(_const(cx, 2, a))), total)
    return graph.div(total, ln2) if base2 else total


@converts("aten.copysign.Tensor", "aten.copysign.Scalar")
def _copysign(cx: Context, a: Any, b: Any) -> Value:
    a, b = _float_pair(cx, a, b)
    magnitude = graph.abs(a)
    return graph.where(_signbit_of(cx, b), graph.neg(magnitude), magnitude)


@converts("aten.fmax.default", "aten.fmin.default")
def _fmax_fmin(cx: Context, a: Any, b: Any) -> Value:
    assert cx.node is not None
    a, b = _float_pair(cx, a, b)
    both = (graph.max if str(cx.node.target) == "aten.fmax.default" else graph.min)(a, b)
    if not _is_float(a):
        return both
    return graph.where(graph.ne(b, b), a, graph.where(graph.ne(a, a), b, both))


@converts("aten.xlogy.Tensor", "aten.xlogy.Scalar_Other", "aten.xlogy.Scalar_Self")
def _xlogy(cx: Context, x: Any, y: Any) -> Value:
    x, y = _float_pair(cx, x, y)
    product = graph.mul(x, graph.log(y))
    zero = _const(cx, 0, x)
    return graph.where(graph.and_(graph.eq(x, zero), graph.eq(y, y)), zero, product)


# activations ------------------------------------------------------------------------------------
@converts("aten.elu.default")
def _elu(cx: Context, x: Value, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> Value:
    negative = graph.mul(
        graph.sub(graph.exp(graph.mul(x, _const(cx, input_scale, x))), _const(cx, 1, x)), _const(cx, alpha, x)
    )
    return graph.mul(graph.where(graph.gt(x, _const(cx, 0, x)), x, negative), _const(cx, scale, x))


@converts("aten.softplus.default")
def _softplus(cx: Context, x: Value, beta: float = 1.0, threshold: float = 20.0) -> Value:
    scaled = graph.mul(x, _const(cx, beta, x))
    soft = graph.div(graph.log(graph.add(_const(cx, 1, x), graph.exp(scaled))), _const(cx, beta, x))
    return graph.where(graph.gt(scaled, _const(cx, threshold, x)), x, soft)


@converts("aten.threshold.default")
def _threshold(cx: Context, x: Value, threshold: float, value: float) -> Value:
    return graph.where(graph.gt(x, _const(cx, threshold, x)), x, _const(cx, value, x))


@converts("aten.sgn.default")
def _sgn(cx: Context, x: Value) -> Value:
    return graph.sign(x)


@converts("aten.logit.default")
def _logit(cx: Context, x: Value, eps: float | None = None) -> Value:
    if eps is not None:
        x = graph.clamp(x, min=eps, max=1 - eps)
    return graph.log(graph.div(x, graph.sub(_const(cx, 1, x), x)))


# gamma functions (computed in f64, then rounded to the result type) -----------------------------------
_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)


def _c(cx: Context, value: float) -> Value:
    return cx.const(value, f64)


def lgamma_positive(cx: Context, x: Value) -> Value:
    """log(gamma(x)) for x >= 0.5 by Lanczos' approximation (g = 7, 9 terms; about 1e-15 relative)."""
    z = graph.sub(x, _c(cx, 1.0))
    series = _c(cx, _LANCZOS[0])
    for k, coefficient in enumerate(_LANCZOS[1:], start=1):
        series = graph.add(series, graph.div(_c(cx, coefficient), graph.add(z, _c(cx, float(k)))))
    t = graph.add(z, _c(cx, _LANCZOS_G + 0.5))
    log_t = graph.log(t)
    half_log_2pi = _c(cx, 0.5 * math.log(2 * math.pi))
    return graph.add(
        graph.add(half_log_2pi, graph.mul(graph.add(z, _c(cx, 0.5)), log_t)), graph.sub(graph.log(series), t)
    )


@converts("aten.lgamma.default")
def _lgamma(cx: Context, x: Value) -> Value:
    v = cast(x, f64)
    half = _c(cx, 0.5)
    # Reflection below 1/2: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); poles give +inf.
    reflected = graph.sub(
        graph.log(graph.div(_c(cx, math.pi), graph.abs(graph.sin(graph.mul(v, _c(cx, math.pi)))))),
        lgamma_positive(cx, graph.sub(_c(cx, 1.0), v)),
    )
    direct = lgamma_positive(cx, graph.max(v, half))
    out = graph.where(graph.lt(v, half), reflected, direct)
    pole = graph.and_(graph.le(v, _c(cx, 0.0)), graph.eq(v, graph.floor(v)))
    out = graph.where(pole, _c(cx, math.inf), out)
    return cast(out, cx.out_element())


def _digamma_positive(cx: Context, x: Value) -> Value:
    """digamma(x) for x > 0: shifted up by 6, then the asymptotic series."""
    shift = _c(cx, 0.0)
    for k in range(6):
        shift = graph.add(shift, graph.reciprocal(graph.add(x, _c(cx, float(k)))))
    y = graph.add(x, _c(cx, 6.0))
    inv2 = graph.reciprocal(graph.mul(y, y))
    tail = _c(cx, -1 / 132)
    for coefficient in (1 / 240, -1 / 252, 1 / 120, -1 / 12):
        tail = graph.add(graph.mul(tail, inv2), _c(cx, coefficient))
    series = graph.sub(graph.add(graph.log(y), graph.mul(tail, inv2)), graph.div(_c(cx, 0.5), y))
    return graph.sub(series, shift)


@converts("aten.digamma.default")
def _digamma(cx: Context, x: Value) -> Value:
    v = cast(x, f64)
    pi = _c(cx, math.pi)
    # Reflection for x <= 0: digamma(x) = digamma(1 - x) - pi / tan(pi x)
    angle = graph.mul(v, pi)
    reflected = graph.sub(
        _digamma_positive(cx, graph.sub(_c(cx, 1.0), v)), graph.div(pi, graph.div(graph.sin(angle), graph.cos(angle)))
    )
    positive = _digamma_positive(cx, graph.max(v, _c(cx, 1e-300)))
    out = graph.where(graph.gt(v, _c(cx, 0.0)), positive, reflected)
    out = graph.where(graph.and_(graph.lt(v, _c(cx, 0.0)), graph.eq(v, graph.floor(v))), _c(cx, math.nan), out)
    out = graph.where(graph.eq(v, _c(cx, 0.0)), _c(cx, -math.inf), out)
    return cast(out, cx.out_element())


@converts("aten.polygamma.default")
def _polygamma(cx: Context, n: int, x: Value) -> Value:
    if not isinstance(n, int) or n < 0:
        raise ConversionError(f"polygamma needs a fixed order n >= 0, got {n!r}")
    return _digamma(cx, x) if n == 0 else cast(polygamma(cx, n, x), cx.out_element())


@converts("aten.diff.default")
def _diff(
    cx: Context, x: Value, n: int = 1, dim: int = -1, prepend: Value | None = None, append: Value | None = None
) -> Value:
    """``torch.diff``: ``y[1:] - y[:-1]`` along ``dim``, ``n`` times, of ``y = cat(prepend, x, append)``
    (``xor`` for bools, as torch); static lengths along ``dim``, or one step with a prepended value along a
    named symbolic dim (:func:`_diff_symbolic`)."""
    rank = ttype(x).rank
    axis = dim % rank
    parts = [cast(p, ttype(x).element) for p in (prepend, x, append) if p is not None]
    if any(ttype(p).rank != rank for p in parts):
        raise ConversionError("diff: prepend and append must have the input's rank")
    if n == 1 and append is None and prepend is not None:
        made = _diff_symbolic(cx, x, axis, parts[0])
        if made is not None:
            return made
    y = graph.concat(*parts, axis=axis) if len(parts) > 1 else x
    for _ in range(n):
        length = ttype(y).shape[axis]
        if not isinstance(length, int):
            raise ConversionError("diff along a dim of run-time length is not supported")
        if length == 0:
            break
        high = graph.slice(y, starts=[1], ends=[length], axes=[axis])
        low = graph.slice(y, starts=[0], ends=[length - 1], axes=[axis])
        y = graph.xor(high, low) if ttype(y).element == i1 else graph.sub(high, low)
    return y


def _diff_symbolic(cx: Context, x: Value, axis: int, prepend: Value) -> Value | None:
    """``diff(x, prepend=p)`` along a named symbolic dim, without the concat (whose length, one more than
    the dim, no type can name): ``x[i] - (p if i == 0 else x[i - 1])``, the earlier elements gathered at
    ``max(i - 1, 0)``. What HuggingFace's masks do with ``position_ids`` (``diff(..., prepend=ids[:, :1] - 1)``).
    None when the dim is not symbolic, ``p`` is not one element long along ``axis``, or no input has the dim."""
    t = ttype(x)
    length = t.shape[axis]
    if ttype(prepend).shape[axis] != 1 or not isinstance(length, Sym):
        return None
    before = arange_symbolic(-1.0, 1.0, length, i64, cx.dim_sources)  # -1, 0, 1, ...
    if before is None:
        return None
    previous = graph.gather(x, graph.max(before, cx.const(0, i64)), axis=axis)
    first = graph.eq(before, cx.const(-1, i64))
    others = [a for a in range(t.rank) if a != axis]
    if others:
        first = graph.unsqueeze(first, axes=others)
    low = graph.where(first, prepend, previous)
    return graph.xor(x, low) if t.element == i1 else graph.sub(x, low)
