"""The ``gpu_rows`` kernel family: reductions, softmax and norms over trailing axes on GPUs, one block per row.

The reduced (trailing) axes of each row are spread over the block's ``threads``: each thread folds every
``threads``-th element into a register, then the block combines the partial results in shared memory by
halving (``threads / 2`` threads add in the upper half, a barrier, ``threads / 4``, ...), so a row of ``n``
elements takes ``n / threads + log2(threads)`` steps instead of ``n``:

    for r in [0, rows) gpu_block 0:
      partial = shared[threads]
      for t in [0, threads) gpu_thread 0:
        acc = init; for c in [t, n, threads): acc = combine(acc, x[r, c])
        partial[t] = acc; barrier
        for s in threads/2, threads/4, ..., 1: if t < s: partial[t] = combine(partial[t], partial[t + s]); barrier
        total = partial[0]; barrier                  (warp=true: xor shuffles 16, 8, .., 1 in each warp; lane 0
                                                     writes partial[warp]; barrier; the warps' results by shuffles)
        if t == 0: out[r] = total                    (reduce_sum / mean / max / min)
        for c in [t, n, threads): out[r, c] = ...    (softmax: a max pass, then a sum pass; layer norm: a mean
                                                     pass, then a variance pass; RMS norm: a mean-square pass)

f32 ops with static shapes whose reduced axes are the trailing ones (norms with all their optional operands or
none); others keep their general family. The
knobs: the threads per block, and on CUDA ``warp`` (shuffles within warps, shared memory only between them;
the default).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.shapes import normalize_axis
from ..ir.types import BufferType, TensorType, f32
from ..targets import Target
from ..targets.cuda import ARCHS, WARP
from .kernel import LOWERINGS, Kernel, delinearize, register_target_lowering
from .space import Config, Family, Knob, Space, register_target_family

REDUCTIONS = {
    "graph.reduce_sum": ("add", 0.0),
    "graph.reduce_mean": ("add", 0.0),
    "graph.reduce_max": ("max", -math.inf),
    "graph.reduce_min": ("min", math.inf),
}
SOFTMAX = ("graph.softmax", "graph.log_softmax")
NORMS = {"graph.layer_norm": 3, "graph.rms_norm": 2}
"""Norms by their operand count with every optional operand given (x, weight, bias): the family builds a norm
with all of them or with none."""
THREADS = (32, 64, 128, 256, 512, 1024)


def row_split(op: Operation) -> tuple[int, int, int] | None:
    """(rows, elements per row, reduced trailing axes) of an op this family builds, or None."""
    if op.name not in REDUCTIONS and op.name not in SOFTMAX and op.name not in NORMS:
        return None
    if op.name in NORMS and len(op.operands) not in (1, NORMS[op.name]):
        return None
    x, out = op.operands[0].type, op.results[0].type
    if not all(isinstance(t, TensorType) and t.element == f32 and t.is_static for t in (x, out)):
        return None
    assert isinstance(x, TensorType)
    shape = x.static_shape
    if not shape:
        return None
    if op.name in SOFTMAX:
        axes = [normalize_axis(int(op.attr("axis", -1)), len(shape))]
    elif op.name in NORMS:
        axes = list(range(normalize_axis(int(op.attr("axis", -1)), len(shape)), len(shape)))
        normalized = shape[axes[0] :]
        if any(not isinstance(v.type, TensorType) or v.type.shape != normalized for v in op.operands[1:]):
            return None
    else:
        given = op.attr("axes")
        axes = sorted(normalize_axis(a, len(shape)) for a in given) if given else list(range(len(shape)))
    if axes != list(range(len(shape) - len(axes), len(shape))):
        return None
    cols = math.prod(shape[len(shape) - len(axes) :])
    return math.prod(shape) // max(1, cols), cols, len(axes)


def gpu_rows_space(op: Operation, target: Target) -> Space | None:
    """Threads per block: whole warps up to the target's block limit."""
    if row_split(op) is None:
        return None
    arch = ARCHS.get(target.cpu)
    most = arch.max_threads if arch is not None else THREADS[-1]
    return Space(
        "gpu_rows",
        (
            Knob("threads", tuple(t for t in THREADS if t <= most), "threads per row"),
            Knob("warp", (True, False), "combine within warps by shuffles (else a shared-memory tree throughout)"),
        ),
    )


