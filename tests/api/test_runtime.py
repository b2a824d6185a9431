"""The target-neutral runtime: the executable protocol and its table of kinds, and launch grids in the plan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorium.errors import TensoriumError
from tensorium.ir import parse_module, print_module
from tensorium.ir.dialects.builtin import make_module
from tensorium.lowering.plan import LaunchPlan, Step, plan_of
from tensorium.runtime.executable import Executable
from tensorium.runtime.kinds import executable_kind

MLP = """
func.func @main(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = graph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = graph.relu %0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %1 : tensor<2x4xf32>
}
"""


def test_steps_print_and_parse_their_launch_grid() -> None:
    plan = LaunchPlan((), (), (), (), (Step("k_0", (0,), (1,)), Step("k_1", (1,), (2,), (64, 2))))
    module = make_module([])
    module.attributes.update(plan.attributes())  # type: ignore[arg-type]
    text = print_module(module)
    assert '["k_0", [0], [1]], ["k_1", [1], [2], [64, 2]]' in text
    assert plan_of(parse_module(text)) == plan


def test_a_malformed_step_is_refused() -> None:
    with pytest.raises(TensoriumError, match="malformed plan step"):
        Step.from_attribute(("k", (0,), (1,), (4,), (5,)))


def test_each_target_kind_names_its_executable_class() -> None:
    from tensorium.backends.cpu import CpuExecutable

    assert executable_kind("cpu") is CpuExecutable
    assert executable_kind("interp") is None


def test_the_cpu_executable_implements_the_protocol_and_keeps_grids(tmp_path: Path) -> None:
    from tensorium.backends.cpu import CpuExecutable

    exe = CpuExecutable.build(parse_module(MLP))
    assert isinstance(exe, Executable)
    x, w = np.ones((2, 3), np.float32), np.full((3, 4), -0.5, np.float32)
    (y,) = exe.run([x, w])
    np.testing.assert_allclose(y, np.maximum(x @ w, 0))
    assert exe.peak_bytes() >= 0
    exe.steps = tuple(Step(s.kernel, s.inputs, s.outputs, (1,)) for s in exe.steps)  # the CPU ignores grids
    loaded = CpuExecutable.from_files(exe.to_files(tmp_path / "cpu"))
    assert [s.grid for s in loaded.steps] == [(1,)] * len(exe.steps)
    np.testing.assert_allclose(loaded.run([x, w])[0], y)
