"""WebGPU's limits as passes over a lowered module, driven by the Target's limits.

Each pass reads one group of limits from the :class:`~tensorium.targets.Target` (the WebGPU spec's minimums
for ``webgpu``, lower or higher ones for ``webgpu:NAME=VALUE``) and either makes the module fit or says,
in one CompileError, which kernel or tensor does not fit which limit:

- invocations per workgroup and workgroups per dimension: the GPU schedule
  (:mod:`tensorium.lowering.webgpu_schedule`) sizes workgroups and folds large grids into 2-D and 3-D ones;
  :func:`check_dispatch` checks what every kernel ends up with (hand-scheduled ones included);
- storage buffers per shader stage: graph ops whose kernels would bind more are split before lowering
  (:mod:`tensorium.lowering.webgpu_split`); :func:`check_storage_buffers` names a kernel that still binds
  more, with the count;
- binding and buffer size: row-wise ops binding a tensor over the binding size are cut into bands of rows
  before lowering (:mod:`tensorium.lowering.webgpu_split`), joined by concats that are buffer copies
  (:func:`concat_pieces`); :func:`check_buffer_sizes` names a tensor still bound whole over the binding
  size, or over the buffer size, with its bytes and the limit;
- workgroup storage: :func:`check_workgroup_storage` (the ``shared`` buffers of a kernel);
- function-scope storage (WGSL's 8192 bytes, not an adapter limit): a kernel's largest ``local`` buffers over
  it become per-invocation slices of scratch storage buffers (:mod:`tensorium.lowering.webgpu_private`), before
  the storage buffers are counted;
- no 64-bit integers: i64 values are held in ``i32`` where :func:`~tensorium.lowering.webgpu_int64.check_int64_ranges`
  proves they fit (an error naming the op otherwise);
- 32-bit indices: :func:`check_index_width` proves that every buffer has fewer than 2**31 elements and every
  index constant fits 32 bits, so the emitter's ``i32`` indices never wrap; otherwise it is an error, never
  a silent narrowing.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import CompileError
from ..ir.core import Operation
from ..ir.dialects.builtin import func_body, func_name, functions
from ..ir.types import BufferType, FloatType, IndexType, IntegerType
from ..targets import Target
from .plan import plan_of
from .webgpu_int64 import check_int64_ranges, storage_bytes
from .webgpu_private import fit_function_storage
from .webgpu_schedule import storage_bindings, trip_count

INDEX_LIMIT = 1 << 31
"""Indices are WGSL ``i32``: every element number must stay below this."""


def check_storage_buffers(lowered: Operation, target: Target) -> None:
    """CompileError for a kernel that binds more buffers than ``max_storage_buffers_per_shader_stage`` (its
    arguments and its ``global`` scratch buffers)."""
    limit = target.limit("max_storage_buffers_per_shader_stage")
    for kernel in functions(lowered):
        if concat_pieces(kernel) is not None:
            continue  # buffer copies: no shader runs
        count = storage_bindings(kernel)
        if count > limit:
            raise CompileError(
                f"kernel @{func_name(kernel)} binds {count} storage buffers, over the limit "
                f"max_storage_buffers_per_shader_stage = {limit}"
            )


def concat_pieces(kernel: Operation) -> tuple[int, ...] | None:
    """The byte offsets in its result at which the inputs of a ``graph.concat`` kernel lie, when each input is
    one contiguous run of the result (every dim before the concat axis is 1) of whole 4-byte words, so the
    runtime copies buffers instead of launching it; None for other kernels."""
    if tuple(kernel.attr("source_ops", ())) != ("graph.concat",):
        return None
    types = [arg.type for arg in func_body(kernel).args]
    buffers = [t for t in types if isinstance(t, BufferType) and t.is_static]
    if len(buffers) != len(types):
        return None
    *pieces, result = buffers
    shape = result.static_shape
    differing = [a for a in range(len(shape)) for t in pieces if t.static_shape[a] != shape[a]]
    axis = min(differing, default=0)
    sizes = [storage_bytes(t) for t in pieces]
    if any(shape[a] != 1 for a in range(axis)) or any(n % 4 for n in sizes) or sum(sizes) != storage_bytes(result):
        return None
    return tuple(sum(sizes[:n]) for n in range(len(sizes)))


def check_buffer_sizes(lowered: Operation, target: Target) -> None:
    """CompileError for a tensor larger than ``max_buffer_size``, or than ``max_storage_buffer_binding_size``
    where a kernel binds it (concats that are copies, :func:`concat_pieces`, bind nothing)."""
    binding = target.limit("max_storage_buffer_binding_size")
    largest = target.limit("max_buffer_size")
    plan = plan_of(lowered)
    copies = {func_name(k) for k in functions(lowered) if concat_pieces(k) is not None}
    bound = {b for step in plan.steps if step.kernel not in copies for b in (*step.inputs, *step.outputs)}
    for number, t in enumerate(plan.buffers):
        size = storage_bytes(t)
        for name, limit in (("max_storage_buffer_binding_size", binding), ("max_buffer_size", largest)):
            if size > limit and (number in bound or name == "max_buffer_size"):
                raise CompileError(f"tensor #{number} ({t}, {size} bytes) is over the limit {name} = {limit}")


def _workgroup_bytes(t: BufferType, target: Target) -> int:
    """Bytes of a ``shared`` buffer: its storage bytes, or 4 per element for 8- and 16-bit integers (and f16
    without ``shader-f16``), which workgroup memory holds widened to 32-bit registers."""
    element = t.element
    narrow_int = isinstance(element, IntegerType) and not element.is_bool and element.width <= 16
    half = isinstance(element, FloatType) and element.name == "f16" and "shader-f16" not in target.features
    return (t.num_elements or 0) * 4 if narrow_int or half else storage_bytes(t)


def check_workgroup_storage(lowered: Operation, target: Target) -> None:
    """CompileError for a kernel whose ``shared`` buffers exceed ``max_compute_workgroup_storage_size``."""
    limit = target.limit("max_compute_workgroup_storage_size")
    for kernel in functions(lowered):
        shared = [op.attr("type") for op in kernel.walk() if op.name == "loop.alloc"]
        size = sum(_workgroup_bytes(t, target) for t in shared if isinstance(t, BufferType) and t.space == "shared")
        if size > limit:
            raise CompileError(
                f"kernel @{func_name(kernel)} uses {size} bytes of workgroup storage, over the limit "
                f"max_compute_workgroup_storage_size = {limit}"
            )


def check_dispatch(lowered: Operation, target: Target) -> None:
    """CompileError for a kernel whose workgroup or grid exceeds the invocation and dispatch limits."""
    per_dimension = target.limit("max_compute_workgroups_per_dimension")
    invocations = target.limit("max_compute_invocations_per_workgroup")
    for kernel in functions(lowered):
        threads = 1
        for op in kernel.walk():
            kind = op.attr("kind", "") if op.name == "loop.for" else ""
            trips = trip_count(op) if kind in ("gpu_block", "gpu_thread") else None
            if kind == "gpu_block" and trips is not None and trips > per_dimension:
                raise CompileError(
                    f"kernel @{func_name(kernel)} launches {trips} workgroups along axis {op.attr('axis')}, over "
                    f"the limit max_compute_workgroups_per_dimension = {per_dimension}"
                )
            if kind == "gpu_thread" and trips is not None:
                threads *= trips
        if threads > invocations:
            raise CompileError(
                f"kernel @{func_name(kernel)} runs {threads} invocations per workgroup, over the limit "
                f"max_compute_invocations_per_workgroup = {invocations}"
            )


def check_index_width(lowered: Operation, target: Target) -> None:
    """Prove that 32-bit indices suffice (see the module docstring); CompileError naming the buffer or
    constant that does not fit."""
    for number, t in enumerate(plan_of(lowered).buffers):
        if (t.num_elements or 0) >= INDEX_LIMIT:
            raise CompileError(
                f"tensor #{number} ({t}) has {t.num_elements} elements; WebGPU indices are 32-bit (below 2**31)"
            )
    for kernel in functions(lowered):
        for op in kernel.walk():
            if op.name == "loop.const" and isinstance(op.results[0].type, IndexType):
                value = int(op.attr("value"))
                if not -INDEX_LIMIT <= value < INDEX_LIMIT:
                    raise CompileError(
                        f"kernel @{func_name(kernel)}: index constant {value} does not fit WebGPU's 32-bit indices"
                    )


LIMIT_PASSES: tuple[Callable[[Operation, Target], None], ...] = (
    fit_function_storage,
    check_index_width,
    check_int64_ranges,
    check_buffer_sizes,
    check_storage_buffers,
    check_workgroup_storage,
    check_dispatch,
)
"""The limit passes in the order the WebGPU backend runs them, after the GPU schedule."""


def apply_limits(lowered: Operation, target: Target) -> None:
    """Run every limit pass on ``lowered`` for ``target``."""
    for check in LIMIT_PASSES:
        check(lowered, target)
