"""Lowering graph ops to loop-level kernels, the host launch plan, and schedules over the loop nests.

:func:`lower_op` turns one graph op into a kernel (a ``func.func`` over buffers, see docs/lowering.md);
:func:`lower_function` turns a whole ``@main`` into kernels plus a :class:`LaunchPlan`, kept in the
kernel module's attributes. Schedules (:mod:`tensorium.lowering.schedule`) rewrite a kernel's loops.
The plan runner on the loop interpreter is :func:`tensorium.backends.plan_runner.run_plan`.
"""

from __future__ import annotations

from . import (  # noqa: F401  (registers the lowerings)
    attention,
    dynamic,
    elementwise,
    fused,
    gpu_conv,
    gpu_gemm,
    gpu_qgemm,
    gpu_qgemv,
    gpu_rows,
    indexing,
    linalg,
    misc,
    nn,
    quant,
    quant_int,
    quant_lut,
    quant_simple,
    reduce,
    reduce_columns,
    shape,
    webgpu_gemm,
    webgpu_rows,
)
from .kernel import LOWERINGS, LoweringError, lower_op
from .plan import LaunchPlan, Step, View, lower_function, plan_of, view_offset
from .schedule import Schedule, ScheduleError, apply_schedule, default_schedule

__all__ = [
    "LOWERINGS",
    "LaunchPlan",
    "LoweringError",
    "Schedule",
    "ScheduleError",
    "Step",
    "View",
    "apply_schedule",
    "default_schedule",
    "lower_function",
    "lower_op",
    "plan_of",
    "view_offset",
]