def gpu_rows_default(op: Operation, target: Target, space: Space) -> Config:
    """A warp per 32 elements of a row, up to 256 threads; warp shuffles where the space has them."""
    split = row_split(op)
    assert split is not None
    threads = max(WARP, min(256, 1 << max(0, split[1] - 1).bit_length()))
    warp = (("warp", True),) if any(k.name == "warp" for k in space.knobs) else ()
    return Config("gpu_rows", (("threads", threads), *warp))


Combine = Callable[[Value, Value], Value]
_COMBINE: dict[str, Combine] = {"add": loop.add, "max": loop.max, "min": loop.min}


def lower_gpu_rows(op: Operation, k: Kernel) -> None:
    """The kernel of the module docstring at ``k``'s config; the general lowering for other families."""
    split = row_split(op)
    if k.config is None or k.config.family != "gpu_rows" or split is None:
        LOWERINGS[op.name](op, k)
        return
    rows, cols, reduced = split
    threads = k.config.int("threads")
    warp = bool(k.config.as_dict().get("warp", False))
    x = k.inputs[0]
    (out,) = k.outputs
    x_shape = x.type.static_shape  # type: ignore[attr-defined]
    lead = [k.index(d) for d in x_shape[: len(x_shape) - reduced]]
    tail = [k.index(d) for d in x_shape[len(x_shape) - reduced :]]
    out_sizes = [k.index(d) for d in out.type.static_shape]  # type: ignore[attr-defined]
    with loop.for_(0, rows, kind="gpu_block", axis=0, name="row") as r:
        # shuffles need shared memory only between warps: one partial result per warp
        slots = threads // WARP if warp else threads
        partials = loop.alloc(type=BufferType((slots,), f32, "shared")) if slots > 1 else None
        with loop.for_(0, threads, kind="gpu_thread", axis=0, name="t") as t:
            row = delinearize(r, lead) if lead else []

            def element(c: Value) -> Value:
                return loop.load(x, *row, *delinearize(c, tail))  # type: ignore[no-any-return]

            block = _BlockReduce(k, t, threads, cols, partials, warp)
            if op.name in REDUCTIONS:
                how, init = REDUCTIONS[op.name]
                total = block.reduce(how, init, element)
                if op.name == "graph.reduce_mean":
                    total = loop.div(total, k.const(float(cols), f32))
                with loop.if_(loop.cmp(t, k.index(0), predicate="eq")):
                    loop.store(total, out, *delinearize(r, out_sizes))
            else:

                def store(value: Value, c: Value) -> None:
                    loop.store(value, out, *row, *delinearize(c, tail))

                if op.name in SOFTMAX:
                    _softmax(op.name == "graph.log_softmax", block, element, store)
                else:

                    def param(w: Value, c: Value) -> Value:
                        return loop.load(w, *delinearize(c, tail))  # type: ignore[no-any-return]

                    _norm(op, k, block, element, [partial(param, w) for w in k.inputs[1:]], store)


def _softmax(
    log: bool, block: _BlockReduce, element: Callable[[Value], Value], store: Callable[[Value, Value], None]
) -> None:
    """Softmax (log-softmax when ``log``) of the row: its max, the sum of exp(x - max), then each element."""
    top = block.reduce("max", -math.inf, element)
    total = block.reduce("add", 0.0, lambda c: loop.exp(loop.sub(element(c), top)))
    log_total = loop.log(total) if log else None
    with loop.for_(block.t, block.cols, block.threads, name="w") as c:
        shifted = loop.sub(element(c), top)
        store(loop.sub(shifted, log_total) if log_total is not None else loop.div(loop.exp(shifted), total), c)


