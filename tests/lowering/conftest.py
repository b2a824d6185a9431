"""Shared checks for the lowering tests: one graph op lowered to a kernel, run in the loop interpreter and
compiled through LLVM with its default schedule (vectorized, parallel, unrolled as the CPU target runs it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tensorium.backends import interp, loop_interp
from tensorium.backends.llvm import compile_module
from tensorium.ir import Operation
from tensorium.ir.dialects.builtin import func_body, functions, make_module
from tensorium.ir.types import ScalarType, TensorType, scalar_type_of, storage_dtype
from tensorium.ir.verifier import verify
from tensorium.lowering import Schedule, apply_schedule, default_schedule, lower_op
from tensorium.testing import build_module


def graph_op(module: Operation) -> Operation:
    """The last op before the return of @main."""
    return func_body(functions(module)[0]).ops[-2]


def run_lowered(
    body: Callable[..., Any],
    *arrays: np.ndarray,
    elements: tuple[ScalarType, ...] = (),
    types: tuple[TensorType, ...] = (),
    schedule: Callable[[Operation], Schedule] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(the loop kernel's result, the graph interpreter's) for ``body`` applied to ``arrays``.

    ``types`` overrides the operand types (symbolic shapes); ``schedule`` is applied to the kernel first.
    """
    kinds = elements or tuple(scalar_type_of(a.dtype) for a in arrays)
    operand_types = types or tuple(TensorType(a.shape, e) for a, e in zip(arrays, kinds))
    module = build_module(list(operand_types), body)
    (want,) = interp.run(module, list(arrays))
    op = graph_op(module)
    kernel = lower_op(op)
    lowered = make_module([kernel])
    verify(lowered)
    if schedule is not None:
        apply_schedule(kernel, schedule(kernel))
        verify(lowered)
    out = np.full(want.shape, 7, storage_dtype(op.result.type.element))  # type: ignore[attr-defined]
    loop_interp.run(lowered, list(arrays) + [out])
    return out, want


def run_compiled(body: Callable[..., Any], *arrays: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The result of ``body``'s op lowered with its default schedule and run as LLVM-compiled code on 2 threads."""
    operand_types = tuple(TensorType(a.shape, scalar_type_of(a.dtype)) for a in arrays)
    module = build_module(list(operand_types), body)
    op = graph_op(module)
    kernel = lower_op(op)
    apply_schedule(kernel, default_schedule(kernel))
    kernels = compile_module(make_module([kernel]))
    out = np.full(shape, 7, storage_dtype(op.result.type.element))  # type: ignore[attr-defined]
    kernels.run(kernels.names[0], *[np.array(a, order="C") for a in arrays], out, num_threads=2)
    return out


def check_lowered(body: Callable[..., Any], *arrays: np.ndarray, rtol: float = 1e-5, **kw: Any) -> None:
    """The lowered kernel computes what the graph interpreter computes (NaNs in the same places)."""
    got, want = run_lowered(body, *arrays, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
    if not kw.get("elements") and not kw.get("types"):
        compiled = run_compiled(body, *arrays, shape=want.shape)
        np.testing.assert_allclose(compiled, want, rtol=max(rtol, 1e-5), atol=1e-5)
