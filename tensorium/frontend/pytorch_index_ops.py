"""ATen ops that place elements by a mask or by computed positions, with static result shapes.

Registered into the converter table of :mod:`.pytorch_ops` on import. A mask's true elements take
consecutive source elements in row-major order: their positions are a running count of the mask
(``cumsum - 1``) read by a ``gather`` (masked_scatter, index_put with a boolean mask and one value
per selected row) or written by a ``scatter_elements`` (nonzero_static, whose rows past ``size`` go to a
spare row that is cut off). Max pooling's backward pass scatter-adds the gradient at the pooled indices,
``_trilinear`` (bilinear layers) is a broadcast product summed over its contracted dims, grid sampling
goes through :mod:`.grid_sample`, and ``lu_unpack`` turns given LU factors and pivots into P, L and U.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import i1, i64
from .grid_sample import grid_sample
from .pytorch_ops import Context, ConversionError, broadcast_to, cast, converts, reshape_to, ttype

__all__: list[str] = []


def _static(x: Value, what: str) -> tuple[int, ...]:
    t = ttype(x)
    if not t.is_static:
        raise ConversionError(f"{what} needs static shapes, got {t}")
    return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]


def _running_positions(cx: Context, flat_mask: Value) -> Value:
    """For each element of a 1-D mask, how many true elements come before it (its rank among them)."""
    counts = graph.cumsum(cast(flat_mask, i64), axis=0)
    return graph.sub(counts, cx.const(1, i64))


def _take_in_order(cx: Context, flat_mask: Value, source: Value) -> Value:
    """Rows of ``source`` [k, ...] in mask order: row ``i`` of the result is source row ``rank(i)`` where the
    mask holds (other rows read row 0; callers select them away). ``source`` has at least one row."""
    rows = _static(source, "masked scatter")[0]
    positions = graph.clamp(_running_positions(cx, flat_mask), min=0.0, max=float(rows - 1))
    return graph.gather(source, positions, axis=0)


@converts("aten.masked_scatter.default")
def _masked_scatter(cx: Context, x: Value, mask: Value, source: Value) -> Value:
    shape = _static(x, "masked_scatter")
    full_mask = broadcast_to(cast(mask, i1), list(shape))
    size = math.prod(_static(source, "masked_scatter"))
    if size == 0:
        return x
    flat_mask = reshape_to(full_mask, [math.prod(shape)])
    picked = _take_in_order(cx, flat_mask, reshape_to(cast(source, ttype(x).element), [size]))
    return graph.where(full_mask, reshape_to(picked, list(shape)), x)


def masked_index_put(cx: Context, x: Value, mask: Value, values: Value, accumulate: bool) -> Value:
    """``x[mask] = values`` (``+=`` with ``accumulate``) for a boolean ``mask`` over the leading dims of ``x``:
    ``values`` broadcast to every selected row, or one row per selected row, in order."""
    shape = _static(x, "index_put with a boolean mask")
    m = ttype(mask).rank
    rest = list(shape[m:])
    selected = math.prod(shape[:m])
    values = cast(values, ttype(x).element)
    vshape = _static(values, "index_put with a boolean mask")
    full_mask = broadcast_to(reshape_to(cast(mask, i1), list(shape[:m]) + [1] * len(rest)), list(shape))
    if len(vshape) <= len(rest) or (len(vshape) == len(rest) + 1 and vshape[0] == 1):
        update = broadcast_to(values, list(shape))  # the same values for every selected row
    else:
        rows = graph.reshape(values, shape=[vshape[0], *rest]) if len(vshape) != len(rest) + 1 else values
        flat_mask = reshape_to(cast(mask, i1), [selected])
        update = reshape_to(_take_in_order(cx, flat_mask, rows), list(shape))
    if accumulate:
        update = graph.add(x, update)
    return graph.where(full_mask, update, x)


@converts("aten.nonzero_static.default")
def _nonzero_static(cx: Context, x: Value, *, size: int, fill_value: int = -1) -> Value:
    shape = _static(x, "nonzero_static")
    rank, n = len(shape), math.prod(shape)
    if rank == 0 or n == 0:
        return cx.const(np.full((size, rank), fill_value), i64)
    t = ttype(x)
    flat_mask = reshape_to(x if t.element == i1 else graph.ne(x, cx.const(0, t.element)), [n])
    positions = _running_positions(cx, flat_mask)
    # Rows past ``size``, and elements that are zero, go to a spare last row that is cut off.
    kept = graph.and_(flat_mask, graph.lt(positions, cx.const(size, i64)))
    rows = graph.where(kept, positions, cx.const(size, i64))
    coordinates = np.stack(np.unravel_index(np.arange(n), shape), axis=-1)
    filled = cx.const(np.full((size + 1, rank), fill_value), i64)
    index = broadcast_to(graph.unsqueeze(rows, axes=[1]), [n, rank])
    out = graph.scatter_elements(filled, index, cx.const(coordinates, i64), axis=0, reduction="none")
    return graph.slice(out, starts=[0], ends=[size], axes=[0])


@converts("aten.max_pool2d_with_indices_backward.default")
def _max_pool2d_backward(
    cx: Context, grad: Value, x: Value, kernel: Any, stride: Any, padding: Any, dilation: Any, ceil: Any, indices: Value
) -> Value:
    shape = _static(x, "max_pool2d backward")
    lead, plane = list(shape[:-2]), shape[-2] * shape[-1]
    pooled = math.prod(_static(grad, "max_pool2d backward")[-2:])
    zeros = cx.const(np.zeros([*lead, plane]), ttype(x).element)
    flat_grad = reshape_to(grad, [*lead, pooled])
    flat_indices = reshape_to(indices, [*lead, pooled])
    out = graph.scatter_elements(zeros, flat_indices, flat_grad, axis=len(lead), reduction="add")
    return reshape_to(out, list(shape))


@converts("aten._trilinear.default")
def _trilinear(
    cx: Context,
    a: Value,
    b: Value,
    c: Value,
    expand1: Sequence[int],
    expand2: Sequence[int],
    expand3: Sequence[int],
    sumdim: Sequence[int],
    unroll_dim: int = 1,
) -> Value:
    product: Value | None = None
    for value, expand in ((a, expand1), (b, expand2), (c, expand3)):
        v = graph.unsqueeze(value, axes=sorted(expand)) if expand else value
        product = v if product is None else graph.mul(product, v)
    assert product is not None
    if not sumdim:
        return product
    return graph.reduce_sum(product, axes=sorted(sumdim))


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


@converts("aten.grid_sampler_2d.default", "aten.grid_sampler_3d.default")
def _grid_sampler(cx: Context, x: Value, grid: Value, mode: int, padding: int, align_corners: bool) -> Value:
    try:
        return grid_sample(x, cast(grid, ttype(x).element), _GRID_MODES[mode], _GRID_PADDINGS[padding], align_corners)
    except ValueError as e:
        raise ConversionError(str(e)) from None


# as_strided: element positions of a strided view, known at compile time --------------------------------
def _strided_positions(cx: Context, x: Value, size: Sequence[int], stride: Sequence[int], offset: Any) -> np.ndarray:
    """The row-major positions in ``x`` of the elements of ``x.as_strided(size, stride, offset)``; ``x`` is
    taken as contiguous from its own storage offset, and every position must fall inside it."""
    numel = math.prod(_static(x, "as_strided"))
    if not all(isinstance(d, int) for d in (*size, *stride)):
        raise ConversionError("as_strided needs static sizes and strides")
    assert cx.node is not None
    source: Any = cx.node.args[0]
    base = source.meta["val"].storage_offset() if hasattr(source, "meta") else 0
    start = 0 if offset is None else int(offset) - int(base)
    grids = np.meshgrid(*[np.arange(n) for n in size], indexing="ij")
    positions = start + sum((g * s for g, s in zip(grids, stride)), np.zeros(tuple(size), np.int64))
    if positions.size and (positions.min() < 0 or positions.max() >= numel):
        raise ConversionError(f"as_strided reads outside its input of {numel} elements")
    return np.asarray(positions, np.int64)


@converts("aten.as_strided.default", "aten.as_strided_copy.default")
def _as_strided(cx: Context, x: Value, size: Sequence[int], stride: Sequence[int], storage_offset: Any = None) -> Value:
    positions = _strided_positions(cx, x, size, stride, storage_offset)
    flat = reshape_to(x, [math.prod(_static(x, "as_strided"))])
    return graph.gather(flat, cx.const(positions, i64), axis=0)


@converts("aten.as_strided_scatter.default")
def _as_strided_scatter(
    cx: Context, x: Value, src: Value, size: Sequence[int], stride: Sequence[int], storage_offset: Any = None
) -> Value:
    positions = _strided_positions(cx, x, size, stride, storage_offset).reshape(-1)
    shape = _static(x, "as_strided_scatter")
    flat = reshape_to(x, [math.prod(shape)])
    if positions.size == 0:
        return x
    updates = reshape_to(cast(src, ttype(x).element), [positions.size])
    out = graph.scatter_elements(flat, cx.const(positions, i64), updates, axis=0, reduction="none")
    return reshape_to(out, list(shape))


@converts("aten.resize.default")
def _resize(cx: Context, x: Value, size: Sequence[int], memory_format: Any = None) -> Value:
    if math.prod(size) != math.prod(_static(x, "resize")):
        raise ConversionError("resize to another number of elements leaves memory uninitialized")
    return reshape_to(x, list(size))


# embedding_bag ---------------------------------------------------------------------------------------------
_BAG_MODES = ("sum", "mean", "max")


@converts("aten._embedding_bag_forward_only.default", "aten._embedding_bag.default", "aten.embedding_bag.padding_idx")
def _embedding_bag(
    cx: Context,
    weight: Value,
    indices: Value,
    offsets: Value,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: Value | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = -1,
) -> tuple[Value, Value, Value, Value]:
    """Bags of rows of ``weight`` summed, averaged or maxed: the bag of index ``i`` is the last offset at or
    below ``i``; indices equal to ``padding_idx`` (-1: none) belong to no bag; an empty bag gives zeros.
    Also the bag of each index, the bag sizes and (max mode) the weight row of each maximum."""
    if ttype(indices).rank != 1:
        raise ConversionError("embedding_bag with 2-D indices is not supported (flatten them with offsets)")
    n = _static(indices, "embedding_bag")[0]
    bags = _static(offsets, "embedding_bag")[0] - (1 if include_last_offset else 0)
    element = ttype(weight).element
    starts = graph.slice(cast(offsets, i64), starts=[0], ends=[bags], axes=[0])
    positions = cx.const(np.arange(n), i64)
    started = graph.le(graph.unsqueeze(starts, axes=[0]), graph.unsqueeze(positions, axes=[1]))  # [n, bags]
    bag = graph.sub(graph.reduce_sum(cast(started, i64), axes=[1]), cx.const(1, i64))
    member = graph.eq(graph.unsqueeze(bag, axes=[0]), graph.unsqueeze(cx.const(np.arange(bags), i64), axes=[1]))
    if padding_idx is not None and padding_idx >= 0:
        real = graph.ne(cast(indices, i64), cx.const(padding_idx, i64))
        member = graph.and_(member, graph.unsqueeze(real, axes=[0]))  # [bags, n]
    sizes = graph.reduce_sum(cast(member, i64), axes=[1])
    rows = graph.gather(weight, indices, axis=0)  # [n, D]
    if per_sample_weights is not None:
        rows = graph.mul(rows, graph.unsqueeze(cast(per_sample_weights, element), axes=[1]))
    inside = graph.unsqueeze(member, axes=[2])  # [bags, n, 1]
    spread = graph.unsqueeze(rows, axes=[0])  # [1, n, D]
    zero = cx.const(0.0, element)
    empty = graph.unsqueeze(graph.eq(sizes, cx.const(0, i64)), axes=[1])
    if _BAG_MODES[mode] == "max":
        masked = graph.where(inside, spread, cx.const(-math.inf, element))
        out = graph.where(empty, zero, graph.reduce_max(masked, axes=[1]))
        best = graph.argmax(masked, axis=1)  # [bags, D]: a position in ``indices``
        extra = graph.where(empty, cx.const(0, i64), graph.gather(cast(indices, i64), best, axis=0))
    else:
        out = graph.reduce_sum(graph.where(inside, spread, zero), axes=[1])
        if _BAG_MODES[mode] == "mean":
            out = graph.div(out, cast(graph.unsqueeze(graph.max(sizes, cx.const(1, i64)), axes=[1]), element))
        extra = sizes
    return out, bag, sizes, extra


# segment_reduce --------------------------------------------------------------------------------------------
_SEGMENT_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}


@converts("aten.segment_reduce.default")
def _segment_reduce(
    cx: Context,
    data: Value,
    reduce: str,
    *,
    lengths: Value | None = None,
    indices: Value | None = None,
    offsets: Value | None = None,
    axis: int = 0,
    unsafe: bool = False,
    initial: float | None = None,
) -> Value:
    """Reductions over consecutive segments of ``data`` along axis 0 (given by lengths or offsets), starting
    from ``initial`` when given: an empty segment gives ``initial``, else the reduction's identity (NaN for a
    mean)."""
    t = ttype(data)
    if axis % max(t.rank, 1) != 0 or reduce not in _SEGMENT_IDENTITY or indices is not None:
        raise ConversionError(f"segment_reduce {reduce!r} along axis {axis} is supported only along axis 0")
    n = _static(data, "segment_reduce")[0]
    if lengths is not None and ttype(lengths).rank == 1:
        count = cast(lengths, i64)
        starts = graph.sub(graph.cumsum(count, axis=0), count)
    elif offsets is not None and ttype(offsets).rank == 1:
        bounds = cast(offsets, i64)
        segments = _static(offsets, "segment_reduce")[0] - 1
        starts = graph.slice(bounds, starts=[0], ends=[segments], axes=[0])
        count = graph.sub(graph.slice(bounds, starts=[1], ends=[segments + 1], axes=[0]), starts)
    else:
        raise ConversionError("segment_reduce needs 1-D lengths or offsets")
    position = graph.unsqueeze(cx.const(np.arange(n), i64), axes=[0])
    start = graph.unsqueeze(starts, axes=[1])
    member = graph.and_(
        graph.ge(position, start), graph.lt(position, graph.add(start, graph.unsqueeze(count, axes=[1])))
    )
    member = reshape_to(member, [*ttype(member).shape, *[1] * (t.rank - 1)])  # [segments, n, 1...]
    element = t.element
    spread = graph.where(member, graph.unsqueeze(data, axes=[0]), cx.const(_SEGMENT_IDENTITY[reduce], element))
    reducer = {"sum": graph.reduce_sum, "mean": graph.reduce_sum, "prod": graph.reduce_prod}.get(reduce)
    out = (reducer or (graph.reduce_max if reduce == "max" else graph.reduce_min))(spread, axes=[1])
    sizes = cast(reshape_to(count, [*ttype(count).shape, *[1] * (t.rank - 1)]), element)
    if initial is not None:
        start_value = cx.const(float(initial), element)
        combine = {"sum": graph.add, "mean": graph.add, "prod": graph.mul, "max": graph.max, "min": graph.min}
        out = combine[reduce](out, start_value)
    if reduce == "mean":
        empty = graph.eq(sizes, cx.const(0.0, element))
        fallback = cx.const(math.nan if initial is None else float(initial), element)
        out = graph.where(empty, fallback, graph.div(out, graph.max(sizes, cx.const(1.0, element))))
    return out


@converts("aten.lu_unpack.default")
def _lu_unpack(
    cx: Context, lu: Value, pivots: Value, unpack_data: bool = True, unpack_pivots: bool = True
) -> tuple[Value, Value, Value]:
    """``torch.lu_unpack`` of LU factors (no decomposition: the factors are given): L is the strict lower
    triangle plus the identity, U the upper triangle; the permutation applies the 1-based row swaps of
    ``pivots`` in order to 0..m-1 (one ``gather_elements`` and two ``where`` per swap) and P has a one in
    row ``perm[c]`` of each column c. What is not unpacked is an empty tensor, as torch gives."""
    t = ttype(lu)
    if not t.is_static or t.rank < 2:
        raise ConversionError(f"lu_unpack needs static LU factors [..., m, n], got {t}")
    m, n = int(t.shape[-2]), int(t.shape[-1])  # type: ignore[arg-type]
    k, rank, element = min(m, n), t.rank, t.element
    empty = cx.const(np.zeros(0), element)
    lower = upper = permutation = empty
    if unpack_data:
        lower = graph.add(
            graph.tril(graph.slice(lu, starts=[0], ends=[k], axes=[rank - 1]), k=-1),
            cx.const(np.eye(m, k), element),
        )
        upper = graph.triu(graph.slice(lu, starts=[0], ends=[k], axes=[rank - 2]))
    if unpack_pivots:
        lead = [int(d) for d in t.shape[:-2]]  # type: ignore[arg-type]
        swaps = graph.sub(cast(pivots, i64), cx.const(1, i64))  # [..., k], 0-based
        rows = cx.const(np.arange(m), i64)
        perm = broadcast_to(rows, [*lead, m])
        for i in range(k):
            target = graph.slice(swaps, starts=[i], ends=[i + 1], axes=[rank - 2])  # [..., 1]
            here = graph.slice(perm, starts=[i], ends=[i + 1], axes=[rank - 2])
            there = graph.gather_elements(perm, target, axis=rank - 2)
            perm = graph.where(graph.eq(rows, cx.const(i, i64)), there, graph.where(graph.eq(rows, target), here, perm))
        permutation = cast(
            graph.eq(graph.unsqueeze(perm, axes=[rank - 2]), cx.const(np.arange(m)[:, None], i64)), element
        )
    return permutation, lower, upper
