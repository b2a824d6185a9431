"""Lowering elementwise graph ops: one loop nest over the result, numpy broadcasting on the loads.

One generic lowering serves every elementwise op; what differs is how one element is computed, given
by :data:`SCALAR`: graph op name -> a function building loop scalar ops from the loaded operands. Loop
scalar ops that share the graph op's reference (``add``, ``exp``, ``cast``, ...) are used directly;
the rest (sigmoid, gelu, mod, round, ...) are compositions that follow the graph reference's formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.opdef import lookup
from ..ir.types import FloatType, IntegerType, ScalarType
from ..targets import Target
from .kernel import Kernel, element_of, lowering, lowering_error, shape_of
from .space import GPU_SPACE_KINDS, Config, Family, Space, register_family

Scalar = Callable[[Kernel, list[Value], dict[str, Any], ScalarType], Value]
"""Builds one result element from the operands' elements, the op's attributes and the operand type."""


def _loop_op(name: str) -> Scalar:
    opdef = lookup(f"loop.{name}")
    assert opdef is not None, name
    return lambda k, xs, attrs, t: opdef(*xs)  # type: ignore[no-any-return]


def _cmp(predicate: str) -> Scalar:
    return lambda k, xs, attrs, t: loop.cmp(*xs, predicate=predicate)  # type: ignore[no-any-return]


def _sigmoid_of(k: Kernel, x: Value, t: ScalarType) -> Value:
    one = k.const(1.0, t)
    e = loop.exp(loop.neg(loop.abs(x)))
    total = loop.add(one, e)
    positive = loop.cmp(x, k.const(0.0, t), predicate="ge")
    return loop.select(positive, loop.div(one, total), loop.div(e, total))  # type: ignore[no-any-return]


def _sigmoid(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    return _sigmoid_of(k, xs[0], t)


def _silu(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    return loop.mul(xs[0], _sigmoid_of(k, xs[0], t))  # type: ignore[no-any-return]


def _gelu(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    (x,) = xs
    half_x = loop.mul(k.const(0.5, t), x)
    if attrs["approximate"] == "tanh":
        cube = loop.mul(loop.mul(x, x), x)
        inner = loop.mul(k.const(math.sqrt(2 / math.pi), t), loop.add(x, loop.mul(k.const(0.044715, t), cube)))
        return loop.mul(half_x, loop.add(k.const(1.0, t), loop.tanh(inner)))  # type: ignore[no-any-return]
    scaled = loop.mul(x, k.const(math.sqrt(0.5), t))
    return loop.mul(half_x, loop.add(k.const(1.0, t), loop.erf(scaled)))  # type: ignore[no-any-return]


def _relu(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    return loop.max(xs[0], k.const(0, t))  # type: ignore[no-any-return]


def _ceil(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    return loop.neg(loop.floor(loop.neg(xs[0])))  # type: ignore[no-any-return]


def _round(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    """Round half to even: floor, then up when the fraction is above 1/2, or exactly 1/2 with an odd floor; a
    zero result takes the sign of x (IEEE: round(-0.3) is -0, where floor(-0.3) + 1 is +0)."""
    (x,) = xs
    down = loop.floor(x)
    up = loop.add(down, k.const(1.0, t))
    fraction = loop.sub(x, down)
    half = k.const(0.5, t)
    zero = k.const(0.0, t)
    even = loop.cmp(loop.rem(down, k.const(2.0, t)), zero, predicate="eq")
    tie = loop.select(even, down, up)
    below = loop.select(loop.cmp(fraction, half, predicate="lt"), down, tie)
    rounded = loop.select(loop.cmp(fraction, half, predicate="gt"), up, below)
    return loop.select(loop.cmp(rounded, zero, predicate="eq"), loop.mul(x, zero), rounded)  # type: ignore[no-any-return]


def _all_ones(t: ScalarType) -> Any:
    if isinstance(t, IntegerType) and t.is_bool:
        return True
    if isinstance(t, IntegerType) and not t.signed:
        return t.max_value
    return -1


def _not(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    return loop.xor(xs[0], k.const(_all_ones(t), t))  # type: ignore[no-any-return]


def _sign(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    """1 above zero, -1 below, NaN for NaN, else +0 (as numpy: sign(-0.0) is 0.0)."""
    (x,) = xs
    zero = k.const(0, t)
    out = loop.select(loop.cmp(x, x, predicate="ne"), x, zero) if isinstance(t, FloatType) else x
    if not (isinstance(t, IntegerType) and not t.signed):
        out = loop.select(loop.cmp(x, zero, predicate="lt"), k.const(-1, t), out)
    return loop.select(loop.cmp(x, zero, predicate="gt"), k.const(1, t), out)  # type: ignore[no-any-return]


def _reciprocal(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    return loop.div(k.const(1.0, t), xs[0])  # type: ignore[no-any-return]


def _mod(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    """numpy's mod (sign of the divisor): the truncated remainder, plus the divisor when the signs differ; a
    float zero takes the divisor's sign too (mod(-2.0, 1.0) is +0.0, where the truncated remainder is -0.0)."""
    a, b = xs
    r = loop.rem(a, b)
    zero = k.const(0, t)
    b_negative = loop.cmp(b, zero, predicate="lt")
    signs_differ = loop.cmp(loop.cmp(r, zero, predicate="lt"), b_negative, predicate="ne")
    fixed = loop.select(loop.and_(loop.cmp(r, zero, predicate="ne"), signs_differ), loop.add(r, b), r)
    if not isinstance(t, FloatType):
        return fixed  # type: ignore[no-any-return]
    signed_zero = loop.select(b_negative, k.const(-0.0, t), zero)
    return loop.select(loop.cmp(r, zero, predicate="eq"), signed_zero, fixed)  # type: ignore[no-any-return]


