"""Special functions as f64 graph math, rounded to the result type: Hurwitz zeta and polygamma, erfinv, and
the Bessel functions of order 0 and 1 (J, Y, and the modified I and K, plain and exponentially scaled).

Registered into the converter table of :mod:`.pytorch_ops` on import. Each follows a textbook method
with enough terms for f64 accuracy over the range it is used on, so the float32 result matches torch's:

- ``zeta(s, q)``: the first terms summed directly until ``q + k > 9`` (at least nine of them, as
  Cephes does; up to :data:`ZETA_TERMS`), then the Euler-Maclaurin tail with twelve Bernoulli terms;
  ``polygamma(n, x) = (-1)**(n + 1) n! zeta(n + 1, x)``;
- ``erfinv``: Giles' single-precision approximation, then two Newton steps on f64 ``erf``;
- ``i0``, ``i1`` and their ``e`` forms: the power series up to :data:`BESSEL_SWITCH`, the asymptotic
  series beyond;
- ``bessel_j0/j1/y0/y1``: the power series (Y's logarithmic form) below :data:`JY_SWITCH`, Hankel's
  expansion beyond; ``modified_bessel_k0/k1`` and their scaled forms: the power series below
  :data:`K_SWITCH`, the asymptotic series beyond.
"""

from __future__ import annotations

import math
from typing import Any

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import f64
from .pytorch_ops import Context, ConversionError, cast, converts

__all__: list[str] = []

ZETA_TERMS = 32
"""Direct terms of zeta at most: enough for ``q > 9 - ZETA_TERMS``; further left, the tail loses accuracy."""
_ZETA_TAIL = (
    12.0,
    -720.0,
    30240.0,
    -1209600.0,
    47900160.0,
    -1.8924375803183791606e9,
    7.47242496e10,
    -2.950130727918164224e12,
    1.1646782814350067249e14,
    -4.5979787224074726105e15,
    1.8152105401943546773e17,
    -7.1661652561756670113e18,
)
"""(2j)! / B_2j: the Euler-Maclaurin coefficients of the zeta tail."""


def _c(cx: Context, value: float) -> Value:
    return cx.const(value, f64)


def _f64(cx: Context, x: Any) -> Value:
    return cast(x, f64) if isinstance(x, Value) else _c(cx, float(x))


def zeta(cx: Context, s: Value, q: Value) -> Value:
    """The Hurwitz zeta function of f64 values (broadcast): inf at s = 1 and at poles q = 0, -1, ...;
    NaN for s < 1 and for a negative q with a fractional s."""
    minus_s = graph.neg(s)
    # N direct terms q^-s ... (q + N)^-s, N the last k with k <= 9 or q + k - 1 <= 9.
    last = graph.clamp(graph.max(graph.floor(graph.sub(_c(cx, 10.0), q)), _c(cx, 9.0)), max=float(ZETA_TERMS))
    total = graph.pow(q, minus_s)
    for k in range(1, ZETA_TERMS + 1):
        term = graph.pow(graph.add(q, _c(cx, float(k))), minus_s)
        total = graph.add(total, graph.where(graph.le(_c(cx, float(k)), last), term, _c(cx, 0.0)))
    w = graph.add(q, last)
    b = graph.pow(w, minus_s)
    total = graph.add(total, graph.div(graph.mul(b, w), graph.sub(s, _c(cx, 1.0))))
    total = graph.sub(total, graph.mul(_c(cx, 0.5), b))
    factor = _c(cx, 1.0)  # s (s + 1) ... (s + 2j - 2) for term j
    for j, coefficient in enumerate(_ZETA_TAIL):
        factor = graph.mul(factor, graph.add(s, _c(cx, 2.0 * j)))
        b = graph.div(b, w)
        total = graph.add(total, graph.div(graph.mul(factor, b), _c(cx, coefficient)))
        factor = graph.mul(factor, graph.add(s, _c(cx, 2.0 * j + 1.0)))
        b = graph.div(b, w)
    whole_q = graph.eq(q, graph.floor(q))
    nonpositive_q = graph.le(q, _c(cx, 0.0))
    total = graph.where(graph.and_(nonpositive_q, graph.ne(s, graph.floor(s))), _c(cx, math.nan), total)
    total = graph.where(graph.and_(nonpositive_q, whole_q), _c(cx, math.inf), total)
    total = graph.where(graph.lt(s, _c(cx, 1.0)), _c(cx, math.nan), total)
    return graph.where(graph.eq(s, _c(cx, 1.0)), _c(cx, math.inf), total)


