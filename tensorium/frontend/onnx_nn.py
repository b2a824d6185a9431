"""ONNX converters for neural-network ops: convolution, pooling, normalization, resizing, losses, attention.

Registered in the same ``CONVERTERS`` table as the generic ops of :mod:`tensorium.frontend.onnx_ops`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.shapes import normalize_axis
from ..ir.types import i1, i64
from .onnx_context import ConversionError, Node, scalar_type
from .onnx_conv3d import conv3d_by_planes, conv_transpose3d_by_planes
from .onnx_ops import Results, cast, converts, element, keep_axes, rank, shape, static_dims
from .onnx_pool import Windows, pads_nd, window_pool


# convolution and pooling -----------------------------------------------------------------------
def _to_2d(v: Value, k: int) -> Value:
    return graph.unsqueeze(v, axes=(2,)) if k == 1 else v


def _pads_2d(n: Node, x: Value, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]) -> tuple:
    """[top, left, bottom, right] padding from ``pads`` or ``auto_pad`` (1-D lifted to 2-D)."""
    pads = pads_nd(n, x, kernel, strides, dilations)
    return pads if len(kernel) == 2 else (0, pads[0], 0, pads[1])


def _lift(values: Sequence[int], k: int, fill: int) -> tuple[int, ...]:
    return tuple(values) if k == 2 else (fill, *values)


def _from_2d(v: Value, k: int) -> Value:
    return graph.squeeze(v, axes=(2,)) if k == 1 else v  # type: ignore[no-any-return]


@converts("Conv")
def _conv(n: Node) -> Results:
    return convolution(n, n.input(0), n.input(1), n.optional(2))


def convolution(n: Node, x: Value, w: Value, bias: Value | None) -> Value:
    """The convolution node ``n`` describes (its kernel, strides, pads, dilations, groups) of ``x`` by ``w``."""
    k = _conv_rank(n, x)
    kernel = n.attr("kernel_shape", shape(w)[2:])
    strides, dilations = n.attr("strides", (1,) * k), n.attr("dilations", (1,) * k)
    if k == 3:
        pads = pads_nd(n, x, kernel, strides, dilations)
        plane = {"strides": strides[1:], "padding": (*pads[1:3], *pads[4:6]), "dilations": dilations[1:]}
        depth = (strides[0], dilations[0], pads[0], pads[3])
        return conv3d_by_planes(n, x, w, bias, depth, groups=n.attr("group", 1), **plane)
    pads = _pads_2d(n, x, kernel, strides, dilations)
    out = graph.conv2d(
        _to_2d(x, k),
        _to_2d(w, k),
        *([] if bias is None else [bias]),
        strides=_lift(strides, k, 1),
        padding=pads,
        dilations=_lift(dilations, k, 1),
        groups=n.attr("group", 1),
    )
    return _from_2d(out, k)


def _conv_rank(n: Node, x: Value) -> int:
    k = rank(x) - 2
    if k not in (1, 2, 3):
        raise ConversionError(f"only 1-D, 2-D and 3-D {n.op_type} is supported, got {k}-D")
    return k


@converts("ConvTranspose")
def _conv_transpose(n: Node) -> Results:
    x, w = n.input(0), n.input(1)
    k = _conv_rank(n, x)
    kernel = n.attr("kernel_shape", shape(w)[2:])
    strides, dilations = n.attr("strides", (1,) * k), n.attr("dilations", (1,) * k)
    out_pad = list(n.attr("output_padding", (0,) * k))
    pads: Sequence[int] = n.attr("pads", (0,) * (2 * k))
    auto = n.attr("auto_pad", "NOTSET")
    if "output_shape" in n.attrs or auto in ("SAME_UPPER", "SAME_LOWER"):
        dims = static_dims(x, "ConvTranspose with output_shape")[2:]
        wanted = n.attr("output_shape", tuple(d * s for d, s in zip(dims, strides)))[-k:]
        begin, end = [], []
        for i, (size, kern, s, d) in enumerate(zip(dims, kernel, strides, dilations)):
            total = s * (size - 1) + out_pad[i] + (kern - 1) * d + 1 - wanted[i]
            if total < 0:
                out_pad[i] -= total
                total = 0
            small = total // 2
            begin.append(total - small if auto == "SAME_LOWER" else small)
            end.append(total - begin[-1])
        pads = begin + end
    if k == 3:
        plane = {
            "strides": strides[1:],
            "padding": (*pads[1:3], *pads[4:6]),
            "dilations": dilations[1:],
            "output_padding": tuple(out_pad[1:]),
        }
        depth = (strides[0], dilations[0], pads[0], pads[3], out_pad[0])
        return conv_transpose3d_by_planes(n, x, w, n.optional(2), depth, groups=n.attr("group", 1), **plane)
    padding = tuple(pads) if k == 2 else (0, pads[0], 0, pads[1])
    out = graph.conv_transpose2d(
        _to_2d(x, k),
        _to_2d(w, k),
        *([] if n.optional(2) is None else [n.input(2)]),
        strides=_lift(strides, k, 1),
        padding=padding,
        output_padding=_lift(out_pad, k, 0),
        dilations=_lift(dilations, k, 1),
        groups=n.attr("group", 1),
    )
    return _from_2d(out, k)


@converts("MaxPool", "AveragePool")
def _pool(n: Node) -> Results:
    x = n.input(0)
    if n.num_outputs > 1 and n.proto.output[1]:
        return Windows(n, x, n.attr("kernel_shape")).argmax(n, x, bool(n.attr("storage_order", 0)))
    k = rank(x) - 2
    kernel = n.attr("kernel_shape")
    strides, dilations = n.attr("strides", (1,) * k), n.attr("dilations", (1,) * k)
    ceil_mode = bool(n.attr("ceil_mode", 0))
    include = bool(n.attr("count_include_pad", 0))
    kind = "max" if n.op_type == "MaxPool" else "average"
    if k not in (1, 2) or (kind == "average" and any(d != 1 for d in dilations)):
        return window_pool(n, x, kind)
    pads = _pads_2d(n, x, kernel, strides, dilations)
    x = _to_2d(x, k)
    extents = [(kern - 1) * d + 1 for kern, d in zip(_lift(kernel, k, 1), _lift(dilations, k, 1))]
    wide = any(p > extents[i % 2] // 2 for i, p in enumerate(pads))
    if wide and not (n.op_type == "MaxPool" or include):
        return window_pool(n, n.input(0), kind)
    if wide and not ceil_mode and (n.op_type == "MaxPool" or include):
        # padding wider than the graph ops allow: pad explicitly (-inf for max, zeros counted for average)
        fill = -math.inf if n.op_type == "MaxPool" else 0.0
        x = graph.pad(x, pads=(0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]), value=fill)
        pads = (0, 0, 0, 0)
    common: dict[str, Any] = {"kernel": _lift(kernel, k, 1), "strides": _lift(strides, k, 1), "padding": pads}
    if n.op_type == "MaxPool":
        out = graph.max_pool2d(x, dilations=_lift(dilations, k, 1), ceil_mode=ceil_mode, **common)
    else:
        out = graph.avg_pool2d(x, ceil_mode=ceil_mode, count_include_pad=include, **common)
    return _from_2d(out, k)


@converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(n: Node) -> Results:
    x = n.input(0)
    op = graph.reduce_mean if n.op_type == "GlobalAveragePool" else graph.reduce_max
    return op(x, axes=tuple(range(2, rank(x))), keepdims=True)


# normalization ---------------------------------------------------------------------------------
def _channel_param(v: Value, x: Value) -> Value:
    """A per-channel vector reshaped to broadcast against N x C x ... input ``x``."""
    return graph.reshape(v, shape=(-1,) + (1,) * (rank(x) - 2))  # type: ignore[no-any-return]


def _normalize(n: Node, x: Value, axes: tuple[int, ...], eps: float) -> tuple[Value, Value, Value]:
    """(x - mean) * rsqrt(var + eps) over ``axes``, with the mean and inverse std (keepdims)."""
    mean = graph.reduce_mean(x, axes=axes, keepdims=True)
    centered = graph.sub(x, mean)
    var = graph.reduce_mean(graph.mul(centered, centered), axes=axes, keepdims=True)
    inv = graph.rsqrt(graph.add(var, n.scalar(eps, x)))
    return graph.mul(centered, inv), mean, inv


@converts("BatchNormalization")
def _batch_norm(n: Node) -> Results:
    x = n.input(0)
    params = [cast(n.input(i), element(x)) for i in range(1, 5)]
    eps = n.attr("epsilon", 1e-5)
    if not n.attr("training_mode", 0):
        if n.num_outputs > 1 and any(n.proto.output[1:]):
            raise ConversionError("the running statistics outputs need training_mode=1")
        return graph.batch_norm(x, *params, eps=eps, axis=1)
    # training: normalize by the batch's statistics and return the updated running ones
    axes = tuple(a for a in range(rank(x)) if a != 1)
    mean = graph.reduce_mean(x, axes=axes)
    centered = graph.sub(x, _channel_param(mean, x))
    var = graph.reduce_mean(graph.mul(centered, centered), axes=axes)
    y = graph.batch_norm(x, params[0], params[1], mean, var, eps=eps, axis=1)
    momentum = n.attr("momentum", 0.9)
    running = [
        graph.add(graph.mul(old, n.scalar(momentum, old)), graph.mul(new, n.scalar(1 - momentum, new)))
        for old, new in ((params[2], mean), (params[3], var))
    ]
    return y, *running


@converts("InstanceNormalization")
def _instance_norm(n: Node) -> Results:
    x = n.input(0)
    y, _, _ = _normalize(n, x, tuple(range(2, rank(x))), n.attr("epsilon", 1e-5))
    return graph.add(graph.mul(y, _channel_param(n.input(1), x)), _channel_param(n.input(2), x))


@converts("LayerNormalization")
def _layer_norm(n: Node) -> Results:
    x, scale, bias = n.input(0), n.input(1), n.optional(2)
    axis = normalize_axis(n.attr("axis", -1), rank(x))
    eps = n.attr("epsilon", 1e-5)
    want_stats = n.num_outputs > 1 and any(n.proto.output[1:])
    fits = shape(scale) == shape(x)[axis:] and (bias is None or shape(bias) == shape(x)[axis:])
    if fits and not want_stats:
        return graph.layer_norm(x, scale, bias, axis=axis, eps=eps)
    y, mean, inv = _normalize(n, x, tuple(range(axis, rank(x))), eps)
    y = graph.mul(y, scale)
    if bias is not None:
        y = graph.add(y, bias)
    return y, mean, inv


@converts("RMSNormalization")
def _rms_norm(n: Node) -> Results:
    x, scale = n.input(0), n.input(1)
    axis = normalize_axis(n.attr("axis", -1), rank(x))
    eps = n.attr("epsilon", 1e-5)
    if shape(scale) == shape(x)[axis:]:
        return graph.rms_norm(x, scale, axis=axis, eps=eps)
    ms = graph.reduce_mean(graph.mul(x, x), axes=tuple(range(axis, rank(x))), keepdims=True)
    return graph.mul(graph.mul(x, graph.rsqrt(graph.add(ms, n.scalar(eps, x)))), scale)


@converts("GroupNormalization")
def _group_norm(n: Node) -> Results:
    x = n.input(0)
    dims = static_dims(x, "GroupNormalization")
    groups = n.attr("num_groups")
    grouped = graph.reshape(x, shape=(dims[0], groups, -1))
    y, _, _ = _normalize(n, grouped, (2,), n.attr("epsilon", 1e-5))
    y = graph.reshape(y, shape=dims)
    scale, bias = n.input(1), n.input(2)
    if shape(scale)[0] != dims[1]:
        per = dims[1] // groups
        scale = graph.reshape(graph.tile(graph.unsqueeze(scale, axes=(1,)), repeats=(1, per)), shape=(-1,))
        bias = graph.reshape(graph.tile(graph.unsqueeze(bias, axes=(1,)), repeats=(1, per)), shape=(-1,))
    return graph.add(graph.mul(y, _channel_param(scale, x)), _channel_param(bias, x))


@converts("MeanVarianceNormalization")
def _mvn(n: Node) -> Results:
    x = n.input(0)
    y, _, _ = _normalize(n, x, keep_axes(x, n.attr("axes", (0, 2, 3))), 1e-9)
    return y


@converts("LpNormalization")
def _lp_norm(n: Node) -> Results:
    x = n.input(0)
    axes = (normalize_axis(n.attr("axis", -1), rank(x)),)
    p = n.attr("p", 2)
    if p == 1:
        norm = graph.reduce_sum(graph.abs(x), axes=axes, keepdims=True)
    else:
        norm = graph.sqrt(graph.reduce_sum(graph.mul(x, x), axes=axes, keepdims=True))
    zero = n.scalar(0.0, x)
    return graph.where(graph.eq(norm, zero), zero, graph.div(x, norm))


@converts("LRN")
def _lrn(n: Node) -> Results:
    x = n.input(0)
    size = n.attr("size")
    alpha, beta, bias = n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    channels = shape(x)[1]
    if not isinstance(channels, int):
        raise ConversionError("LRN needs a static channel dim")
    sq = graph.mul(x, x)
    before = (size - 1) // 2
    pads = [0] * (2 * rank(x))
    pads[1], pads[1 + rank(x)] = before, size - 1 - before
    padded = graph.pad(sq, pads=tuple(pads))
    total = None
    for i in range(size):
        part = graph.slice(padded, starts=(i,), ends=(i + channels,), axes=(1,))
        total = part if total is None else graph.add(total, part)
    assert total is not None
    denom = graph.add(n.scalar(bias, x), graph.mul(total, n.scalar(alpha / size, x)))
    return graph.div(x, graph.pow(denom, n.scalar(beta, x)))


# losses ----------------------------------------------------------------------------------------
def _nll(n: Node, logp: Value, target: Value, weight: Value | None) -> Value:
    """The NegativeLogLikelihoodLoss of log-probabilities N x C x ... against class ``target``."""
    target = cast(target, i64)
    ignore = n.attr("ignore_index")
    valid = None
    if ignore is not None:
        valid = graph.ne(target, n.scalar(ignore, target))
        target = graph.where(valid, target, n.scalar(0, target))
    picked = graph.squeeze(graph.gather_elements(logp, graph.unsqueeze(target, axes=(1,)), axis=1), axes=(1,))
    loss = graph.neg(picked)
    w = None
    if weight is not None:
        w = graph.gather(weight, target)
    if valid is not None:
        mask = cast(valid, element(logp))
        w = mask if w is None else graph.mul(w, mask)
    if w is not None:
        loss = graph.mul(loss, w)
    reduction = n.attr("reduction", "mean")
    if reduction == "none":
        return loss
    axes = tuple(range(rank(loss)))
    total = graph.reduce_sum(loss, axes=axes)
    if reduction == "sum":
        return total  # type: ignore[no-any-return]
    if w is None:
        return graph.reduce_mean(loss, axes=axes)  # type: ignore[no-any-return]
    return graph.div(total, graph.reduce_sum(w, axes=axes))  # type: ignore[no-any-return]


@converts("NegativeLogLikelihoodLoss")
def _nll_loss(n: Node) -> Results:
    return _nll(n, n.input(0), n.input(1), n.optional(2))


@converts("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(n: Node) -> Results:
    logp = graph.log_softmax(n.input(0), axis=1)
    return _nll(n, logp, n.input(1), n.optional(2)), logp


# attention -------------------------------------------------------------------------------------
def _heads(v: Value, heads: int) -> Value:
    """B x S x (heads * H) to B x heads x S x H."""
    return graph.transpose(graph.reshape(v, shape=(0, 0, heads, -1)), perm=(0, 2, 1, 3))  # type: ignore[no-any-return]


def _attention_bias(n: Node, q: Value, past: int, total: int) -> Value | None:
    """The additive mask (0 or -inf) of Attention: the given mask, the causal and sliding-window
    frontiers and the padding past ``nonpad_kv_seqlen``; None when nothing is masked."""
    length = shape(q)[2]
    mask = n.optional(3)
    bias = None
    if mask is not None:
        width = shape(mask)[-1]
        if isinstance(width, int) and width < total:
            pads = [0] * (2 * rank(mask))
            pads[-1] = total - width
            mask = graph.pad(mask, pads=tuple(pads), value=0.0 if element(mask) == i1 else -math.inf)
        if element(mask) == i1:
            mask = graph.where(mask, n.scalar(0.0, q), n.scalar(-math.inf, q))
        bias = cast(mask, element(q))
    left, right = n.attr("left_window_size", -1), n.attr("right_window_size", -1)
    causal = bool(n.attr("is_causal", 0))
    nonpad = cast(n.input(6), i64) if n.has(6) else None
    if causal or left >= 0 or right >= 0:
        if not isinstance(length, int):
            raise ConversionError("causal or windowed Attention needs a static query length")
        # diff = (query position + offset) - key position; the offset is the past length, or per
        # batch entry its non-padded length minus the query length
        diff: Value = n.constant((np.arange(length)[:, None] + past - np.arange(total)[None, :]).astype(np.int64))
        if nonpad is not None:
            offset = graph.reshape(graph.sub(nonpad, n.scalar(length, nonpad)), shape=(-1, 1, 1, 1))
            diff = graph.add(graph.unsqueeze(diff, axes=(0, 1)), offset)
        allowed: Value | None = None
        for bound in (
            graph.ge(diff, n.scalar(0, diff)) if causal else None,
            graph.le(diff, n.scalar(left, diff)) if left >= 0 else None,
            graph.ge(diff, n.scalar(-right, diff)) if right >= 0 else None,
        ):
            if bound is not None:
                allowed = bound if allowed is None else graph.and_(allowed, bound)
        assert allowed is not None
        frontier = graph.where(allowed, n.scalar(0.0, q), n.scalar(-math.inf, q))
        bias = frontier if bias is None else graph.add(bias, frontier)
    if nonpad is not None:
        keys = n.constant(np.arange(total, dtype=np.int64).reshape(1, 1, 1, total))
        valid = graph.lt(keys, graph.reshape(nonpad, shape=(-1, 1, 1, 1)))
        padding = graph.where(valid, n.scalar(0.0, q), n.scalar(-math.inf, q))
        bias = padding if bias is None else graph.add(bias, padding)
    return bias


@converts("Attention")
def _attention(n: Node) -> Results:
    q, k, v = n.input(0), n.input(1), n.input(2)
    three_d = rank(q) == 3
    if three_d:
        q = _heads(q, n.attr("q_num_heads"))
        k, v = _heads(k, n.attr("kv_num_heads")), _heads(v, n.attr("kv_num_heads"))
    if n.has(4):
        k, v = graph.concat([n.input(4), k], axis=2), graph.concat([n.input(5), v], axis=2)
    present_k, present_v = k, v
    past = shape(n.input(4))[2] if n.has(4) else 0
    total, head = shape(k)[2], shape(q)[3]
    if not isinstance(past, int) or not isinstance(total, int) or not isinstance(head, int):
        raise ConversionError("Attention needs static sequence lengths and head size")
    q_heads, kv_heads = shape(q)[1], shape(k)[1]
    if isinstance(q_heads, int) and isinstance(kv_heads, int) and q_heads != kv_heads:
        k = graph.reshape(
            graph.tile(graph.unsqueeze(k, axes=(2,)), repeats=(1, 1, q_heads // kv_heads, 1, 1)),
            shape=(0, q_heads, total, head),
        )
        v = graph.reshape(
            graph.tile(graph.unsqueeze(v, axes=(2,)), repeats=(1, 1, q_heads // kv_heads, 1, 1)),
            shape=(0, q_heads, total, -1),
        )
    root = math.sqrt(n.attr("scale", 1 / math.sqrt(head)))
    scores = graph.matmul(graph.mul(q, n.scalar(root, q)), graph.mul(k, n.scalar(root, k)), transpose_b=True)
    softcap = n.attr("softcap", 0.0)
    if softcap > 0:
        scores = graph.mul(graph.tanh(graph.div(scores, n.scalar(softcap, scores))), n.scalar(softcap, scores))
    qk = scores
    bias = _attention_bias(n, q, past, total)
    if bias is not None:
        scores = graph.add(scores, bias)
    mode = n.attr("qk_matmul_output_mode", 0)
    if mode == 2:
        qk = scores
    precision = n.attr("softmax_precision")
    probs = graph.softmax(cast(scores, scalar_type(precision)) if precision else scores, axis=-1)
    if bias is not None:
        masked = graph.eq(graph.reduce_max(bias, axes=(-1,), keepdims=True), n.scalar(-math.inf, bias))
        probs = graph.where(masked, n.scalar(0.0, probs), probs)
    probs = cast(probs, element(q))
    if mode == 3:
        qk = probs
    out = graph.matmul(probs, v)
    if three_d:
        out = graph.reshape(graph.transpose(out, perm=(0, 2, 1, 3)), shape=(0, 0, -1))
    return out, present_k, present_v, qk
