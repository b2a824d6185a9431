"""Lowering gathers, scatters and embedding lookup: index operands loaded, cast to ``index`` and used as loads'
or stores' positions.

Negative indices count from the end of their axis (not in ``embedding``) through a ``select``. Every
data-dependent position is then checked by a ``loop.check`` located at the graph op: an index out of range
fails the kernel with a message naming the op and the dimension (the interpreters raise, the CPU backend
returns the check's status, CUDA traps) instead of reading or writing outside the buffer. WebGPU has no
run-time failures and leaves the check out. The graph interpreter's range check is the contract (see
docs/lowering.md).
Scatters copy the data, then apply the updates in row-major order in one serial nest, so with reduction
"none" the last of several updates to one element wins, and the other reductions fold in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.shapes import normalize_axis
from ..ir.types import IntegerType, ScalarType, index
from .kernel import Kernel, element_of, lowering, shape_of

Combine = Callable[[Value, Value], Value]


def position(k: Kernel, raw: Value, size: Value, negative: bool = True, axis: int = 0) -> Value:
    """An index operand's element as an ``index``, checked to lie in ``[0, size)`` (``loop.check``: the kernel
    fails naming the graph op and ``axis``); with ``negative``, values below 0 count from ``size`` first."""
    i = loop.cast(raw, dtype=index)
    t = raw.type
    wraps = negative and not (isinstance(t, IntegerType) and not t.signed)
    if wraps:
        i = loop.select(loop.cmp(i, k.index(0), predicate="lt"), loop.add(i, size), i)
    check_in_range(k, i, size, axis, wraps)
    return i  # type: ignore[no-any-return]


def check_in_range(k: Kernel, i: Value, size: Value, axis: int, wraps: bool = False) -> None:
    """A ``loop.check`` that the data-dependent position ``i`` lies in ``[0, size)`` along ``axis`` of the
    indexed operand, located at the graph op: an index out of range fails the kernel with a message, where
    it would read or write outside the buffer."""
    inside = loop.and_(loop.cmp(i, k.index(0), predicate="ge"), loop.cmp(i, size, predicate="lt"))
    n = loop.const_value(size)
    if n is not None:
        where = f"of size {n} (allowed: {-n if wraps else 0} to {n - 1})"
    else:
        where = f"(allowed: {'-size' if wraps else '0'} to size - 1, its size known at run time)"
    message = f"'{k.op.name}': an index is out of range for dimension {axis} {where}"
    loop.check(inside, message=message, loc=k.op.loc)


def _names(rank: int, prefix: str = "i") -> list[str]:
    return [f"{prefix}{a}" for a in range(rank)]


def checked_load(k: Kernel, buffer: Value, indices: Sequence[Value]) -> Value:
    """A load at data-dependent ``indices``, located at the graph op so that a bad index names it."""
    return loop.load(buffer, list(indices), loc=k.op.loc)  # type: ignore[no-any-return]


@lowering("graph.gather")
def lower_gather(op: Operation, k: Kernel) -> None:
    """out[a.., i.., b..] = data[a.., indices[i..], b..] along ``axis``."""
    data, indices = k.inputs
    out = k.outputs[0]
    axis = normalize_axis(op.opdef.attr_kwargs(op)["axis"], len(shape_of(data)))
    depth = len(shape_of(indices))
    size = k.size(data, axis)
    with k.loops(k.sizes(out), _names(len(shape_of(out)))) as ivs:
        picked = position(k, loop.load(indices, ivs[axis : axis + depth]), size, axis=axis)
        source = ivs[:axis] + [picked] + ivs[axis + depth :]
        loop.store(checked_load(k, data, source), out, ivs)


@lowering("graph.gather_elements")
def lower_gather_elements(op: Operation, k: Kernel) -> None:
    """out[p] = data[p with p[axis] = indices[p]], over the positions p of ``indices``."""
    data, indices = k.inputs
    out = k.outputs[0]
    rank = len(shape_of(data))
    axis = normalize_axis(op.opdef.attr_kwargs(op)["axis"], rank)
    size = k.size(data, axis)
    with k.loops(k.sizes(out), _names(rank)) as ivs:
        source = list(ivs)
        source[axis] = position(k, loop.load(indices, ivs), size, axis=axis)
        loop.store(checked_load(k, data, source), out, ivs)


@lowering("graph.embedding")
def lower_embedding(op: Operation, k: Kernel) -> None:
    """out[i.., d] = weight[indices[i..], d]; indices are not counted from the end."""
    weight, indices = k.inputs
    out = k.outputs[0]
    rank = len(shape_of(out))
    rows = k.size(weight, 0)
    with k.loops(k.sizes(out), _names(rank)) as ivs:
        row = position(k, loop.load(indices, ivs[:-1]), rows, negative=False)
        loop.store(checked_load(k, weight, [row, ivs[-1]]), out, ivs)


def _tuple_positions(k: Kernel, indices: Value, prefix: Sequence[Value], data: Value, first: int) -> list[Value]:
    """The index tuple at ``indices[prefix.., :]`` as positions along data axes ``first, first + 1, ...``."""
    length = shape_of(indices)[-1]
    assert isinstance(length, int)
    return [
        position(k, loop.load(indices, [*prefix, k.index(j)]), k.size(data, first + j), axis=first + j)
        for j in range(length)
    ]


@lowering("graph.gather_nd")
def lower_gather_nd(op: Operation, k: Kernel) -> None:
    """out[b.., i.., r..] = data[b.., indices[b.., i.., :].., r..] with ``batch_dims`` shared batch dims."""
    data, indices = k.inputs
    out = k.outputs[0]
    batch = op.opdef.attr_kwargs(op)["batch_dims"]
    depth = len(shape_of(indices)) - 1
    with k.loops(k.sizes(out), _names(len(shape_of(out)))) as ivs:
        picked = _tuple_positions(k, indices, ivs[:depth], data, batch)
        source = ivs[:batch] + picked + ivs[depth:]
        loop.store(checked_load(k, data, source), out, ivs)


def _copy(k: Kernel, src: Value, dst: Value) -> None:
    with k.loops(k.sizes(dst), _names(len(shape_of(dst)), "c")) as ivs:
        loop.store(loop.load(src, ivs), dst, ivs)


def _combine(reduction: str, t: ScalarType) -> Combine | None:
    """How an update folds into the element it hits (None: it replaces it)."""
    is_bool = isinstance(t, IntegerType) and t.is_bool
    table: dict[str, Combine | None] = {
        "none": None,
        "add": loop.add,
        "mul": loop.mul,
        "max": loop.or_ if is_bool else loop.max,
        "min": loop.and_ if is_bool else loop.min,
    }
    return table[reduction]


def _apply_update(k: Kernel, out: Value, target: list[Value], update: Value, combine: Combine | None) -> None:
    value = update if combine is None else combine(checked_load(k, out, target), update)
    loop.store(value, out, target, loc=k.op.loc)


@lowering("graph.scatter_elements")
def lower_scatter_elements(op: Operation, k: Kernel) -> None:
    """Copy data, then for each position p of ``indices`` in order: out[p with p[axis] = indices[p]] (op)=
    updates[p]."""
    data, indices, updates = k.inputs
    out = k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    rank = len(shape_of(data))
    axis = normalize_axis(attrs["axis"], rank)
    combine = _combine(attrs["reduction"], element_of(out))
    _copy(k, data, out)
    size = k.size(data, axis)
    with k.loops(k.sizes(indices), _names(rank, "u")) as ivs:
        target = list(ivs)
        target[axis] = position(k, loop.load(indices, ivs), size, axis=axis)
        _apply_update(k, out, target, loop.load(updates, ivs), combine)


@lowering("graph.scatter_nd")
def lower_scatter_nd(op: Operation, k: Kernel) -> None:
    """Copy data, then for each index tuple in order: out[tuple.., r..] (op)= updates[i.., r..]."""
    data, indices, updates = k.inputs
    out = k.outputs[0]
    combine = _combine(op.opdef.attr_kwargs(op)["reduction"], element_of(out))
    _copy(k, data, out)
    depth = len(shape_of(indices)) - 1
    with k.loops(k.sizes(updates), _names(len(shape_of(updates)), "u")) as ivs:
        target = _tuple_positions(k, indices, ivs[:depth], data, 0) + ivs[depth:]
        _apply_update(k, out, target, loop.load(updates, ivs), combine)