@converts("aten.special_zeta.default", "aten.special_zeta.self_scalar", "aten.special_zeta.other_scalar")
def _special_zeta(cx: Context, s: Any, q: Any) -> Value:
    return cast(zeta(cx, _f64(cx, s), _f64(cx, q)), cx.out_element())


def polygamma(cx: Context, n: int, x: Value) -> Value:
    """The n-th derivative (n >= 1) of digamma, in f64: ``(-1)**(n + 1) n! zeta(n + 1, x)``."""
    scale = (1.0 if n % 2 else -1.0) * math.factorial(n)
    return graph.mul(_c(cx, scale), zeta(cx, _c(cx, float(n + 1)), cast(x, f64)))


# erfinv --------------------------------------------------------------------------------------------------
_ERFINV_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_ERFINV_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def _polynomial(cx: Context, coefficients: tuple[float, ...], x: Value) -> Value:
    out = _c(cx, coefficients[0])
    for c in coefficients[1:]:
        out = graph.add(graph.mul(out, x), _c(cx, c))
    return out


def erfinv(cx: Context, y: Value) -> Value:
    """The inverse error function of f64 ``y``: +-inf at +-1, NaN beyond."""
    w = graph.neg(graph.log(graph.mul(graph.sub(_c(cx, 1.0), y), graph.add(_c(cx, 1.0), y))))
    central = _polynomial(cx, _ERFINV_CENTRAL, graph.sub(w, _c(cx, 2.5)))
    tail = _polynomial(cx, _ERFINV_TAIL, graph.sub(graph.sqrt(graph.max(w, _c(cx, 5.0))), _c(cx, 3.0)))
    guess = graph.mul(graph.where(graph.lt(w, _c(cx, 5.0)), central, tail), y)
    slope = _c(cx, 2.0 / math.sqrt(math.pi))
    for _ in range(2):  # Newton on erf(guess) = y
        derivative = graph.mul(slope, graph.exp(graph.neg(graph.mul(guess, guess))))
        guess = graph.sub(guess, graph.div(graph.sub(graph.erf(guess), y), derivative))
    edge = graph.mul(graph.div(y, graph.abs(y)), _c(cx, math.inf))  # +-inf at +-1
    out = graph.where(graph.eq(graph.abs(y), _c(cx, 1.0)), edge, guess)
    return graph.where(graph.gt(graph.abs(y), _c(cx, 1.0)), _c(cx, math.nan), out)


@converts("aten.erfinv.default")
def _erfinv(cx: Context, x: Value) -> Value:
    return cast(erfinv(cx, cast(x, f64)), cx.out_element())


@converts("aten.special_ndtri.default")
def _ndtri(cx: Context, p: Value) -> Value:
    """The standard normal quantile: sqrt(2) erfinv(2p - 1)."""
    y = graph.sub(graph.mul(cast(p, f64), _c(cx, 2.0)), _c(cx, 1.0))
    return cast(graph.mul(erfinv(cx, y), _c(cx, math.sqrt(2.0))), cx.out_element())


LOG_NDTR_SWITCH = -5.0
"""Below this x, log_ndtr uses the asymptotic series of the normal tail (1 - erf would lose the digits)."""


@converts("aten.special_log_ndtr.default")
def _log_ndtr(cx: Context, x: Value) -> Value:
    """log of the standard normal CDF: log((1 + erf(x / sqrt 2)) / 2), and in the far left tail
    -x^2/2 - log(-x) - log(2 pi)/2 + log(sum_k (-1)^k (2k - 1)!! / x^(2k))."""
    v = cast(x, f64)
    direct = graph.log(graph.mul(graph.add(_c(cx, 1.0), graph.erf(graph.mul(v, _c(cx, math.sqrt(0.5))))), _c(cx, 0.5)))
    t = graph.min(v, _c(cx, LOG_NDTR_SWITCH))
    inv2 = graph.reciprocal(graph.mul(t, t))
    term, series = _c(cx, 1.0), _c(cx, 1.0)
    for k in range(1, 12):
        term = graph.mul(term, graph.mul(inv2, _c(cx, -(2.0 * k - 1.0))))
        series = graph.add(series, term)
    tail = graph.sub(graph.mul(graph.mul(t, t), _c(cx, -0.5)), graph.log(graph.neg(t)))
    tail = graph.add(graph.sub(tail, _c(cx, 0.5 * math.log(2 * math.pi))), graph.log(series))
    return cast(graph.where(graph.lt(v, _c(cx, LOG_NDTR_SWITCH)), tail, direct), cx.out_element())


