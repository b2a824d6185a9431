"""The program runner: a list of kernel calls in one foreign call, stopping at the first failure."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.llvm import compile_module
from tensorium.backends.llvm.launcher import decode_failure, program_runner
from tensorium.backends.llvm.runtime import POOL
from tensorium.errors import InterpreterError

STRIDED = (Path(__file__).parent / "strided_store.mlir").read_text()  # every `step`-th element of x set to 1


def test_calls_run_in_order_and_the_first_failure_stops_the_program() -> None:
    kernels = compile_module(tm.parse_module(STRIDED))
    address = ctypes.cast(kernels.function("strided"), ctypes.c_void_p).value
    x, y, z = np.zeros(10, np.float32), np.zeros(10, np.float32), np.zeros(10, np.float32)
    records = [[address, 3, a.ctypes.data, a.size, step] for a, step in ((x, 3), (y, 4), (z, 0), (x, 1))]
    program = np.array([w for r in records for w in r], np.int64)
    run = program_runner(3)
    assert run(2, program.ctypes.data, 2) == 0
    np.testing.assert_array_equal(x, [1, 0, 0, 1, 0, 0, 1, 0, 0, 1])
    np.testing.assert_array_equal(y, [1, 0, 0, 0, 1, 0, 0, 0, 1, 0])
    call, status = decode_failure(run(1, program.ctypes.data, 4))  # the third call has step 0
    assert (call, status) == (2, 1) and kernels.errors[status - 1].endswith("'loop.for' step must be positive")
    assert x.sum() == 4  # the fourth call never ran
    assert program_runner(8) is run and program_runner(9) is not run  # one runner per multiple of 8 arguments


def test_negative_statuses_come_back_signed() -> None:
    assert decode_failure((3 << 32) | 0xFFFFFFFF) == (2, -1)
    assert decode_failure((1 << 32) | 7) == (0, 7)


def test_a_failing_kernel_of_a_static_plan_names_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    def fn(x: Any) -> Any:
        return nn.exp(nn.tanh(x) * 2.0) + 1.0

    exe = CpuExecutable.build(tm.trace(fn, np.ones((2, 3), np.float32)).module)
    x = np.ones((2, 3), np.float32)
    exe.run([x])
    launch = exe._launch
    assert launch is not None
    failed = (len(launch.names) << 32) | 0xFFFFFFFF  # the last call: the runtime failed (status -1)
    monkeypatch.setattr(launch, "runner", lambda threads, address, count: failed)
    POOL.failures.append(RuntimeError("no threads"))
    with pytest.raises(InterpreterError, match=rf"^@{launch.names[-1]}: the parallel runtime failed: RuntimeError"):
        exe.run([x])
