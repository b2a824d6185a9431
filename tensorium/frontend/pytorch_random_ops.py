"""ATen random ops on Tensorium's own generator (``graph.random``, tensorium/ir/dialects/graph/rng.py).

Every random op gets its own seed (the import's count of random ops so far) and reads @main's generator
key (a seed and a call counter, a bound parameter the runtime advances after every call), so successive
calls draw fresh numbers and ``manual_seed`` on the compiled model replays them. They differ from torch's
(which uses its global generator): results match torch in shape, dtype and distribution, not in value.
Distributions are transforms of uniform (0, 1) or standard normal draws: ``bernoulli`` compares with p,
``exponential`` takes -log(u) / lambda, ``cauchy`` tan(pi (u - 1/2)), ``geometric`` ceil(log(u) / log(1 - p)),
``randint`` floor(low + u (high - low)). Registered into the converter table of :mod:`.pytorch_ops`.
"""

from __future__ import annotations

import math
from typing import Any

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import FloatType, ScalarType, f32, f64, i64
from .pytorch_ops import Context, ConversionError, cast, converts, ttype

__all__: list[str] = []


def _draw(cx: Context, distribution: str, element: ScalarType | None = None) -> Value:
    """Draws of the current node's result shape, as ``element`` (f64 for integer results)."""
    shape = list(cx.meta(0 if isinstance(cx.meta(), tuple) else None).shape)
    if not all(isinstance(d, int) for d in shape):
        raise ConversionError("random numbers of a symbolic shape are not supported")
    target = element or cx.out_element(0 if isinstance(cx.meta(), tuple) else None)
    dtype = target if isinstance(target, FloatType) and target in (f32, f64) else f64
    return graph.random(cx.generator_key(), shape=shape, dtype=dtype, distribution=distribution, seed=cx.next_seed())


def _like(cx: Context, draws: Value) -> Value:
    return cast(draws, cx.out_element())


def _const(cx: Context, value: float, like: Value) -> Value:
    return cx.const(value, ttype(like).element)


@converts("aten.rand.default", "aten.rand_like.default", "aten.uniform.default")
def _rand(cx: Context, *args: Any, **kwargs: Any) -> Value:
    assert cx.node is not None
    u = _draw(cx, "uniform")
    if str(cx.node.target) == "aten.uniform.default":
        low = args[1] if len(args) > 1 else kwargs.get("from", 0.0)
        high = args[2] if len(args) > 2 else kwargs.get("to", 1.0)
        u = graph.add(graph.mul(u, _const(cx, high - low, u)), _const(cx, low, u))
    return _like(cx, u)


@converts("aten.randn.default", "aten.randn_like.default", "aten.normal_functional.default")
def _randn(cx: Context, *args: Any, **kwargs: Any) -> Value:
    assert cx.node is not None
    z = _draw(cx, "normal")
    if str(cx.node.target) == "aten.normal_functional.default":
        mean = args[1] if len(args) > 1 else kwargs.get("mean", 0.0)
        std = args[2] if len(args) > 2 else kwargs.get("std", 1.0)
        z = graph.add(graph.mul(z, _const(cx, std, z)), _const(cx, mean, z))
    return _like(cx, z)


@converts(
    "aten.normal.Tensor_Tensor", "aten.normal.Tensor_float", "aten.normal.float_Tensor", "aten.normal.float_float"
)
def _normal(cx: Context, mean: Any, std: Any = 1.0, *args: Any, **kwargs: Any) -> Value:
    element = cx.out_element()
    z = cast(_draw(cx, "normal"), element)
    return graph.add(graph.mul(z, cx.tensor(std, element)), cx.tensor(mean, element))


@converts("aten.bernoulli.default", "aten.bernoulli.p")
def _bernoulli(cx: Context, x: Value, p: Any = None, **kwargs: Any) -> Value:
    u = _draw(cx, "uniform", f64)
    chance = cx.tensor(p, f64) if p is not None else cast(x, f64)
    return cast(graph.lt(u, chance), cx.out_element())


@converts("aten.exponential.default")
def _exponential(cx: Context, x: Value, lambd: float = 1.0, **kwargs: Any) -> Value:
    u = _draw(cx, "uniform")
    return _like(cx, graph.div(graph.neg(graph.log(u)), _const(cx, lambd, u)))


@converts("aten.log_normal.default")
def _log_normal(cx: Context, x: Value, mean: float = 1.0, std: float = 2.0, **kwargs: Any) -> Value:
    z = _draw(cx, "normal")
    return _like(cx, graph.exp(graph.add(graph.mul(z, _const(cx, std, z)), _const(cx, mean, z))))


