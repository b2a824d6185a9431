"""GPU schedules: binding a kernel's independent loops to the blocks and threads of a GPU grid.

The GPU primitive is :class:`Bind` (``bind(l, threads, blocks)``): loop ``l`` (its iterations independent)
runs as a grid-stride loop over ``blocks`` blocks of ``threads`` threads,

    for b in [0, blocks) gpu_block axis 0:
      for t in [0, threads) gpu_thread axis 0:
        for l in [b * threads + t, trips(l), blocks * threads):   # each thread's share of the iterations
          <l's body, with l's induction variable lower + l * step>

so any trip count, known or not until run time, runs on a launch of fixed size (the emitter's grid and
block are constants). Schedules for GPUs mix it with the CPU primitives of :mod:`.schedule` (``fuse`` to
give the grid more iterations, ``split`` and ``unroll`` inside a thread) and apply with
:func:`apply_gpu_schedule`. :func:`gpu_schedule` is the default for every kernel family: it fuses the
outermost band of independent loops of each loop nest (all the output elements of an elementwise kernel,
the rows of a reduction, softmax or norm, the register tiles of a GEMM, whose inner tile stays in each
thread's registers) and binds it; a kernel whose nests cannot all be bound (an accumulation into one
element, or several nests that read each other's results) runs on one GPU thread, correct but serial.
The threads per block are the ``threads`` knob that kernel search spaces have on CUDA targets
(:mod:`.space`), so the autotuner can search them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ScheduleError
from ..ir.builder import InsertionPoint, current_insertion_point
from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import func_body
from ..ir.dialects.loop.common import enclosing_loops
from ..ir.evaluate import evaluate_op
from ..ir.types import index
from ..targets import Target
from ..targets.cuda import WARP
from .schedule import (
    Fuse,
    Primitive,
    Schedule,
    _defined_inside,
    _independent,
    annotate,
    apply_schedule,
    find_loop,
    loop_name,
    loops_of,
)
from .space import GPU_DEFAULT_THREADS, Config

MAX_BLOCKS = 65535
"""Blocks of a grid whose trip count is not known when compiling (each thread strides over the rest)."""


@dataclass(frozen=True)
class Bind:
    """Run loop ``loop``'s independent iterations over ``blocks`` GPU blocks of ``threads`` threads each."""

    loop: str
    threads: int
    blocks: int

    def __str__(self) -> str:
        return f"bind({self.loop}, {self.threads}, {self.blocks})"


@dataclass(frozen=True)
class OneThread:
    """Run the whole kernel on one GPU thread of one block (for kernels no loop of which can be bound)."""

    def __str__(self) -> str:
        return "one_thread()"


GpuPrimitive = Primitive | Bind | OneThread


def _iv(op: Operation) -> Value:
    return op.regions[0].block.args[0]


def bind(kernel: Operation, name: str, threads: int, blocks: int) -> None:
    """Apply ``bind(name, threads, blocks)`` to ``kernel`` in place (see the module docstring).

    ScheduleError when the loop's iterations are not independent (one thread and one block excepted, which
    run them in order) or when it is already inside a gpu loop.
    """
    if threads < 1 or blocks < 1:
        raise ScheduleError(f"bind needs at least one thread and one block, got {threads} and {blocks}")
    target = find_loop(kernel, name)
    if any(op.attr("kind") in loop.GPU_KINDS for op in enclosing_loops(target)):
        raise ScheduleError(f"loop '{name}' is already inside a gpu loop")
    if threads * blocks > 1:
        annotate(kernel, "parallel", name)  # checks that the iterations are independent
    lower, upper, step = target.operands
    body = target.regions[0].block
    uses = list(_iv(target).uses)
    with InsertionPoint.before_op(target):
        zero, one = loop.const(value=0, dtype=index), loop.const(value=1, dtype=index)
        trips = loop.div(loop.add(loop.sub(upper, lower), loop.sub(step, one)), step)
        width = loop.const(value=threads, dtype=index)
        stride = loop.const(value=threads * blocks, dtype=index)
        with loop.for_(zero, loop.const(value=blocks, dtype=index), kind="gpu_block", axis=0, name=f"{name}_b") as b:
            with loop.for_(zero, width, kind="gpu_thread", axis=0, name=f"{name}_t") as t:
                first = loop.add(loop.mul(b, width), t)
                inside = current_insertion_point()
    assert inside is not None and target.parent is not None
    target.parent.remove(target)
    inside.block.insert_before(inside.block.terminator, target)  # type: ignore[arg-type]
    target.set_operands([first, trips, stride])
    target.attributes["kind"] = "serial"
    with InsertionPoint(body, body.ops[0] if body.ops else None):
        position = loop.add(lower, loop.mul(_iv(target), step))
    for use in uses:
        use.owner.set_operand(use.index, position)


def run_on_one_thread(kernel: Operation) -> None:
    """Wrap the whole body of ``kernel`` in a one-block, one-thread gpu nest: it runs in order on one GPU thread."""
    block = func_body(kernel)
    ops = [op for op in block.ops if op.name != "func.return"]
    with InsertionPoint(block, block.terminator):
        with loop.for_(0, 1, kind="gpu_block", axis=0, name="serial_b"):
            with loop.for_(0, 1, kind="gpu_thread", axis=0, name="serial_t"):
                holder = loop.const(value=0, dtype=index)
    inner = holder.defining_op()
    assert inner is not None and inner.parent is not None
    for op in ops:
        block.remove(op)
        inner.parent.insert_before(inner, op)
    inner.erase()


