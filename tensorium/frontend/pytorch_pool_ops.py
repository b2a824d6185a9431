"""Pooling and convolution that the graph dialect's 2-D ops do not cover directly.

Pooling is a gather of windows. For static shapes the input cells of every output cell's window are
known at import time: a constant table holds, per output cell, the flat spatial position of each
window cell (-1 for padding). One ``gather`` collects the windows, a ``where`` masks the padding, and
a reduction over the window axis gives max or average pooling in 1, 2 or 3 dims, with the argmax
indices torch returns, any divisor, and adaptive pooling's uneven windows. A 3-D convolution is a sum
of 2-D ones over the kernel's depth. Registered into the converter table of :mod:`.pytorch_ops`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import i1, i64
from .pytorch_ops import Context, ConversionError, cast, converts, reshape_to, static_dim, ttype

__all__ = ["conv3d_as_conv2d", "conv_transpose3d_as_conv2d", "window_avg_pool", "window_max_pool"]

Windows = list[list[int]]
"""Per output cell of one axis, the input positions of its window (-1 where it covers padding)."""


def _sliding(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> Windows:
    """torch's sliding windows along one axis (``ceil_mode`` adds a last window that starts in bounds)."""
    span = dilation * (kernel - 1) + 1
    count = (size + 2 * pad - span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (count - 1) * stride >= size + pad:
        count -= 1
    windows = []
    for o in range(max(count, 0)):
        start = o * stride - pad
        windows.append([p if 0 <= p < size else -1 for p in range(start, start + span, dilation)])
    return windows


def _adaptive_windows(size: int, out: int) -> Windows:
    """Adaptive pooling's windows: cells floor(i * size / out) .. ceil((i + 1) * size / out)."""
    windows = [list(range(i * size // out, -(-(i + 1) * size // out))) for i in range(out)]
    width = max((len(w) for w in windows), default=0)
    return [w + [-1] * (width - len(w)) for w in windows]


def _table(sizes: Sequence[int], per_axis: Sequence[Windows]) -> np.ndarray:
    """[output cells, window cells] flat positions over the spatial axes (-1 for padding)."""
    strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
    rows = []
    for cells in itertools.product(*per_axis):
        row = []
        for positions in itertools.product(*cells):
            inside = all(p >= 0 for p in positions)
            row.append(sum(p * s for p, s in zip(positions, strides)) if inside else -1)
        rows.append(row)
    return np.array(rows, dtype=np.int64).reshape(len(rows), -1)


def _gather_windows(cx: Context, x: Value, spatial: int, table: np.ndarray) -> Value:
    """x's windows: [..., output cells, window cells] (padding cells hold whatever cell 0 holds)."""
    t = ttype(x)
    lead = list(t.shape[: t.rank - spatial])
    flat = reshape_to(x, [*lead, math.prod(static_dim(t, a, "pooling") for a in range(t.rank - spatial, t.rank))])
    index = cx.const(np.maximum(table, 0), i64)
    return graph.gather(flat, index, axis=len(lead))


def _pool(
    cx: Context, x: Value, spatial: int, per_axis: Sequence[Windows], kind: str, divisors: np.ndarray | None = None
) -> tuple[Value, Value | None]:
    """Max (values and flat indices) or average (values) pooling over the windows ``per_axis``."""
    t = ttype(x)
    sizes = [static_dim(t, a, "pooling") for a in range(t.rank - spatial, t.rank)]
    table = _table(sizes, per_axis)
    out_shape = [*t.shape[: t.rank - spatial], *(len(w) for w in per_axis)]
    windows = _gather_windows(cx, x, spatial, table)
    inside = cx.const(table >= 0, i1)
    last = ttype(windows).rank - 1
    if kind == "max":
        masked = graph.where(inside, windows, cx.const(-math.inf, t.element))
        values = graph.reduce_max(masked, axes=[last])
        which = graph.argmax(masked, axis=last, keepdims=True)
        positions = graph.broadcast_to(cx.const(table, i64), shape=list(ttype(masked).shape))
        indices = graph.squeeze(graph.gather_elements(positions, which, axis=last), axes=[last])
        return reshape_to(values, out_shape), reshape_to(indices, out_shape)
    total = graph.reduce_sum(graph.where(inside, windows, cx.const(0, t.element)), axes=[last])
    assert divisors is not None
    return reshape_to(graph.div(total, cx.const(divisors, t.element)), out_shape), None


def _ints(v: Any, n: int, default: Sequence[int] | None = None) -> list[int]:
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        assert default is not None
        return list(default)
    if isinstance(v, int):
        return [v] * n
    return list(v) * (n if len(v) == 1 else 1)


def _spatial_count(cx: Context) -> int:
    assert cx.node is not None
    name = str(cx.node.target)
    return 3 if "3d" in name else 1 if "1d" in name else 2


@converts("aten.max_pool3d_with_indices.default", "aten.max_pool1d.default")
def window_max_pool(
    cx: Context,
    x: Value,
    kernel: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Any:
    """Max pooling in 1, 2 or 3 dims, with the flat spatial argmax indices for the ``with_indices`` ops."""
    assert cx.node is not None
    n = _spatial_count(cx)
    k = _ints(kernel, n)
    s, p, d = _ints(stride, n, k), _ints(padding, n), _ints(dilation, n)
    t = ttype(x)
    sizes = [static_dim(t, a, "max pooling") for a in range(t.rank - n, t.rank)]
    per_axis = [_sliding(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n)]
    values, indices = _pool(cx, x, n, per_axis, "max")
    return (values, indices) if "with_indices" in str(cx.node.target) else values


@converts("aten.avg_pool3d.default", "aten.avg_pool1d.default")
def window_avg_pool(
    cx: Context,
    x: Value,
    kernel: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Value:
    """Average pooling in 1, 2 or 3 dims, with torch's divisor rules (``divisor_override`` included)."""
    n = _spatial_count(cx)
    k = _ints(kernel, n)
    s, p = _ints(stride, n, k), _ints(padding, n)
    t = ttype(x)
    sizes = [static_dim(t, a, "average pooling") for a in range(t.rank - n, t.rank)]
    per_axis = [_sliding(sizes[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(n)]
    divisors = _divisors(sizes, k, s, p, per_axis, count_include_pad, divisor_override)
    values, _ = _pool(cx, x, n, per_axis, "avg", divisors)
    return values


def _divisors(
    sizes: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    pad: Sequence[int],
    per_axis: Sequence[Windows],
    count_include_pad: bool,
    divisor_override: int | None,
) -> np.ndarray:
    """Per output cell, what torch divides the window's sum by."""
    if divisor_override is not None:
        return np.full(math.prod(len(w) for w in per_axis), float(divisor_override))
    counts = []
    for axis, windows in enumerate(per_axis):
        if count_include_pad:  # cells inside the padded input, never past it
            axis_counts = []
            for o in range(len(windows)):
                start = o * stride[axis] - pad[axis]
                end = min(start + kernel[axis], sizes[axis] + pad[axis])
                axis_counts.append(end - start)
        else:
            axis_counts = [sum(q >= 0 for q in w) for w in windows]
        counts.append(axis_counts)
    return np.array([math.prod(c) for c in itertools.product(*counts)], dtype=np.float64)


@converts("aten.adaptive_max_pool2d.default", "aten.adaptive_max_pool3d.default", "aten.adaptive_max_pool1d.default")
def _adaptive_max_pool(cx: Context, x: Value, output_size: Sequence[int]) -> tuple[Value, Value | None]:
    n = len(output_size)
    t = ttype(x)
    if n > t.rank:
        raise ConversionError(f"adaptive pooling of {n} dims over a rank-{t.rank} input")
    sizes = [static_dim(t, a, "adaptive pooling") for a in range(t.rank - n, t.rank)]
    outs = [int(o) if o is not None else sizes[i] for i, o in enumerate(output_size)]
    return _pool(cx, x, n, [_adaptive_windows(sizes[i], outs[i]) for i in range(n)], "max")


def conv3d_as_conv2d(
    cx: Context,
    x: Value,
    weight: Value,
    bias: Value | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Value:
    """A 3-D convolution as a sum over the kernel's depth of 2-D convolutions, the output depth folded
    into the batch: out[:, :, d] = sum_k conv2d(x[:, :, d * stride + k * dilation], weight[:, :, k])."""
    from .pytorch_ops import _convolution

    t, wt = ttype(x), ttype(weight)
    n, c, depth = (static_dim(t, a, "conv3d") for a in range(3))
    kernel_depth = static_dim(wt, 2, "conv3d")
    sd, pd, dd = stride[0], padding[0], dilation[0]
    if pd:
        x = graph.pad(x, pads=[0, 0, pd, 0, 0] + [0, 0, pd, 0, 0])
    out_depth = (depth + 2 * pd - dd * (kernel_depth - 1) - 1) // sd + 1
    total: Value | None = None
    for k in range(kernel_depth):
        start = k * dd
        planes = graph.slice(x, starts=[start], ends=[start + (out_depth - 1) * sd + 1], axes=[2], steps=[sd])
        batch = reshape_to(graph.transpose(planes, perm=[0, 2, 1, 3, 4]), [n * out_depth, c, *t.shape[3:]])
        kernel = graph.squeeze(graph.slice(weight, starts=[k], ends=[k + 1], axes=[2]), axes=[2])
        term = _convolution(cx, batch, kernel, None, stride[1:], padding[1:], dilation[1:], False, (0, 0), groups)
        total = term if total is None else graph.add(total, term)
    assert total is not None
    folded = ttype(total)
    out = graph.transpose(reshape_to(total, [n, out_depth, *folded.shape[1:]]), perm=[0, 2, 1, 3, 4])
    if bias is not None:
        out = graph.add(out, reshape_to(bias, [folded.shape[1], 1, 1, 1]))
    return out


def conv_transpose3d_as_conv2d(
    cx: Context,
    x: Value,
    weight: Value,
    bias: Value | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    output_padding: Sequence[int],
    groups: int,
) -> Value:
    """A transposed 3-D convolution as a sum over the kernel's depth of transposed 2-D convolutions of every
    input plane (the depth folded into the batch), each plane placed at depth ``d * stride + k * dilation``
    (zero planes interleaved, then padded to the full depth), cropped by the padding at the end."""
    from .pytorch_ops import _convolution

    t, wt = ttype(x), ttype(weight)
    n, c, depth = (static_dim(t, a, "conv_transpose3d") for a in range(3))
    kernel_depth = static_dim(wt, 2, "conv_transpose3d")
    sd, pd, dd, od = stride[0], padding[0], dilation[0], output_padding[0]
    full = (depth - 1) * sd + dd * (kernel_depth - 1) + 1 + od
    batch = reshape_to(graph.transpose(x, perm=[0, 2, 1, 3, 4]), [n * depth, c, *t.shape[3:]])
    total: Value | None = None
    for k in range(kernel_depth):
        kernel = graph.squeeze(graph.slice(weight, starts=[k], ends=[k + 1], axes=[2]), axes=[2])
        planes = _convolution(
            cx, batch, kernel, None, stride[1:], padding[1:], dilation[1:], True, output_padding[1:], groups
        )
        shape = ttype(planes).shape[1:]
        spaced = graph.unsqueeze(reshape_to(planes, [n, depth, *shape]), axes=[2])  # [n, depth, 1, o, h, w]
        spaced = reshape_to(
            graph.pad(spaced, pads=[0, 0, 0, 0, 0, 0] + [0, 0, sd - 1, 0, 0, 0]), [n, depth * sd, *shape]
        )
        placed = graph.slice(spaced, starts=[0], ends=[(depth - 1) * sd + 1], axes=[1])
        after = full - k * dd - ((depth - 1) * sd + 1)
        placed = graph.pad(placed, pads=[0, k * dd, 0, 0, 0] + [0, after, 0, 0, 0])
        total = placed if total is None else graph.add(total, placed)
    assert total is not None
    cropped = graph.slice(total, starts=[pd], ends=[full - pd], axes=[1])
    out = graph.transpose(cropped, perm=[0, 2, 1, 3, 4])
    if bias is not None:
        out = graph.add(out, reshape_to(bias, [ttype(out).shape[1], 1, 1, 1]))
    return out


def _antialias_weights(size: int, out: int, align_corners: bool, scale: float | None) -> np.ndarray:
    """The [out, size] matrix of torch's antialiased bilinear resize along one axis: a triangle filter
    widened by the downscale factor, each row normalized to sum 1."""
    if align_corners:
        ratio = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else size / out
    support = ratio if ratio >= 1.0 else 1.0  # interpolation size 2, halved, times the scale when shrinking
    invscale = 1.0 / ratio if ratio >= 1.0 else 1.0
    weights = np.zeros((out, size))
    for i in range(out):
        center = ratio * (i + 0.5)
        low = max(int(center - support + 0.5), 0)
        high = min(int(center + support + 0.5), size)
        taps = np.maximum(0.0, 1.0 - np.abs((np.arange(low, high) - center + 0.5) * invscale))
        total = taps.sum()
        weights[i, low:high] = taps / total if total else taps
    return weights


@converts("aten._upsample_bilinear2d_aa.default", "aten._upsample_bilinear2d_aa.vec")
def _upsample_bilinear_aa(
    cx: Context, x: Value, output_size: Any, align_corners: bool, *scales: Any, scale_factors: Any = None
) -> Value:
    """Antialiased bilinear resize as two matrix products with weights computed at compile time."""
    t = ttype(x)
    height, width = (static_dim(t, a, "antialiased resize") for a in (-2, -1))
    out_h, out_w = cx.out_dims()[-2:]
    if not (isinstance(out_h, int) and isinstance(out_w, int)):
        raise ConversionError("antialiased resize to a symbolic size is not supported")
    factors = list(scales if scales else scale_factors or [None, None])
    factors += [None] * (2 - len(factors))
    rows = cx.const(_antialias_weights(height, out_h, align_corners, factors[0]), t.element)
    columns = cx.const(_antialias_weights(width, out_w, align_corners, factors[1]).T, t.element)
    return graph.matmul(graph.matmul(rows, x), columns)


@converts("aten.fractional_max_pool2d.default", "aten.fractional_max_pool3d.default")
def _fractional_max_pool(
    cx: Context, x: Value, kernel: Sequence[int], output_size: Sequence[int], samples: Value
) -> tuple[Value, Value]:
    """Fractional max pooling: per plane and axis a window start from the plane's random sample u as torch
    computes it (``trunc((o + u) alpha) - trunc(u alpha)``, alpha = (in - k) / (out - 1) in the input's
    float type, the last window at ``in - k``); the windows' flat positions, one ``gather_elements``, then
    ``reduce_max`` and the flat index of the argmax. ``samples`` holds one value per plane and axis, in
    torch's order (2-D: width, height; 3-D: depth, height, width)."""
    n = len(kernel)
    t = ttype(x)
    if t.rank not in (n + 1, n + 2):
        raise ConversionError(f"fractional max pooling in {n} dims needs a rank-{n + 1} or rank-{n + 2} input, got {t}")
    lead = [static_dim(t, a, "fractional max pooling") for a in range(t.rank - n)]
    sizes = [static_dim(t, a, "fractional max pooling") for a in range(t.rank - n, t.rank)]
    outs, ks = [int(o) for o in output_size], [int(k) for k in kernel]
    if any(o + k - 1 > s or o < 1 for o, k, s in zip(outs, ks, sizes)):
        raise ConversionError(f"fractional max pooling of sizes {sizes} to {outs} with kernel {ks}: windows do not fit")
    element = t.element
    u_all = reshape_to(cast(samples, element), [*lead, n])
    column = [1, 0] if n == 2 else list(range(n))  # torch's sample for each spatial axis
    rank = len(lead) + 2 * n
    flat_index: Value | None = None
    stride = 1
    for axis in reversed(range(n)):
        size, out, k = sizes[axis], outs[axis], ks[axis]
        u = graph.slice(u_all, starts=[column[axis]], ends=[column[axis] + 1], axes=[len(lead)])  # [*lead, 1]
        if out > 1:
            alpha = cx.const(np.array(size - k, np.float64) / (out - 1), element)
            steps = cx.const(np.arange(out, dtype=np.float64), element)
            ends = cast(graph.mul(graph.add(steps, u), alpha), i64)
            starts = graph.sub(ends, cast(graph.mul(u, alpha), i64))
            last = cx.const(np.arange(out) == out - 1, i1)
            starts = graph.where(last, cx.const(size - k, i64), starts)
        else:
            starts = cx.const(np.full(lead + [1], size - k, np.int64), i64)
        shape = [*lead] + [1] * (2 * n)
        shape[len(lead) + axis] = out
        offsets = [1] * rank
        offsets[len(lead) + n + axis] = k
        positions = graph.add(reshape_to(starts, shape), cx.const(np.arange(k).reshape(offsets), i64))
        term = graph.mul(positions, cx.const(stride, i64))
        flat_index = term if flat_index is None else graph.add(flat_index, term)
        stride *= size
    assert flat_index is not None
    cells, window = math.prod(outs), math.prod(ks)
    full = [*lead, *outs, *ks]
    index = reshape_to(graph.broadcast_to(flat_index, shape=full), [*lead, cells * window])
    windows = graph.gather_elements(reshape_to(x, [*lead, math.prod(sizes)]), index, axis=len(lead))
    windows = reshape_to(windows, [*lead, cells, window])
    index = reshape_to(index, [*lead, cells, window])
    last_axis = len(lead) + 1
    values = graph.reduce_max(windows, axes=[last_axis])
    which = graph.argmax(windows, axis=last_axis, keepdims=True)
    indices = graph.squeeze(graph.gather_elements(index, which, axis=last_axis), axes=[last_axis])
    return reshape_to(values, [*lead, *outs]), reshape_to(indices, [*lead, *outs])
