"""Reductions and softmax that keep the fastest dim, on CPUs: rows stream through vector lanes.

The general lowering (:mod:`.reduce`) puts the kept dims outside and the reduced ones inside, with a
local accumulator per kept position. When the innermost dim is kept (``x.sum(axis=0)`` of a matrix, a
mean over the batch or the sequence of a ``[B, S, D]`` tensor), that reads ``x`` along a column, one
element per cache line, and the inner loop cannot use vector lanes: 1 GB/s against numpy's 10-23 on a
4096 x 4096 sum over axis 0. Here the result itself accumulates (it has the accumulator's type), and the
loops run in ``x``'s memory order, so the innermost loop walks the kept fastest dim over contiguous
elements of ``x`` and of the result, on vector lanes:

    out[...] = identity (or x at the first reduced position: max, min)
    for i0 in kept dims before the first reduced one (parallel: each owns its part of out)
      for r0 ... (reduced and kept dims in memory order)
        for c in fastest dim (vectorized): out[i0, ..., c] = combine(out[i0, ..., c], x[i0, r0, ..., c])
    out[...] /= count                                                     (mean)

Loops are named as in the general lowering (``i0, i1, ...`` kept, ``r0, ...`` reduced; the column
blocks ``i<n>_o``), the start's ``init_i0, ...`` and the mean's ``mean_i0, ...``. Where no kept dim lies
outside the first reduced one (``axis=0``), the fastest dim is cut into up to
:data:`COLUMN_BLOCKS` blocks of whole vectors and the blocks run in parallel, each streaming its columns
of every row. The order of the terms of each result is the reference's (row by row), so sums match the
general lowering exactly. Used for f32 and 64-bit integer results (the accumulator's type); f16 and bf16
results, which accumulate in f32, and every other target keep the general lowering.

Softmax and log-softmax along an axis that is not the fastest (:func:`lower_column_softmax`: the channels of
``[N, C, H, W]``) walk blocks of the fastest dim with their maxima and sums in local buffers: 22.6 -> 2.5 ms
for ``softmax(axis=1)`` of 8 x 21 x 128 x 128 (PyTorch eager 2.0 ms), one process, 2 threads. argmax and argmin
along such an axis (:func:`lower_column_arg_reduction`) do the same with selects: 12.2 -> 0.33 ms for the
channels of 8 x 21 x 128 x 128 (numpy 10.1 ms, PyTorch 37.9 ms). Along the fastest dim,
:func:`lower_lane_arg_reduction` keeps a best value and index per vector lane and combines the lanes at the end of
each row: 47 -> 9.4 ms for 4096 x 4096 (numpy 5.9 ms, PyTorch 36.6 ms).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.shapes import normalize_axes, normalize_axis
from ..ir.types import BufferType, FloatType, Sym, f32, i64
from .kernel import LOWERINGS, Kernel, convert, element_of, register_target_lowering, shape_of
from .misc import arg_better
from .reduce import _accumulator_type, _combine, _identity, vector_width

COLUMN_BLOCKS = 8
"""Most blocks the fastest dim is cut into when it is the only kept dim to run in parallel over."""

REDUCTIONS = ("graph.reduce_sum", "graph.reduce_mean", "graph.reduce_prod", "graph.reduce_max", "graph.reduce_min")

SOFTMAX_BLOCK = 16
"""Vectors of the fastest dim per block of a column softmax: its maximum and sum live in two local buffers."""


def keeps_fastest_dim(op: Operation, k: Kernel) -> bool:
    """Whether this lowering applies: the last dim of ``x`` is kept, no reduced dim is the last, and the
    result has the accumulator's type (so that it can accumulate in place)."""
    x, out = k.inputs[0], k.outputs[0]
    rank = len(shape_of(x))
    axes = normalize_axes(op.opdef.attr_kwargs(op)["axes"], rank)
    if not axes or rank - 1 in axes:
        return False
    return element_of(out) == _accumulator_type(op.name, element_of(x))


def lower_cpu_reduction(op: Operation, k: Kernel) -> None:
    """Reductions on CPUs: :func:`lower_columns` where it applies (:func:`keeps_fastest_dim`), else the
    general lowering (the one registered for every target, looked up at each call)."""
    if keeps_fastest_dim(op, k):
        lower_columns(op, k)
    else:
        LOWERINGS[op.name](op, k)