def apply_gpu_schedule(kernel: Operation, schedule: Schedule | tuple[GpuPrimitive, ...]) -> None:
    """Rewrite ``kernel`` by each primitive in turn: :class:`Bind` here, the others by :mod:`.schedule`."""
    steps = schedule.steps if isinstance(schedule, Schedule) else schedule
    for step in steps:
        if isinstance(step, OneThread):
            run_on_one_thread(kernel)
        elif isinstance(step, Bind):
            bind(kernel, step.loop, step.threads, step.blocks)
        else:
            apply_schedule(kernel, Schedule((step,)))


def schedule_for_gpu(kernel: Operation, target: Target) -> None:
    """Apply the default GPU schedule (:func:`gpu_schedule`) to ``kernel``: the codegen's schedule stage on GPUs."""
    apply_gpu_schedule(kernel, gpu_schedule(kernel, target))


def kernel_threads(kernel: Operation) -> int:
    """The ``threads`` knob of the kernel's config attribute when it has one, else :data:`GPU_DEFAULT_THREADS`."""
    text = kernel.attributes.get("config")
    if isinstance(text, str):
        values = Config.parse(text).as_dict()
        if isinstance(values.get("threads"), int):
            return int(values["threads"])  # type: ignore[arg-type]
    return GPU_DEFAULT_THREADS


def gpu_schedule(kernel: Operation, target: Target) -> tuple[GpuPrimitive, ...]:
    """The default GPU schedule of a kernel built by the lowering (see the module docstring)."""
    loops = loops_of(kernel)
    if not loops or any(op.attr("kind") in loop.GPU_KINDS for op in loops):
        return ()  # nothing to bind, or scheduled for a GPU already (hand-written kernels)
    top = func_body(kernel).ops
    nests = [op for op in top if op.name == "loop.for"]
    # Effects outside the one nest would run in every thread (a GPU runs the whole kernel in each).
    alone = len(nests) == 1 and all(
        op.has_trait("pure") or op.name in ("loop.alloc", "func.return", "loop.for") for op in top
    )
    band = _independent_band(nests[0]) if alone else []
    names = [loop_name(op) for op in loops]
    if not band or any(names.count(loop_name(op)) != 1 for op in band):
        return (OneThread(),)
    steps: list[GpuPrimitive] = []
    name = loop_name(band[0])
    for inner in band[1:]:
        steps.append(Fuse(name, loop_name(inner)))
        name = f"{name}_{loop_name(inner)}"
    threads = kernel_threads(kernel)
    trips = _band_trips(band)
    if trips is not None:
        threads = min(threads, max(WARP, -(-trips // WARP) * WARP))
        blocks = max(1, min(MAX_BLOCKS, -(-trips // threads)))
    else:
        blocks = MAX_BLOCKS
    steps.append(Bind(name, threads, blocks))
    return tuple(steps)


def _independent_band(top: Operation) -> list[Operation]:
    """The outermost loops of the nest under ``top`` that can be fused and bound: each directly inside the
    previous with only pure ops beside it, bounds not depending on the loops outside, iterations independent."""
    band: list[Operation] = []
    current: Operation | None = top
    while current is not None and _can_bind(current, band):
        band.append(current)
        body = [o for o in current.regions[0].block.ops if o.name != "loop.yield"]
        loops = [o for o in body if o.name == "loop.for"]
        if len(loops) != 1 or any(o is not loops[0] and not o.has_trait("pure") for o in body):
            break
        current = loops[0]
    return band


def _can_bind(op: Operation, outer: list[Operation]) -> bool:
    if op.attr("kind", "serial") not in ("serial", "parallel"):
        return False
    if outer and any(_defined_inside(v, outer[0]) for v in op.operands):
        return False
    return _independent(op)


def static_index(value: Value) -> int | None:
    """The integer ``value`` always holds when it is computed by pure ops from ``loop.const`` ops, else None."""
    op = value.defining_op()
    if op is None or op.regions or not op.has_trait("pure") or op.name == "loop.dim":
        return None
    args: list[np.ndarray] = []
    for v in op.operands:
        known = static_index(v)
        if known is None:
            return None
        args.append(np.asarray(known, np.int64))
    (result,) = evaluate_op(op, args)
    return int(result)


def static_trips(op: Operation) -> int | None:
    """The trip count of a ``loop.for`` whose bounds are static (:func:`static_index`), else None."""
    lower, upper, step = (static_index(v) for v in op.operands)
    if lower is None or upper is None or step is None or step <= 0:
        return None
    return len(range(lower, upper, step))


def _band_trips(band: list[Operation]) -> int | None:
    total = 1
    for op in band:
        trips = static_trips(op)
        if trips is None:
            return None
        total *= trips
    return total


def schedule_text(steps: tuple[GpuPrimitive, ...]) -> str:
    """The schedule as text (``fuse(i0, i1); bind(i0_i1, 256, 4)``)."""
    return "; ".join(map(str, steps))


__all__ = [
    "Bind",
    "OneThread",
    "apply_gpu_schedule",
    "bind",
    "gpu_schedule",
    "kernel_threads",
    "run_on_one_thread",
    "schedule_for_gpu",
    "schedule_text",
]
