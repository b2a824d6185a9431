"""Functional ops for traced Tensors (``tensorium.nn.softmax(x, axis=-1)``), numpy- and torch-flavoured.

Every function records graph ops through :func:`tensorium.frontend.tracer.tensor.bind`. Operands may be Tensors,
numpy arrays (constants) or Python scalars (constants of the other operand's element type).
Convolutions and pooling take NCHW data and torch's argument conventions (``stride``, ``padding``
as an int, a pair or [top, left, bottom, right]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...ir.dialects import graph
from ...ir.types import is_float
from .tensor import Tensor, TracerError, as_tensor, bind, constant, lift_pair, matmul, to_element

__all__ = [
    "abs",
    "arange",
    "avg_pool2d",
    "clip",
    "concat",
    "conv2d",
    "cos",
    "cumsum",
    "einsum",
    "embedding",
    "erf",
    "exp",
    "full",
    "gelu",
    "global_avg_pool2d",
    "layer_norm",
    "linear",
    "log",
    "log_softmax",
    "matmul",
    "max_pool2d",
    "maximum",
    "minimum",
    "ones",
    "relu",
    "rms_norm",
    "rsqrt",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "sin",
    "softmax",
    "split",
    "sqrt",
    "stack",
    "take",
    "tanh",
    "tril",
    "triu",
    "where",
    "zeros",
]


def _t(x: Any) -> Tensor:
    return as_tensor(x)


def _float(x: Any) -> Tensor:
    """``x`` as a float Tensor (integers become f64, as numpy's ufuncs do)."""
    t = _t(x)
    return t if is_float(t.element) else t.astype("f64")


# --- elementwise ---------------------------------------------------------------------------------
def relu(x: Any) -> Tensor:
    """max(x, 0)."""
    return bind(graph.relu, _t(x))  # type: ignore[no-any-return]


def gelu(x: Any, approximate: str = "none") -> Tensor:
    """x * Phi(x); ``approximate="tanh"`` uses the tanh form."""
    return bind(graph.gelu, _float(x), approximate=approximate)  # type: ignore[no-any-return]


def silu(x: Any) -> Tensor:
    """x * sigmoid(x)."""
    return bind(graph.silu, _float(x))  # type: ignore[no-any-return]


def sigmoid(x: Any) -> Tensor:
    """1 / (1 + exp(-x))."""
    return bind(graph.sigmoid, _float(x))  # type: ignore[no-any-return]


def tanh(x: Any) -> Tensor:
    """Hyperbolic tangent."""
    return bind(graph.tanh, _float(x))  # type: ignore[no-any-return]


def exp(x: Any) -> Tensor:
    """e ** x."""
    return bind(graph.exp, _float(x))  # type: ignore[no-any-return]


def log(x: Any) -> Tensor:
    """Natural logarithm."""
    return bind(graph.log, _float(x))  # type: ignore[no-any-return]


def sqrt(x: Any) -> Tensor:
    """Square root."""
    return bind(graph.sqrt, _float(x))  # type: ignore[no-any-return]


def rsqrt(x: Any) -> Tensor:
    """1 / sqrt(x)."""
    return bind(graph.rsqrt, _float(x))  # type: ignore[no-any-return]


def erf(x: Any) -> Tensor:
    """The error function."""
    return bind(graph.erf, _float(x))  # type: ignore[no-any-return]


def sin(x: Any) -> Tensor:
    """Sine."""
    return bind(graph.sin, _float(x))  # type: ignore[no-any-return]


def cos(x: Any) -> Tensor:
    """Cosine."""
    return bind(graph.cos, _float(x))  # type: ignore[no-any-return]


def abs(x: Any) -> Tensor:
    """|x|."""
    return bind(graph.abs_, _t(x))  # type: ignore[no-any-return]


def maximum(a: Any, b: Any) -> Tensor:
    """Elementwise maximum with broadcasting (NaN propagates)."""
    return bind(graph.max_, *lift_pair(a, b))  # type: ignore[no-any-return]


def minimum(a: Any, b: Any) -> Tensor:
    """Elementwise minimum with broadcasting (NaN propagates)."""
    return bind(graph.min_, *lift_pair(a, b))  # type: ignore[no-any-return]


def clip(x: Any, min: float | None = None, max: float | None = None) -> Tensor:
    """min(max(x, min), max); either bound may be None."""
    return bind(graph.clamp, _t(x), min=min, max=max)  # type: ignore[no-any-return]


def where(cond: Any, a: Any, b: Any) -> Tensor:
    """``a`` where ``cond`` is true, else ``b`` (broadcasting; scalars take the other branch's type)."""
    c = _t(cond)
    if c.element != to_element("bool"):
        c = c.astype("bool")
    x, y = lift_pair(a, b)
    return bind(graph.where, c, x, y)  # type: ignore[no-any-return]


# --- normalization and activations over an axis --------------------------------------------------
def softmax(x: Any, axis: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``axis``."""
    return bind(graph.softmax, _float(x), axis=axis)  # type: ignore[no-any-return]


def log_softmax(x: Any, axis: int = -1) -> Tensor:
    """log(softmax(x)) along ``axis``, without overflow."""
    return bind(graph.log_softmax, _float(x), axis=axis)  # type: ignore[no-any-return]


def layer_norm(x: Any, weight: Any = None, bias: Any = None, *, axis: int = -1, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over dims ``axis``..rank-1 (biased variance)."""
    t = _float(x)
    operands = [t]
    if weight is not None:
        operands.append(as_tensor(weight, t).astype(t.element))
    if bias is not None:
        if weight is None:
            raise TracerError("layer_norm takes a bias only together with a weight")
        operands.append(as_tensor(bias, t).astype(t.element))
    return bind(graph.layer_norm, *operands, axis=axis, eps=eps)  # type: ignore[no-any-return]


def rms_norm(x: Any, weight: Any = None, *, axis: int = -1, eps: float = 1e-6) -> Tensor:
    """x / sqrt(mean(x**2) + eps) * weight over dims ``axis``..rank-1."""
    t = _float(x)
    operands = [t] + ([as_tensor(weight, t).astype(t.element)] if weight is not None else [])
    return bind(graph.rms_norm, *operands, axis=axis, eps=eps)  # type: ignore[no-any-return]


# --- linear algebra --------------------------------------------------------------------------------
def linear(x: Any, weight: Any, bias: Any = None) -> Tensor:
    """x @ weight.T + bias, with torch's [out_features, in_features] weight."""
    a, w = lift_pair(x, weight)
    out: Tensor = bind(graph.matmul, a, w, transpose_b=True) if a.ndim >= 2 else matmul(a, w.T)
    return out if bias is None else out + bias


def einsum(equation: str, *operands: Any) -> Tensor:
    """A contraction written as an explicit einsum equation ('bij,bjk->bik')."""
    ts = [_t(o) for o in operands]
    common = to_element(np.result_type(*(t.dtype for t in ts)))
    return bind(graph.einsum, *(t.astype(common) for t in ts), equation=equation)  # type: ignore[no-any-return]


def scaled_dot_product_attention(
    q: Any, k: Any, v: Any, mask: Any = None, *, is_causal: bool = False, scale: float | None = None
) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over the last two dims; ``mask`` is boolean (keep) or additive."""
    query, key, value = _t(q), _t(k), _t(v)
    d = query.shape[-1]
    if scale is None:
        if not isinstance(d, int):
            raise TracerError("scaled_dot_product_attention needs a static head size or an explicit scale")
        scale = 1.0 / math.sqrt(d)
    scores: Tensor = bind(graph.matmul, query, key, transpose_b=True) * scale
    if is_causal:
        lq, lk = scores.shape[-2], scores.shape[-1]
        if not isinstance(lq, int) or not isinstance(lk, int):
            raise TracerError("causal attention needs static sequence lengths")
        keep = np.tril(np.ones((lq, lk), dtype=bool))
        scores = where(keep, scores, -math.inf)
    if mask is not None:
        m = _t(mask)
        scores = where(m, scores, -math.inf) if m.dtype == np.bool_ else scores + m
    return softmax(scores, axis=-1) @ value


# --- convolution and pooling -----------------------------------------------------------------------
def _pair(v: int | Sequence[int], what: str) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    if len(v) != 2:
        raise TracerError(f"{what} must be an int or a pair, got {v!r}")
    return (int(v[0]), int(v[1]))


def _padding(p: int | Sequence[int]) -> tuple[int, int, int, int]:
    """torch padding (int or (h, w)) or explicit [top, left, bottom, right]."""
    if isinstance(p, int):
        return (p, p, p, p)
    if len(p) == 2:
        return (int(p[0]), int(p[1]), int(p[0]), int(p[1]))
    if len(p) == 4:
        return (int(p[0]), int(p[1]), int(p[2]), int(p[3]))
    raise TracerError(f"padding must be an int, a pair or [top, left, bottom, right], got {p!r}")


def conv2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Tensor:
    """2-D cross-correlation of NCHW ``x`` with an OIHW ``weight`` (torch.nn.functional.conv2d)."""
    a, w = lift_pair(x, weight)
    operands = [a, w] + ([as_tensor(bias, a).astype(a.element)] if bias is not None else [])
    return bind(  # type: ignore[no-any-return]
        graph.conv2d,
        *operands,
        strides=_pair(stride, "stride"),
        padding=_padding(padding),
        dilations=_pair(dilation, "dilation"),
        groups=groups,
    )


def max_pool2d(
    x: Any,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """2-D max pooling of NCHW ``x`` (torch.nn.functional.max_pool2d; stride defaults to the kernel)."""
    kernel = _pair(kernel_size, "kernel_size")
    return bind(  # type: ignore[no-any-return]
        graph.max_pool2d,
        _t(x),
        kernel=kernel,
        strides=kernel if stride is None else _pair(stride, "stride"),
        padding=_padding(padding),
        dilations=_pair(dilation, "dilation"),
        ceil_mode=ceil_mode,
    )


def avg_pool2d(
    x: Any,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """2-D average pooling of NCHW ``x`` (torch.nn.functional.avg_pool2d, whose default counts padding)."""
    kernel = _pair(kernel_size, "kernel_size")
    return bind(  # type: ignore[no-any-return]
        graph.avg_pool2d,
        _float(x),
        kernel=kernel,
        strides=kernel if stride is None else _pair(stride, "stride"),
        padding=_padding(padding),
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )


def global_avg_pool2d(x: Any) -> Tensor:
    """The mean over both spatial dims of NCHW ``x``, which become 1."""
    return bind(graph.global_avg_pool2d, _float(x))  # type: ignore[no-any-return]


# --- indexing and joining ---------------------------------------------------------------------------
def embedding(indices: Any, weight: Any) -> Tensor:
    """Rows of ``weight`` named by ``indices`` (torch.nn.functional.embedding argument order)."""
    return bind(graph.embedding, _t(weight), _t(indices))  # type: ignore[no-any-return]


def take(x: Any, indices: Any, axis: int = 0) -> Tensor:
    """numpy.take along ``axis``: the result shape is x[:axis] + indices + x[axis+1:]."""
    return bind(graph.gather, _t(x), _t(indices), axis=axis)  # type: ignore[no-any-return]


def _joined(tensors: Sequence[Any]) -> list[Tensor]:
    ts = [_t(t) for t in tensors]
    if not ts:
        raise TracerError("need at least one tensor to join")
    common = to_element(np.result_type(*(t.dtype for t in ts)))
    return [t.astype(common) for t in ts]


def concat(tensors: Sequence[Any], axis: int = 0) -> Tensor:
    """Join tensors along an existing ``axis`` (numpy.concatenate)."""
    return bind(graph.concat, *_joined(tensors), axis=axis)  # type: ignore[no-any-return]


def stack(tensors: Sequence[Any], axis: int = 0) -> Tensor:
    """Join tensors along a new ``axis`` (numpy.stack)."""
    ts = _joined(tensors)
    rank = ts[0].ndim + 1
    if not -rank <= axis < rank:
        raise TracerError(f"stack axis {axis} is out of range for rank {rank}")
    return concat([t.unsqueeze(axis % rank) for t in ts], axis=axis % rank)


def split(x: Any, sizes: Sequence[int], axis: int = 0) -> tuple[Tensor, ...]:
    """Cut ``x`` along ``axis`` into pieces of the given ``sizes``."""
    out = bind(graph.split, _t(x), axis=axis, sizes=tuple(sizes))
    return out if isinstance(out, tuple) else (out,)


def cumsum(x: Any, axis: int = 0) -> Tensor:
    """Inclusive cumulative sum along ``axis``."""
    return bind(graph.cumsum, _t(x), axis=axis)  # type: ignore[no-any-return]


def triu(x: Any, k: int = 0) -> Tensor:
    """Zero the elements below diagonal ``k`` of the last two dims."""
    return bind(graph.triu, _t(x), k=k)  # type: ignore[no-any-return]


def tril(x: Any, k: int = 0) -> Tensor:
    """Zero the elements above diagonal ``k`` of the last two dims."""
    return bind(graph.tril, _t(x), k=k)  # type: ignore[no-any-return]


# --- creation -----------------------------------------------------------------------------------------
def arange(start: float, stop: float | None = None, step: float = 1.0, dtype: Any = "float32") -> Tensor:
    """start, start + step, ... below ``stop`` (``arange(n)`` counts from 0)."""
    if stop is None:
        start, stop = 0.0, start
    return bind(graph.arange, start=start, limit=stop, step=step, dtype=to_element(dtype))  # type: ignore[no-any-return]


def full(shape: Sequence[int], value: float, dtype: Any = "float32") -> Tensor:
    """A constant Tensor of ``shape`` filled with ``value``."""
    return constant(np.full(tuple(shape), value), dtype)


def zeros(shape: Sequence[int], dtype: Any = "float32") -> Tensor:
    """A constant Tensor of zeros."""
    return full(shape, 0, dtype)


def ones(shape: Sequence[int], dtype: Any = "float32") -> Tensor:
    """A constant Tensor of ones."""
    return full(shape, 1, dtype)