ERFCX_SWITCH = 2.0
_ERFCX_TERMS = 60


@converts("aten.special_erfcx.default")
def _erfcx(cx: Context, x: Value) -> Value:
    """exp(x^2) erfc(x): directly below :data:`ERFCX_SWITCH`, by the continued fraction of erfc above (no
    exp, so no underflow), and 2 exp(x^2) - erfcx(-x) for negative x."""
    v = cast(x, f64)
    a = graph.abs(v)
    direct = graph.mul(graph.exp(graph.mul(a, a)), graph.sub(_c(cx, 1.0), graph.erf(a)))
    # erfc(x) exp(x^2) sqrt(pi) = 1 / (x + (1/2) / (x + 1 / (x + (3/2) / (x + 2 / (x + ...))))), from the inside
    big = graph.max(a, _c(cx, ERFCX_SWITCH))
    fraction = big
    for k in range(_ERFCX_TERMS, 0, -1):
        fraction = graph.add(big, graph.div(_c(cx, k / 2.0), fraction))
    far = graph.div(_c(cx, 1.0 / math.sqrt(math.pi)), fraction)
    positive = graph.where(graph.lt(a, _c(cx, ERFCX_SWITCH)), direct, far)
    negative = graph.sub(graph.mul(_c(cx, 2.0), graph.exp(graph.mul(v, v))), positive)
    return cast(graph.where(graph.lt(v, _c(cx, 0.0)), negative, positive), cx.out_element())


@converts("aten.special_spherical_bessel_j0.default")
def _spherical_bessel_j0(cx: Context, x: Value) -> Value:
    """sin(x) / x: 1 at 0, 0 at +-inf."""
    v = cast(x, f64)
    edge = graph.or_(graph.eq(v, _c(cx, 0.0)), graph.eq(graph.abs(v), _c(cx, math.inf)))
    safe = graph.where(edge, _c(cx, 1.0), v)
    at_edge = graph.where(graph.eq(v, _c(cx, 0.0)), _c(cx, 1.0), _c(cx, 0.0))
    out = graph.where(edge, at_edge, graph.div(graph.sin(safe), safe))
    return cast(out, cx.out_element())


# modified Bessel functions of the first kind -----------------------------------------------------------
BESSEL_SWITCH = 20.0
"""Below this |x| the power series (all terms positive), above it the asymptotic series."""
_SERIES_TERMS = 60
_ASYMPTOTIC_TERMS = 18


def _bessel_scaled(cx: Context, x: Value, order: int) -> Value:
    """exp(-|x|) I_order(|x|) for f64 ``x`` (order 0 or 1)."""
    ax = graph.abs(x)
    # power series: sum_k (x^2 / 4)^k / (k! (k + order)!) * (x / 2)^order
    quarter = graph.mul(graph.mul(ax, ax), _c(cx, 0.25))
    term = _c(cx, 1.0 / math.factorial(order))
    series = term
    for k in range(1, _SERIES_TERMS):
        term = graph.mul(term, graph.div(quarter, _c(cx, float(k * (k + order)))))
        series = graph.add(series, term)
    if order:
        series = graph.mul(series, graph.mul(ax, _c(cx, 0.5)))
    small = graph.mul(series, graph.exp(graph.neg(ax)))
    # asymptotic: 1 / sqrt(2 pi x) * sum_k (-1)^k prod_j (4 order^2 - (2j - 1)^2) / (k! (8x)^k)
    big_x = graph.max(ax, _c(cx, BESSEL_SWITCH))
    inv8x = graph.reciprocal(graph.mul(big_x, _c(cx, 8.0)))
    term = _c(cx, 1.0)
    asymptotic = term
    mu = 4.0 * order * order
    for k in range(1, _ASYMPTOTIC_TERMS):
        factor = -(mu - (2 * k - 1) ** 2) / k
        term = graph.mul(term, graph.mul(inv8x, _c(cx, factor)))
        asymptotic = graph.add(asymptotic, term)
    large = graph.div(asymptotic, graph.sqrt(graph.mul(big_x, _c(cx, 2.0 * math.pi))))
    return graph.where(graph.lt(ax, _c(cx, BESSEL_SWITCH)), small, large)


