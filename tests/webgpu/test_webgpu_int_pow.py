"""Integer powers on WebGPU (WGSL has ``pow`` for floats only): a helper that squares, against the interpreter
on lavapipe, negative exponents (0 unless the base is +-1) and wrapping products included."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends.interp import run
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.ir.parser import parse_module

POW = """
module {
  func.func @main(%a: tensor<12xi32>, %b: tensor<12xi32>) -> tensor<12xi32> {
    %0 = graph.pow %a, %b : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
    func.return %0 : tensor<12xi32>
  }
}"""


def test_the_shader_calls_the_helper() -> None:
    (shader,) = WebGPUExecutable.build(parse_module(POW)).shaders.values()
    assert "fn int_pow_i32(" in shader.wgsl and "int_pow_u32" not in shader.wgsl


@pytest.mark.usefixtures("gpu")
def test_integer_powers_match_the_interpreter_on_lavapipe() -> None:
    a = np.array([2, -3, 0, 1, -1, -1, 5, 7, 0, 3, -2, 10], np.int32)
    b = np.array([10, 3, 0, -4, -3, -2, 0, 11, 5, -1, 31, 12], np.int32)
    want = np.asarray(run(parse_module(POW), [a, b])[0])
    (got,) = WebGPUExecutable.build(parse_module(POW)).run([a, b])
    np.testing.assert_array_equal(got, want)