def lower_columns(op: Operation, k: Kernel) -> None:
    """The lowering of the module docstring."""
    x, out = k.inputs[0], k.outputs[0]
    shape = shape_of(x)
    rank = len(shape)
    attrs = op.opdef.attr_kwargs(op)
    axes = normalize_axes(attrs["axes"], rank)
    keepdims = attrs["keepdims"]
    acc_t = element_of(out)
    combine = _combine(op.name, acc_t)
    sizes = k.sizes(x)
    kept = [a for a in range(rank) if a not in axes]
    names = {a: f"i{kept.index(a)}" if a in kept else f"r{axes.index(a)}" for a in range(rank)}
    lanes = vector_width(k, "reduce", acc_t)

    def where(position: dict[int, Value]) -> list[Value]:
        return (
            [position[a] if a in kept else k.index(0) for a in range(rank)] if keepdims else [position[a] for a in kept]
        )

    extreme = op.name in ("graph.reduce_max", "graph.reduce_min")
    if extreme:
        k.check_not_empty([sizes[a] for a in axes], "reduces a dimension that is empty at run time")
    # The start: every result the identity, or the first reduced element (max and min have no identity).
    with _nest(k, [(a, sizes[a], f"init_{names[a]}") for a in kept], lanes) as ivs:
        position = dict(zip(kept, ivs))
        if extreme:
            position.update((a, k.index(0)) for a in axes)
            start = convert(loop.load(x, [position[a] for a in range(rank)], loc=op.loc), acc_t)
        else:
            start = k.const(_identity(op.name), acc_t)
        loop.store(start, out, where(position))
    # The accumulation, in memory order.
    outside = [a for a in kept if a < axes[0]]
    moving = [a for a in outside if not _is_one(shape[a])]
    last = rank - 1
    with ExitStack() as stack:
        position = {}
        column_start = k.index(0)
        column_end = sizes[last]
        if not moving:
            width = _block_width(shape[last], lanes)
            block = stack.enter_context(
                loop.for_(k.index(0), sizes[last], k.index(width), kind="parallel", name=f"{names[last]}_o")
            )
            column_start, column_end = block, loop.min(loop.add(block, k.index(width)), sizes[last])
        for a in range(last):
            kind = "parallel" if moving and a == moving[0] else "serial"
            position[a] = stack.enter_context(loop.for_(k.index(0), sizes[a], k.index(1), kind=kind, name=names[a]))
        kind, factor = ("vectorize", lanes) if lanes > 1 else ("serial", None)
        position[last] = stack.enter_context(
            loop.for_(column_start, column_end, k.index(1), kind=kind, factor=factor, name=names[last])
        )
        term = convert(loop.load(x, [position[a] for a in range(rank)]), acc_t)
        loop.store(combine(loop.load(out, where(position)), term), out, where(position))
    if op.name == "graph.reduce_mean":
        count = convert(k.product([sizes[a] for a in axes]), acc_t)
        with _nest(k, [(a, sizes[a], f"mean_{names[a]}") for a in kept], lanes) as ivs:
            position = dict(zip(kept, ivs))
            loop.store(loop.div(loop.load(out, where(position)), count), out, where(position))


class _nest:
    """A nest over ``(dim, bound, name)`` loops whose innermost is vectorized by ``lanes`` (when over 1) and
    outermost parallel when there are several; yields the induction variables."""

    def __init__(self, k: Kernel, dims: list[tuple[int, Value, str]], lanes: int) -> None:
        self.k, self.dims, self.lanes = k, dims, lanes
        self.stack = ExitStack()

    def __enter__(self) -> list[Value]:
        ivs: list[Value] = []
        for n, (_, bound, name) in enumerate(self.dims):
            innermost = n == len(self.dims) - 1
            if innermost and self.lanes > 1:
                kind, factor = "vectorize", self.lanes
            else:
                kind, factor = ("parallel" if n == 0 else "serial"), None
            ivs.append(
                self.stack.enter_context(
                    loop.for_(self.k.index(0), bound, self.k.index(1), kind=kind, factor=factor, name=name)
                )
            )
        return ivs

    def __exit__(self, *exc: object) -> None:
        self.stack.close()


