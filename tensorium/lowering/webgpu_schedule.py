"""GPU schedules for WebGPU: a lowered kernel's independent loop nest bound to workgroups and invocations.

:func:`map_to_workgroups` rewrites a kernel built by the lowering (for any kernel family: elementwise,
reductions, softmax and norms, GEMM, convolution, fused groups) so that it runs as one WebGPU dispatch:

- the outermost band of independent loops (every iteration writes its own elements) is collapsed into one
  loop of ``N`` iterations (:func:`tensorium.lowering.schedule.fuse`), each of which becomes one invocation;
- invocations are grouped into workgroups of ``W`` (the ``threads`` knob of the kernel's space where it has
  one, the GPU targets' knob of :mod:`tensorium.lowering.space`; at most the Target's
  ``max_compute_invocations_per_workgroup`` and ``max_compute_workgroup_size_x``) and the ``ceil(N / W)``
  workgroups laid out on a 1-, 2- or 3-D grid so that no dimension exceeds
  ``max_compute_workgroups_per_dimension`` (the grid is folded: ``b = (z * gy + y) * gx + x``), with a
  guard ``b * W + t < N`` for the invocations past the end;
- the rest of the nest (reductions, tiles, the serial and vector loops of the CPU-shaped kernels) runs in
  each invocation, with its ``local`` accumulators in the invocation's own memory.

A kernel with no independent outer loop (a whole reduction to one scalar, say) runs in one invocation of
one workgroup: correct, and reported by the ``gpu_mapping`` attribute (``"single"``; ``"grid"`` otherwise)
so coverage can count it. Trip counts must be static (dynamic shapes are a CompileError naming the kernel).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ExitStack

from ..errors import CompileError, ScheduleError
from ..ir.builder import InsertionPoint, current_insertion_point
from ..ir.core import Block, Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import func_body, func_name
from ..ir.types import index
from ..targets import Target
from .gpu_schedule import kernel_threads
from .schedule import _independent, fuse, loop_name, loops_of
from .space import GPU_PREFERRED, Config, Setting, tunable_kernels

DEFAULT_WORKGROUP = 64
"""Invocations per workgroup when the kernel's config does not say (a multiple of every GPU's SIMD width)."""


def constant_index(value: Value) -> int | None:
    """The integer ``value`` always holds when it is built from ``loop.const`` by index arithmetic, else None."""
    op = value.defining_op()
    if op is None:
        return None
    if op.name == "loop.const":
        v = op.attr("value")
        return int(v) if isinstance(v, int) and not isinstance(v, bool) else None
    args = [constant_index(v) for v in op.operands]
    if any(a is None for a in args) or len(args) != 2:
        return None
    a, b = args[0], args[1]
    assert a is not None and b is not None
    folds = {
        "loop.add": lambda: a + b,
        "loop.sub": lambda: a - b,
        "loop.mul": lambda: a * b,
        "loop.div": lambda: int(a / b) if b else 0,
        "loop.rem": lambda: a - int(a / b) * b if b else 0,
        "loop.min": lambda: min(a, b),
        "loop.max": lambda: max(a, b),
    }
    fold = folds.get(op.name)
    return fold() if fold is not None else None


def trip_count(op: Operation) -> int | None:
    """The static trip count of a ``loop.for``, else None."""
    lower, upper, step = (constant_index(v) for v in op.operands)
    if lower is None or upper is None or step is None or step <= 0:
        return None
    return len(range(lower, upper, step))


def grid_shape(blocks: int, per_dimension: int) -> tuple[int, int, int]:
    """Workgroups per grid axis (x, y, z) holding at least ``blocks``, none over ``per_dimension``; CompileError
    when even a 3-D grid cannot."""
    gz = -(-blocks // (per_dimension * per_dimension))
    if gz > per_dimension:
        raise CompileError(
            f"{blocks} workgroups do not fit a 3-D grid of max_compute_workgroups_per_dimension = {per_dimension}"
        )
    rest = -(-blocks // gz)
    gy = -(-rest // per_dimension)
    gx = -(-rest // gy)
    return gx, gy, gz


def map_to_workgroups(kernel: Operation, target: Target, workgroup: int | None = None) -> None:
    """Rewrite ``kernel`` in place into workgroups (``gpu_block`` loops) of invocations (a ``gpu_thread`` loop)
    within ``target``'s limits; see the module docstring. The workgroup size is ``workgroup``, else the
    ``threads`` knob of the kernel's config where its space has one, else :data:`DEFAULT_WORKGROUP`."""
    if workgroup is None and "threads=" in str(kernel.attributes.get("config", "")):
        workgroup = kernel_threads(kernel)
    body = func_body(kernel)
    if any(op.attr("kind", "serial") in ("gpu_block", "gpu_thread") for op in loops_of(kernel)):
        return  # scheduled for a GPU already (hand-written kernels)
    tops = [op for op in body.ops if op.name == "loop.for"]
    effects = [op for op in body.ops if op.name not in ("func.return",) and not op.has_trait("pure")]
    top = tops[0] if len(tops) == 1 and effects == tops else None
    if top is not None and _independent(top):
        top = _collapse_band(kernel, top)
        trips = trip_count(top)
        if trips is None:
            raise CompileError(
                f"@{func_name(kernel)}: the WebGPU backend needs static shapes (a loop has dynamic bounds)"
            )
        _bind_grid(kernel, top, trips, target, workgroup)
        kernel.attributes["gpu_mapping"] = "grid"
        return
    _bind_single(kernel)
    kernel.attributes["gpu_mapping"] = "single"


