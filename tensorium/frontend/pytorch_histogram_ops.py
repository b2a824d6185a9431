"""ATen histograms: ``histc``, ``histogram`` and ``histogramdd`` (bin counts, or bin edges given as tensors).

Registered into the converter table of :mod:`.pytorch_ops` on import. Each element's bin is computed as
torch computes it: ``histc`` by linear interpolation, ``trunc((x - low) * bins / (high - low))``;
``histogram`` by the number of edges at or below the element, minus one (the binary or local search torch
does). An element equal to the last edge falls in the last bin; elements outside the edges, and NaNs,
count nowhere. The counts are a sum of one-hot rows (elements x bins), optionally weighted. Without a
range, the data's minimum and maximum are the outer edges, widened when they are equal (by 1 for
``histc``, by 0.5 for ``histogram`` and ``histogramdd``, as torch does). ``histogramdd`` finds each point's
bin per dimension the same way and counts the row-major combination of them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import i1, i64
from .pytorch_ops import Context, ConversionError, cast, converts, reshape_to, ttype

__all__: list[str] = []


def _flat(x: Value) -> Value:
    t = ttype(x)
    if not t.is_static:
        raise ConversionError(f"histograms need a static input shape, got {t}")
    return reshape_to(x, [math.prod(t.shape)])  # type: ignore[arg-type]


def _outer_edges(cx: Context, flat: Value, low: float, high: float, widen: float) -> tuple[Value, Value]:
    """The first and last edges: ``low`` and ``high``, or the data's range when both are 0 (widened by ``widen``
    on each side when the range is empty)."""
    element = ttype(flat).element
    if low != 0 or high != 0:
        if low > high:
            raise ConversionError(f"histogram range min {low} is larger than max {high}")
        if low == high:
            low, high = low - widen, high + widen
        return cx.const(low, element), cx.const(high, element)
    if ttype(flat).shape[0] == 0:
        return cx.const(-widen, element), cx.const(widen, element)
    lo, hi = graph.reduce_min(flat, axes=[0]), graph.reduce_max(flat, axes=[0])
    same = graph.eq(lo, hi)
    return (
        graph.where(same, graph.sub(lo, cx.const(widen, element)), lo),
        graph.where(same, graph.add(hi, cx.const(widen, element)), hi),
    )


def _counts(cx: Context, flat: Value, bins: Value, count: int, weight: Value | None, inside: Value) -> Value:
    """The sum over elements of one-hot rows at ``bins`` (i64 per element) where ``inside`` holds."""
    element = ttype(flat).element
    slots = cx.const(np.arange(count), i64)
    hits = graph.and_(
        graph.eq(graph.unsqueeze(bins, axes=[1]), graph.unsqueeze(slots, axes=[0])), graph.unsqueeze(inside, axes=[1])
    )
    amount = cx.const(1.0, element) if weight is None else graph.unsqueeze(_flat(cast(weight, element)), axes=[1])
    return graph.reduce_sum(graph.where(hits, amount, cx.const(0.0, element)), axes=[0])


def _within(flat: Value, low: Value, high: Value) -> Value:
    return graph.and_(graph.ge(flat, low), graph.le(flat, high))


@converts("aten.histc.default")
def _histc(cx: Context, x: Value, bins: int = 100, min: float = 0, max: float = 0) -> Value:
    flat = _flat(x)
    element = ttype(flat).element
    low, high = _outer_edges(cx, flat, float(min), float(max), 1.0)
    scaled = graph.div(graph.mul(graph.sub(flat, low), cx.const(float(bins), element)), graph.sub(high, low))
    position = graph.min(cast(graph.floor(graph.max(scaled, cx.const(0.0, element))), i64), cx.const(bins - 1, i64))
    return _counts(cx, flat, position, bins, None, _within(flat, low, high))


def _histogram(cx: Context, flat: Value, edges: Value, weight: Value | None, density: bool) -> tuple[Value, Value]:
    """Counts per bin between consecutive ``edges`` (1-D, ascending) and the edges."""
    count = int(ttype(edges).shape[0]) - 1  # type: ignore[arg-type]
    element = ttype(flat).element
    low = graph.slice(edges, starts=[0], ends=[1], axes=[0])
    high = graph.slice(edges, starts=[count], ends=[count + 1], axes=[0])
    at_or_below = graph.le(graph.unsqueeze(edges, axes=[0]), graph.unsqueeze(flat, axes=[1]))
    position = graph.sub(graph.reduce_sum(cast(at_or_below, i64), axes=[1]), cx.const(1, i64))
    position = graph.min(position, cx.const(count - 1, i64))
    hist = _counts(
        cx, flat, position, count, weight, _within(flat, graph.reshape(low, shape=[]), graph.reshape(high, shape=[]))
    )
    if density:
        widths = graph.sub(
            graph.slice(edges, starts=[1], ends=[count + 1], axes=[0]),
            graph.slice(edges, starts=[0], ends=[count], axes=[0]),
        )
        hist = graph.div(hist, graph.mul(graph.reduce_sum(hist, axes=[0]), widths))
    return cast(hist, element), edges


def _linspace_edges(cx: Context, flat: Value, bins: int, range: Any) -> Value:
    """``bins + 1`` edges over ``range`` or the data's range (widened by 0.5 when empty), as torch's linspace
    makes them: the first half counted up from the low edge, the rest down from the high one."""
    element = ttype(flat).element
    low_value, high_value = (float(range[0]), float(range[1])) if range is not None else (0.0, 0.0)
    low, high = _outer_edges(cx, flat, low_value, high_value, 0.5)
    step = graph.div(graph.sub(high, low), cx.const(float(bins), element))
    k = np.arange(bins + 1, dtype=np.float64)
    halfway = (bins + 1) // 2
    up = graph.add(low, graph.mul(step, cx.const(k, element)))
    down = graph.sub(high, graph.mul(step, cx.const(bins - k, element)))
    return graph.where(cx.const(k < halfway, i1), up, down)


@converts("aten.histogram.bin_ct")
def _histogram_count(
    cx: Context, x: Value, bins: int = 100, *, range: Any = None, weight: Value | None = None, density: bool = False
) -> tuple[Value, Value]:
    flat = _flat(x)
    return _histogram(cx, flat, _linspace_edges(cx, flat, bins, range), weight, density)


def _points(x: Value) -> list[Value]:
    """The columns of ``x``'s points (its last axis is the dimension, the rest count points)."""
    t = ttype(x)
    if not t.is_static or t.rank < 1:
        raise ConversionError(f"histogramdd needs a static input of points [..., D], got {t}")
    dims = int(t.shape[-1])  # type: ignore[arg-type]
    points = reshape_to(x, [math.prod(t.shape[:-1]), dims])  # type: ignore[arg-type]
    return [graph.reshape(graph.slice(points, starts=[d], ends=[d + 1], axes=[1]), shape=[-1]) for d in range(dims)]