_BESSEL = {
    "aten.i0.default": (0, False),
    "aten.special_modified_bessel_i0.default": (0, False),
    "aten.special_modified_bessel_i1.default": (1, False),
    "aten.special_i0e.default": (0, True),
    "aten.special_i1.default": (1, False),
    "aten.special_i1e.default": (1, True),
}


@converts(*_BESSEL)
def _bessel(cx: Context, x: Value) -> Value:
    assert cx.node is not None
    order, scaled = _BESSEL[str(cx.node.target)]
    v = cast(x, f64)
    out = _bessel_scaled(cx, v, order)
    if not scaled:
        out = graph.mul(out, graph.exp(graph.abs(v)))
    if order:  # I1 is odd
        out = graph.where(graph.lt(v, _c(cx, 0.0)), graph.neg(out), out)
    return cast(out, cx.out_element())


def frexp_parts(cx: Context, v: Value) -> tuple[Value, Value, Value]:
    """For f64 ``v``: the mantissa (0.5 <= |m| < 1) and exponent (f64) of its finite nonzero elements, from
    log2 corrected by one where rounding put the mantissa outside, and where ``v`` is finite and nonzero."""
    magnitude = graph.abs(v)
    finite = graph.and_(graph.lt(magnitude, _c(cx, math.inf)), graph.gt(magnitude, _c(cx, 0.0)))
    safe = graph.where(finite, magnitude, _c(cx, 1.0))
    exponent = graph.add(graph.floor(graph.div(graph.log(safe), _c(cx, math.log(2.0)))), _c(cx, 1.0))
    for _ in range(2):  # at most one step each way is needed; two keep the rule simple
        scaled = graph.div(safe, graph.pow(_c(cx, 2.0), exponent))
        up, down = cast(graph.ge(scaled, _c(cx, 1.0)), f64), cast(graph.lt(scaled, _c(cx, 0.5)), f64)
        exponent = graph.add(exponent, graph.sub(up, down))
    return graph.div(v, graph.pow(_c(cx, 2.0), exponent)), exponent, finite


@converts("aten.frexp.Tensor")
def _frexp(cx: Context, x: Value) -> tuple[Value, Value]:
    """``x = mantissa * 2**exponent``; zeros, infinities and NaN keep their value, with exponent 0."""
    v = cast(x, f64)
    mantissa, exponent, finite = frexp_parts(cx, v)
    mantissa = graph.where(finite, mantissa, v)
    exponent = graph.where(finite, exponent, _c(cx, 0.0))
    return cast(mantissa, cx.out_element(0)), cast(exponent, cx.out_element(1))


_FLOAT_BITS = {"f32": (24, -149, 3.4028234663852886e38)}
"""Per float type: the mantissa's bits, the exponent of the smallest subnormal and the largest finite value."""


@converts("aten.nextafter.default")
def _nextafter(cx: Context, x: Value, other: Value) -> Value:
    """The next float after ``x`` toward ``other``: ``x`` plus or minus the spacing of its type at ``x`` (half
    of it below a power of two, fixed among subnormals), computed exactly in f64 (f32 inputs only)."""
    element = cx.out_element()
    if str(element) not in _FLOAT_BITS:
        raise ConversionError(f"nextafter of {element} is not supported (f32 is)")
    bits, tiny, largest = _FLOAT_BITS[str(element)]
    a, b = cast(x, f64), cast(other, f64)
    mantissa, exponent, _ = frexp_parts(cx, a)
    spacing = graph.pow(_c(cx, 2.0), graph.max(graph.sub(exponent, _c(cx, float(bits))), _c(cx, float(tiny))))
    # toward zero from a power of two, the spacing below is half the one above
    toward_zero = graph.lt(graph.mul(a, graph.sub(b, a)), _c(cx, 0.0))
    power_of_two = graph.eq(graph.abs(mantissa), _c(cx, 0.5))
    smaller = graph.max(graph.mul(spacing, _c(cx, 0.5)), _c(cx, 2.0**tiny))
    spacing = graph.where(graph.and_(toward_zero, power_of_two), smaller, spacing)
    step = graph.where(graph.lt(a, b), spacing, graph.neg(spacing))
    out = graph.where(
        graph.eq(a, _c(cx, 0.0)),
        graph.where(graph.lt(a, b), _c(cx, 2.0**tiny), _c(cx, -(2.0**tiny))),
        graph.add(a, step),
    )
    infinite = graph.eq(graph.abs(a), _c(cx, math.inf))  # an infinity steps to the largest finite value
    out = graph.where(infinite, graph.where(graph.gt(a, _c(cx, 0.0)), _c(cx, largest), _c(cx, -largest)), out)
    out = graph.where(graph.eq(a, b), b, out)
    out = graph.where(graph.or_(graph.ne(a, a), graph.ne(b, b)), _c(cx, math.nan), out)
    return cast(out, element)