def _collapse_band(kernel: Operation, top: Operation) -> Operation:
    """Fuse ``top`` with the independent loops directly nested in it; returns the collapsed loop."""
    while True:
        inner_ops = [o for o in top.regions[0].block.ops if o.name != "loop.yield"]
        loops = [o for o in inner_ops if o.name == "loop.for"]
        if len(loops) != 1 or any(o is not loops[0] and not o.has_trait("pure") for o in inner_ops):
            return top
        inner = loops[0]
        if not _independent(inner) or trip_count(inner) is None or trip_count(top) is None:
            return top
        top.regions[0].block.args[0].name_hint = "gpu_a"
        inner.regions[0].block.args[0].name_hint = "gpu_b"
        parent = top.parent
        assert parent is not None
        try:
            fuse(kernel, "gpu_a", "gpu_b")
        except ScheduleError:
            return top
        top = next(o for o in parent.ops if o.name == "loop.for" and loop_name(o) == "gpu_a_gpu_b")


def _bind_grid(kernel: Operation, top: Operation, trips: int, target: Target, workgroup: int | None) -> None:
    """Replace ``top`` (``trips`` independent iterations) by a grid of workgroups of invocations."""
    cap = min(
        target.limit("max_compute_invocations_per_workgroup"),
        target.limit("max_compute_workgroup_size_x"),
    )
    size = max(1, min(workgroup or DEFAULT_WORKGROUP, cap, _ceil_pow2(trips)))
    blocks = max(1, -(-trips // size))
    grid = grid_shape(blocks, target.limit("max_compute_workgroups_per_dimension"))
    lower, _, step = top.operands
    with InsertionPoint.before_op(top), ExitStack() as stack:
        linear = _grid_loops(stack, grid, size)
        guard = stack.enter_context(loop.if_(loop.cmp(linear, _c(trips), predicate="lt")))
        iv = loop.add(lower, loop.mul(linear, step))
    body = top.regions[0].block
    body.args[0].replace_all_uses_with(iv)
    _move_ops(body, guard.regions[0].block)
    top.erase()


def workgroup_loops(stack: ExitStack, grid: tuple[int, int, int]) -> Value:
    """Enter the ``gpu_block`` loops of ``grid`` on ``stack`` (axes with one workgroup left out, x always
    there); returns the linear workgroup number ``(z * gy + y) * gx + x``, built inside them."""
    ids: dict[int, Value] = {}
    for axis in (2, 1, 0):
        if grid[axis] > 1 or axis == 0:
            block_loop = loop.for_(0, grid[axis], 1, kind="gpu_block", axis=axis, name="bxyz"[axis])
            ids[axis] = stack.enter_context(block_loop)
    number = ids.get(2, _c(0))
    number = loop.add(loop.mul(number, _c(grid[1])), ids.get(1, _c(0)))
    return loop.add(loop.mul(number, _c(grid[0])), ids[0])  # type: ignore[no-any-return]


def _grid_loops(stack: ExitStack, grid: tuple[int, int, int], size: int) -> Value:
    """Enter the loops of :func:`workgroup_loops` and a ``gpu_thread`` loop of ``size`` on ``stack``; returns
    the linear invocation number, built inside them."""
    number = workgroup_loops(stack, grid)
    thread = stack.enter_context(loop.for_(0, size, 1, kind="gpu_thread", axis=0, name="t"))
    return loop.add(loop.mul(number, _c(size)), thread)  # type: ignore[no-any-return]


def _bind_single(kernel: Operation) -> None:
    """Wrap the whole body of ``kernel`` in one workgroup of one invocation."""
    body = func_body(kernel)
    moved = [o for o in body.ops if o.name != "func.return"]
    first = moved[0] if moved else body.terminator
    assert first is not None
    with InsertionPoint.before_op(first), ExitStack() as stack:
        _grid_loops(stack, (1, 1, 1), 1)
        inner = current_insertion_point()
    assert inner is not None
    for op in moved:
        body.remove(op)
        inner.block.insert_before(inner.block.terminator, op)  # type: ignore[arg-type]


def _move_ops(source: Block, dest: Block) -> None:
    """Move the ops of ``source`` (its terminator excepted) to the end of ``dest``, before its terminator."""
    for op in [o for o in source.ops if o.name != "loop.yield"]:
        source.remove(op)
        dest.insert_before(dest.terminator, op)  # type: ignore[arg-type]


def _c(value: int) -> Value:
    return loop.const(value=value, dtype=index)  # type: ignore[no-any-return]


def _ceil_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


GPU_KNOBS: dict[str, tuple[Setting, ...]] = GPU_PREFERRED
"""Knob settings the WebGPU target prefers, first legal one first, in every family that has them (the GPU
targets' :data:`~tensorium.lowering.space.GPU_PREFERRED`): GEMMs read B in place or pack each panel in the
invocation's own memory (packing all of B first needs a scratch buffer in global memory)."""


def gpu_configs(
    module: Operation, target: Target, func: str = "main", given: Mapping[str, Config] | None = None
) -> dict[str, Config]:
    """Configs for the tunable kernels of ``@func`` on ``target``: those ``given`` by key, else the default
    points with :data:`GPU_KNOBS` applied where their space has the knob and allows the value."""
    configs = dict(given or {})
    for kernel in tunable_kernels(module, target, func):
        if kernel.key in configs:
            continue
        names = {knob.name: knob.values for knob in kernel.space.knobs}
        changes = {k: next(v for v in wanted if v in names[k]) for k, wanted in GPU_KNOBS.items() if k in names}
        configs[kernel.key] = kernel.space.check(kernel.default.replace(**changes)) if changes else kernel.default
    return configs