class _ColumnBlocks:
    """The loops of a column kernel along ``axis`` of ``x`` (softmax, argmax): the kept dims but the fastest
    (the first that moves and lies before ``axis`` in parallel), then blocks of :data:`SOFTMAX_BLOCK` vectors
    of ``lanes`` of the fastest dim (in parallel where no dim before the axis moves). Inside, ``lanes_loop``
    runs over the block's columns (vectorized when ``lanes`` is over 1) and ``at(r, c)`` indexes ``x`` at
    position ``r`` of the axis and column ``c`` of the block."""

    def __init__(self, k: Kernel, x: Value, axis: int, lanes: int) -> None:
        self.k, self.x, self.axis, self.lanes = k, x, axis, lanes
        self.width = SOFTMAX_BLOCK * max(lanes, 1)
        self.stack = ExitStack()
        self.position: dict[int, Value] = {}

    def __enter__(self) -> _ColumnBlocks:
        k, shape, sizes = self.k, shape_of(self.x), self.k.sizes(self.x)
        last = len(shape) - 1
        kept = [a for a in range(len(shape)) if a != self.axis]
        moving = [a for a in kept if a < self.axis and not _is_one(shape[a])]
        for a in kept[:-1]:
            kind = "parallel" if moving and a == moving[0] else "serial"
            self.position[a] = self.stack.enter_context(
                loop.for_(k.index(0), sizes[a], k.index(1), kind=kind, name=f"i{kept.index(a)}")
            )
        name = f"i{kept.index(last)}_o"
        kind = "serial" if moving else "parallel"
        self.block = self.stack.enter_context(
            loop.for_(k.index(0), sizes[last], k.index(self.width), kind=kind, name=name)
        )
        self.columns = loop.min(loop.sub(sizes[last], self.block), k.index(self.width))
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def lanes_loop(self, name: str) -> AbstractContextManager[Value]:
        kind, factor = ("vectorize", self.lanes) if self.lanes > 1 else ("serial", None)
        return loop.for_(self.k.index(0), self.columns, self.k.index(1), kind=kind, factor=factor, name=name)

    def at(self, r: Value, c: Value) -> list[Value]:
        rank = len(shape_of(self.x))
        where = dict(self.position)
        where[self.axis] = r
        where[rank - 1] = loop.add(self.block, c)
        return [where[a] for a in range(rank)]


def _is_one(d: object) -> bool:
    return not isinstance(d, Sym) and d == 1


