"""Ops with data-dependent result sizes, built from ``graph.compress`` (any frontend: no framework import).

Each builder takes graph values of static shape and the name of the run-time dim its result gets (a
frontend picks names unique in its function, such as torch.export's ``u0``), and returns graph values:

- :func:`nonzero`: the [n, rank] i64 coordinates of the nonzero elements in row-major order;
- :func:`masked_select`: the [n] elements of ``x`` where ``mask`` (both broadcast) is true;
- :func:`unique`: the sorted distinct values of ``x`` (flattened), each element's position among them
  (shaped as ``x``) and how often each occurs;
- :func:`unique_consecutive`: the same for runs of equal neighbours, in order.

The comparisons behind unique are n x n, fine for the sizes of masks and index tensors, not for
millions of elements.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import Dim, ScalarType, TensorType, i1, i64, storage_dtype

__all__ = ["masked_select", "nonzero", "unique", "unique_consecutive"]


def _type(v: Value) -> TensorType:
    t = v.type
    assert isinstance(t, TensorType)
    return t


def _const(array: np.ndarray | int, element: ScalarType) -> Value:
    return graph.constant(value=DenseAttr.of(np.asarray(array, dtype=storage_dtype(element)), element))


def _static_shape(x: Value, what: str) -> tuple[int, ...]:
    t = _type(x)
    if not t.is_static:
        raise ValueError(f"{what} needs a static input shape, got {t}")
    return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]


def _flat(x: Value, what: str) -> tuple[Value, int]:
    """``x`` as a 1-D value and its length."""
    n = math.prod(_static_shape(x, what))
    return graph.reshape(x, shape=[n]), n


def _truthy(x: Value) -> Value:
    """``x != 0`` as i1 (itself when it is i1)."""
    t = _type(x)
    return x if t.element == i1 else graph.ne(x, _const(0, t.element))


def nonzero(x: Value, dim: str) -> Value:
    """The i64 coordinates [dim, rank] of the nonzero elements of ``x``, in row-major order (torch.nonzero)."""
    shape = _static_shape(x, "nonzero")
    mask, n = _flat(_truthy(x), "nonzero")
    coordinates = np.stack(np.unravel_index(np.arange(n), shape), axis=-1) if shape else np.zeros((n, 0))
    rows, _ = graph.compress(mask, [_const(coordinates.reshape(n, len(shape)), i64)], dim=dim)
    return rows  # type: ignore[no-any-return]


def masked_select(x: Value, mask: Value, dim: str) -> Value:
    """The elements [dim] of ``x`` where ``mask`` is true, both broadcast to one shape (torch.masked_select)."""
    a, b = _static_shape(x, "masked_select"), _static_shape(mask, "masked_select")
    shape: list[Dim] = list(np.broadcast_shapes(a, b))
    flat_x, _ = _flat(graph.broadcast_to(x, shape=shape) if list(a) != shape else x, "masked_select")
    flat_m, _ = _flat(graph.broadcast_to(mask, shape=shape) if list(b) != shape else mask, "masked_select")
    rows, _ = graph.compress(_truthy(flat_m), [flat_x], dim=dim)
    return rows  # type: ignore[no-any-return]


def _count(mask: Value, axis: int) -> Value:
    return graph.reduce_sum(graph.cast(mask, dtype=i64), axes=[axis])


def _pick(select: Value, values: Value) -> Value:
    """Row k of ``select`` [k, i] picks the one ``values[i]`` it marks (a sum with one term, so exact)."""
    zero = _const(0, _type(values).element)
    return graph.reduce_sum(graph.where(select, graph.unsqueeze(values, axes=[0]), zero), axes=[1])


def unique(x: Value, dim: str) -> tuple[Value, Value, Value]:
    """(values [dim], inverse shaped as ``x``, counts [dim]) of the sorted distinct elements of ``x``."""
    flat, n = _flat(x, "unique")
    row, column = graph.unsqueeze(flat, axes=[1]), graph.unsqueeze(flat, axes=[0])  # [n, 1], [1, n]
    equal = graph.eq(row, column)  # [i, j]: x_i == x_j
    earlier = _const(np.tri(n, n, -1, dtype=bool), i1)  # [i, j]: j < i
    first = graph.eq(_count(graph.and_(equal, earlier), 1), _const(0, i64))  # no equal element before i
    # The rank of x_i among the distinct values: first occurrences j with x_j < x_i; it is also the inverse.
    rank = _count(graph.and_(graph.lt(column, row), graph.unsqueeze(first, axes=[0])), 1)
    counts = _count(equal, 1)
    slots = _const(np.arange(n), i64)
    select = graph.and_(graph.eq(graph.unsqueeze(slots, axes=[1]), graph.unsqueeze(rank, axes=[0])), first)
    values, how_many = _pick(select, flat), _pick(select, counts)  # slot k: the distinct value of rank k
    kept = graph.lt(slots, _count(first, 0))
    out, out_counts, _ = graph.compress(kept, [values, how_many], dim=dim)
    return out, graph.reshape(rank, shape=list(_type(x).shape)), out_counts


def unique_consecutive(x: Value, dim: str) -> tuple[Value, Value, Value]:
    """(values [dim], inverse shaped as ``x``, counts [dim]) of the runs of equal neighbours in ``x``."""
    flat, n = _flat(x, "unique_consecutive")
    if n == 0:
        empty = _const(np.zeros(0, np.int64), i64)
        out, out_counts, _ = graph.compress(_const(np.zeros(0, bool), i1), [flat, empty], dim=dim)
        return out, graph.reshape(empty, shape=list(_type(x).shape)), out_counts
    head = graph.slice(flat, starts=[0], ends=[1], axes=[0])
    previous = graph.concat([head, graph.slice(flat, starts=[0], ends=[n - 1], axes=[0])], axis=0)
    starts = graph.or_(graph.ne(flat, previous), _const(np.arange(n) == 0, i1))
    run = graph.sub(graph.cumsum(graph.cast(starts, dtype=i64), axis=0), _const(1, i64))
    counts = _count(graph.eq(graph.unsqueeze(run, axes=[1]), graph.unsqueeze(run, axes=[0])), 1)
    out, out_counts, _ = graph.compress(starts, [flat, counts], dim=dim)
    return out, graph.reshape(run, shape=list(_type(x).shape)), out_counts