def _dd_edges(cx: Context, x: Value, bins: Any, bounds: Any) -> list[Value]:
    """Per dimension, linspace edges over its pair of ``bounds`` (flat: low0, high0, low1, ...) or its data."""
    columns = _points(x)
    counts = [int(bins)] * len(columns) if isinstance(bins, int) else [int(b) for b in bins]
    if len(counts) != len(columns):
        raise ConversionError(f"histogramdd of {len(columns)}-D points got {len(counts)} bin counts")
    ranges = [None] * len(columns) if bounds is None else [bounds[2 * d : 2 * d + 2] for d in range(len(columns))]
    return [_linspace_edges(cx, c, n, r) for c, n, r in zip(columns, counts, ranges)]


def _histogramdd(cx: Context, x: Value, edges: list[Value], weight: Value | None, density: bool) -> Value:
    """Counts per cell of the grid of ``edges`` (one 1-D ascending tensor per dimension)."""
    columns = _points(x)
    element = ttype(x).element
    counts = [int(ttype(e).shape[0]) - 1 for e in edges]  # type: ignore[arg-type]
    cell: Value | None = None
    inside: Value | None = None
    for column, e, count in zip(columns, edges, counts):
        e = cast(e, element)
        at_or_below = graph.le(graph.unsqueeze(e, axes=[0]), graph.unsqueeze(column, axes=[1]))
        position = graph.min(
            graph.sub(graph.reduce_sum(cast(at_or_below, i64), axes=[1]), cx.const(1, i64)), cx.const(count - 1, i64)
        )
        low = graph.reshape(graph.slice(e, starts=[0], ends=[1], axes=[0]), shape=[])
        high = graph.reshape(graph.slice(e, starts=[count], ends=[count + 1], axes=[0]), shape=[])
        within = _within(column, low, high)
        cell = position if cell is None else graph.add(graph.mul(cell, cx.const(count, i64)), position)
        inside = within if inside is None else graph.and_(inside, within)
    assert cell is not None and inside is not None
    hist = reshape_to(_counts(cx, columns[0], cell, math.prod(counts), weight, inside), counts)
    if density:
        hist = graph.div(hist, graph.reduce_sum(hist, axes=list(range(len(counts))), keepdims=True))
        for d, (e, count) in enumerate(zip(edges, counts)):
            e = cast(e, element)
            widths = graph.sub(
                graph.slice(e, starts=[1], ends=[count + 1], axes=[0]),
                graph.slice(e, starts=[0], ends=[count], axes=[0]),
            )
            shape = [1] * len(counts)
            shape[d] = count
            hist = graph.div(hist, reshape_to(widths, shape))
    return cast(hist, element)


@converts("aten._histogramdd_bin_edges.default")
def _histogramdd_bin_edges(
    cx: Context, x: Value, bins: Any, *, range: Any = None, weight: Value | None = None, density: bool = False
) -> tuple[Value, ...]:
    return tuple(_dd_edges(cx, x, bins, range))


@converts("aten._histogramdd_from_bin_cts.default")
def _histogramdd_from_bin_cts(
    cx: Context, x: Value, bins: Any, *, range: Any = None, weight: Value | None = None, density: bool = False
) -> Value:
    return _histogramdd(cx, x, _dd_edges(cx, x, bins, range), weight, density)


@converts("aten._histogramdd_from_bin_tensors.default")
def _histogramdd_from_bin_tensors(
    cx: Context, x: Value, bins: Any, *, weight: Value | None = None, density: bool = False
) -> Value:
    return _histogramdd(cx, x, list(bins), weight, density)


@converts("aten.histogram.bins_tensor")
def _histogram_edges(
    cx: Context, x: Value, bins: Value, *, weight: Value | None = None, density: bool = False
) -> tuple[Value, Value]:
    return _histogram(cx, _flat(x), cast(bins, ttype(x).element), weight, density)