def _where(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    return loop.select(*xs)  # type: ignore[no-any-return]


def _cast(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    return loop.cast(xs[0], dtype=attrs["dtype"])  # type: ignore[no-any-return]


def _clamp_bound(bound: float, t: ScalarType, rounding: Callable[[float], float]) -> Any:
    """The bound as a constant of ``t``: the float itself, or for integers rounded inwards and kept in range."""
    if isinstance(t, FloatType):
        return bound
    assert isinstance(t, IntegerType)
    return min(max(int(rounding(bound)), t.min_value), t.max_value)


def _clamp(k: Kernel, xs: list[Value], attrs: dict[str, Any], t: ScalarType) -> Value:
    y = xs[0]
    if attrs["min"] is not None:
        y = loop.max(y, k.const(_clamp_bound(attrs["min"], t, math.ceil), t))
    if attrs["max"] is not None:
        y = loop.min(y, k.const(_clamp_bound(attrs["max"], t, math.floor), t))
    return y


_SAME_NAME = (
    "neg abs exp log sqrt rsqrt sin cos tanh erf floor asin acos atan add sub mul div pow max min and or xor".split()
)

SCALAR: dict[str, Scalar] = {
    **{f"graph.{name}": _loop_op(name) for name in _SAME_NAME},
    **{f"graph.{p}": _cmp(p) for p in ("eq", "ne", "lt", "le", "gt", "ge")},
    "graph.sigmoid": _sigmoid,
    "graph.silu": _silu,
    "graph.gelu": _gelu,
    "graph.relu": _relu,
    "graph.ceil": _ceil,
    "graph.round": _round,
    "graph.not": _not,
    "graph.sign": _sign,
    "graph.reciprocal": _reciprocal,
    "graph.mod": _mod,
    "graph.where": _where,
    "graph.cast": _cast,
    "graph.clamp": _clamp,
}
"""How one element of each elementwise graph op is computed from its operands' elements."""


@lowering(*SCALAR)
def lower_elementwise(op: Operation, k: Kernel) -> None:
    """One loop nest over the result; each operand is loaded with broadcasting, then combined by SCALAR."""
    out = k.outputs[0]
    shape = shape_of(out)
    operand_type = element_of(k.inputs[-1])
    attrs = op.opdef.attr_kwargs(op)
    with k.loops(k.sizes(out), [f"i{a}" for a in range(len(shape))]) as ivs:
        xs = [loop.load(b, k.broadcast_indices(b, len(shape_of(b)), shape, ivs)) for b in k.inputs]
        loop.store(SCALAR[op.name](k, xs, attrs, operand_type), out, ivs)


@lowering("graph.constant")
def lower_constant(op: Operation, k: Kernel) -> None:
    """Fill the result: one loop nest for a splat, else one store per element."""
    out = k.outputs[0]
    array = op.attr("value").array
    t = element_of(out)
    if array.size == 0:
        return
    flat = array.reshape(-1)
    if bool((flat == flat[0]).all()) or (flat.dtype.kind == "f" and bool(np.isnan(flat).all())):
        with k.loops(k.sizes(out), [f"i{a}" for a in range(array.ndim)]) as ivs:
            loop.store(k.const(flat[0].item(), t), out, ivs)
        return
    if array.size > 4096:
        raise lowering_error(op, f"a constant of {array.size} elements belongs in a host buffer, not in code")
    for position in np.ndindex(array.shape):
        loop.store(k.const(array[position].item(), t), out, [k.index(i) for i in position])


def _elementwise_space(op: Operation, target: Target) -> Space | None:
    """No knobs of its own; on GPU targets the ``threads`` knob (invocations per workgroup) is added to it
    (:func:`~tensorium.lowering.space.kernel_space`); on the CPU no space at all."""
    return Space("elementwise", ()) if target.kind in GPU_SPACE_KINDS else None


register_family(
    Family(
        "elementwise",
        tuple(sorted(SCALAR)),
        _elementwise_space,
        lambda op, target, space: Config("elementwise", ()),
        fallback=True,
    )
)
