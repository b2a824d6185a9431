"""The autotuner's API end to end: list a model's tunable kernels, pick points, compile with ``schedules=``."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.errors import ScheduleError
from tensorium.lowering.space import Config

W1 = np.random.default_rng(0).standard_normal((32, 48)).astype(np.float32)
W2 = np.random.default_rng(1).standard_normal((48, 8)).astype(np.float32)


def mlp(x: tm.Tensor) -> tm.Tensor:
    return nn.softmax(nn.gelu(x @ W1) @ W2, axis=-1)


X = np.random.default_rng(2).standard_normal((20, 32)).astype(np.float32)


def test_tunable_kernels_list_keys_spaces_and_defaults() -> None:
    compiled = tm.compile(mlp, cache=False)
    compiled(X)
    kernels = compiled.tunable_kernels()
    assert {k.space.family for k in kernels} >= {"gemm"}
    for kernel in kernels:
        assert kernel.space.check(kernel.default) == kernel.default
        assert kernel.key in compiled.artifact.executable.loop_ir
        assert str(kernel).startswith(kernel.key)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_schedules_apply_other_points_and_compute_the_same(seed: int) -> None:
    first = tm.compile(mlp, cache=False)
    want = first(X)
    rng = random.Random(seed)
    chosen = {k.key: k.space.sample(rng) for k in first.tunable_kernels()}
    tuned = tm.compile(mlp, cache=False, schedules={key: str(c) for key, c in chosen.items()})
    np.testing.assert_allclose(tuned(X), want, rtol=1e-4, atol=1e-5)
    loop_ir = tuned.artifact.executable.loop_ir
    for config in chosen.values():
        assert f'config = "{config}"' in loop_ir


def test_the_keys_are_the_same_in_another_process() -> None:
    compiled = tm.compile(mlp, cache=False)
    compiled(X)
    code = (
        "import numpy as np, tensorium as tm\n"
        "from tests.api.test_schedules import mlp, X\n"
        "c = tm.compile(mlp, cache=False); c(X)\n"
        "print(' '.join(k.key for k in c.tunable_kernels()))\n"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert other == [k.key for k in compiled.tunable_kernels()]


def test_bad_schedules_are_refused_by_name() -> None:
    compiled = tm.compile(mlp, cache=False)
    compiled(X)
    key = compiled.tunable_kernels()[0].key
    with pytest.raises(ScheduleError, match="bad kernel config 'gemm mr=6'"):
        tm.compile(mlp, schedules={key: "gemm mr=6"})
    bad = compiled.tunable_kernels()[0].default.replace(mr=99)
    with pytest.raises(ScheduleError, match="mr=99 is not one of"):
        tm.compile(mlp, cache=False, schedules={key: bad})(X)
    with pytest.raises(ScheduleError, match="is for a 'conv' kernel, not 'gemm'"):
        tm.compile(mlp, cache=False, schedules={key: Config("conv", (("mr", 6),))})(X)
