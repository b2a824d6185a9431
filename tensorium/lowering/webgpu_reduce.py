"""The ``workgroup_reduce`` kernel family: reductions on WebGPU by whole workgroups, in workgroup memory.

The general ``reduce`` kernel, bound to the grid by :func:`~tensorium.lowering.webgpu_schedule.map_to_workgroups`,
gives each output element to one invocation, which reduces its whole row alone. Here a workgroup of ``W``
invocations (the ``workgroup`` knob) reduces one row of ``R`` elements together:

    for g in grid (one workgroup per output element, folded into 2-D/3-D past 65535):
      partial = shared[W]
      for t in [0, W) gpu_thread 0:
        acc = identity; for j in [t, R, W): acc = acc (+) row[j]      # strided: neighbours read neighbours
        partial[t] = acc; barrier
        for s in W/2, W/4, ..., 1: (if t < s: partial[t] = partial[t] (+) partial[t + s]); barrier
        if t == 0: out[g] = partial[0]   (/ R for a mean)

a tree reduction in ``log2 W`` steps between barriers. It builds f32 sums, means, products, maxima and
minima over trailing axes (each output element reduces one contiguous run) with static shapes and rows of
at least :data:`MIN_ROW` elements; other reductions keep the ``reduce`` family. The knob's values are the
powers of two the Target's ``max_compute_invocations_per_workgroup`` and workgroup storage allow.
"""

from __future__ import annotations

import math
from contextlib import ExitStack

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.shapes import normalize_axes
from ..ir.types import BufferType, TensorType, f32
from ..targets import Target
from .kernel import LOWERINGS, Kernel, register_target_lowering
from .space import Config, Family, Knob, Space, register_target_family
from .webgpu_schedule import grid_shape, workgroup_loops

FAMILY = "workgroup_reduce"
WORKGROUPS = (32, 64, 128, 256)
"""Invocations per workgroup the family tries (powers of two, for the tree)."""
MIN_ROW = 64
"""Shorter rows stay with one invocation each: a workgroup would mostly wait at barriers."""
OPS = tuple(f"graph.reduce_{r}" for r in ("sum", "mean", "prod", "max", "min"))
_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}
_COMBINE = {"sum": loop.add, "mean": loop.add, "prod": loop.mul, "max": loop.max, "min": loop.min}


def _rows(op: Operation) -> tuple[int, int] | None:
    """(output elements, elements reduced into each) when this family builds ``op``, else None."""
    if op.name not in OPS:
        return None
    t, out = op.operands[0].type, op.results[0].type
    if not (isinstance(t, TensorType) and isinstance(out, TensorType)) or t.element != f32 or not t.is_static:
        return None
    shape = t.static_shape
    axes = normalize_axes(op.opdef.attr_kwargs(op)["axes"], len(shape))
    if not axes or list(axes) != list(range(len(shape) - len(axes), len(shape))):
        return None
    row = math.prod(shape[len(shape) - len(axes) :])
    return (math.prod(shape[: len(shape) - len(axes)]), row) if row >= MIN_ROW else None


def workgroup_sizes(target: Target) -> tuple[int, ...]:
    """The ``workgroup`` values ``target`` allows: within its invocations per workgroup and (one f32 each)
    its workgroup storage."""
    cap = min(target.limit("max_compute_invocations_per_workgroup"), target.limit("max_compute_workgroup_size_x"))
    storage = target.limit("max_compute_workgroup_storage_size") // 4
    return tuple(w for w in WORKGROUPS if w <= cap and w <= storage)


def workgroup_reduce_space(op: Operation, target: Target) -> Space | None:
    """The family's space for ``op`` on a WebGPU ``target``; None when the family does not build it."""
    sizes = workgroup_sizes(target)
    if _rows(op) is None or not sizes:
        return None
    return Space(FAMILY, (Knob("workgroup", sizes, "invocations per workgroup, each output element's"),))


def workgroup_reduce_default(op: Operation, target: Target, space: Space) -> Config:
    """The largest workgroup that still gives each invocation at least four elements of the row."""
    rows = _rows(op)
    assert rows is not None
    sizes = space.knobs[0].values
    fitting = [w for w in sizes if 4 * int(w) <= rows[1]]
    return Config(FAMILY, (("workgroup", fitting[-1] if fitting else sizes[0]),))


def _unravel(k: Kernel, number: Value, shape: tuple[int, ...]) -> list[Value]:
    """The row-major indices of element ``number`` of ``shape``."""
    indices: list[Value] = []
    for size in reversed(shape):
        indices.append(loop.rem(number, k.index(size)))
        number = loop.div(number, k.index(size))
    return indices[::-1]


def lower_workgroup_reduce(op: Operation, k: Kernel) -> None:
    """The kernel of the module docstring at ``k``'s config; the general reduction for other families."""
    rows = _rows(op)
    if k.config is None or k.config.family != FAMILY or rows is None:
        LOWERINGS[op.name](op, k)
        return
    count, length = rows
    size = k.config.int("workgroup")
    kind = op.name.split("_", 1)[1]
    combine = _COMBINE[kind]
    (source,), (out,) = k.inputs, k.outputs
    shape, out_type = op.operands[0].type, op.results[0].type
    assert isinstance(shape, TensorType) and isinstance(out_type, TensorType)
    kept = shape.static_shape[: len(shape.static_shape) - len(_reduced(op))]
    reduced = shape.static_shape[len(kept) :]
    identity = k.const(_IDENTITY[kind], f32)
    grid = grid_shape(count, k.target.limit("max_compute_workgroups_per_dimension"))
    with ExitStack() as stack:
        group = workgroup_loops(stack, grid)
        if math.prod(grid) > count:
            stack.enter_context(loop.if_(loop.cmp(group, k.index(count), predicate="lt")))
        partial = loop.alloc(type=BufferType((size,), f32, "shared"))
        t = stack.enter_context(loop.for_(0, size, 1, kind="gpu_thread", axis=0, name="t"))
        outer = _unravel(k, group, kept)
        acc = loop.alloc(type=BufferType((), f32, "local"))
        loop.store(identity, acc)
        with loop.for_(t, k.index(length), k.index(size), name="r") as j:
            value = loop.load(source, *outer, *_unravel(k, j, reduced))
            loop.store(combine(loop.load(acc), value), acc)
        loop.store(loop.load(acc), partial, t)
        loop.barrier()
        stride = size // 2
        while stride:
            with loop.if_(loop.cmp(t, k.index(stride), predicate="lt")):
                other = loop.load(partial, loop.add(t, k.index(stride)))
                loop.store(combine(loop.load(partial, t), other), partial, t)
            loop.barrier()
            stride //= 2
        with loop.if_(loop.cmp(t, k.index(0), predicate="eq")):
            result = loop.load(partial, k.index(0))
            if kind == "mean":
                result = loop.div(result, k.const(float(length), f32))
            where = [*outer, *([k.index(0)] * len(reduced))] if _keeps(op) else outer
            loop.store(result, out, *where)


def _keeps(op: Operation) -> bool:
    return bool(op.opdef.attr_kwargs(op)["keepdims"])


def _reduced(op: Operation) -> tuple[int, ...]:
    t = op.operands[0].type
    assert isinstance(t, TensorType)
    return tuple(normalize_axes(op.opdef.attr_kwargs(op)["axes"], t.rank))


WORKGROUP_REDUCE = Family(FAMILY, OPS, workgroup_reduce_space, workgroup_reduce_default)
register_target_family("webgpu", WORKGROUP_REDUCE)
for _name in OPS:
    register_target_lowering("webgpu", _name, lower_workgroup_reduce)