# regularized incomplete gamma functions ------------------------------------------------------------------
GAMMA_TERMS = 80
"""Terms of the series (x < a + 1) and of the continued fraction (beyond): enough for a and x up to ~100."""


def _log_gamma(cx: Context, a: Value) -> Value:
    """log(gamma(a)) for a > 0: Lanczos above 1/2, lgamma(a + 1) - log(a) below."""
    from .pytorch_math_ops import lgamma_positive

    shifted = graph.sub(lgamma_positive(cx, graph.add(a, _c(cx, 1.0))), graph.log(a))
    return graph.where(graph.lt(a, _c(cx, 0.5)), shifted, lgamma_positive(cx, graph.max(a, _c(cx, 0.5))))


def incomplete_gamma(cx: Context, a: Value, x: Value) -> tuple[Value, Value]:
    """(P(a, x), Q(a, x)) for f64 ``a``, ``x``: the series of P where x < a + 1, else the continued fraction
    of Q (modified Lentz), each with :data:`GAMMA_TERMS` terms; the edges as torch gives them."""
    safe_a = graph.where(graph.gt(a, _c(cx, 0.0)), a, _c(cx, 1.0))
    safe_x = graph.where(graph.gt(x, _c(cx, 0.0)), x, _c(cx, 1.0))
    front = graph.exp(graph.sub(graph.sub(graph.mul(safe_a, graph.log(safe_x)), safe_x), _log_gamma(cx, safe_a)))
    term = graph.reciprocal(safe_a)
    total = term
    for n in range(1, GAMMA_TERMS):
        term = graph.mul(term, graph.div(safe_x, graph.add(safe_a, _c(cx, float(n)))))
        total = graph.add(total, term)
    series_p = graph.mul(total, front)
    tiny = _c(cx, 1e-300)
    b = graph.sub(graph.add(safe_x, _c(cx, 1.0)), safe_a)
    c = _c(cx, 1e300)
    d = graph.reciprocal(b)
    h = d
    for i in range(1, GAMMA_TERMS):
        an = graph.mul(_c(cx, float(-i)), graph.sub(_c(cx, float(i)), safe_a))
        b = graph.add(b, _c(cx, 2.0))
        d = graph.add(graph.mul(an, d), b)
        d = graph.reciprocal(graph.where(graph.lt(graph.abs(d), tiny), tiny, d))
        c = graph.add(b, graph.div(an, c))
        c = graph.where(graph.lt(graph.abs(c), tiny), tiny, c)
        h = graph.mul(h, graph.mul(d, c))
    fraction_q = graph.mul(front, h)
    use_series = graph.lt(safe_x, graph.add(safe_a, _c(cx, 1.0)))
    p = graph.where(use_series, series_p, graph.sub(_c(cx, 1.0), fraction_q))
    q = graph.where(use_series, graph.sub(_c(cx, 1.0), series_p), fraction_q)
    # edges: x = 0 gives P = 0; a = 0 (x > 0) or x = inf gives P = 1; a = inf gives P = 0; negative or NaN: NaN
    zero, one, nan = _c(cx, 0.0), _c(cx, 1.0), _c(cx, math.nan)
    for where_, value in (
        (graph.eq(x, zero), zero),
        (graph.eq(a, zero), one),
        (graph.eq(x, _c(cx, math.inf)), one),
        (graph.eq(a, _c(cx, math.inf)), zero),
    ):
        p, q = graph.where(where_, value, p), graph.where(where_, graph.sub(one, value), q)
    invalid = graph.or_(
        graph.or_(graph.lt(a, zero), graph.lt(x, zero)),
        graph.or_(graph.and_(graph.eq(a, zero), graph.eq(x, zero)), graph.or_(graph.ne(a, a), graph.ne(x, x))),
    )
    return graph.where(invalid, nan, p), graph.where(invalid, nan, q)


