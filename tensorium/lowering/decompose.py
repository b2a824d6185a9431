"""Math decompositions at the loop level: ops a target lacks, rewritten into ops every target has.

Each backend's emitter says which of the :data:`DECOMPOSABLE` ops it has natively (``NATIVE`` on its
:class:`~tensorium.backends.emitter.KernelEmitter`); :func:`decompose` rewrites the others, in place,
into :data:`BASIC` loop ops, so that every backend inherits one tested implementation instead of writing
its own (the model is tinygrad's ``transcendental.py``):

- ``loop.exp``, ``loop.log``, ``loop.tanh``, ``loop.erf`` of f32 (and of f16 and bf16, computed in f32):
  Cephes' ``expf``/``logf`` (range reduction by powers of two through ``loop.bitcast``), tanh from its
  series and from exp, erf as Eigen's rational function. Within 2 ulp for exp and log, 1e-6 relative for
  tanh, 5e-7 absolute for erf; exp flushes results below 2**-126 to 0. f64 ops are left as they are.
- ``loop.sin``, ``loop.cos``, ``loop.atan``, ``loop.asin``, ``loop.acos`` of f32 (f16, bf16 through f32): Cody and
  Waite's argument reduction by pi/2 in five parts (0.7 ulp for |x| below 8e5) and Cephes' polynomials for sin
  and cos; Cephes' ``atanf``, ``asinf`` and ``acosf`` (range reductions by tan(pi/8), tan(3 pi/8) and
  sqrt((1 - |x|) / 2)). Targets without these instructions (GPUs) get them here; WGSL's builtins are bounded
  loosely or on [-pi, pi] only.
- ``loop.div`` and ``loop.rem`` of integers (float division is basic): the interpreter's semantics, where
  a zero divisor gives 0 and ``MIN / -1`` wraps to ``MIN``, from a division by a divisor that is never 0
  or -1, which every target's integer division computes without trapping. Constant divisors other than
  0 and -1 need no guard, and a guarded division is not guarded again.
- ``loop.align_offset``, a hint for peeling loops until vector loads are aligned: 0 (no peeling) on targets
  that cannot tell an address or whose buffers are always aligned.
- ``bf16`` (not an op: bf16 rounding): every op whose bf16 result may need rounding (arithmetic, math,
  casts to bf16, loads, constants) is computed in f32 and rounded to the nearest bf16 (ties to even) on
  the bits; the result is then cast to bf16 exactly. Afterwards every bf16 value is exact, so a target
  without bf16 holds bf16 in f32 registers and treats casts between the two as moves (bf16 buffers are
  f32 arrays already).

Decomposed ops take the location of the op they replace, so errors still point at the source.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection

import numpy as np

from ..ir.builder import InsertionPoint
from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.opdef import lookup
from ..ir.storage import round_to_bf16
from ..ir.types import FloatType, IntegerType, ScalarType, bf16, f32, i32, index

TRIGONOMETRY = frozenset({"loop.sin", "loop.cos", "loop.atan", "loop.asin", "loop.acos"})
"""The trigonometric ops :func:`decompose` can rewrite (the CPU calls the C library's instead)."""
DECOMPOSABLE = (
    frozenset({"loop.exp", "loop.log", "loop.tanh", "loop.erf", "loop.div", "loop.rem", "loop.align_offset", "bf16"})
    | TRIGONOMETRY
)
"""What :func:`decompose` can rewrite: ops by name (``loop.div`` and ``loop.rem`` stand for their integer
forms) and ``bf16``, the rounding of bf16 results."""

BASIC = frozenset(
    {"loop.const", "loop.add", "loop.sub", "loop.mul", "loop.div", "loop.rem", "loop.neg", "loop.abs"}
    | {"loop.floor", "loop.sqrt", "loop.cmp", "loop.select", "loop.cast", "loop.bitcast", "loop.and", "loop.or"}
)
"""The ops decompositions are built from: every backend emits these (integer ``div``/``rem`` only by a
divisor that is neither 0 nor -1; ``sqrt``, which asin and acos take, is an instruction or builtin on every
target)."""

# Cephes expf: e**r = 1 + r + r**2 p(r) on |r| <= ln(2) / 2.
EXP_POLY = [5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4]
# Cephes logf: log(1 + f) = f - f**2 / 2 + f**3 p(f) on [sqrt(1/2) - 1, sqrt(2) - 1].
LOG_POLY = [3.3333331174e-1, -2.4999993993e-1, 2.0000714765e-1, -1.6668057665e-1, 1.4249322787e-1]
LOG_POLY += [-1.2420140846e-1, 1.1676998740e-1, -1.1514610310e-1, 7.0376836292e-2]
TANH_SERIES = [1.0, -1 / 3, 2 / 15, -17 / 315, 62 / 2835]
# erf(x) = x P(x**2) / Q(x**2) on [-4, 4], the f32 approximation of Eigen and TensorFlow (beyond, erf is +-1).
ERF_P = [-1.60960333262415e-02, -2.95459980854025e-03, -7.34990630326855e-04, -5.69250639462346e-05]
ERF_P += [-2.10102402082508e-06, 2.77068142495902e-08, -2.72614225801306e-10]
ERF_Q = [-1.42647390514189e-02, -7.37332916720468e-03, -1.68282697438203e-03, -2.13374055278905e-04]
ERF_Q += [-1.45660718464996e-05]
# Cephes sinf/cosf on |r| <= pi/4: sin r = r + r**3 p(r**2), cos r = 1 - r**2 / 2 + r**4 q(r**2).
SIN_POLY = [-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4]
COS_POLY = [4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5]
# Cephes atanf on |x| <= tan(pi/8): atan x = x + x**3 p(x**2).
ATAN_POLY = [-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2]
# Cephes asinf on |x| <= 1/2: asin x = x + x**3 p(x**2).
ASIN_POLY = [1.6666752422e-1, 7.4953002686e-2, 4.5470025998e-2, 2.4181311049e-2, 4.2163199048e-2]
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_EXP_LOW, _EXP_HIGH = math.log(2.0**-150), math.log(float(np.finfo(np.float32).max))  # beyond: 0 and inf
_EXP_NORMAL_LOW = math.log(2.0**-126)  # exp without subnormal results: 0 below it
_FLOAT_MIN = 2.0**-126


def _cody_waite(value: float, bits: int, parts: int) -> list[float]:
    """``value`` as a sum of ``parts`` f32 numbers, each but the last of at most ``bits`` significant bits, so that
    ``n * part`` is exact in f32 for every integral ``n`` below ``2**(24 - bits)``."""
    out, rest = [], value
    for _ in range(parts - 1):
        scale = 2.0 ** (math.floor(math.log2(abs(rest))) - bits + 1)
        head = math.trunc(rest / scale) * scale
        out.append(head)
        rest -= head
    return [*out, float(np.float32(rest))]


_PI_2_PARTS = _cody_waite(math.pi / 2, 5, 5)
"""pi/2 in five parts for the argument reduction of sin and cos: exact products for quadrants below 2**19, so the
reduction keeps about 44 bits of pi/2 for |x| below 8e5."""
_U32 = IntegerType(32, signed=False)

Operand = Value | float | int
Rule = Callable[[Operation], Value | None]
"""Builds the replacement of an op before it and returns its value, or returns None to keep the op."""


class _Builder:
    """Builders of scalar loop ops at the current insertion point, located at the op being replaced;
    Python numbers become constants of the other operand's type (f32 when both are numbers)."""

    def __init__(self, op: Operation) -> None:
        self.loc = op.loc

    def const(self, value: float | int, t: ScalarType = f32) -> Value:
        return loop.const(value=float(value) if isinstance(t, FloatType) else int(value), dtype=t, loc=self.loc)

    def _values(self, *xs: Operand) -> list[Value]:
        t = next((x.type for x in xs if isinstance(x, Value)), f32)
        assert isinstance(t, ScalarType)
        return [x if isinstance(x, Value) else self.const(x, t) for x in xs]

    def op(self, name: str, *xs: Operand, **attrs: object) -> Value:
        return getattr(loop, name)(*self._values(*xs), loc=self.loc, **attrs)  # type: ignore[no-any-return]

    def add(self, a: Operand, b: Operand) -> Value:
        return self.op("add", a, b)

    def sub(self, a: Operand, b: Operand) -> Value:
        return self.op("sub", a, b)

    def mul(self, a: Operand, b: Operand) -> Value:
        return self.op("mul", a, b)

    def div(self, a: Operand, b: Operand) -> Value:
        return self.op("div", a, b)

    def cmp(self, predicate: str, a: Operand, b: Operand) -> Value:
        return self.op("cmp", a, b, predicate=predicate)

    def select(self, cond: Value, a: Operand, b: Operand) -> Value:
        a, b = self._values(a, b)
        return loop.select(cond, a, b, loc=self.loc)  # type: ignore[no-any-return]

    def clamp(self, x: Value, low: float, high: float) -> Value:
        """``x`` limited to [low, high] by comparisons (NaN stays NaN)."""
        x = self.select(self.cmp("lt", x, low), low, x)
        return self.select(self.cmp("gt", x, high), high, x)

    def horner(self, x: Value, coefficients: list[float]) -> Value:
        """sum(c[k] * x**k) by Horner's rule."""
        acc = self.const(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            acc = self.add(self.mul(acc, x), c)
        return acc


def exp_f32(b: _Builder, x: Value, subnormal: bool = True) -> Value:
    """e**x: x = n ln 2 + r, e**r by its polynomial, 2**n from the exponent bits (Cephes' expf). 2**n is applied
    as 2**(n - h) 2**h with h = floor(n / 2), two normal floats for every n from -150 to 128: results past the
    largest float's exponent stay finite up to it, and those below the smallest normal float come out subnormal,
    rounded once (by the last multiplication), as numpy's expf gives them. Without ``subnormal`` (for callers whose
    ``x`` is never below ln 2**-126, as tanh's) 2**n is one float, 2**127 with p doubled for n = 128: about 10%
    fewer operations."""
    low = _EXP_LOW if subnormal else _EXP_NORMAL_LOW
    clamped = b.clamp(x, low, _EXP_HIGH)
    n = b.op("floor", b.add(b.mul(clamped, 1 / math.log(2)), 0.5))
    r = b.sub(b.sub(clamped, b.mul(n, _LN2_HI)), b.mul(n, _LN2_LO))
    p = b.add(b.add(b.mul(b.horner(r, EXP_POLY), b.mul(r, r)), r), 1.0)
    if subnormal:
        half = b.op("floor", b.mul(n, 0.5))
        out = b.mul(b.mul(p, _power_of_two(b, b.sub(n, half))), _power_of_two(b, half))
    else:
        big = b.cmp("gt", n, 127.0)  # 2**128 is not a float: scale by 2**127 and double p instead
        out = b.mul(b.select(big, b.mul(p, 2.0), p), _power_of_two(b, b.select(big, 127.0, n)))
    out = b.select(b.cmp("gt", x, _EXP_HIGH), math.inf, out)
    return b.select(b.cmp("lt", x, low), 0.0, out)


def _power_of_two(b: _Builder, n: Value) -> Value:
    """2**n for an integral f32 ``n`` from -126 to 127, from its exponent bits."""
    # n + 1.5 * 2**23 holds n in its low mantissa bits; the exponent field of 2**n is n + 127.
    bits = b.op("bitcast", b.add(n, 12582912.0), dtype=i32)
    return b.op("bitcast", b.mul(b.add(bits, 127 - 0x4B400000), 1 << 23), dtype=f32)


def log_f32(b: _Builder, x: Value) -> Value:
    """log(x): x = m 2**e with m in [sqrt(1/2), sqrt(2)), log(m) by its polynomial (Cephes' logf)."""
    tiny = b.cmp("lt", x, _FLOAT_MIN)  # denormals are scaled by 2**23 first
    bits = b.op("bitcast", b.select(tiny, b.mul(x, 8388608.0), x), dtype=i32)
    mantissa = b.op("bitcast", b.op("or", b.op("and", bits, 0x007FFFFF), 0x3F000000), dtype=f32)
    exponent_field = b.op("cast", b.op("and", bits, 0x7F800000), dtype=f32)
    e = b.sub(b.mul(exponent_field, 2.0**-23), b.select(tiny, 149.0, 126.0))
    low = b.cmp("lt", mantissa, math.sqrt(0.5))
    e = b.select(low, b.sub(e, 1.0), e)
    f = b.select(low, b.sub(b.add(mantissa, mantissa), 1.0), b.sub(mantissa, 1.0))
    z = b.mul(f, f)
    y = b.mul(b.mul(b.horner(f, LOG_POLY), f), z)
    y = b.sub(b.add(y, b.mul(e, _LN2_LO)), b.mul(z, 0.5))
    out = b.add(b.add(f, y), b.mul(e, _LN2_HI))
    out = b.select(b.cmp("eq", x, math.inf), math.inf, out)
    out = b.select(b.cmp("eq", x, 0.0), -math.inf, out)
    out = b.select(b.cmp("lt", x, 0.0), math.nan, out)
    return b.select(b.cmp("ne", x, x), x, out)


def tanh_f32(b: _Builder, x: Value) -> Value:
    """tanh(x): its series below |x| = 0.1, else sign(x) (1 - 2 / (e**(2|x|) + 1))."""
    ax = b.op("abs", x)
    small = b.mul(x, b.horner(b.mul(x, x), TANH_SERIES))
    large = b.sub(1.0, b.div(2.0, b.add(exp_f32(b, b.mul(ax, 2.0), subnormal=False), 1.0)))
    large = b.select(b.cmp("lt", x, 0.0), b.op("neg", large), large)
    return b.select(b.cmp("lt", ax, 0.1), small, large)


def erf_f32(b: _Builder, x: Value) -> Value:
    """erf(x): a rational function of x on [-4, 4]; beyond, erf is +-1 in f32. Below 1e-4 in magnitude erf is
    ``2 x / sqrt(pi)`` to f32 precision, taken directly: the rational function's numerator ``x P(x^2)`` (P(0) about
    -0.016) underflows to zero for the smallest subnormals, where erf(x) is x's own size."""
    clamped = b.clamp(x, -4.0, 4.0)
    square = b.mul(clamped, clamped)
    rational = b.div(b.mul(clamped, b.horner(square, ERF_P)), b.horner(square, ERF_Q))
    tiny = b.cmp("lt", b.op("abs", x), 1e-4)
    return b.select(tiny, b.mul(x, 2.0 / math.sqrt(math.pi)), rational)


def _sin_cos_f32(b: _Builder, x: Value, cosine: bool) -> Value:
    """sin(x) or cos(x): x = n pi/2 + r with |r| <= pi/4 (pi/2 in the parts of :data:`_PI_2_PARTS`, Cody and
    Waite's reduction), then sin r or cos r by Cephes' polynomials, chosen and signed by n mod 4. Within 0.7 ulp
    for |x| below 8e5; beyond, the reduction loses bits (WGSL's own ``sin`` is bounded on [-pi, pi] only).
    Infinities and NaN give NaN."""
    n = b.op("floor", b.add(b.mul(x, 2 / math.pi), 0.5))
    r = x
    for part in _PI_2_PARTS:
        r = b.sub(r, b.mul(n, part))
    z = b.mul(r, r)
    sin_r = b.add(r, b.mul(b.mul(z, r), b.horner(z, SIN_POLY)))
    cos_r = b.add(b.sub(1.0, b.mul(z, 0.5)), b.mul(b.mul(z, z), b.horner(z, COS_POLY)))
    quadrant = b.sub(n, b.mul(b.op("floor", b.mul(n, 0.25)), 4.0))  # n mod 4, in 0..3
    if cosine:
        quadrant = b.sub(b.add(quadrant, 1.0), b.mul(b.op("floor", b.mul(b.add(quadrant, 1.0), 0.25)), 4.0))
    odd = b.cmp("eq", b.sub(quadrant, b.mul(b.op("floor", b.mul(quadrant, 0.5)), 2.0)), 1.0)
    value = b.select(odd, cos_r, sin_r)
    return b.select(b.cmp("ge", quadrant, 2.0), b.op("neg", value), value)


def sin_f32(b: _Builder, x: Value) -> Value:
    """sin(x) (:func:`_sin_cos_f32`); sin(-0) is -0."""
    return b.select(b.cmp("eq", x, 0.0), x, _sin_cos_f32(b, x, cosine=False))


def cos_f32(b: _Builder, x: Value) -> Value:
    """cos(x) (:func:`_sin_cos_f32`, a quadrant on)."""
    return _sin_cos_f32(b, x, cosine=True)


def atan_f32(b: _Builder, x: Value) -> Value:
    """atan(x) (Cephes' atanf): |x| above tan(3 pi/8) as pi/2 + atan(-1/|x|), above tan(pi/8) as
    pi/4 + atan((|x| - 1) / (|x| + 1)), then the polynomial; the sign restored (atan(-0) is -0, of +-inf +-pi/2)."""
    ax = b.op("abs", x)
    big = b.cmp("gt", ax, 2.414213562373095)
    middle = b.cmp("gt", ax, 0.4142135623730950)
    base = b.select(big, math.pi / 2, b.select(middle, math.pi / 4, 0.0))
    y = b.select(big, b.div(-1.0, ax), b.select(middle, b.div(b.sub(ax, 1.0), b.add(ax, 1.0)), ax))
    z = b.mul(y, y)
    out = b.add(base, b.add(y, b.mul(b.mul(z, y), b.horner(z, ATAN_POLY))))
    out = b.select(b.cmp("lt", x, 0.0), b.op("neg", out), out)
    return b.select(b.cmp("eq", x, 0.0), x, b.select(b.cmp("ne", x, x), x, out))


def _asin_magnitude(b: _Builder, ax: Value) -> Value:
    """asin(|x|) for ``ax`` = |x| in [0, 1] (Cephes' asinf): above 1/2 as pi/2 - 2 asin(sqrt((1 - |x|) / 2))."""
    high = b.cmp("gt", ax, 0.5)
    z = b.select(high, b.mul(b.sub(1.0, ax), 0.5), b.mul(ax, ax))
    y = b.select(high, b.op("sqrt", z), ax)
    p = b.add(y, b.mul(b.mul(z, y), b.horner(z, ASIN_POLY)))
    return b.select(high, b.sub(math.pi / 2, b.add(p, p)), p)


def asin_f32(b: _Builder, x: Value) -> Value:
    """asin(x): :func:`_asin_magnitude` of |x|, signed; NaN outside [-1, 1]; asin(-0) is -0."""
    ax = b.op("abs", x)
    out = _asin_magnitude(b, ax)
    out = b.select(b.cmp("lt", x, 0.0), b.op("neg", out), b.select(b.cmp("eq", x, 0.0), x, out))
    return b.select(b.cmp("gt", ax, 1.0), math.nan, out)


def acos_f32(b: _Builder, x: Value) -> Value:
    """acos(x) (Cephes' acosf): 2 asin(sqrt((1 - x) / 2)) above 1/2, pi - 2 asin(sqrt((1 + x) / 2)) below -1/2,
    else pi/2 - asin(x), so that acos near 1 keeps its relative accuracy; NaN outside [-1, 1]."""
    ax = b.op("abs", x)
    far = b.cmp("gt", ax, 0.5)
    half = b.op("sqrt", b.mul(b.sub(1.0, ax), 0.5))
    edge = b.mul(_asin_magnitude(b, half), 2.0)  # acos(|x|) for |x| > 1/2
    inner = _asin_magnitude(b, ax)  # asin(|x|), used for |x| <= 1/2
    near = b.sub(math.pi / 2, b.select(b.cmp("lt", x, 0.0), b.op("neg", inner), inner))
    out = b.select(far, b.select(b.cmp("lt", x, 0.0), b.sub(math.pi, edge), edge), near)
    return b.select(b.cmp("gt", ax, 1.0), math.nan, b.select(b.cmp("ne", x, x), x, out))


def _float_rule(fn: Callable[[_Builder, Value], Value]) -> Rule:
    """A rule for a float op computed by ``fn`` in f32: f16 and bf16 through casts, f64 left alone."""

    def rule(op: Operation) -> Value | None:
        (x,) = op.operands
        t = x.type
        if not isinstance(t, FloatType) or t.name == "f64":
            return None
        b = _Builder(op)
        if t == f32:
            return fn(b, x)
        return b.op("cast", fn(b, b.op("cast", x, dtype=f32)), dtype=t)

    return rule


def _guarded(divisor: Value, signed: bool) -> bool:
    """Whether ``divisor`` is never 0 (nor -1 when signed): a constant, or ``select(d == 0 [or d == -1], 1, d)``."""
    bad = {0, -1} if signed else {0}
    value = loop.const_value(divisor)
    if value is not None:
        return value not in bad
    op = divisor.defining_op()
    if op is None or op.name != "loop.select" or loop.const_value(op.operands[1]) != 1:
        return False
    d = op.operands[2]
    cond = op.operands[0].defining_op()
    terms = list(cond.operands) if cond is not None and cond.name == "loop.or" else [op.operands[0]]
    tested = set()
    for term in terms:
        test = term.defining_op()
        if test is not None and test.name == "loop.cmp" and test.attr("predicate") == "eq" and test.operands[0] is d:
            tested.add(loop.const_value(test.operands[1]))
    return bad <= tested


def _integer_division(op: Operation) -> Value | None:
    """div or rem of integers by a divisor made safe first; the zero and -1 cases selected afterwards."""
    a, d = op.operands
    t = d.type
    assert isinstance(t, ScalarType)
    signed = not isinstance(t, IntegerType) or t.signed
    if isinstance(t, FloatType) or _guarded(d, signed):
        return None
    b = _Builder(op)
    zero = b.cmp("eq", d, 0)
    minus_one = b.cmp("eq", d, -1) if signed else None
    bad = zero if minus_one is None else b.op("or", zero, minus_one)
    safe = b.select(bad, 1, d)
    if op.name == "loop.rem":  # a % -1 is 0, as is the interpreter's a % 0
        return b.select(bad, 0, b.op("rem", a, safe))
    quotient = b.div(a, safe)
    if minus_one is not None:  # a / -1 is -a, which wraps MIN to itself
        quotient = b.select(minus_one, b.op("neg", a), quotient)
    return b.select(zero, 0, quotient)


def round_bf16(b: _Builder, x: Value) -> Value:
    """The f32 ``x`` rounded to the nearest bf16, ties to even, as an f32: on its bits, NaN kept."""
    bits = b.op("bitcast", x, dtype=_U32)
    even = b.cmp("eq", b.op("and", bits, 0x10000), 0)
    rounded = b.op("and", b.add(bits, b.select(even, b.const(0x7FFF, _U32), 0x8000)), 0xFFFF0000)
    return b.select(b.cmp("ne", x, x), x, b.op("bitcast", rounded, dtype=f32))


def _is_rounded(v: Value) -> bool:
    """Whether the f32 ``v`` is the result of :func:`round_bf16` (its last select)."""
    op = v.defining_op()
    if op is None or op.name != "loop.select":
        return False
    cast = op.operands[2].defining_op()
    mask = cast.operands[0].defining_op() if cast is not None and cast.name == "loop.bitcast" else None
    return mask is not None and mask.name == "loop.and" and loop.const_value(mask.operands[1]) == 0xFFFF0000


_EXACT_BF16 = frozenset({"loop.select", "loop.neg", "loop.abs", "loop.max", "loop.min", "loop.const"})
"""Ops whose bf16 result is one of their (exact) operands, or a constant made exact while decomposing."""


def _bf16_rule(op: Operation) -> Value | None:
    """``op`` computed in f32, rounded on the bits and cast to bf16 (exact); None when nothing rounds."""
    if not op.results or op.results[0].type != bf16 or op.name in _EXACT_BF16 or not op.has_trait("pure"):
        return None
    b = _Builder(op)
    if op.name == "loop.cast":
        (x,) = op.operands
        if x.type == bf16 or _is_rounded(x):
            return None
        wide = x if x.type == f32 else b.op("cast", x, dtype=f32)
        return b.op("cast", round_bf16(b, wide), dtype=bf16)
    widened = [b.op("cast", v, dtype=f32) if v.type == bf16 else v for v in op.operands]
    opdef = lookup(op.name)
    assert opdef is not None
    computed = opdef(*widened, loc=op.loc, **dict(op.attributes))
    return b.op("cast", round_bf16(b, computed), dtype=bf16)


def _round_bf16_constants_and_loads(module: Operation) -> int:
    """bf16 constants take their rounded value; loads of bf16 are rounded after loading (memory may hold any
    f32). Returns how many ops changed."""
    changed = 0
    for op in list(module.walk()):
        if not op.results or op.results[0].type != bf16:
            continue
        if op.name == "loop.const":
            value = float(round_to_bf16(np.asarray(op.attr("value"), np.float32)))
            if value != op.attr("value") and not (math.isnan(value) and math.isnan(op.attr("value"))):
                op.attributes["value"] = value
                changed += 1
        elif op.name == "loop.load":
            uses = list(op.results[0].uses)
            if len(uses) == 1 and uses[0].owner.name == "loop.cast" and _feeds_round_bf16(uses[0].owner):
                continue
            assert op.parent is not None
            with InsertionPoint.after_op(op):
                b = _Builder(op)
                rounded = b.op("cast", round_bf16(b, b.op("cast", op.results[0], dtype=f32)), dtype=bf16)
            for use in uses:
                use.owner.set_operand(use.index, rounded)
            changed += 1
    return changed


def _feeds_round_bf16(cast: Operation) -> bool:
    """Whether ``cast`` (bf16 to f32) is the input of a :func:`round_bf16`, as in the rounding of a load."""
    return any(
        u.owner.name == "loop.select" and u.index == 1 and _is_rounded(u.owner.results[0]) for u in cast.results[0].uses
    )


RULES: dict[str, Rule] = {
    "loop.exp": _float_rule(exp_f32),
    "loop.log": _float_rule(log_f32),
    "loop.tanh": _float_rule(tanh_f32),
    "loop.erf": _float_rule(erf_f32),
    "loop.sin": _float_rule(sin_f32),
    "loop.cos": _float_rule(cos_f32),
    "loop.atan": _float_rule(atan_f32),
    "loop.asin": _float_rule(asin_f32),
    "loop.acos": _float_rule(acos_f32),
    "loop.div": _integer_division,
    "loop.rem": _integer_division,
    "loop.align_offset": lambda op: _Builder(op).const(0, index),
}
"""Op name -> the rule that builds its replacement before the op (None: this op stays as it is)."""


def decompose(module: Operation, native: Collection[str] = frozenset()) -> int:
    """Rewrite, in place, every :data:`DECOMPOSABLE` op of ``module`` (a module, function or any op with
    regions) whose name is not in ``native`` into :data:`BASIC` ops; returns how many ops were replaced."""
    replaced = _rewrite(module, lambda op: RULES.get(op.name) if op.name not in native else None)
    if "bf16" not in native:  # after the math rules, whose f16 and bf16 forms cast their f32 results back
        replaced += _rewrite(module, lambda op: _bf16_rule) + _round_bf16_constants_and_loads(module)
    return replaced


def _rewrite(module: Operation, pick: Callable[[Operation], Rule | None]) -> int:
    """Replace each op of ``module`` by what the rule ``pick`` gives for it builds; returns how many."""
    replaced = 0
    for op in list(module.walk()):
        rule = pick(op)
        if rule is None or op.parent is None:
            continue
        with InsertionPoint.before_op(op):
            new = rule(op)
        if new is not None:
            op.results[0].replace_all_uses_with(new)
            op.erase()
            replaced += 1
    return replaced
