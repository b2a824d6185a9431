"""ONNX ops that reorder, accumulate or crop along an axis: TopK, Unique, CumProd, ReverseSequence, CenterCropPad.

TopK ranks every element against every other one along its axis (n^2 comparisons, exact, ties to
the lower index as ONNX asks), scatters values and indices to their ranks and keeps the first k;
Unique is the frontend-neutral ``unique`` of :mod:`.data_dependent` (a size known at run time);
along an axis it compares whole slices lexicographically and keeps the first of each by compress;
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
        if not n.attr("sorted", 1):
            raise ConversionError("unsorted Unique along an axis is not supported")
        return _unique_slices(n, x, normalize_axis(n.attr("axis"), rank(x)))
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


def _unique_slices(n: Node, x: Value, axis: int) -> Results:
    """Unique of the slices of ``x`` along ``axis``, sorted lexicographically (n^2 slice comparisons)."""
    dims = static_dims(x, "Unique")
    perm = (axis, *(d for d in range(len(dims)) if d != axis))
    count = dims[axis]
    rows = graph.reshape(graph.transpose(x, perm=perm), shape=(count, -1))  # slice i is row i
    a, b = graph.unsqueeze(rows, axes=(1,)), graph.unsqueeze(rows, axes=(0,))  # [i, 1, k], [1, j, k]
    zero, one = n.constant(np.asarray(0, np.int64)), n.constant(np.asarray(1, np.int64))
    differ = cast(graph.ne(a, b), i64)
    equal = graph.eq(graph.reduce_max(differ, axes=(2,)), zero)
    # row i < row j where they first differ: the first k with a difference, and x_i[k] < x_j[k] there
    first = graph.and_(graph.eq(differ, one), graph.eq(graph.cumsum(differ, axis=2), one))
    less = graph.gt(graph.reduce_max(cast(graph.and_(first, graph.lt(a, b)), i64), axes=(2,)), zero)
    earlier = n.constant(np.tri(count, count, -1, dtype=bool))  # [i, j]: j < i
    leading = graph.eq(graph.reduce_max(cast(graph.and_(equal, earlier), i64), axes=(1,)), zero)
    # the sorted position of each row among the distinct ones: distinct rows before it
    ranks = graph.reduce_sum(
        cast(graph.and_(graph.transpose(less, perm=(1, 0)), graph.unsqueeze(leading, axes=(0,))), i64), axes=(1,)
    )
    slots = n.constant(np.arange(count, dtype=np.int64))
    select = graph.and_(
        graph.eq(graph.unsqueeze(slots, axes=(1,)), graph.unsqueeze(ranks, axes=(0,))),
        graph.unsqueeze(leading, axes=(0,)),
    )
    counts = graph.reduce_sum(cast(equal, i64), axes=(1,))
    picked_rows = graph.reduce_sum(
        graph.where(graph.unsqueeze(select, axes=(2,)), graph.unsqueeze(rows, axes=(0,)), n.scalar(0, rows)), axes=(1,)
    )
    picked_first = graph.reduce_sum(
        graph.where(select, graph.unsqueeze(slots, axes=(0,)), n.scalar(0, slots)), axes=(1,)
    )
    picked_counts = graph.reduce_sum(
        graph.where(select, graph.unsqueeze(counts, axes=(0,)), n.scalar(0, counts)), axes=(1,)
    )
    kept = graph.lt(slots, graph.reduce_sum(cast(leading, i64), axes=(0,)))
    out_rows, out_first, out_counts, _ = graph.compress(
        kept, [picked_rows, picked_first, picked_counts], dim=runtime_dim(n, "unique")
    )
    rest = [dims[d] for d in perm[1:]]
    values = graph.reshape(out_rows, shape=(-1, *rest))
    back = tuple(int(i) for i in np.argsort(perm))
    return graph.transpose(values, perm=back), out_first, ranks, out_counts
