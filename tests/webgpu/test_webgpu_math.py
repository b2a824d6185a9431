"""Trigonometry on WebGPU comes from the shared decompositions (tensorium/lowering/decompose.py), not WGSL's
builtins, whose error bounds are loose (asin, acos, atan) or hold on [-pi, pi] only (sin, cos): on lavapipe the
builtin asin was off by 4e-4, sin(1e30) gave -1."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.ir.parser import parse_module

from .models import reference

TRIG = """
module {
  func.func @main(%x: tensor<4096xf32>, %u: tensor<4096xf32>)
      -> (tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>) {
    %0 = graph.sin %x : (tensor<4096xf32>) -> tensor<4096xf32>
    %1 = graph.cos %x : (tensor<4096xf32>) -> tensor<4096xf32>
    %2 = graph.atan %x : (tensor<4096xf32>) -> tensor<4096xf32>
    %3 = graph.asin %u : (tensor<4096xf32>) -> tensor<4096xf32>
    %4 = graph.acos %u : (tensor<4096xf32>) -> tensor<4096xf32>
    func.return %0, %1, %2, %3, %4
      : tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<4096xf32>
  }
}"""


@pytest.mark.usefixtures("gpu")
def test_trigonometry_matches_the_interpreter_to_a_few_ulp() -> None:
    """RoPE-sized arguments (positions up to 4096 times frequencies up to 1) and the whole domain of asin and
    acos, the shaders on the adapter against numpy's correctly rounded results."""
    m = parse_module(TRIG)
    executable = WebGPUExecutable.build(m)
    assert not any(
        f"{name}(" in s.wgsl for s in executable.shaders.values() for name in ("sin", "cos", "atan", "asin", "acos")
    )
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-4096, 4096, 2048), rng.uniform(-4, 4, 2048)]).astype(np.float32)
    u = rng.uniform(-1, 1, 4096).astype(np.float32)
    for name, got, want in zip(("sin", "cos", "atan", "asin", "acos"), executable.run([x, u]), reference(m, [x, u])):
        np.testing.assert_allclose(got, want, rtol=0, atol=6e-7 * np.maximum(np.abs(want), 1.0).max(), err_msg=name)