@converts("aten.igamma.default", "aten.igammac.default")
def _igamma(cx: Context, a: Value, x: Value) -> Value:
    assert cx.node is not None
    p, q = incomplete_gamma(cx, cast(a, f64), cast(x, f64))
    return cast(p if str(cx.node.target) == "aten.igamma.default" else q, cx.out_element())


# Bessel functions of the first and second kind, modified ones of the second kind -----------------------
JY_SWITCH = 20.0
"""Below this |x| the power series of J and Y, above it Hankel's asymptotic expansion."""
K_SWITCH = 8.0
"""Below this x the power series of K (it cancels like exp(x) against exp(-x)), above it the asymptotic one."""
_JY_TERMS = 70
_K_TERMS = 40
_HANKEL_TERMS = 16
_EULER_GAMMA = 0.57721566490153286061


def _hankel_coefficients(order: int) -> list[float]:
    """a_k(order) = prod_{j <= k} (4 order^2 - (2j - 1)^2) / (k! 8^k), k = 0 .. _HANKEL_TERMS - 1."""
    out, a = [1.0], 1.0
    for k in range(1, _HANKEL_TERMS):
        a *= (4.0 * order * order - (2 * k - 1) ** 2) / (k * 8.0)
        out.append(a)
    return out


def _power_series(cx: Context, q: Value, order: int, sign: float, terms: int) -> tuple[Value, Value, Value]:
    """For q = x^2 / 4: (sum_k t_k, sum_k H_k t_k, sum_k (H_k + H_{k+1}) t_k) with t_k = (sign q)^k / (k! (k +
    order)!), H_k the harmonic numbers (the series of J, I and the logarithmic parts of Y and K)."""
    term = _c(cx, 1.0 / math.factorial(order))
    plain, harmonic, pair = term, _c(cx, 0.0), _c(cx, 1.0 / math.factorial(order))  # H_0 = 0, H_1 = 1
    h = 0.0
    for k in range(1, terms):
        term = graph.mul(term, graph.mul(q, _c(cx, sign / (k * (k + order)))))
        h += 1.0 / k
        plain = graph.add(plain, term)
        harmonic = graph.add(harmonic, graph.mul(term, _c(cx, h)))
        pair = graph.add(pair, graph.mul(term, _c(cx, 2 * h + 1.0 / (k + 1))))
    return plain, harmonic, pair


