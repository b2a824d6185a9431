"""ONNX ops that reorder, accumulate or crop along an axis: TopK, Unique, CumProd, ReverseSequence, CenterCropPad.

TopK ranks every element against every other one along its axis (n^2 comparisons, exact, ties to
the lower index as ONNX asks), scatters values and indices to their ranks and keeps the first k;
Unique is the frontend-neutral ``unique`` of :mod:`.data_dependent` (a size known at run time);
CumProd reduces an n x n expansion of its axis where a constant triangle says which elements each
output takes; ReverseSequence gathers each batch entry's first ``len`` steps in reverse.
"""

from __future__ import annotations

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.shapes import normalize_axis
from ..ir.types import i1, i64
from . import data_dependent
from .onnx_context import ConversionError, Node
from .onnx_ops import Results, cast, converts, rank, runtime_dim, shape, static_dims


def _axis_size(n: Node, x: Value, axis: int) -> int:
    size = shape(x)[axis]
    if not isinstance(size, int):
        raise ConversionError(f"{n.op_type} needs a static size along axis {axis}, got {shape(x)}")
    return size


def _along(values: np.ndarray, axis: int, r: int) -> np.ndarray:
    """A 1-D array shaped to lie along ``axis`` of a rank-``r`` tensor."""
    return values.reshape([-1 if i == axis else 1 for i in range(r)])


@converts("TopK")
def _top_k(n: Node) -> Results:
    x = n.input(0)
    r = rank(x)
    axis = normalize_axis(n.attr("axis", -1), r)
    k = int(n.ints(1)[0]) if n.has(1) else int(n.attr("k"))
    size = _axis_size(n, x, axis)
    a = graph.unsqueeze(x, axes=(axis + 1,))  # element i along axis
    b = graph.unsqueeze(x, axes=(axis,))  # element j along axis + 1
    ahead = graph.gt(b, a) if n.attr("largest", 1) else graph.lt(b, a)
    order = np.arange(size)
    earlier = (order[None, :] < order[:, None]).reshape([size if i in (axis, axis + 1) else 1 for i in range(r + 1)])
    ahead = graph.or_(ahead, graph.and_(graph.eq(a, b), n.constant(earlier, i1)))
    ranks = graph.reduce_sum(cast(ahead, i64), axes=(axis + 1,))
    dims = static_dims(x, "TopK")
    positions = graph.broadcast_to(n.constant(_along(order.astype(np.int64), axis, r)), shape=dims)
    values = graph.scatter_elements(x, ranks, x, axis=axis)
    indices = graph.scatter_elements(positions, ranks, positions, axis=axis)
    return [graph.slice(v, starts=(0,), ends=(k,), axes=(axis,)) for v in (values, indices)]


@converts("CumProd")
def _cum_prod(n: Node) -> Results:
    x = n.input(0)
    r = rank(x)
    axis = normalize_axis(int(n.const(1).reshape(())), r)
    size = _axis_size(n, x, axis)
    i, j = np.arange(size)[:, None], np.arange(size)[None, :]
    exclusive, reverse = bool(n.attr("exclusive", 0)), bool(n.attr("reverse", 0))
    takes = (j > i if exclusive else j >= i) if reverse else (j < i if exclusive else j <= i)
    mask = n.constant(takes.reshape([size if d in (axis, axis + 1) else 1 for d in range(r + 1)]), i1)
    expanded = graph.where(mask, graph.unsqueeze(x, axes=(axis,)), n.scalar(1, graph.unsqueeze(x, axes=(axis,))))
    return graph.reduce_prod(expanded, axes=(axis + 1,))


@converts("ReverseSequence")
def _reverse_sequence(n: Node) -> Results:
    x, lengths = n.input(0), cast(n.input(1), i64)
    r = rank(x)
    time, batch = normalize_axis(n.attr("time_axis", 0), r), normalize_axis(n.attr("batch_axis", 1), r)
    steps = n.constant(_along(np.arange(_axis_size(n, x, time), dtype=np.int64), time, r))
    length = graph.reshape(lengths, shape=tuple(-1 if i == batch else 1 for i in range(r)))
    last = graph.sub(length, n.scalar(1, length))
    source = graph.where(graph.lt(steps, length), graph.sub(last, steps), steps)
    return graph.gather_elements(x, graph.broadcast_to(source, shape=static_dims(x, "ReverseSequence")), axis=time)


@converts("CenterCropPad")
def _center_crop_pad(n: Node) -> Results:
    x = n.input(0)
    dims = static_dims(x, "CenterCropPad")
    axes = [normalize_axis(a, len(dims)) for a in n.attr("axes", range(len(dims)))]
    pads = [0] * (2 * len(dims))
    starts, ends = [], []
    for a, want in zip(axes, n.ints(1)):
        have = dims[a]
        if want < have:
            starts.append((have - want) // 2)
            ends.append(starts[-1] + want)
        elif want > have:
            pads[a] = (want - have) // 2
            pads[a + len(dims)] = want - have - pads[a]
    cropped_axes = [a for a, want in zip(axes, n.ints(1)) if want < dims[a]]
    if cropped_axes:
        x = graph.slice(x, starts=tuple(starts), ends=tuple(ends), axes=tuple(cropped_axes))
    return graph.pad(x, pads=tuple(pads)) if any(pads) else x


__all__: list[str] = []


@converts("Unique")
def _unique(n: Node) -> Results:
    x = n.input(0)
    if "axis" in n.attrs:
        raise ConversionError("Unique along an axis is not supported (only of the flattened input)")
    values, inverse, counts = data_dependent.unique(x, runtime_dim(n, "unique"))
    flat = graph.reshape(x, shape=(-1,))
    size = _axis_size(n, flat, 0)
    # each distinct value's first position: the least index holding it
    positions = n.constant(np.arange(size, dtype=np.int64)[None, :])
    holds = graph.eq(graph.unsqueeze(values, axes=(1,)), graph.unsqueeze(flat, axes=(0,)))
    first = graph.reduce_min(graph.where(holds, positions, n.scalar(size, positions)), axes=(1,))
    inverse = graph.reshape(inverse, shape=(-1,))
    if n.attr("sorted", 1):
        return values, first, inverse, counts
    # in order of first appearance: distinct value k moves to the number of values that appear before it
    order = graph.reduce_sum(
        cast(graph.lt(graph.unsqueeze(first, axes=(0,)), graph.unsqueeze(first, axes=(1,))), i64), axes=(1,)
    )
    moved = [graph.scatter_elements(v, order, v, axis=0) for v in (values, first, counts)]
    return moved[0], moved[1], graph.gather(order, inverse), moved[2]
