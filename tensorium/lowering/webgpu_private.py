"""WGSL's limit on function-scope memory as a pass: ``local`` arrays over it become per-invocation slices of a
storage buffer.

The WGSL specification bounds the bytes of all the variables a shader declares in the ``function`` address
space at :data:`FUNCTION_STORAGE_BYTES` (8192); a compiler may accept more, but what it then does with large
private arrays is its own business: Mesa's lavapipe takes superlinear time to compile them (about 14 s for
one ``array<f32, 4096>``; a 16384-element GEMM panel of the attention kernel with dynamic shapes, 64 KiB, never
finished compiling on lavapipe or Dawn). :func:`fit_function_storage` keeps each kernel within the limit by
moving its largest ``local`` buffers, until the rest fits, into one ``global`` scratch buffer per element type,
``[I, S]``: a slice of ``S`` elements per invocation of the dispatch, each moved buffer at its own offset in it:

- the new buffer is allocated before the kernel's outermost ``gpu_block`` loop; ``I`` is the product of the
  trip counts of the ``gpu_block`` / ``gpu_thread`` loops around the old allocations (a constant for static
  grids; for grids sized at run time, the values the GPU schedule computed for them, which the emitter turns
  into a scratch size the runtimes evaluate before each launch);
- every load and store of an old buffer reads the invocation's slice at the buffer's offset plus its linear
  index; the invocation's number ``((by * gx) + bx) * W + t`` is built from the loops' induction variables
  where the old buffer was allocated; a ``loop.dim`` of it becomes its static size.

A buffer used by anything else (none of the lowerings do) stays where it is. The scratch buffers count
against ``max_storage_buffers_per_shader_stage`` like any other binding (:mod:`.webgpu_limits` checks).
"""

from __future__ import annotations

import math

from ..ir.builder import InsertionPoint
from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import functions
from ..ir.types import DYN, BufferType, index
from ..targets import Target
from .webgpu_int64 import storage_bytes
from .webgpu_schedule import constant_index

FUNCTION_STORAGE_BYTES = 8192
"""The WGSL specification's limit on the bytes of a shader's ``function`` address space variables."""

_USES = {"loop.load": 0, "loop.store": 1, "loop.dim": 0}
"""The ops whose buffer operand (at this position) :func:`fit_function_storage` can redirect to a slice."""


def fit_function_storage(lowered: Operation, target: Target, limit: int | None = None) -> None:
    """Move each kernel's largest ``local`` buffers to per-invocation slices of scratch storage buffers until
    its remaining ``local`` buffers take at most ``limit`` bytes (default :data:`FUNCTION_STORAGE_BYTES`, read
    at each call; see the module docstring)."""
    limit = FUNCTION_STORAGE_BYTES if limit is None else limit
    for kernel in functions(lowered):
        locals_ = [
            op
            for op in kernel.walk()
            if op.name == "loop.alloc" and isinstance(op.attr("type"), BufferType) and op.attr("type").space == "local"
        ]
        total = sum(storage_bytes(op.attr("type")) for op in locals_)
        groups: dict[tuple[object, ...], list[tuple[Operation, list[Operation]]]] = {}
        for alloc in sorted(locals_, key=lambda op: -storage_bytes(op.attr("type"))):
            if total <= limit:
                break
            loops = _movable(alloc)
            if loops is not None:
                key = (alloc.attr("type").element, *(id(op) for op in loops))
                groups.setdefault(key, []).append((alloc, loops))
                total -= storage_bytes(alloc.attr("type"))
        for members in groups.values():
            _to_slices(members)


def _movable(alloc: Operation) -> list[Operation] | None:
    """The ``gpu_block`` / ``gpu_thread`` loops around ``alloc``, outermost first, when its buffer can move to
    slices: only loaded, stored into and sized, the loops counting from 0 by 1 to constants or to values
    defined before the outermost one; else None."""
    old = alloc.results[0]
    for user in old.users:
        at = _USES.get(user.name)
        if at is None or user.operands[at] is not old or old in (*user.operands[:at], *user.operands[at + 1 :]):
            return None
    loops = []
    parent = alloc.parent_op
    while parent is not None and parent.name != "func.func":
        if parent.name == "loop.for" and parent.attr("kind") in ("gpu_block", "gpu_thread"):
            lower, upper, step = parent.operands
            if constant_index(lower) != 0 or constant_index(step) != 1:
                return None
            loops.append(parent)
        parent = parent.parent_op
    if not loops:
        return None
    outer = loops[-1]
    for gpu_loop in loops:
        upper = gpu_loop.operands[1]
        defined = upper.defining_op()
        if constant_index(upper) is None and (defined is None or defined.parent is not outer.parent):
            return None
    return loops[::-1]


def _to_slices(members: list[tuple[Operation, list[Operation]]]) -> None:
    """Rewrite the ``local`` buffers of ``members`` (allocs of one element type inside the same loops) into
    slices of one new ``global`` buffer ``[invocations, total]``, each at its own offset in a slice."""
    loops = members[0][1]
    outer = loops[0]
    uppers: list[int | Value] = []
    for gpu_loop in loops:
        static = constant_index(gpu_loop.operands[1])
        uppers.append(static if static is not None else gpu_loop.operands[1])
    count = math.prod(u for u in uppers if isinstance(u, int))
    element = members[0][0].attr("type").element
    total = sum(max(1, alloc.attr("type").num_elements or 1) for alloc, _ in members)
    with InsertionPoint.before_op(outer):
        dynamic: Value | None = None
        for upper in uppers:
            if not isinstance(upper, int):
                dynamic = upper if dynamic is None else loop.mul(dynamic, upper)
        if dynamic is not None and count != 1:
            dynamic = loop.mul(dynamic, _c(count))
        shape = (DYN if dynamic is not None else count, total)
        sizes = [dynamic] if dynamic is not None else []
        slices = loop.alloc(*sizes, type=BufferType(shape, element, "global"))
    offset = 0
    for alloc, _ in members:
        t = alloc.attr("type")
        with InsertionPoint.before_op(alloc):
            number: Value = loops[0].regions[0].block.args[0]
            for gpu_loop, upper in zip(loops[1:], uppers[1:]):
                size = _c(upper) if isinstance(upper, int) else upper
                number = loop.add(loop.mul(number, size), gpu_loop.regions[0].block.args[0])
        for user in alloc.results[0].users:
            with InsertionPoint.before_op(user):
                if user.name == "loop.dim":
                    user.results[0].replace_all_uses_with(_c(t.static_shape[int(user.attr("axis"))]))
                    user.erase()
                    continue
                at = _USES[user.name]
                operands = list(user.operands)
                position: Value | None = None
                for axis, i in enumerate(operands[at + 1 :]):
                    position = i if position is None else loop.add(loop.mul(position, _c(t.static_shape[axis])), i)
                if position is None or offset:
                    position = _c(offset) if position is None else loop.add(position, _c(offset))
                user.set_operands([*operands[:at], slices, number, position])
        offset += max(1, t.num_elements or 1)
        alloc.erase()


def _c(value: int) -> Value:
    return loop.const(value=value, dtype=index)  # type: ignore[no-any-return]
