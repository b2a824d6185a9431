"""Broadcasting to named symbolic dims the input lacks (``mask.expand(batch, 1, seq, seq)``).

``graph.broadcast_to`` takes its target shape as integers, so it can keep an input's own symbolic dim but not
grow a size-1 dim to ``[batch]``. The size of a named dim is known from a value that has it (a function
argument): :func:`broadcast_symbolic` adds zeros shaped by such a value, and elementwise broadcasting grows the
dim. The carrier is summed over its other axes (a few additions per element, tiny beside the model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import Dim, ScalarType, Sym, TensorType, i1, i8, i64, storage_dtype

__all__ = ["arange_symbolic", "broadcast_symbolic", "dim_sources", "slice_to_symbol"]


def dim_sources(values: Sequence[Value]) -> dict[str, tuple[Value, int]]:
    """Each named symbolic dim of ``values``' types -> the first (value, axis) that has it."""
    sources: dict[str, tuple[Value, int]] = {}
    for v in values:
        t = v.type
        if isinstance(t, TensorType):
            for axis, d in enumerate(t.shape):
                if isinstance(d, Sym) and d.name is not None:
                    sources.setdefault(d.name, (v, axis))
    return sources


def broadcast_symbolic(x: Value, target: Sequence[Dim], sources: Mapping[str, tuple[Value, int]]) -> Value | None:
    """``x`` broadcast to ``target``, growing size-1 (or missing) dims to named dims of ``sources``; None
    when some target dim cannot be had that way."""
    t = x.type
    assert isinstance(t, TensorType)
    offset = len(target) - t.rank
    if offset < 0:
        return None
    spec: list[int] = []
    grown: list[tuple[int, Sym]] = []
    for i, d in enumerate(target):
        own = t.shape[i - offset] if i >= offset else 1
        if isinstance(d, int):
            spec.append(d)
        elif own == d:
            spec.append(-1)
        elif own == 1 and d.name in sources:
            spec.append(1)
            grown.append((i, d))
        else:
            return None
    y = x if tuple(spec) == tuple(t.shape) else graph.broadcast_to(x, shape=spec)
    element = t.element
    work = i8 if element == i1 else element
    if work != element:
        y = graph.cast(y, dtype=work)
    for axis, d in grown:
        y = graph.add(y, _zeros_along(sources[str(d.name)], axis, len(target), work))
    return graph.cast(y, dtype=element) if work != element else y


def _zeros_along(source: tuple[Value, int], axis: int, rank: int, element: ScalarType) -> Value:
    """Zeros of ``element`` shaped 1 x ... x [dim] x ... x 1 (``rank`` axes, the dim at ``axis``), the dim
    taken from axis ``source[1]`` of ``source[0]``."""
    value, own_axis = source
    t = value.type
    assert isinstance(t, TensorType)
    # through i1 first: any value (NaN included) becomes 0 or 1, so the sums are finite and times 0 exactly 0
    flags = graph.cast(graph.cast(value, dtype=i1), dtype=element)
    others = [a for a in range(t.rank) if a != own_axis]
    row = graph.reduce_sum(flags, axes=others) if others else flags
    line = graph.reshape(row, shape=[-1 if a == axis else 1 for a in range(rank)])
    return graph.mul(line, _scalar(0, element))


def arange_symbolic(
    start: float, step: float, length: Sym, element: ScalarType, sources: Mapping[str, tuple[Value, int]]
) -> Value | None:
    """``start, start + step, ...`` with a named symbolic ``length`` (a cumulative sum of ones shaped by a
    value that has the dim); None when no value has it."""
    if length.name is None or length.name not in sources:
        return None
    work = element if element != i1 else i8
    ones = graph.add(_zeros_along(sources[length.name], 0, 1, work), _scalar(1, work))
    count = graph.sub(graph.cumsum(ones, axis=0), _scalar(1, work))  # 0, 1, 2, ...
    if step != 1:
        count = graph.mul(count, _scalar(step, work))
    return graph.add(count, _scalar(start, work)) if start else count


def _scalar(value: float, element: ScalarType) -> Value:
    return graph.constant(value=DenseAttr.of(np.asarray(value, storage_dtype(element)), element))


def slice_to_symbol(
    x: Value, axis: int, start: int, step: int, length: Sym, sources: Mapping[str, tuple[Value, int]]
) -> Value | None:
    """``x[start::step]`` along ``axis`` keeping a named symbolic ``length`` of elements (``position_ids[:,
    :seq]``): ``x`` itself when it already has that dim, else a gather at ``arange_symbolic`` indices."""
    t = x.type
    assert isinstance(t, TensorType)
    if t.shape[axis] == length and (start, step) == (0, 1):
        return x
    if start < 0 or step < 1:
        return None
    indices = arange_symbolic(float(start), float(step), length, i64, sources)
    return None if indices is None else graph.gather(x, indices, axis=axis)
