"""Running a lowered module's launch plan on the loop interpreter (the oracle for later backends).

Inputs are bound to their buffers (checking dtypes and shapes and binding named dims), constants are
copied out of the plan, every step's output buffers are allocated from their types and the plan's views
made over their sources before the kernels run. A buffer whose size is an anonymous run-time dim cannot be
allocated by the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InterpreterError
from ..ir.core import Operation
from ..ir.types import Sym, TensorType, storage_dtype
from ..lowering.plan import plan_of
from .interp import check_value
from .loop_interp import run


def _allocate(t: TensorType, bindings: dict[str, int], what: str) -> np.ndarray:
    shape: list[int] = []
    for d in t.shape:
        if isinstance(d, Sym):
            if d.name is None or d.name not in bindings:
                raise InterpreterError(f"{what} has type {t}: the host cannot size dimension {d} before running")
            shape.append(bindings[d.name])
        else:
            shape.append(d)
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
    for step in plan.steps:
        values.update((b, _allocate(plan.buffers[b], bindings, f"buffer #{b}")) for b in step.outputs)
    for view in plan.views:
        values[view.buffer] = view_of(values[view.source], view.offset, plan.buffers[view.buffer], bindings)
    for step in plan.steps:
        run(module, [values[b] for b in (*step.inputs, *step.outputs)], func=step.kernel)
    return [values[b] for b in plan.outputs]


def view_of(source: np.ndarray, offset: int, t: TensorType, bindings: dict[str, int]) -> np.ndarray:
    """The elements of ``source`` (row-major) from ``offset`` on, shaped as ``t`` with the named dims ``bindings``."""
    shape = [d if isinstance(d, int) else bindings[d.name] for d in t.shape]  # type: ignore[index]
    size = int(np.prod(shape, dtype=np.int64))
    return source.reshape(-1)[offset : offset + size].reshape(shape)
