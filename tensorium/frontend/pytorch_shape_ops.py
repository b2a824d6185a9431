"""ATen data-movement ops (flip, roll, diagonal, the scatter and index_* families), group norm and
sorting, decomposed into existing graph ops.

Registered into the converter table of :mod:`.pytorch_ops` on import (the PyTorch frontend imports
this module). Sorting ranks each element by comparing it with every other one along the axis (n^2
comparisons, exact and stable), then scatters values and indices to their ranks; it suits the short
axes models sort (top-k over logits rows of a few thousand stays within a few MB per row).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import FloatType, i1, i64, storage_dtype
from .pytorch_index_ops import masked_index_put
from .pytorch_ops import (
    INT64_MAX,
    Context,
    ConversionError,
    broadcast_to,
    cast,
    converts,
    reshape_to,
    static_dim,
    ttype,
)

__all__: list[str] = []


# flip, roll, diagonal ---------------------------------------------------------------------------
@converts("aten.flip.default")
def _flip(cx: Context, x: Value, dims: Sequence[int]) -> Value:
    rank = ttype(x).rank
    if rank == 0 or not dims:
        return x
    axes = sorted({d % rank for d in dims})
    return graph.slice(x, starts=[-1] * len(axes), ends=[-INT64_MAX] * len(axes), axes=axes, steps=[-1] * len(axes))


@converts("aten.roll.default")
def _roll(cx: Context, x: Value, shifts: Sequence[int], dims: Sequence[int] = ()) -> Value:
    t = ttype(x)
    if not dims:
        flat = graph.reshape(x, shape=[-1])
        return reshape_to(_roll(cx, flat, shifts, [0]), t.shape)
    for shift, dim in zip(shifts, dims):
        size = static_dim(ttype(x), dim % t.rank, "roll")
        shift = shift % size if size else 0
        if shift:
            tail = graph.slice(x, starts=[size - shift], ends=[INT64_MAX], axes=[dim])
            head = graph.slice(x, starts=[0], ends=[size - shift], axes=[dim])
            x = graph.concat(tail, head, axis=dim % t.rank)
    return x


@converts("aten.diagonal.default", "aten.diagonal_copy.default")
def _diagonal(cx: Context, x: Value, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Value:
    t = ttype(x)
    dim1, dim2 = dim1 % t.rank, dim2 % t.rank
    rows, cols = static_dim(t, dim1, "diagonal"), static_dim(t, dim2, "diagonal")
    rest = [a for a in range(t.rank) if a not in (dim1, dim2)]
    moved = graph.transpose(x, perm=rest + [dim1, dim2]) if rest + [dim1, dim2] != list(range(t.rank)) else x
    batch = [t.shape[a] for a in rest]
    length = max(min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols), 0)
    flat = reshape_to(moved, [*batch, rows * cols])
    start = offset if offset >= 0 else -offset * cols
    # Along the flattened matrix the diagonal is every (cols + 1)-th element from its first one.
    end = start + (length - 1) * (cols + 1) + 1 if length else start
    return graph.slice(flat, starts=[start], ends=[end], axes=[len(batch)], steps=[cols + 1])


@converts("aten.trace.default")
def _trace(cx: Context, x: Value) -> Value:
    return graph.reduce_sum(cast(_diagonal(cx, x), cx.out_element()), axes=[0])


# scatter and index_* ------------------------------------------------------------------------------
_SCATTER_REDUCTIONS = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul", "amax": "max", "amin": "min"}


def _updates_like(index: Value, src: Value) -> Value:
    """``src`` cut to the shape of ``index`` (torch reads only that corner of src)."""
    ti, ts = ttype(index), ttype(src)
    if ti.shape == ts.shape:
        return src
    return graph.slice(src, starts=[0] * ti.rank, ends=list(ti.shape), axes=list(range(ti.rank)))


@converts("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce", "aten.scatter.value_reduce")
def _scatter(cx: Context, x: Value, dim: int, index: Value, src: Any, *, reduce: str | None = None) -> Value:
    element = ttype(x).element
    if ttype(x).rank == 0:
        raise ConversionError("scatter into a 0-d tensor is not supported")
    updates = (
        _updates_like(index, src)
        if isinstance(src, Value)
        else broadcast_to(cx.const(src, element), ttype(index).shape)
    )
    reduction = "none" if reduce is None else _SCATTER_REDUCTIONS.get(reduce)
    if reduction is None:
        raise ConversionError(f"scatter reduce={reduce!r} is not supported")
    return graph.scatter_elements(x, cast(index, i64), cast(updates, element), axis=dim, reduction=reduction)


@converts("aten.scatter_add.default")
def _scatter_add(cx: Context, x: Value, dim: int, index: Value, src: Value) -> Value:
    return _scatter(cx, x, dim, index, src, reduce="add")


@converts("aten.scatter_reduce.two")
def _scatter_reduce(
    cx: Context, x: Value, dim: int, index: Value, src: Value, reduce: str, *, include_self: bool = True
) -> Value:
    t = ttype(x)
    if t.rank == 0:
        raise ConversionError("scatter_reduce into a 0-d tensor is not supported")
    index = cast(index, i64)
    updates = cast(_updates_like(index, src), t.element)
    if reduce == "mean":
        one, zero = cx.const(1, t.element), cx.const(0, t.element)
        count = graph.scatter_elements(
            broadcast_to(zero, t.shape), index, broadcast_to(one, ttype(index).shape), axis=dim, reduction="add"
        )
        base = x if include_self else graph.scatter_elements(x, index, broadcast_to(zero, ttype(index).shape), axis=dim)
        total = graph.scatter_elements(base, index, updates, axis=dim, reduction="add")
        divisor = graph.max(graph.add(count, one) if include_self else count, one)
        if not isinstance(t.element, FloatType):  # torch floors integer means
            total = graph.sub(total, graph.mod(total, divisor))
        return graph.where(graph.gt(count, zero), graph.div(total, divisor), x)
    reduction = _SCATTER_REDUCTIONS.get(reduce)
    if reduction is None:
        raise ConversionError(f"scatter_reduce reduce={reduce!r} is not supported")
    if not include_self:  # first overwrite the written positions with the reduction's identity
        x = graph.scatter_elements(
            x, index, broadcast_to(_identity(cx, reduction, t.element), ttype(index).shape), axis=dim
        )
    return graph.scatter_elements(x, index, updates, axis=dim, reduction=reduction)


@converts("aten.index_reduce.default")
def _index_reduce(
    cx: Context, x: Value, dim: int, index: Value, source: Value, reduce: str, *, include_self: bool = True
) -> Value:
    if ttype(x).rank == 0:  # one element: the same reduction over a 1-element vector
        flat = [graph.reshape(v, shape=[-1]) for v in (x, index, source)]
        return graph.reshape(
            _index_reduce(cx, flat[0], 0, flat[1], flat[2], reduce, include_self=include_self), shape=[]
        )
    dim = dim % ttype(x).rank
    positions = _index_along(index, dim, ttype(source).shape)
    return _scatter_reduce(cx, x, dim, positions, source, reduce, include_self=include_self)


def _identity(cx: Context, reduction: str, element: Any) -> Value:
    """The value that ``reduction`` leaves any other value unchanged with."""
    if reduction in ("add", "mul"):
        return cx.const(0 if reduction == "add" else 1, element)
    if isinstance(element, FloatType):
        return cx.const(-math.inf if reduction == "max" else math.inf, element)
    info = np.iinfo(storage_dtype(element))
    return cx.const(info.min if reduction == "max" else info.max, element)


def _index_along(index: Value, dim: int, shape: Sequence[Any]) -> Value:
    """A 1-D index laid along ``dim`` and broadcast to ``shape`` (the positions an index_* op writes)."""
    rank = len(shape)
    column = reshape_to(cast(index, i64), [ttype(index).shape[0] if i == dim else 1 for i in range(rank)])
    return broadcast_to(column, shape)


@converts("aten.index_add.default", "aten.index_copy.default")
def _index_add_copy(cx: Context, x: Value, dim: int, index: Value, source: Value, *, alpha: Any = 1) -> Value:
    assert cx.node is not None
    t = ttype(x)
    if t.rank == 0:
        return source if str(cx.node.target) == "aten.index_copy.default" else graph.add(x, source)
    dim = dim % t.rank
    if alpha != 1:
        source = graph.mul(source, cx.const(alpha, t.element))
    reduction = "add" if str(cx.node.target) == "aten.index_add.default" else "none"
    positions = _index_along(index, dim, ttype(source).shape)
    return graph.scatter_elements(x, positions, source, axis=dim, reduction=reduction)


@converts("aten.index_fill.int_Scalar", "aten.index_fill.int_Tensor")
def _index_fill(cx: Context, x: Value, dim: int, index: Value, value: Any) -> Value:
    t = ttype(x)
    if t.rank == 0:
        return broadcast_to(cx.tensor(value, t.element), ())
    dim = dim % t.rank
    shape = [ttype(index).shape[0] if i == dim else d for i, d in enumerate(t.shape)]
    updates = broadcast_to(reshape_to(cx.tensor(value, t.element), [1] * t.rank), shape)
    return graph.scatter_elements(x, _index_along(index, dim, shape), updates, axis=dim, reduction="none")


# normalization ----------------------------------------------------------------------------------------
@converts("aten.native_group_norm.default")
def _group_norm(
    cx: Context,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    n: int,
    channels: int,
    spatial: int,
    groups: int,
    eps: float,
) -> tuple[Value, Value, Value]:
    t = ttype(x)
    grouped = reshape_to(x, [n, groups, (channels // groups) * spatial])
    normed = reshape_to(_normalize(cx, grouped, [-1], eps), t.shape)
    per_channel = [channels if i == 1 else 1 for i in range(t.rank)]
    if weight is not None:
        normed = graph.mul(normed, reshape_to(weight, per_channel))
    if bias is not None:
        normed = graph.add(normed, reshape_to(bias, per_channel))
    mean, rstd = _statistics(cx, grouped, [-1], eps)
    return normed, reshape_to(mean, [n, groups]), reshape_to(rstd, [n, groups])


def _statistics(cx: Context, x: Value, axes: list[int], eps: float) -> tuple[Value, Value]:
    """The mean and 1 / sqrt(biased variance + eps) over ``axes``, kept as size-1 dims (the secondary
    results of torch's native norms; unused ones are dead code)."""
    mean = graph.reduce_mean(x, axes=axes, keepdims=True)
    centered = graph.sub(x, mean)
    var = graph.reduce_mean(graph.mul(centered, centered), axes=axes, keepdims=True)
    return mean, graph.rsqrt(graph.add(var, cx.const(eps, ttype(x).element)))


def _normalize(cx: Context, x: Value, axes: list[int], eps: float) -> Value:
    """(x - mean) / sqrt(var + eps) over ``axes`` (biased variance), any eps torch accepts."""
    mean, rstd = _statistics(cx, x, axes, eps)
    return graph.mul(graph.sub(x, mean), rstd)


@converts("aten.native_layer_norm.default")
def _layer_norm(
    cx: Context, x: Value, shape: Sequence[int], weight: Value | None, bias: Value | None, eps: float
) -> tuple[Value, Value, Value]:
    from .pytorch_ops import _layer_norm as fused_layer_norm

    axes = list(range(-len(shape), 0))
    mean, rstd = _statistics(cx, x, axes, eps)
    if eps >= 0:
        return fused_layer_norm(cx, x, shape, weight, bias, eps)[0], mean, rstd
    # graph.layer_norm takes eps >= 0 only; torch computes the same formula with any eps.
    normed = graph.mul(graph.sub(x, mean), rstd)
    if weight is not None:
        normed = graph.mul(normed, weight)
    if bias is not None:
        normed = graph.add(normed, bias)
    return normed, mean, rstd


# sorting ---------------------------------------------------------------------------------------------
def _ranks(cx: Context, x: Value, dim: int, descending: bool) -> Value:
    """The i64 position of each element of ``x`` in a stable sort along ``dim`` (NaN sorts as largest)."""
    t = ttype(x)
    dim = dim % t.rank
    a = graph.unsqueeze(x, axes=[dim + 1])  # element i along dim, compared with
    b = graph.unsqueeze(x, axes=[dim])  # element j along dim + 1
    # j sorts before i when its key is smaller (larger when descending), or equal and j < i.
    before = graph.gt(b, a) if descending else graph.lt(b, a)
    equal = graph.eq(a, b)
    if isinstance(t.element, FloatType):  # NaN sorts as the largest value, equal to NaN
        a_nan, b_nan = graph.ne(a, a), graph.ne(b, b)
        larger, smaller = (b_nan, a_nan) if descending else (a_nan, b_nan)
        before = graph.or_(before, graph.and_(larger, graph.not_(smaller)))
        equal = graph.or_(equal, graph.and_(a_nan, b_nan))
    size = static_dim(t, dim, "sort")
    order = np.arange(size)
    earlier_shape = [1] * (t.rank + 1)
    earlier_shape[dim], earlier_shape[dim + 1] = size, size
    earlier = cx.const((order[None, :] < order[:, None]).reshape(earlier_shape), i1)
    before = graph.or_(before, graph.and_(equal, earlier))
    return graph.reduce_sum(cast(before, i64), axes=[dim + 1])


def _sorted(cx: Context, x: Value, dim: int, descending: bool) -> tuple[Value, Value]:
    t = ttype(x)
    if t.rank == 0:
        return x, cx.const(0, i64)
    dim = dim % t.rank
    ranks = _ranks(cx, x, dim, descending)
    size = static_dim(t, dim, "sort")
    positions = cx.const(np.arange(size).reshape([size if i == dim else 1 for i in range(t.rank)]), i64)
    indices = graph.scatter_elements(
        broadcast_to(positions, t.shape), ranks, broadcast_to(positions, t.shape), axis=dim, reduction="none"
    )
    values = graph.scatter_elements(x, ranks, x, axis=dim, reduction="none")
    return values, indices


def sorted_along(cx: Context, x: Value, dim: int, descending: bool) -> tuple[Value, Value]:
    """The values of ``x`` sorted along ``dim`` (stable; NaN as the largest) and their i64 source indices."""
    return _sorted(cx, x, dim, descending)


@converts("aten.sort.default", "aten.sort.stable")
def _sort(cx: Context, x: Value, *args: Any, **kwargs: Any) -> tuple[Value, Value]:
    assert cx.node is not None
    if str(cx.node.target) == "aten.sort.stable":
        dim, descending = kwargs.get("dim", -1), kwargs.get("descending", False)
    else:
        dim = args[0] if args else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending", False)
    return _sorted(cx, x, dim, bool(descending))


@converts("aten.topk.default")
def _topk(
    cx: Context, x: Value, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
) -> tuple[Value, Value]:
    values, indices = _sorted(cx, x, dim, largest)
    if ttype(x).rank == 0:
        return values, indices
    return (
        graph.slice(values, starts=[0], ends=[k], axes=[dim]),
        graph.slice(indices, starts=[0], ends=[k], axes=[dim]),
    )


@converts("aten.kthvalue.default")
def _kthvalue(cx: Context, x: Value, k: int, dim: int = -1, keepdim: bool = False) -> tuple[Value, Value]:
    values, indices = _sorted(cx, x, dim, False)
    if ttype(x).rank == 0:
        return values, indices
    picked = [graph.slice(v, starts=[k - 1], ends=[k], axes=[dim]) for v in (values, indices)]
    if not keepdim:
        picked = [graph.squeeze(v, axes=[dim % ttype(x).rank]) for v in picked]
    return picked[0], picked[1]


@converts("aten.median.dim")
def _median_dim(cx: Context, x: Value, dim: int = -1, keepdim: bool = False) -> tuple[Value, Value]:
    t = ttype(x)
    if t.rank == 0:
        return x, cx.const(0, i64)
    size = static_dim(t, dim % t.rank, "median")
    values, indices = _kthvalue(cx, x, (size + 1) // 2, dim, keepdim)
    if not isinstance(t.element, FloatType):
        return values, indices
    # torch's median of a row holding NaN is NaN, at the first NaN's index.
    nan = cast(graph.ne(x, x), i64)
    has_nan = cast(graph.reduce_max(nan, axes=[dim], keepdims=keepdim), i1)
    first_nan = graph.argmax(nan, axis=dim, keepdims=keepdim)
    return graph.where(has_nan, cx.const(math.nan, t.element), values), graph.where(has_nan, first_nan, indices)


@converts("aten.nanmedian.dim")
def _nanmedian_dim(cx: Context, x: Value, dim: int = -1, keepdim: bool = False) -> tuple[Value, Value]:
    """The lower median of the values that are not NaN (NaN when there are none), and its index."""
    t = ttype(x)
    if t.rank == 0:
        return x, cx.const(0, i64)
    if not isinstance(t.element, FloatType):
        return _median_dim(cx, x, dim, keepdim)
    dim %= t.rank
    values, indices = _sorted(cx, x, dim, False)  # NaN sorts last
    numbers = graph.reduce_sum(cast(graph.eq(x, x), i64), axes=[dim], keepdims=True)
    middle = graph.max(graph.div(graph.sub(numbers, cx.const(1, i64)), cx.const(2, i64)), cx.const(0, i64))
    picked = [graph.gather_elements(v, middle, axis=dim) for v in (values, indices)]
    value = graph.where(graph.eq(numbers, cx.const(0, i64)), cx.const(math.nan, t.element), picked[0])
    index = picked[1]
    if not keepdim:
        value, index = graph.squeeze(value, axes=[dim]), graph.squeeze(index, axes=[dim])
    return value, index


@converts("aten.mode.default")
def _mode(cx: Context, x: Value, dim: int = -1, keepdim: bool = False) -> tuple[Value, Value]:
    """The most frequent value along ``dim`` (the smallest of those equally frequent) and the index of its
    last occurrence, as torch gives them: from the n x n equality of the elements along ``dim``."""
    t = ttype(x)
    if t.rank == 0:
        return x, cx.const(0, i64)
    dim %= t.rank
    size = static_dim(t, dim, "mode")
    counts = graph.reduce_sum(
        cast(graph.eq(graph.unsqueeze(x, axes=[dim + 1]), graph.unsqueeze(x, axes=[dim])), i64), axes=[dim + 1]
    )
    frequent = graph.eq(counts, graph.reduce_max(counts, axes=[dim], keepdims=True))
    top = math.inf if isinstance(t.element, FloatType) else np.iinfo(storage_dtype(t.element)).max
    value = graph.reduce_min(graph.where(frequent, x, cx.const(top, t.element)), axes=[dim], keepdims=True)
    positions = cx.const(np.arange(size).reshape([size if a == dim else 1 for a in range(t.rank)]), i64)
    index = graph.reduce_max(graph.where(graph.eq(x, value), positions, cx.const(-1, i64)), axes=[dim], keepdims=True)
    if not keepdim:
        value, index = graph.squeeze(value, axes=[dim]), graph.squeeze(index, axes=[dim])
    return value, index


@converts("aten.nanmedian.default")
def _nanmedian(cx: Context, x: Value) -> Value:
    flat = graph.reshape(x, shape=[-1])
    if static_dim(ttype(flat), 0, "nanmedian") == 0:
        return cx.const(math.nan, ttype(x).element)
    return _nanmedian_dim(cx, flat, 0, False)[0]


@converts("aten.median.default")
def _median(cx: Context, x: Value) -> Value:
    flat = graph.reshape(x, shape=[-1])
    size = static_dim(ttype(flat), 0, "median")
    if size == 0:
        return cx.const(math.nan, ttype(x).element)
    return _median_dim(cx, flat, 0, False)[0]


@converts("aten.index_put.default", "aten._unsafe_index_put.default")
def _index_put(
    cx: Context, x: Value, indices: Sequence[Value | None], values: Value, accumulate: bool = False
) -> Value:
    from ..ir.shapes import broadcast_shapes

    t = ttype(x)
    values = cast(values, t.element)
    present = [i for i, idx in enumerate(indices) if idx is not None]
    idxs = [v for v in indices if v is not None]
    if not idxs:
        return x
    if any(ttype(i).element == i1 for i in idxs):
        if len(idxs) != 1 or present != [0]:
            raise ConversionError("index_put with a boolean mask is supported only as the first and only index")
        return masked_index_put(cx, x, idxs[0], values, accumulate)
    first, k = present[0], len(present)
    if present != list(range(first, first + k)):
        raise ConversionError("index_put with non-adjacent index tensors is not supported")
    shape = list(broadcast_shapes(*[ttype(i).shape for i in idxs]))
    stacked = graph.concat(
        *[graph.unsqueeze(broadcast_to(cast(i, i64), shape), axes=[-1]) for i in idxs], axis=len(shape)
    )
    moved = list(range(first, first + k)) + [a for a in range(t.rank) if not first <= a < first + k]
    data = graph.transpose(x, perm=moved) if moved != list(range(t.rank)) else x
    # values broadcast to x[indices]'s shape, then with the index dims first, as scatter_nd reads them
    selected = [*t.shape[:first], *shape, *t.shape[first + k :]]
    updates = broadcast_to(values, selected)
    nb = len(shape)
    if first:
        perm = list(range(first, first + nb)) + list(range(first)) + list(range(first + nb, len(selected)))
        updates = graph.transpose(updates, perm=perm)
    out = graph.scatter_nd(data, stacked, updates, reduction="add" if accumulate else "none")
    if moved == list(range(t.rank)):
        return out
    return graph.transpose(out, perm=[moved.index(a) for a in range(t.rank)])


# pooling with uneven windows ------------------------------------------------------------------------
def _static_out_dims(cx: Context, count: int, index: int | None = None) -> list[int]:
    """The last ``count`` dims of the node's (``index``-th) result; ConversionError when one is symbolic."""
    dims = cx.out_dims(index)[-count:]
    static = [d for d in dims if isinstance(d, int)]
    if len(static) != len(dims):
        raise ConversionError("adaptive pooling to a symbolic size is not supported")
    return static


def _adaptive(x: Value, sizes: Sequence[int], reduce: Any) -> Value:
    """Adaptive pooling over the trailing ``len(sizes)`` axes, one axis at a time: output cell i of an axis
    of n reduces input cells floor(i * n / m) .. ceil((i + 1) * n / m), as torch does."""
    t = ttype(x)
    for offset, m in enumerate(sizes):
        axis = t.rank - len(sizes) + offset
        n = static_dim(t, axis, "adaptive pooling")
        cells = [
            reduce(
                graph.slice(x, starts=[i * n // m], ends=[-(-(i + 1) * n // m)], axes=[axis]),
                axes=[axis],
                keepdims=True,
            )
            for i in range(m)
        ]
        x = graph.concat(*cells, axis=axis) if len(cells) > 1 else cells[0]
    return x


@converts("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool3d.default")
def _adaptive_avg_pool(cx: Context, x: Value, output_size: Sequence[int]) -> Value:
    assert cx.node is not None
    spatial = 3 if "3d" in str(cx.node.target) else 2
    sizes = _static_out_dims(cx, spatial)
    t = ttype(x)
    if spatial == 2 and t.rank == 4 and sizes == [1, 1]:
        return graph.global_avg_pool2d(x)
    h, w = static_dim(t, t.rank - 2, "adaptive pooling"), static_dim(t, t.rank - 1, "adaptive pooling")
    if spatial == 2 and h % sizes[0] == 0 and w % sizes[1] == 0:  # even windows: one pooling op
        kernel = [h // sizes[0], w // sizes[1]]
        return graph.avg_pool2d(x, kernel=kernel, strides=kernel)
    return _adaptive(x, sizes, graph.reduce_mean)


# cumulative products, maxima and minima -------------------------------------------------------------------
def _prefixes(cx: Context, x: Value, dim: int, outside: Value) -> Value:
    """Row i along ``dim`` of an n x n expansion holds x[j] along ``dim`` + 1 for j <= i and ``outside``
    after: reducing over ``dim`` + 1 gives running (cumulative) reductions. ``dim`` is non-negative."""
    t = ttype(x)
    n = static_dim(t, dim, "cumulative op")
    shape = [1] * (t.rank + 1)
    shape[dim], shape[dim + 1] = n, n
    upto = cx.const(np.tril(np.ones((n, n), bool)).reshape(shape), i1)
    return graph.where(upto, graph.unsqueeze(x, axes=[dim]), outside)


@converts("aten.cumprod.default")
def _cumprod(cx: Context, x: Value, dim: int, *, dtype: Any = None) -> Value:
    element = cx.out_element()
    x = cast(x, element)
    rank = ttype(x).rank
    if rank == 0:
        return x
    return graph.reduce_prod(_prefixes(cx, x, dim % rank, cx.const(1, element)), axes=[dim % rank + 1])


@converts("aten.linalg_vector_norm.default")
def _vector_norm(
    cx: Context, x: Value, ord: float = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Value:
    from .pytorch_ops import _axes

    element = cx.out_element()
    v = graph.abs(cast(x, element))
    t = ttype(v)
    if t.rank == 0:  # the norm of one number is its magnitude
        return cast(graph.ne(v, cx.const(0, element)), element) if ord == 0 else v
    axes = _axes(dim, t.rank)
    if ord == math.inf:
        out = graph.reduce_max(v, axes=axes, keepdims=keepdim)
    elif ord == -math.inf:
        out = graph.reduce_min(v, axes=axes, keepdims=keepdim)
    elif ord == 0:
        out = graph.reduce_sum(cast(graph.ne(v, cx.const(0, element)), element), axes=axes, keepdims=keepdim)
    elif ord == 1:
        out = graph.reduce_sum(v, axes=axes, keepdims=keepdim)
    elif ord == 2:
        out = graph.sqrt(graph.reduce_sum(graph.mul(v, v), axes=axes, keepdims=keepdim))
    else:
        powered = graph.reduce_sum(graph.pow(v, cx.const(ord, element)), axes=axes, keepdims=keepdim)
        out = graph.pow(powered, cx.const(1 / ord, element))
    return out


@converts("aten.var_mean.correction")
def _var_mean(
    cx: Context, x: Value, dims: Any = None, *, correction: Any = None, keepdim: bool = False
) -> tuple[Value, Value]:
    from .pytorch_ops import _axes, _var

    t = ttype(x)
    var = _var(cx, x, dims, correction=correction, keepdim=keepdim)
    return var, graph.reduce_mean(x, axes=_axes(dims, t.rank), keepdims=keepdim)


@converts("aten.round.decimals")
def _round_decimals(cx: Context, x: Value, *, decimals: int = 0) -> Value:
    scale = cx.const(10.0**decimals, ttype(x).element)
    return graph.div(graph.round(graph.mul(x, scale)), scale)


@converts("aten.empty_permuted.default", "aten.empty_strided.default", "aten.new_empty_strided.default")
def _empty(cx: Context, *args: Any, **kwargs: Any) -> Value:
    """Uninitialized memory in torch; zeros here."""
    return cx.const(np.zeros(cx.meta().shape), cx.out_element())


# more reductions and products ------------------------------------------------------------------------
@converts("aten.max.default", "aten.min.default")
def _max_all(cx: Context, x: Value) -> Value:
    assert cx.node is not None
    rank = ttype(x).rank
    if rank == 0:
        return x
    op = graph.reduce_max if str(cx.node.target) == "aten.max.default" else graph.reduce_min
    return op(x, axes=list(range(rank)))


@converts("aten.cummax.default", "aten.cummin.default")
def _cummax(cx: Context, x: Value, dim: int) -> tuple[Value, Value]:
    assert cx.node is not None
    t = ttype(x)
    if t.rank == 0:
        return x, cx.const(0, i64)
    is_max = str(cx.node.target) == "aten.cummax.default"
    dim = dim % t.rank
    masked = _prefixes(cx, x, dim, _identity(cx, "max" if is_max else "min", t.element))
    values = (graph.reduce_max if is_max else graph.reduce_min)(masked, axes=[dim + 1])
    # torch reports the last position holding the running extreme (a NaN, once seen, stays)
    pick = graph.argmax if is_max else graph.argmin
    return values, pick(masked, axis=dim + 1, select_last_index=True)


@converts("aten.logcumsumexp.default")
def _logcumsumexp(cx: Context, x: Value, dim: int) -> Value:
    t = ttype(x)
    if t.rank == 0:
        return x
    dim = dim % t.rank
    masked = _prefixes(cx, x, dim, cx.const(-math.inf, t.element))
    high = graph.reduce_max(masked, axes=[dim + 1], keepdims=True)
    finite_high = graph.where(graph.eq(graph.sub(high, high), cx.const(0, t.element)), high, cx.const(0, t.element))
    total = graph.reduce_sum(graph.exp(graph.sub(masked, finite_high)), axes=[dim + 1], keepdims=True)
    return graph.squeeze(graph.add(graph.log(total), finite_high), axes=[dim + 1])


@converts("aten.addmv.default")
def _addmv(cx: Context, bias: Value, a: Value, v: Value, *, beta: Any = 1, alpha: Any = 1) -> Value:
    element = cx.out_element()
    product = graph.reshape(graph.matmul(a, graph.reshape(v, shape=[-1, 1])), shape=[-1])
    return _scaled_sum(cx, bias, product, beta, alpha, element)


@converts("aten.addbmm.default")
def _addbmm(cx: Context, bias: Value, a: Value, b: Value, *, beta: Any = 1, alpha: Any = 1) -> Value:
    element = cx.out_element()
    product = graph.reduce_sum(graph.matmul(a, b), axes=[0])
    return _scaled_sum(cx, bias, product, beta, alpha, element)


def _scaled_sum(cx: Context, bias: Value, product: Value, beta: Any, alpha: Any, element: Any) -> Value:
    """beta * bias + alpha * product, as torch's addmm family computes it (beta 0 ignores bias, NaN too)."""
    if alpha != 1:
        product = graph.mul(product, cx.const(alpha, element))
    if beta == 0:
        return broadcast_to(product, cx.out_dims())
    if beta != 1:
        bias = graph.mul(bias, cx.const(beta, element))
    return graph.add(product, bias)


@converts("aten.dist.default")
def _dist(cx: Context, a: Value, b: Value, p: float = 2) -> Value:
    return _vector_norm(cx, graph.sub(a, b), p)


@converts("aten.ldexp.Tensor")
def _ldexp(cx: Context, x: Value, e: Value) -> Value:
    element = cx.out_element()
    return graph.mul(cast(x, element), graph.pow(cx.const(2, element), cast(e, element)))


@converts("aten.searchsorted.Tensor", "aten.searchsorted.Scalar")
def _searchsorted(
    cx: Context,
    sorted_seq: Value,
    values: Any,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: Any = None,
    sorter: Any = None,
) -> Value:
    if sorter is not None:
        raise ConversionError("searchsorted with a sorter is not supported")
    right = right or side == "right"
    seq = ttype(sorted_seq)
    v = cx.tensor(values, seq.element)
    # each value against its row of the sequence (the one row of a 1-D sequence): how many sort before it
    column = graph.unsqueeze(sorted_seq, axes=[seq.rank - 1]) if seq.rank > 1 else sorted_seq
    probe = graph.unsqueeze(v, axes=[ttype(v).rank])
    below = graph.le(column, probe) if right else graph.lt(column, probe)
    count = graph.reduce_sum(cast(below, i64), axes=[-1])
    return cast(count, cx.out_element())


@converts("aten.bucketize.Tensor", "aten.bucketize.Scalar")
def _bucketize(cx: Context, values: Any, boundaries: Value, *, out_int32: bool = False, right: bool = False) -> Value:
    return _searchsorted(cx, boundaries, values, right=right)


@converts("aten.angle.default")
def _angle(cx: Context, x: Value) -> Value:
    element = cx.out_element()
    v = cast(x, element)
    zero = cx.const(0, element)
    angle = graph.where(graph.lt(v, zero), cx.const(math.pi, element), zero)
    return graph.where(graph.ne(v, v), v, angle)


# batch statistics ----------------------------------------------------------------------------------------
def _batch_stats_norm(
    cx: Context, x: Value, weight: Value | None, bias: Value | None, eps: float
) -> tuple[Value, Value, Value]:
    """Batch norm with the batch's own statistics: (output, per-channel mean, per-channel rstd)."""
    t = ttype(x)
    axes = [a for a in range(t.rank) if a != 1]
    per_channel = [static_dim(t, 1, "batch norm") if i == 1 else 1 for i in range(t.rank)]
    mean = graph.reduce_mean(x, axes=axes, keepdims=True)
    centered = graph.sub(x, mean)
    var = graph.reduce_mean(graph.mul(centered, centered), axes=axes, keepdims=True)
    rstd = graph.rsqrt(graph.add(var, cx.const(eps, t.element)))
    out = graph.mul(centered, rstd)
    if weight is not None:
        out = graph.mul(out, reshape_to(weight, per_channel))
    if bias is not None:
        out = graph.add(out, reshape_to(bias, per_channel))
    return out, graph.reshape(mean, shape=[-1]), graph.reshape(rstd, shape=[-1])


def _updated_running(
    cx: Context,
    x: Value,
    running_mean: Value,
    running_var: Value,
    mean: Value,
    rstd: Value,
    momentum: float,
    eps: float,
) -> tuple[Value, Value]:
    """torch's running-statistics update: an exponential average with the unbiased batch variance."""
    t = ttype(x)
    count = math.prod(static_dim(t, a, "batch norm") for a in range(t.rank) if a != 1)
    element = t.element
    var = graph.sub(graph.div(cx.const(1, element), graph.mul(rstd, rstd)), cx.const(eps, element))
    unbiased = graph.mul(var, cx.const(count / max(count - 1, 1), element))
    keep, take = cx.const(1 - momentum, element), cx.const(momentum, element)
    new_mean = graph.add(graph.mul(running_mean, keep), graph.mul(mean, take))
    return new_mean, graph.add(graph.mul(running_var, keep), graph.mul(unbiased, take))


@converts("aten._native_batch_norm_legit_functional.default")
def _batch_norm_functional(
    cx: Context,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    running_mean: Value,
    running_var: Value,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[Value, ...]:
    from .pytorch_ops import _batch_norm

    if not training:
        out = _batch_norm(cx, x, weight, bias, running_mean, running_var, momentum, eps)[0]
        empty = [cx.const(np.zeros(cx.meta(i).shape), cx.out_element(i)) for i in (1, 2)]  # no batch statistics
        return out, empty[0], empty[1], running_mean, running_var
    out, mean, rstd = _batch_stats_norm(cx, x, weight, bias, eps)
    new_mean, new_var = _updated_running(cx, x, running_mean, running_var, mean, rstd, momentum, eps)
    return out, mean, rstd, new_mean, new_var


@converts("aten._batch_norm_with_update_functional.default")
def _batch_norm_with_update(
    cx: Context,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    running_mean: Value,
    running_var: Value,
    momentum: float,
    eps: float,
) -> tuple[Value, ...]:
    out, mean, rstd = _batch_stats_norm(cx, x, weight, bias, eps)
    new_mean, new_var = _updated_running(cx, x, running_mean, running_var, mean, rstd, momentum, eps)
    reserve = cx.const(np.zeros(cx.meta(3).shape), cx.out_element(3))
    return out, mean, rstd, reserve, new_mean, new_var


@converts("aten._native_batch_norm_legit.no_stats")
def _batch_norm_no_stats(
    cx: Context, x: Value, weight: Value | None, bias: Value | None, training: bool, momentum: float, eps: float
) -> tuple[Value, Value, Value]:
    return _batch_stats_norm(cx, x, weight, bias, eps)


@converts("aten.slice_scatter.default")
def _slice_scatter(
    cx: Context, x: Value, src: Value, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
) -> Value:
    t = ttype(x)
    dim = dim % t.rank
    size = static_dim(t, dim, "slice_scatter")
    positions = list(range(size))[slice(start, end, step)]
    if not positions:
        return x
    index_shape = [len(positions) if i == dim else d for i, d in enumerate(t.shape)]
    column = np.array(positions).reshape([len(positions) if i == dim else 1 for i in range(t.rank)])
    index = broadcast_to(cx.const(column, i64), index_shape)
    return graph.scatter_elements(x, index, cast(src, t.element), axis=dim, reduction="none")


@converts("aten.rms_norm.default")
def _rms_norm(
    cx: Context, x: Value, shape: Sequence[int], weight: Value | None = None, eps: float | None = None
) -> Value:
    from .pytorch_ops import _rms_norm as fused_rms_norm

    if eps is None or eps >= 0:
        out: Value = fused_rms_norm(cx, x, shape, weight, eps)
        return out
    # graph.rms_norm takes eps >= 0 only; torch computes the same formula with any eps.
    element = ttype(x).element
    axes = list(range(-len(shape), 0))
    mean_square = graph.reduce_mean(graph.mul(x, x), axes=axes, keepdims=True)
    out = graph.mul(x, graph.rsqrt(graph.add(mean_square, cx.const(eps, element))))
    return graph.mul(out, weight) if weight is not None else out


@converts("aten.diagonal_scatter.default")
def _diagonal_scatter(cx: Context, x: Value, src: Value, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Value:
    t = ttype(x)
    dim1, dim2 = dim1 % t.rank, dim2 % t.rank
    rows, cols = static_dim(t, dim1, "diagonal_scatter"), static_dim(t, dim2, "diagonal_scatter")
    rest = [a for a in range(t.rank) if a not in (dim1, dim2)]
    perm = rest + [dim1, dim2]
    moved = graph.transpose(x, perm=perm) if perm != list(range(t.rank)) else x
    batch = [t.shape[a] for a in rest]
    flat = reshape_to(moved, [*batch, rows * cols])
    length = static_dim(ttype(src), ttype(src).rank - 1, "diagonal_scatter")
    if length == 0:
        return x
    start = offset if offset >= 0 else -offset * cols
    positions = cx.const(start + np.arange(length) * (cols + 1), i64)
    index = broadcast_to(reshape_to(positions, [1] * len(batch) + [length]), [*batch, length])
    written = graph.scatter_elements(flat, index, cast(src, t.element), axis=len(batch), reduction="none")
    back = reshape_to(written, [ttype(moved).shape[a] for a in range(t.rank)])
    return graph.transpose(back, perm=[perm.index(a) for a in range(t.rank)]) if perm != list(range(t.rank)) else back


@converts("aten._cdist_forward.default")
def _cdist(cx: Context, a: Value, b: Value, p: float, compute_mode: Any = None) -> Value:
    ta = ttype(a)
    # every row of a against every row of b: [..., n, 1, d] - [..., 1, m, d]
    diff = graph.sub(graph.unsqueeze(a, axes=[ta.rank - 1]), graph.unsqueeze(b, axes=[ttype(b).rank - 2]))
    return _vector_norm(cx, diff, p, [-1])


@converts("aten.unfold.default", "aten.unfold_copy.default")
def _unfold(cx: Context, x: Value, dim: int, size: int, step: int) -> Value:
    """Windows of ``size`` every ``step`` along ``dim``, as a new last dim: a gather of constant positions."""
    t = ttype(x)
    if t.rank == 0:
        return graph.reshape(x, shape=[1])
    dim = dim % t.rank
    length = static_dim(t, dim, "unfold")
    count = (length - size) // step + 1
    positions = cx.const(np.arange(count)[:, None] * step + np.arange(size)[None, :], i64)
    windows = graph.gather(x, positions, axis=dim)  # x.shape[:dim] + [count, size] + x.shape[dim + 1:]
    rank = t.rank + 1
    perm = [a for a in range(rank) if a != dim + 1] + [dim + 1]
    return graph.transpose(windows, perm=perm) if perm != list(range(rank)) else windows


@converts("aten.narrow_copy.default")
def _narrow_copy(cx: Context, x: Value, dim: int, start: int, length: int) -> Value:
    return graph.slice(x, starts=[start], ends=[start + length], axes=[dim])


@converts("aten.put.default")
def _put(cx: Context, x: Value, index: Value, source: Value, accumulate: bool = False) -> Value:
    """x.put(index, source): writes at flat positions of x (negative ones count from the end)."""
    t = ttype(x)
    flat = graph.reshape(x, shape=[-1])
    size = static_dim(ttype(flat), 0, "put")
    positions = graph.reshape(cast(index, i64), shape=[-1])
    positions = graph.mod(graph.add(positions, cx.const(size, i64)), cx.const(max(size, 1), i64))
    values = graph.reshape(cast(source, t.element), shape=[-1])
    written = graph.scatter_elements(flat, positions, values, axis=0, reduction="add" if accumulate else "none")
    return reshape_to(written, t.shape)


@converts("aten._pdist_forward.default")
def _pdist(cx: Context, x: Value, p: float = 2.0) -> Value:
    """The p-norm distance of every pair of rows i < j, in row-major order of the pairs."""
    rows = static_dim(ttype(x), 0, "pdist")
    first, second = np.triu_indices(rows, k=1)
    diff = graph.sub(graph.gather(x, cx.const(first, i64), axis=0), graph.gather(x, cx.const(second, i64), axis=0))
    return _vector_norm(cx, diff, p, [-1])