@converts("aten.cauchy.default")
def _cauchy(cx: Context, x: Value, median: float = 0.0, sigma: float = 1.0, **kwargs: Any) -> Value:
    u = _draw(cx, "uniform", f64)
    angle = graph.mul(graph.sub(u, _const(cx, 0.5, u)), _const(cx, math.pi, u))
    tangent = graph.div(graph.sin(angle), graph.cos(angle))
    return _like(cx, graph.add(graph.mul(tangent, _const(cx, sigma, u)), _const(cx, median, u)))


@converts("aten.geometric.default")
def _geometric(cx: Context, x: Value, p: float, **kwargs: Any) -> Value:
    u = _draw(cx, "uniform", f64)
    trials = graph.ceil(graph.div(graph.log(u), _const(cx, math.log1p(-p), u)))
    return _like(cx, trials)


@converts("aten.randint.default", "aten.randint.low", "aten.randint_like.default", "aten.randint_like.low_dtype")
def _randint(cx: Context, *args: Any, **kwargs: Any) -> Value:
    assert cx.node is not None
    name = str(cx.node.target)
    bounds = [a for a in args if isinstance(a, int)][: 2 if name.endswith(("low", "low_dtype")) else 1]
    low, high = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
    u = _draw(cx, "uniform", f64)
    value = graph.floor(graph.add(graph.mul(u, _const(cx, high - low, u)), _const(cx, low, u)))
    return _like(cx, value)


@converts("aten.rrelu_with_noise_functional.default")
def _rrelu(
    cx: Context,
    x: Value,
    noise: Value,
    lower: float = 0.125,
    upper: float = 1 / 3,
    training: bool = False,
    **kwargs: Any,
) -> tuple[Value, Value]:
    """Leaky ReLU whose negative slope is (lower + upper) / 2, or drawn from U(lower, upper) per element
    in training; the second result is the slopes used (1 where x >= 0), as torch's noise output."""
    element = ttype(x).element
    if training:
        u = cast(_draw(cx, "uniform", f64 if element == f64 else f32), element)
        slope = graph.add(graph.mul(u, cx.const(upper - lower, element)), cx.const(lower, element))
    else:
        slope = cx.const((lower + upper) / 2, element)
    negative = graph.lt(x, cx.const(0, element))
    out = graph.where(negative, graph.mul(x, slope), x)
    if not training:
        return out, noise
    return out, graph.where(negative, slope, cx.const(1, element))


@converts("aten.multinomial.default")
def _multinomial(
    cx: Context, probs: Value, num_samples: int, replacement: bool = False, *, generator: Any = None
) -> Value:
    """Category indices drawn by weight: with replacement, the number of cumulative weights below a uniform
    draw; without, the largest ``num_samples`` of log(weight) plus Gumbel noise (distinct categories)."""
    from .pytorch_shape_ops import sorted_along

    t = ttype(probs)
    if not t.is_static or t.rank not in (1, 2):
        raise ConversionError(f"multinomial needs static 1-D or 2-D weights, got {t}")
    rows, k = (1, int(t.shape[0])) if t.rank == 1 else (int(t.shape[0]), int(t.shape[1]))  # type: ignore[arg-type]
    weights = graph.reshape(cast(probs, f64), shape=[rows, k])
    if replacement:
        cdf = graph.div(graph.cumsum(weights, axis=1), graph.reduce_sum(weights, axes=[1], keepdims=True))
        u = graph.random(
            cx.generator_key(), shape=[rows, num_samples, 1], dtype=f64, distribution="uniform", seed=cx.next_seed()
        )
        below = graph.lt(graph.unsqueeze(cdf, axes=[1]), u)  # [rows, samples, k]
        picked = graph.min(graph.reduce_sum(cast(below, i64), axes=[2]), cx.const(k - 1, i64))
    else:
        if num_samples > k:
            raise ConversionError(f"cannot draw {num_samples} distinct categories out of {k}")
        u = graph.random(cx.generator_key(), shape=[rows, k], dtype=f64, distribution="uniform", seed=cx.next_seed())
        gumbel = graph.neg(graph.log(graph.neg(graph.log(u))))
        _, order = sorted_along(cx, graph.add(graph.log(weights), gumbel), 1, descending=True)
        picked = graph.slice(order, starts=[0], ends=[num_samples], axes=[1])
    return graph.reshape(picked, shape=[num_samples] if t.rank == 1 else [rows, num_samples])
