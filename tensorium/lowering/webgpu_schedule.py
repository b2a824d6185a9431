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
so coverage can count it.

Dynamic shapes: where the band's trip count ``N`` is only known at run time (it reads buffer sizes through
``loop.dim``, which the emitter reads from a uniform buffer of sizes), the grid is computed twice from the
same formula: by the host before each launch, from :attr:`dispatch` (``N`` as an expression over the
kernel's argument sizes, the ``gpu_dispatch`` attribute, :func:`evaluate_dispatch`), and by the kernel,
which needs ``gx`` to number its workgroups: ``B = ceil(N / W)`` workgroups, ``gx = min(max(B, 1), L)``
along x and ``gy = ceil(B / gx)`` along y (``L`` the per-dimension limit; more than ``L * L`` workgroups
is a run-time error naming the kernel).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from ..errors import CompileError, ScheduleError
from ..ir.builder import InsertionPoint, current_insertion_point
from ..ir.core import Block, Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import func_body, func_name
from ..ir.types import BufferType, index
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
            _bind_dynamic_grid(kernel, top, target, workgroup)
        else:
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
        if not _independent(inner):
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


def _bind_dynamic_grid(kernel: Operation, top: Operation, target: Target, workgroup: int | None) -> None:
    """Replace ``top`` (a run-time number of independent iterations) by a 2-D grid of workgroups sized at run
    time (see the module docstring); the trip count's expression becomes the ``gpu_dispatch`` attribute."""
    cap = min(
        target.limit("max_compute_invocations_per_workgroup"),
        target.limit("max_compute_workgroup_size_x"),
    )
    size = max(1, min(workgroup or DEFAULT_WORKGROUP, cap))
    lower, upper, step = top.operands
    with InsertionPoint.before_op(top):
        trips = loop.div(loop.add(loop.sub(upper, lower), loop.sub(step, _c(1))), step)
    with InsertionPoint.before_op(top), ExitStack() as stack:
        number = stack.enter_context(run_time_workgroups(kernel, trips, size, target))
        thread = stack.enter_context(loop.for_(0, size, 1, kind="gpu_thread", axis=0, name="t"))
        linear = loop.add(loop.mul(number, _c(size)), thread)
        guard = stack.enter_context(loop.if_(loop.cmp(linear, trips, predicate="lt")))
        iv = loop.add(lower, loop.mul(linear, step))
    body = top.regions[0].block
    body.args[0].replace_all_uses_with(iv)
    _move_ops(body, guard.regions[0].block)
    top.erase()


@contextmanager
def run_time_workgroups(kernel: Operation, trips: Value, size: int, target: Target) -> Iterator[Value]:
    """Enter the ``gpu_block`` loops of a grid sized at run time for ``trips`` invocations (an index value built
    from ``kernel``'s argument sizes) in workgroups of ``size``: ``B = ceil(trips / size)`` workgroups on the 2-D
    grid of :func:`dynamic_grid`, which the host computes from the ``gpu_dispatch`` attribute this sets. Yields
    the workgroup's number ``y * gx + x``; the caller guards what lies past ``B`` (the last row of the grid may
    be partly past it)."""
    kernel.attributes["gpu_dispatch"] = json.dumps(dispatch_expression(trips, kernel))
    per_dimension = target.limit("max_compute_workgroups_per_dimension")
    blocks = loop.div(loop.add(trips, _c(size - 1)), _c(size))
    gx = loop.min(loop.max(blocks, _c(1)), _c(per_dimension))
    # ceil(B / gx), as the host computes it, is ceil(B / L) for every B: no division by a run-time value, which
    # the decompose stage would expand into selects that a scratch buffer's size could not be written with
    gy = loop.div(loop.add(blocks, _c(per_dimension - 1)), _c(per_dimension))
    with (
        loop.for_(_c(0), gy, _c(1), kind="gpu_block", axis=1, name="by") as y,
        loop.for_(_c(0), gx, _c(1), kind="gpu_block", axis=0, name="bx") as x,
    ):
        yield loop.add(loop.mul(y, gx), x)


_FOLDS = ("loop.add", "loop.sub", "loop.mul", "loop.div", "loop.rem", "loop.min", "loop.max")


def dispatch_expression(value: Value, kernel: Operation) -> Any:
    """``value`` (an index built from constants and ``loop.dim`` of ``kernel``'s arguments by index arithmetic)
    as JSON the runtimes evaluate: an int, ``["dim", argument, axis]`` or ``[op, a, b]`` for the ops of
    :data:`_FOLDS` (named without ``loop.``); CompileError naming what else it depends on."""
    op = value.defining_op()
    if op is not None and op.name == "loop.const":
        return int(op.attr("value"))
    if op is not None and op.name == "loop.dim":
        args = list(func_body(kernel).args)
        buffer = op.operands[0]
        if buffer in args:
            return ["dim", args.index(buffer), int(op.attr("axis"))]
    if op is not None and op.name in _FOLDS:
        a, b = (dispatch_expression(v, kernel) for v in op.operands)
        expression = [op.name.removeprefix("loop."), a, b]
        if isinstance(a, int) and isinstance(b, int):
            return evaluate_dispatch(expression, ())  # constants folded
        if (b == 0 and expression[0] in ("add", "sub")) or (b == 1 and expression[0] in ("mul", "div")):
            return a
        return expression
    what = f"'{op.name}'" if op is not None else "a loop variable"
    raise CompileError(f"@{func_name(kernel)}: the size of its grid depends on {what}, which the host cannot compute")


def evaluate_dispatch(expression: Any, shapes: Sequence[Sequence[int]]) -> int:
    """The value of a :func:`dispatch_expression` for arguments of ``shapes`` (loop semantics: division
    truncates, and gives 0 for a divisor of 0)."""
    if isinstance(expression, int):
        return expression
    name, a, b = expression
    if name == "dim":
        return int(shapes[a][b])
    x, y = evaluate_dispatch(a, shapes), evaluate_dispatch(b, shapes)
    if name in ("div", "rem"):
        if y == 0:
            return 0 if name == "div" else x
        quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        return quotient if name == "div" else x - quotient * y
    folds: dict[str, Callable[[int, int], int]] = {
        "add": lambda p, q: p + q,
        "sub": lambda p, q: p - q,
        "mul": lambda p, q: p * q,
        "min": min,
        "max": max,
    }
    return folds[name](x, y)


def dynamic_grid(trips: int, workgroup: int, per_dimension: int, kernel: str) -> tuple[int, int, int]:
    """The grid of a kernel mapped by :func:`_bind_dynamic_grid` for ``trips`` iterations (as the kernel computes
    it); CompileError naming ``kernel`` when it needs more than ``per_dimension`` workgroups along y."""
    blocks = -(-max(trips, 0) // workgroup)
    gx = min(max(blocks, 1), per_dimension)
    gy = -(-blocks // gx)
    if gy > per_dimension:
        raise CompileError(
            f"kernel @{kernel}: {blocks} workgroups do not fit a 2-D grid of max_compute_workgroups_per_dimension "
            f"= {per_dimension}"
        )
    return gx, gy, 1


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


def global_allocs(kernel: Operation) -> int:
    """The number of ``global`` scratch buffers ``kernel`` allocates (each one more storage binding)."""
    return sum(
        1
        for op in kernel.walk()
        if op.name == "loop.alloc" and isinstance(op.attr("type"), BufferType) and op.attr("type").space == "global"
    )


BUFFER_USES = ("loop.load", "loop.store", "loop.dim", "loop.load_packed")
"""The ops that make a kernel bind an argument buffer (an unused argument is not bound)."""


def bound_arguments(kernel: Operation) -> set[int]:
    """The argument buffers ``kernel`` binds (by value id): those a :data:`BUFFER_USES` op uses."""
    return {id(op.operands[1 if op.name == "loop.store" else 0]) for op in kernel.walk() if op.name in BUFFER_USES}


def storage_bindings(kernel: Operation) -> int:
    """The storage buffers ``kernel`` binds: its used arguments and its ``global`` scratch buffers (a status
    buffer for run-time checks, where it has any, comes on top)."""
    used = bound_arguments(kernel)
    return sum(id(a) in used for a in func_body(kernel).args) + global_allocs(kernel)
