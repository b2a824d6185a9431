"""Running a lowered module's launch plan on the loop interpreter (the oracle for later backends).

Inputs are bound to their buffers (checking dtypes and shapes and binding named dims) and constants are
copied out of the plan; then :func:`~tensorium.lowering.plan.run_steps` allocates each step's outputs from
their types, makes the plan's views and binds the dims steps compute at run time, as every runner does. A
buffer whose size is an anonymous run-time dim cannot be allocated by the host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InterpreterError
from ..ir.core import Operation
from ..ir.types import TensorType, dim_known, dim_size, storage_dtype
from ..lowering.plan import Step, plan_of, run_steps, view_of
from .interp import check_value
from .loop_interp import run

__all__ = ["run_plan", "view_of"]


def _allocate(t: TensorType, bindings: Mapping[str, int], what: str) -> np.ndarray:
    unknown = [d for d in t.shape if not dim_known(d, bindings)]
    if unknown:
        raise InterpreterError(f"{what} has type {t}: the host cannot size dimension {unknown[0]} before running")
    shape = [dim_size(d, bindings) for d in t.shape]
    dtype = storage_dtype(t.element)
    return np.full(shape, np.nan, dtype) if dtype.kind == "f" else np.zeros(shape, dtype)


def run_plan(module: Operation, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Run the launch plan of a lowered ``module`` on numpy ``inputs``; returns its outputs."""
    plan = plan_of(module)
    if len(inputs) != len(plan.inputs):
        raise InterpreterError(f"the plan takes {len(plan.inputs)} inputs, got {len(inputs)}")
    values: dict[int, np.ndarray] = {}
    bindings: dict[str, int] = {}
    for n, (buffer, value) in enumerate(zip(plan.inputs, inputs)):
        t = plan.buffers[buffer]
        array = np.asarray(value)
        if array.dtype != storage_dtype(t.element):
            raise InterpreterError(f"input #{n}: expected dtype {storage_dtype(t.element)} for {t}, got {array.dtype}")
        check_value(array, t, f"input #{n}", bindings)
        values[buffer] = array
    for buffer, constant in plan.constants:
        values[buffer] = np.array(constant.array)

    def launch(step: Step, arrays: list[np.ndarray]) -> None:
        run(module, arrays, func=step.kernel)

    run_steps(plan, values, bindings, lambda b, dims: _allocate(plan.buffers[b], dims, f"buffer #{b}"), launch)
    return [values[b] for b in plan.outputs]