def _bessel_jy(cx: Context, x: Value, order: int) -> tuple[Value, Value]:
    """(J_order(|x|), Y_order(|x|)) of f64 ``x`` for order 0 or 1."""
    ax = graph.abs(x)
    small_x = graph.min(ax, _c(cx, JY_SWITCH))
    half = graph.mul(small_x, _c(cx, 0.5))
    plain, harmonic, pair = _power_series(cx, graph.mul(half, half), order, -1.0, _JY_TERMS)
    log_half = graph.log(half)
    if order == 0:
        j = plain
        y = graph.mul(graph.sub(graph.mul(graph.add(log_half, _c(cx, _EULER_GAMMA)), j), harmonic), _c(cx, 2 / math.pi))
    else:
        j = graph.mul(plain, half)
        log_part = graph.mul(graph.mul(log_half, j), _c(cx, 2 / math.pi))
        sums = graph.mul(graph.sub(pair, graph.mul(plain, _c(cx, 2 * _EULER_GAMMA))), half)
        y = graph.sub(
            graph.sub(log_part, graph.div(_c(cx, 2 / math.pi), small_x)), graph.mul(sums, _c(cx, 1 / math.pi))
        )
    # Hankel: sqrt(2 / (pi x)) (P cos chi - Q sin chi) and (P sin chi + Q cos chi), chi = x - (2 order + 1) pi / 4
    big_x = graph.max(ax, _c(cx, JY_SWITCH))
    inverse = graph.reciprocal(big_x)
    p, q, power = _c(cx, 0.0), _c(cx, 0.0), _c(cx, 1.0)
    for k, a in enumerate(_hankel_coefficients(order)):
        term = graph.mul(power, _c(cx, a * (-1.0) ** (k // 2)))
        if k % 2 == 0:
            p = graph.add(p, term)
        else:
            q = graph.add(q, term)
        power = graph.mul(power, inverse)
    chi = graph.sub(big_x, _c(cx, (2 * order + 1) * math.pi / 4))
    scale = graph.sqrt(graph.div(_c(cx, 2 / math.pi), big_x))
    cos, sin = graph.cos(chi), graph.sin(chi)
    j_far = graph.mul(scale, graph.sub(graph.mul(p, cos), graph.mul(q, sin)))
    y_far = graph.mul(scale, graph.add(graph.mul(p, sin), graph.mul(q, cos)))
    near = graph.lt(ax, _c(cx, JY_SWITCH))
    return graph.where(near, j, j_far), graph.where(near, y, y_far)


def _bessel_k_scaled(cx: Context, x: Value, order: int) -> Value:
    """exp(x) K_order(x) of f64 ``x`` > 0, order 0 or 1."""
    small_x = graph.min(x, _c(cx, K_SWITCH))
    half = graph.mul(small_x, _c(cx, 0.5))
    plain, harmonic, pair = _power_series(cx, graph.mul(half, half), order, 1.0, _K_TERMS)
    log_half = graph.log(half)
    if order == 0:
        k = graph.sub(harmonic, graph.mul(graph.add(log_half, _c(cx, _EULER_GAMMA)), plain))
    else:
        i1 = graph.mul(plain, half)
        sums = graph.mul(graph.sub(pair, graph.mul(plain, _c(cx, 2 * _EULER_GAMMA))), half)
        k = graph.sub(graph.add(graph.reciprocal(small_x), graph.mul(log_half, i1)), graph.mul(sums, _c(cx, 0.5)))
    near = graph.mul(k, graph.exp(small_x))
    # asymptotic: sqrt(pi / (2 x)) sum_k a_k / x^k
    big_x = graph.max(x, _c(cx, K_SWITCH))
    inverse = graph.reciprocal(big_x)
    total, power = _c(cx, 0.0), _c(cx, 1.0)
    for a in _hankel_coefficients(order):
        total = graph.add(total, graph.mul(power, _c(cx, a)))
        power = graph.mul(power, inverse)
    far = graph.mul(graph.sqrt(graph.div(_c(cx, math.pi / 2), big_x)), total)
    return graph.where(graph.lt(x, _c(cx, K_SWITCH)), near, far)


@converts("aten.special_bessel_j0.default", "aten.special_bessel_j1.default")
def _bessel_j(cx: Context, x: Value) -> Value:
    """J0 (even) and J1 (odd); NaN at +-inf, as torch gives."""
    assert cx.node is not None
    order = 1 if "j1" in str(cx.node.target) else 0
    v = cast(x, f64)
    j, _ = _bessel_jy(cx, v, order)
    if order:
        j = graph.where(graph.lt(v, _c(cx, 0.0)), graph.neg(j), j)
    return cast(j, cx.out_element())


@converts("aten.special_bessel_y0.default", "aten.special_bessel_y1.default")
def _bessel_y(cx: Context, x: Value) -> Value:
    """Y0 and Y1: -inf at 0, NaN below 0 and at +inf, as torch gives."""
    assert cx.node is not None
    v = cast(x, f64)
    _, y = _bessel_jy(cx, v, 1 if "y1" in str(cx.node.target) else 0)
    y = graph.where(graph.eq(v, _c(cx, 0.0)), _c(cx, -math.inf), y)
    y = graph.where(graph.lt(v, _c(cx, 0.0)), _c(cx, math.nan), y)
    return cast(y, cx.out_element())


_BESSEL_K = {
    "aten.special_modified_bessel_k0.default": (0, False),
    "aten.special_modified_bessel_k1.default": (1, False),
    "aten.special_scaled_modified_bessel_k0.default": (0, True),
    "aten.special_scaled_modified_bessel_k1.default": (1, True),
}


@converts(*_BESSEL_K)
def _bessel_k(cx: Context, x: Value) -> Value:
    """K0, K1 and their exp(x)-scaled forms: inf at 0, NaN below 0, 0 at +inf."""
    assert cx.node is not None
    order, scaled = _BESSEL_K[str(cx.node.target)]
    v = cast(x, f64)
    out = _bessel_k_scaled(cx, v, order)
    if not scaled:
        out = graph.mul(out, graph.exp(graph.neg(v)))
    out = graph.where(graph.eq(v, _c(cx, math.inf)), _c(cx, 0.0), out)
    out = graph.where(graph.eq(v, _c(cx, 0.0)), _c(cx, math.inf), out)
    out = graph.where(graph.lt(v, _c(cx, 0.0)), _c(cx, math.nan), out)
    return cast(out, cx.out_element())