def _block_width(d: object, lanes: int) -> int:
    """Columns per parallel block of a fastest dim of size ``d``: whole vectors, at most
    :data:`COLUMN_BLOCKS` blocks (a run-time size: blocks of 64 vectors)."""
    vector = max(lanes, 1)
    if isinstance(d, Sym):
        return 64 * vector
    per_block = -(-int(d) // COLUMN_BLOCKS)  # type: ignore[call-overload]
    return max(vector, -(-per_block // vector) * vector)


def lower_cpu_softmax(op: Operation, k: Kernel) -> None:
    """(Log) softmax on CPUs: :func:`lower_column_softmax` along an axis that is not the fastest, in f32;
    else the general lowering."""
    x, out = k.inputs[0], k.outputs[0]
    rank = len(shape_of(x))
    axis = normalize_axis(op.opdef.attr_kwargs(op)["axis"], rank)
    if axis != rank - 1 and element_of(x) == f32 and element_of(out) == f32:
        lower_column_softmax(op, k, axis)
    else:
        LOWERINGS[op.name](op, k)


def lower_column_softmax(op: Operation, k: Kernel, axis: int) -> None:
    """Softmax along ``axis`` with the fastest dim kept (``softmax(x, axis=1)`` of ``[N, C, H, W]``): the kept
    positions are walked in blocks of :data:`SOFTMAX_BLOCK` vectors of the fastest dim, each with its maximum
    and sum in two local buffers, and three passes over the axis read whole rows of the block:

        for i0 ... (kept dims before the axis; the first that moves in parallel)
          for i1 ... (kept dims after it but the last)
            for c0 in [0, last, block) (in parallel where no dim before the axis moves)
              top[c] = -inf; total[c] = 0
              for max_r0: for c: top[c] = max(top[c], x[.., r, .., c0 + c])
              for sum_r0: for c: e = exp(x - top[c]); out = e (softmax); total[c] += e
              for out_r0: for c: out = out * (1 / total[c])  |  log: x - top[c] - log(total[c])

    As the general lowering, but each result's terms combine in the reference's order (row by row), with no
    partial accumulators."""
    x, out = k.inputs[0], k.outputs[0]
    log = op.name == "graph.log_softmax"
    sizes = k.sizes(x)
    lanes = vector_width(k, "softmax", f32)
    with _ColumnBlocks(k, x, axis, lanes) as blocks:
        top = loop.alloc(type=BufferType((blocks.width,), f32, "local"))
        total = loop.alloc(type=BufferType((blocks.width,), f32, "local"))
        lanes_loop, at = blocks.lanes_loop, blocks.at

        with lanes_loop("init_c") as c:
            loop.store(k.const(float("-inf"), f32), top, [c])
            loop.store(k.const(0.0, f32), total, [c])
        with loop.for_(k.index(0), sizes[axis], k.index(1), name="max_r0") as r, lanes_loop("max_c") as c:
            loop.store(loop.max(loop.load(top, [c]), loop.load(x, at(r, c))), top, [c])
        # Each body computes its element's indices once: the vectorizer runs a loop on lanes only when a
        # buffer it stores is loaded at the very same index values.
        with loop.for_(k.index(0), sizes[axis], k.index(1), name="sum_r0") as r, lanes_loop("sum_c") as c:
            where = at(r, c)
            e = loop.exp(loop.sub(loop.load(x, where), loop.load(top, [c])))
            if not log:
                loop.store(e, out, where)
            loop.store(loop.add(loop.load(total, [c]), e), total, [c])
        with loop.for_(k.index(0), sizes[axis], k.index(1), name="out_r0") as r, lanes_loop("out_c") as c:
            where = at(r, c)
            if log:
                shifted = loop.sub(loop.load(x, where), loop.load(top, [c]))
                y = loop.sub(shifted, loop.log(loop.load(total, [c])))
            else:
                y = loop.mul(loop.load(out, where), loop.div(k.const(1.0, f32), loop.load(total, [c])))
            loop.store(y, out, where)


def lower_cpu_arg_reduction(op: Operation, k: Kernel) -> None:
    """argmax / argmin on CPUs: :func:`lower_column_arg_reduction` along an axis that is not the fastest,
    :func:`lower_lane_arg_reduction` along the fastest."""
    rank = len(shape_of(k.inputs[0]))
    if normalize_axis(op.opdef.attr_kwargs(op)["axis"], rank) != rank - 1:
        lower_column_arg_reduction(op, k)
    else:
        lower_lane_arg_reduction(op, k)


def lower_lane_arg_reduction(op: Operation, k: Kernel) -> None:
    """argmax / argmin along the fastest dim on vector lanes: each lane keeps the best value and index of the
    elements it sees (every ``lanes``-th), then the lanes combine in one scalar pass, where an equal value
    (or a second NaN) goes to the lower index, or the higher with ``select_last_index``, and the elements
    after the last whole vector are scanned in order. The same result as the general lowering's scan:

        for i0 ... (kept dims; the default schedule runs the outermost in parallel)
          best[l] = x[.., min(l, n - 1)]; index[l] = min(l, n - 1)
          for r0_b in [0, n - n % lanes, lanes): for r0_v in lanes: select into best, index
          for r0_lanes: combine best[l], index[l] into one;  for r0_t in the tail: the scan's rule
    """
    x, out = k.inputs[0], k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    rank = len(shape_of(x))
    t = element_of(x)
    last_index = attrs["select_last_index"]
    sizes = k.sizes(x)
    n = sizes[-1]
    k.check_not_empty([n], "reduces a dimension that is empty at run time")
    lanes = k.target.lanes(64)  # the indices are i64
    with k.prologue():
        blocked = loop.mul(loop.div(n, k.index(lanes)), k.index(lanes))
        final = loop.sub(n, k.index(1))
    kept_names = [f"i{a}" for a in range(rank - 1)]
    with k.loops(sizes[:-1], kept_names) as outer:
        best = loop.alloc(type=BufferType((lanes,), t, "local"))
        index = loop.alloc(type=BufferType((lanes,), i64, "local"))
        with loop.for_(k.index(0), k.index(lanes), k.index(1), kind="vectorize", factor=lanes, name="r0_init") as lane:
            j = loop.min(lane, final)
            loop.store(loop.load(x, [*outer, j], loc=op.loc), best, [lane])
            loop.store(loop.cast(j, dtype=i64), index, [lane])
        with loop.for_(k.index(0), blocked, k.index(lanes), name="r0_b") as block:
            with loop.for_(k.index(0), k.index(lanes), k.index(1), kind="vectorize", factor=lanes, name="r0_v") as lane:
                j = loop.add(block, lane)
                value, current = loop.load(x, [*outer, j]), loop.load(best, [lane])
                take = arg_better(op, t, value, current)
                loop.store(loop.select(take, value, current), best, [lane])
                loop.store(loop.select(take, loop.cast(j, dtype=i64), loop.load(index, [lane])), index, [lane])
        top = loop.alloc(type=BufferType((), t, "local"))
        top_index = loop.alloc(type=BufferType((), i64, "local"))
        loop.store(loop.load(best, [k.index(0)]), top)
        loop.store(loop.load(index, [k.index(0)]), top_index)
        with loop.for_(k.index(1), k.index(lanes), k.index(1), name="r0_lanes") as lane:
            value, current = loop.load(best, [lane]), loop.load(top)
            at, current_at = loop.load(index, [lane]), loop.load(top_index)
            earlier = loop.cmp(at, current_at, predicate="gt" if last_index else "lt")
            strictly = _better_strictly(op, t, value, current)
            tie = loop.cmp(value, current, predicate="eq")
            if isinstance(t, FloatType):
                both_nan = loop.and_(loop.cmp(value, value, predicate="ne"), loop.cmp(current, current, predicate="ne"))
                tie = loop.or_(tie, both_nan)
            take = loop.or_(strictly, loop.and_(tie, earlier))
            loop.store(loop.select(take, value, current), top)
            loop.store(loop.select(take, at, current_at), top_index)
        with loop.for_(blocked, n, k.index(1), name="r0_t") as j:
            value, current = loop.load(x, [*outer, j]), loop.load(top)
            take = arg_better(op, t, value, current)
            loop.store(loop.select(take, value, current), top)
            loop.store(loop.select(take, loop.cast(j, dtype=i64), loop.load(top_index)), top_index)
        where = [*outer, k.index(0)] if attrs["keepdims"] else outer
        loop.store(loop.load(top_index), out, where)


def _better_strictly(op: Operation, t: object, value: Value, current: Value) -> Value:
    """Whether ``value`` beats ``current`` whatever their indices: greater (argmax) or less (argmin), or a
    NaN against a number."""
    take = loop.cmp(value, current, predicate="gt" if op.name == "graph.argmax" else "lt")
    if isinstance(t, FloatType):
        is_nan = loop.cmp(value, value, predicate="ne")
        return loop.or_(take, loop.and_(is_nan, loop.cmp(current, current, predicate="eq")))  # type: ignore[no-any-return]
    return take  # type: ignore[no-any-return]


def lower_column_arg_reduction(op: Operation, k: Kernel) -> None:
    """argmax / argmin along an axis that is not the fastest (the channels of ``[N, C, H, W]``): as
    :func:`lower_column_softmax`, blocks of the fastest dim keep their best values in a local buffer and their
    indices in the result, and one pass over the axis updates both by selects on vector lanes. The same
    choice as the general lowering's: a NaN wins, ties keep the first index (the last with
    ``select_last_index``)."""
    x, out = k.inputs[0], k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    rank = len(shape_of(x))
    axis = normalize_axis(attrs["axis"], rank)
    t = element_of(x)
    sizes = k.sizes(x)
    k.check_not_empty([sizes[axis]], "reduces a dimension that is empty at run time")
    kept = [a for a in range(rank) if a != axis]
    with _ColumnBlocks(k, x, axis, k.target.lanes(64)) as blocks:  # the indices are i64
        best = loop.alloc(type=BufferType((blocks.width,), t, "local"))
        lanes_loop, at = blocks.lanes_loop, blocks.at

        def result(c: Value) -> list[Value]:
            where = at(k.index(0), c)
            return where if attrs["keepdims"] else [where[a] for a in kept]

        with lanes_loop("init_c") as c:
            loop.store(loop.load(x, at(k.index(0), c), loc=op.loc), best, [c])
            loop.store(k.const(0, i64), out, result(c))
        with loop.for_(k.index(0), sizes[axis], k.index(1), name="r0") as r, lanes_loop("c") as c:
            where = result(c)  # once: the vectorizer needs the result loaded and stored at the same values
            value, current = loop.load(x, at(r, c)), loop.load(best, [c])
            take = arg_better(op, t, value, current)
            loop.store(loop.select(take, value, current), best, [c])
            index = loop.cast(r, dtype=i64)
            loop.store(loop.select(take, index, loop.load(out, where)), out, where)


for _name in REDUCTIONS:
    register_target_lowering("cpu", _name, lower_cpu_reduction)
for _name in ("graph.argmax", "graph.argmin"):
    register_target_lowering("cpu", _name, lower_cpu_arg_reduction)
for _name in ("graph.softmax", "graph.log_softmax"):
    register_target_lowering("cpu", _name, lower_cpu_softmax)