def _norm(
    op: Operation,
    k: Kernel,
    block: _BlockReduce,
    element: Callable[[Value], Value],
    params: Sequence[Callable[[Value], Value]],
    store: Callable[[Value, Value], None],
) -> None:
    """Layer norm (mean and variance passes) or RMS norm (a mean-square pass) of the row, then each element
    scaled (and shifted) by the weight (and bias) at its position."""
    count = k.const(float(block.cols), f32)
    centered = element
    if op.name == "graph.layer_norm":
        rough = loop.div(block.reduce("add", 0.0, element), count)
        correction = block.reduce("add", 0.0, lambda c: loop.sub(element(c), rough))
        mean = loop.add(rough, loop.div(correction, count))  # exact for a row of equal values (see lower_norm)

        def centered(c: Value) -> Value:
            return loop.sub(element(c), mean)  # type: ignore[no-any-return]

    square = block.reduce("add", 0.0, lambda c: loop.mul(centered(c), centered(c)))
    root = loop.sqrt(loop.add(loop.div(square, count), k.const(float(op.attr("eps")), f32)))
    with loop.for_(block.t, block.cols, block.threads, name="w") as c:
        value = loop.div(centered(c), root)
        if params:
            value = loop.mul(value, params[0](c))
        if len(params) > 1:
            value = loop.add(value, params[1](c))
        store(value, c)


class _BlockReduce:
    """Reductions of one row by the threads of a block (built inside its ``gpu_thread`` loop): through a
    shared-memory tree, or (``warp``) by shuffles within each warp and then across the warps' results."""

    def __init__(self, k: Kernel, t: Value, threads: int, cols: int, partial: Value | None, warp: bool = False) -> None:
        self.k, self.t, self.threads, self.cols, self.partial, self.warp = k, t, threads, cols, partial, warp

    def reduce(self, how: str, init: float, element: Callable[[Value], Value]) -> Value:
        """The row's ``how`` (add, max, min) of ``element(c)``, known to every thread afterwards."""
        k, t, combine = self.k, self.t, _COMBINE[how]
        acc = loop.alloc(type=BufferType((), f32, "local"))
        loop.store(k.const(init, f32), acc)
        with loop.for_(t, self.cols, self.threads, name="c") as c:
            loop.store(combine(loop.load(acc), element(c)), acc)
        if self.warp:
            return self._by_shuffles(how, loop.load(acc))
        assert self.partial is not None
        loop.store(loop.load(acc), self.partial, t)
        loop.barrier()
        half = self.threads // 2
        while half >= 1:
            with loop.if_(loop.cmp(t, k.index(half), predicate="lt")):
                other = loop.load(self.partial, loop.add(t, k.index(half)))
                loop.store(combine(loop.load(self.partial, t), other), self.partial, t)
            loop.barrier()
            half //= 2
        total = loop.load(self.partial, k.index(0))
        loop.barrier()  # every thread has read the total before the next reduction overwrites it
        return total  # type: ignore[no-any-return]

    def _by_shuffles(self, how: str, value: Value) -> Value:
        """A butterfly of ``xor`` shuffles in each warp; with several warps, lane 0 of each writes its warp's
        result to shared memory and, after a barrier, every warp combines those the same way."""
        k, t, combine = self.k, self.t, _COMBINE[how]
        total = _butterfly(k, combine, value, WARP)
        warps = self.threads // WARP
        if warps == 1:
            return total
        assert self.partial is not None
        lane = loop.rem(t, k.index(WARP))
        with loop.if_(loop.cmp(lane, k.index(0), predicate="eq")):
            loop.store(total, self.partial, loop.div(t, k.index(WARP)))
        loop.barrier()
        # lane l reads warp l % warps's result, so each run of `warps` lanes holds them all
        total = _butterfly(k, combine, loop.load(self.partial, loop.rem(lane, k.index(warps))), warps)
        loop.barrier()  # every warp has read the partial results before the next reduction overwrites them
        return total


def _butterfly(k: Kernel, combine: Combine, value: Value, lanes: int) -> Value:
    """``value`` combined over each run of ``lanes`` lanes (a power of two) of a warp, in every lane of the run."""
    offset = lanes // 2
    while offset >= 1:
        value = combine(value, loop.shuffle(value, k.index(offset), mode="xor", width=WARP))
        offset //= 2
    return value


_FAMILY = Family("gpu_rows", (*REDUCTIONS, *SOFTMAX, *NORMS), gpu_rows_space, gpu_rows_default)
register_target_family("cuda", _FAMILY)
for _name in _FAMILY.ops:
    register_target_lowering("cuda", _name, lower_gpu_rows)
